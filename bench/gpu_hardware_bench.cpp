// The CUDA shard against the hardware (docs/sharding-and-gpu.md "Benchmarks against the hardware"):
// per call of loss+grad, of a one-direction HVP at a new point and of the dense Hessian, the bytes
// the call needs (tensor bytes × the passes the design aims at: 1 for loss+grad, 2 for an HVP at a
// new point) and the bytes the pipeline moves today (its passes over the tensor plus its per-entry
// work arrays, counted from shard_pipeline.hpp), the achieved GB/s against the device's measured
// copy bandwidth, and the Hessian's useful GFLOP/s (E·S·(S+1), the SYRK of the θ block) against the
// DGEMM and DSYRK rates measured in the same run. One table; with --stages (RABBIT_CUDA_STAGE_TIMES=1)
// each fitter prints its per-stage CUDA-event times when it is destroyed. Without a GPU (or with
// --backend cpu) the same calls run on the CPU shard and the hardware columns read n/a.
//
//   gpu_hardware_bench [--bins B] [--procs P] [--systs S] [--iters N] [--backend auto|cpu|cuda]
//                      [--stages 0|1]
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "bench_support.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/cuda_plugin_loader.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/model/model.hpp"

namespace {

using namespace rabbit;
using rabbit::bench::synthetic_input;
using Clock = std::chrono::steady_clock;

struct Row {
  std::string what;
  double seconds = 0, needed = 0, moved = 0, flops = 0;  // per call
};

// Seconds per call of `call(x)` at a new point each time (the CPU shard caches per point).
template <class Call>
double per_call(const Eigen::VectorXd& x, int iters, Call call) {
  Eigen::VectorXd xi = x;
  call(xi);  // warm-up: first touch, HVP batch allocation
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    xi[xi.size() - 1] = x[x.size() - 1] + 1e-6 * (i + 1);
    call(xi);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count() / iters;
}

std::string pct(double v, double of) {
  return of > 0 ? fmt::format("{:.0f}%", 100.0 * v / of) : "n/a";
}

}  // namespace

int main(int argc, char** argv) {
  int64_t B = 20000, P = 8, S = 64;
  int iters = 10;
  std::string backend = "auto";
  bool stages = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--bins")
      B = std::atoll(v.c_str());
    else if (a == "--procs")
      P = std::atoll(v.c_str());
    else if (a == "--systs")
      S = std::atoll(v.c_str());
    else if (a == "--iters")
      iters = std::atoi(v.c_str());
    else if (a == "--backend")
      backend = v;
    else if (a == "--stages")
      stages = v == "1";
    else {
      std::fprintf(stderr, "gpu_hardware_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  rabbit::set_verbosity(2);
  try {
    std::string why;
    const bool cuda = backend != "cpu" && built_with_cuda() && !visible_gpus(&why).empty();
    if (backend == "cuda" && !cuda)
      throw OptionError("gpu_hardware_bench --backend cuda: " +
                        (built_with_cuda() ? why : "built without CUDA"));
    if (stages) setenv("RABBIT_CUDA_STAGE_TIMES", "1", 1);
    auto input = synthetic_input(B, P, S);
    auto model = build_model(input, ModelOptions{});
    Eigen::VectorXd x = model->parameters.x_default;
    for (int64_t s = 0; s < S; ++s) x[x.size() - S + s] = 0.3 * std::sin(s);
    const int64_t E = B * P, n = x.size();
    const double tensor =
        8.0 * (input->logk.size() + input->logk_f32.size());  // held in double on the device
    // Per-entry work arrays a call writes and reads (Λ, q, N, the gradient weights; δΛ, ω for an
    // HVP column) and the index/norm arrays it reads per pass (bin, proc: 4 bytes each; norm: 8).
    const double per_entry_lg = E * (8.0 * 2 * 4 + 16.0 * 2), per_entry_hvp = E * 8.0 * 2 * 2;
    double hbm = 0, dsyrk = 0, dgemm = 0;
    std::string device = "CPU shard";
    if (cuda) {
      const auto gpu = visible_gpus(&why).front();
      const CudaPluginV1* plugin = cuda_plugin(nullptr);
      hbm = plugin->copy_bandwidth(gpu.ordinal, size_t(1) << 30);
      dsyrk = plugin->blas_rate(gpu.ordinal, S, 16384, true);
      dgemm = plugin->blas_rate(gpu.ordinal, S, 16384, false);
      device = fmt::format(
          "{} ({}), copy bandwidth {:.0f} GB/s, DGEMM {:.0f} GFLOP/s, DSYRK {:.0f} GFLOP/s "
          "(n = {}, k = 16384)",
          gpu.name, gpu.pci.str(), hbm, dgemm, dsyrk, S);
    } else {
      device += cuda ? "" : fmt::format(" ({})", built_with_cuda() ? why : "built without CUDA");
    }
    fmt::print(
        "model: {} bins x {} processes x {} systematics (asymmetric), {} parameters; logk {:.1f} MB; {} "
        "iterations\ndevice: {}\n",
        B, P, S, n, tensor / 1e6, iters, device);
    std::fflush(stdout);

    FitterOptions fo;
    fo.backend = cuda ? Backend::cuda : Backend::cpu;
    std::vector<Row> rows;
    auto stage_header = [&](const char* what) {
      if (cuda && stages) fmt::print("-- per-stage times follow for: {}\n", what);
      std::fflush(stdout);
    };
    {
      auto fitter = make_fitter(model, fo);
      Eigen::VectorXd g;
      const double t = per_call(x, iters, [&](const Eigen::VectorXd& xi) { fitter->value_grad(xi, g); });
      rows.push_back({"loss+grad", t, tensor, 2 * tensor + per_entry_lg, 0});
      stage_header("loss+grad");
    }
    {
      auto fitter = make_fitter(model, fo);
      Eigen::VectorXd g;
      Eigen::MatrixXd V = Eigen::MatrixXd::Ones(n, 1), HV;
      const double t =
          per_call(x, iters, [&](const Eigen::VectorXd& xi) { fitter->value_grad_hvp(xi, V, g, HV); });
      rows.push_back(
          {"HVP, 1 direction, new point", t, 2 * tensor, 4 * tensor + per_entry_lg + per_entry_hvp, 0});
      stage_header("HVP");
    }
    {
      auto fitter = make_fitter(model, fo);
      Eigen::VectorXd g;
      Eigen::MatrixXd H;
      const int hess_iters = std::max(1, iters / 5);
      const double t =
          per_call(x, hess_iters, [&](const Eigen::VectorXd& xi) { fitter->value_grad_hess(xi, g, H); });
      // Useful work: the SYRK of the θ block over all entries, E·S·(S+1) flops.
      rows.push_back({"dense Hessian", t, 0, 0, double(E) * S * (S + 1)});
      stage_header("dense Hessian");
    }
    std::fflush(stderr);
    fmt::print("\n{:<28} {:>10} {:>11} {:>11} {:>9} {:>8} {:>9} {:>8} {:>8}\n", "call", "ms/call",
               "needed MB", "moved MB", "GB/s", "% copy", "GFLOP/s", "% DSYRK", "% DGEMM");
    std::string key;
    for (const Row& r : rows) {
      const double gbs = r.needed > 0 ? r.needed / r.seconds / 1e9 : 0, gf = r.flops / r.seconds / 1e9;
      fmt::print("{:<28} {:>10.3f} {:>11.1f} {:>11.1f} {:>9} {:>8} {:>9} {:>8} {:>8}\n", r.what,
                 1e3 * r.seconds, r.needed / 1e6, r.moved / 1e6,
                 r.needed > 0 ? fmt::format("{:.1f}", gbs) : "-", r.needed > 0 ? pct(gbs, hbm) : "-",
                 r.flops > 0 ? fmt::format("{:.1f}", gf) : "-", r.flops > 0 ? pct(gf, dsyrk) : "-",
                 r.flops > 0 ? pct(gf, dgemm) : "-");
      key += r.needed > 0
                 ? fmt::format(" {}: {:.3f} ms = {} of copy bw;", r.what, 1e3 * r.seconds, pct(gbs, hbm))
                 : fmt::format(" {}: {:.3f} ms = {} of DSYRK;", r.what, 1e3 * r.seconds, pct(gf, dsyrk));
    }
    fmt::print("KEY ({}):{}\n", cuda ? "cuda" : "cpu", key);
  } catch (const rabbit::Error& e) {
    std::fprintf(stderr, "gpu_hardware_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return 0;
}
