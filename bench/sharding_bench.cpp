// Loss+gradient throughput of the fitter on a synthetic dense model: 1 and 2 CPU shards (speed-up
// printed), and the CUDA backend (1 shard, and 2 shards on the visible GPUs) when the build has
// CUDA and a GPU is visible, compared with the device's copy bandwidth.
//
//   sharding_bench [--bins B] [--procs P] [--systs S] [--iters N] [--threads T]
//
// "GB/s" counts the bytes a loss+grad must stream at least once per pass: the logk tensor twice
// (Λ = K2·m and K2ᵀ(φ∘N)) plus norm once.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

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

double seconds_per_call(Fitter& fitter, const Eigen::VectorXd& x, int iters) {
  Eigen::VectorXd g, xi = x;
  fitter.value_grad(x, g);  // warm-up (first touch)
  // A new point on every call: the CPU shard caches its evaluation per point (a minimizer never
  // asks for the same point twice in a row), which would otherwise be measured instead.
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    xi[xi.size() - 1] = x[x.size() - 1] + 1e-6 * (i + 1);
    fitter.value_grad(xi, g);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t B = 20000, P = 8, S = 64;
  int iters = 20, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (a == "--bins")
      B = v;
    else if (a == "--procs")
      P = v;
    else if (a == "--systs")
      S = v;
    else if (a == "--iters")
      iters = static_cast<int>(v);
    else if (a == "--threads")
      threads = static_cast<int>(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  rabbit::set_verbosity(2);
  try {
    auto input = synthetic_input(B, P, S);
    ModelOptions mo;
    auto model = build_model(input, mo);
    Eigen::VectorXd x = model->parameters.x_default;
    for (int64_t s = 0; s < S; ++s) x[x.size() - S + s] = 0.3 * std::sin(s);
    const double bytes = (2.0 * input->logk.size() + input->norm.size()) * sizeof(double);
    fmt::print("model: {} bins x {} processes x {} systematics (asymmetric); logk {:.1f} MB; {} iterations\n",
               B, P, S, input->logk.size() * 8.0 / 1e6, iters);

    double base = 0;
    for (int n : {1, 2}) {
      FitterOptions fo;
      fo.n_devices = n;
      fo.backend = Backend::cpu;
      fo.threads = threads;
      auto fitter = make_fitter(model, fo);
      const double t = seconds_per_call(*fitter, x, iters);
      if (n == 1) base = t;
      fmt::print("cpu   {} shard(s): {:8.3f} ms per loss+grad, {:7.2f} GB/s, speed-up {:.2f}x\n", n, t * 1e3,
                 bytes / t / 1e9, base / t);
    }
    std::string why;
    const auto gpus = visible_gpus(&why);
    if (!built_with_cuda()) {
      fmt::print("cuda: not built (configure with -DRABBIT_CUDA=ON)\n");
    } else if (gpus.empty()) {
      fmt::print("cuda: no GPU visible ({})\n", why);
    } else {
      // visible_gpus loaded the CUDA plugin; its table has the bandwidth probe.
      const double hbm = cuda_plugin(nullptr)->copy_bandwidth(gpus.front().ordinal, size_t(1) << 30);
      fmt::print("cuda: {} ({}), copy-kernel bandwidth {:.0f} GB/s\n", gpus.front().name,
                 gpus.front().pci.str(), hbm);
      for (int n : {1, 2}) {
        FitterOptions fo;
        fo.n_devices = n;
        fo.backend = Backend::cuda;
        auto fitter = make_fitter(model, fo);
        const double t = seconds_per_call(*fitter, x, iters);
        fmt::print(
            "cuda  {} shard(s): {:8.3f} ms per loss+grad, {:7.2f} GB/s = {:.0f}% of the copy bandwidth\n", n,
            t * 1e3, bytes / t / 1e9, 100.0 * bytes / t / 1e9 / hbm);
      }
    }
  } catch (const rabbit::Error& e) {
    std::fprintf(stderr, "sharding_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return 0;
}
