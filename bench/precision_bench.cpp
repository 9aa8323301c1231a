// A logk held as float32 against the same values held as double (docs/input-reader.md "Precision"):
// loss+grad and loss+grad+HVP time per evaluation of two CPU shards on one synthetic dense tensor
// whose logk values are float32 numbers, one holding them as float32 and one as double, measured in
// alternating rounds (the machine's load drifts; docs/benchmarks.md "Float32 tensors"), with the
// medians, their ratio and a check that value and gradient agree within 1e-12 relative (the dense
// float32 products round differently from Eigen's, src/backend/cpu/row_block_products.hpp; sparse
// storage agrees bit for bit).
//   precision_bench [nbins=10000] [nproc=10] [nsyst=1000] [seconds=1] [threads=all] [rounds=6] [--sparse]
#include <omp.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/param_model.hpp"

namespace {

using rabbit::bench::bb_lite_model;
using rabbit::bench::median;

/// An asymmetric log-normal tensor with BB lite, logk values rounded to float32, held as double.
std::shared_ptr<rabbit::FitInputData> make_input(int64_t B, int64_t P, int64_t S, bool sparse, int threads) {
  // sparse: about a quarter of the columns set
  auto in = rabbit::bench::lognormal_input(B, P, S, threads, [sparse](auto& rng, auto& u) {
    return sparse && u(rng) > 0.25 ? 0.0 : static_cast<float>(0.01 * (u(rng) - 0.5));
  });
  if (sparse) {
    in->sparse = true;
    in->norm_index.resize(B * P);
    for (int64_t e = 0; e < B * P; ++e) in->norm_index[e] = e;
    auto& L = in->logk_sparse;
    L.rowptr.assign(1, 0);
    for (int64_t e = 0; e < B * P; ++e) {
      for (int64_t w = 0; w < 2 * S; ++w) {
        const double v = in->logk[e * 2 * S + w];
        if (v == 0.0) continue;
        L.cols.push_back(static_cast<int32_t>(w));
        L.values.push_back(v);
      }
      L.rowptr.push_back(static_cast<int64_t>(L.cols.size()));
    }
    in->logk = {};
  }
  return in;
}

/// The same input with its logk held as float32.
std::shared_ptr<rabbit::FitInputData> as_float32(const rabbit::FitInputData& d) {
  auto f = std::make_shared<rabbit::FitInputData>(d);
  f->logk_float32 = true;
  f->logk_f32.assign(d.logk.begin(), d.logk.end());
  f->logk_sparse.values_f32.assign(d.logk_sparse.values.begin(), d.logk_sparse.values.end());
  f->logk = {};
  f->logk_sparse.values = {};
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  bool sparse = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sparse") == 0)
      sparse = true;
    else
      pos.emplace_back(argv[i]);
  }
  auto arg = [&](size_t i) { return i < pos.size() ? pos[i].c_str() : nullptr; };
  const int64_t B = arg(0) ? std::atoll(arg(0)) : 10000;
  const int64_t P = arg(1) ? std::atoll(arg(1)) : 10;
  const int64_t S = arg(2) ? std::atoll(arg(2)) : 1000;
  const double seconds = arg(3) ? std::atof(arg(3)) : 1.0;
  const int threads = arg(4) ? std::atoi(arg(4)) : omp_get_max_threads();
  const int rounds = arg(5) ? std::atoi(arg(5)) : 6;

  auto in64 = make_input(B, P, S, sparse, threads);
  auto in32 = as_float32(*in64);
  const double held64 =
      8.0 * static_cast<double>(sparse ? in64->logk_sparse.values.size() : in64->logk.size());
  rabbit::CpuShardEvaluator shard64(bb_lite_model(in64), 0, B, threads),
      shard32(bb_lite_model(in32), 0, B, threads);

  Eigen::VectorXd xi = Eigen::VectorXd::Zero(1 + S), g64, g32;
  xi[0] = 1.1;
  for (int64_t s = 0; s < S; ++s) xi[1 + s] = 0.3 * std::sin(0.1 * s);
  const double f64 = shard64.value_grad(xi, g64), f32 = shard32.value_grad(xi, g32);
  const double f_rel = std::abs(f32 - f64) / std::abs(f64);
  const double g_rel = (g32 - g64).cwiseAbs().maxCoeff() / g64.cwiseAbs().maxCoeff();
  const bool bitwise = f64 == f32 && g64 == g32;
  const bool close = f_rel <= 1e-12 && g_rel <= 1e-12;

  // ms per call, at a new point every call (a repeated point is served by the per-point cache)
  Eigen::VectorXd xmove = xi;
  int moves = 0;
  Eigen::MatrixXd V = Eigen::MatrixXd::Random(1 + S, 1), HV;
  Eigen::VectorXd grad;
  auto time_per_call = [&](rabbit::CpuShardEvaluator& shard, bool hvp) {
    auto call = [&] {
      xmove[1] = xi[1] + 1e-9 * (++moves);
      if (hvp)
        shard.value_grad_hvp(xmove, V, grad, HV);
      else
        shard.value_grad(xmove, grad);
    };
    return 1e3 / rabbit::bench::calls_per_second(call, seconds);
  };
  std::vector<double> grad64, grad32, hvp64, hvp32;
  for (int r = 0; r < rounds; ++r) {
    grad64.push_back(time_per_call(shard64, false));
    grad32.push_back(time_per_call(shard32, false));
    hvp64.push_back(time_per_call(shard64, true));
    hvp32.push_back(time_per_call(shard32, true));
    std::printf(
        "round %d: loss+grad double %.3f ms, float32 %.3f ms; loss+grad+HVP double %.3f ms, float32 %.3f "
        "ms\n",
        r + 1, grad64.back(), grad32.back(), hvp64.back(), hvp32.back());
  }
  std::printf(
      "tensor: %lld bins x %lld procs x %lld systs (%s, asymmetric, log_normal, BB lite), %d threads; "
      "logk %.3f GB as double, %.3f GB as float32\n",
      static_cast<long long>(B), static_cast<long long>(P), static_cast<long long>(S),
      sparse ? "sparse" : "dense", threads, held64 / 1e9, held64 / 2e9);
  std::printf(
      "value and gradient within 1e-12 relative: %s (value %.2e, gradient %.2e of its largest element; bit "
      "for bit: %s)\n",
      close ? "yes" : "NO", f_rel, g_rel, bitwise ? "yes" : "no");
  std::printf("median loss+grad: double %.3f ms, float32 %.3f ms, float32/double %.3f\n", median(grad64),
              median(grad32), median(grad32) / median(grad64));
  std::printf("median loss+grad+HVP: double %.3f ms, float32 %.3f ms, float32/double %.3f\n", median(hvp64),
              median(hvp32), median(hvp32) / median(hvp64));
  return close ? 0 : 1;
}
