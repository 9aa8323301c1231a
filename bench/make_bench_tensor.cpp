// make_bench_tensor: writes a larger fit tensor for speed comparisons (bench/compare_with_rabbit.sh).
//
//   make_bench_tensor -o FILE [--bins B] [--procs P] [--systs S] [--seed N] [--sparse] [--float32]
//
// One observed channel "ch0" with B regular bins; a signal "sig" and P-1 backgrounds with smooth
// falling/rising shapes; S shape systematics (one mirrored linear tilt each, on a process chosen
// in turn, size 1-5 %) plus one 2.5 % normalisation systematic per process; data = a Gaussian
// approximation of Poisson fluctuations around the nominal total (rounded, non-negative). Symmetric
// log_normal tensor, gzip. Deterministic for a given seed (mt19937_64 with our own Box-Muller).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"

namespace {

struct Options {
  std::string output = "bench_tensor.hdf5";
  int64_t bins = 2000;
  int procs = 5;
  int systs = 200;
  uint64_t seed = 1;
  bool sparse = false;
  bool float32 = false;  // store norm, logk and MC statistics as float32 (docs/input-reader.md "Precision")
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s -o FILE [--bins B] [--procs P] [--systs S] [--seed N] [--sparse] [--float32]\n",
               argv0);
  std::exit(2);
}

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  double uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (a == "-o" || a == "--output")
      o.output = next();
    else if (a == "--bins")
      o.bins = std::atoll(next().c_str());
    else if (a == "--procs")
      o.procs = std::atoi(next().c_str());
    else if (a == "--systs")
      o.systs = std::atoi(next().c_str());
    else if (a == "--seed")
      o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--sparse")
      o.sparse = true;
    else if (a == "--float32")
      o.float32 = true;
    else
      usage(argv[0]);
  }
  if (o.bins < 1 || o.procs < 1 || o.systs < 0) usage(argv[0]);

  Random rng(o.seed);
  rabbit::TensorWriter w(rabbit::SystematicType::log_normal);
  w.add_channel("ch0", {rabbit::axis::regular(o.bins, 0.0, 1.0, "x")});

  std::vector<std::string> names;
  std::vector<std::vector<double>> yields;
  std::vector<double> total(static_cast<size_t>(o.bins), 0.0);
  for (int p = 0; p < o.procs; ++p) {
    names.push_back(p == 0 ? "sig" : "bkg" + std::to_string(p));
    std::vector<double> y(static_cast<size_t>(o.bins));
    const double slope = p == 0 ? 0.0 : (p % 2 ? -2.0 : 1.5) / p;
    for (int64_t b = 0; b < o.bins; ++b) {
      const double x = (static_cast<double>(b) + 0.5) / static_cast<double>(o.bins);
      y[static_cast<size_t>(b)] = (p == 0 ? 50.0 * std::exp(-0.5 * std::pow((x - 0.5) / 0.1, 2)) + 1.0
                                          : 400.0 / o.procs * std::exp(slope * x));
      total[static_cast<size_t>(b)] += y[static_cast<size_t>(b)];
    }
    w.add_process("ch0", names.back(), y, p == 0);
    yields.push_back(std::move(y));
  }
  std::vector<double> data(total.size());
  for (size_t b = 0; b < total.size(); ++b)
    data[b] = std::max(0.0, std::round(total[b] + std::sqrt(total[b]) * rng.normal()));
  w.add_data("ch0", data);

  for (int p = 0; p < o.procs; ++p)
    w.add_norm_systematic("norm_" + names[static_cast<size_t>(p)], {names[static_cast<size_t>(p)]}, "ch0",
                          {1.025});
  for (int s = 0; s < o.systs; ++s) {
    const size_t p = static_cast<size_t>(s % o.procs);
    const double size = 0.01 + 0.04 * rng.uniform();
    const double centre = rng.uniform();
    std::vector<double> varied(yields[p].size());
    for (int64_t b = 0; b < o.bins; ++b) {
      const double x = (static_cast<double>(b) + 0.5) / static_cast<double>(o.bins);
      varied[static_cast<size_t>(b)] = yields[p][static_cast<size_t>(b)] * (1.0 + size * (x - centre));
    }
    w.add_systematic("shape_" + std::to_string(s), names[p], "ch0", varied);
  }
  rabbit::WriteOptions wo;
  wo.sparse = o.sparse;
  wo.float32 = o.float32;
  w.write(o.output, wo);
  std::printf("%s: %lld bins, %d processes, %d systematics\n", o.output.c_str(),
              static_cast<long long>(o.bins), o.procs, o.systs + o.procs);
  return 0;
}
