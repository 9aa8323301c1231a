#pragma once
// What several benchmarks share: a one-POI param model, wall time since a point, and a synthetic
// asymmetric dense input with Poisson-like data (bench/README in docs/benchmarks.md).
#include <fmt/format.h>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/param_model.hpp"

namespace rabbit::bench {

using Clock = std::chrono::steady_clock;

/// Mu on the first process only (the benchmarks' POI).
class BenchMu : public ParamModel {
 public:
  explicit BenchMu(int64_t nproc) : nproc_(nproc) {}
  int64_t npoi() const override { return 1; }
  int64_t npou() const override { return 0; }
  std::vector<std::string> names() const override { return {"sig"}; }
  Eigen::VectorXd default_values() const override { return Eigen::VectorXd::Ones(1); }
  void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    r = Eigen::VectorXd::Ones(nproc_);
    r[0] = pi[0];
    if (jac) {
      jac->setZero(nproc_, 1);
      (*jac)(0, 0) = 1.0;
    }
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd&) const override {
    return Eigen::MatrixXd::Zero(1, 1);
  }

 private:
  int64_t nproc_;
};

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// B bins × P processes × S asymmetric systematics, fixed seed: norms 10–100, |logk| < 0.01, data the
/// rounded total.
inline std::shared_ptr<FitInputData> synthetic_input(int64_t B, int64_t P, int64_t S) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  auto in = std::make_shared<FitInputData>();
  in->filename = "synthetic";
  in->nbins = in->nbinsfull = B;
  in->nproc = P;
  in->nsyst = S;
  in->nsignals = 1;
  for (int64_t p = 0; p < P; ++p) in->procs.push_back(p == 0 ? "sig" : fmt::format("bkg{}", p));
  in->signals = {"sig"};
  for (int64_t s = 0; s < S; ++s) in->systs.push_back(fmt::format("syst{}", s));
  in->constraintweights = Eigen::VectorXd::Ones(S);
  in->symmetric_tensor = false;
  const int64_t W = in->logk_width();
  in->norm.resize(B * P);
  in->logk.resize(B * P * W);
  in->sumw.resize(B * P);
  in->sumw2.resize(B * P);
  in->data_obs.resize(B);
  for (int64_t b = 0; b < B; ++b) {
    double total = 0;
    for (int64_t p = 0; p < P; ++p) {
      const double v = 10.0 + 90.0 * uni(rng);
      in->norm[b * P + p] = v;
      in->sumw[b * P + p] = v;
      in->sumw2[b * P + p] = 0.1 * v;
      total += v;
      for (int64_t w = 0; w < W; ++w) in->logk[(b * P + p) * W + w] = 0.02 * (uni(rng) - 0.5);
    }
    in->data_obs[b] = std::round(total);
  }
  return in;
}

}  // namespace rabbit::bench
