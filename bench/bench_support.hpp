#pragma once
// What several benchmarks share: a one-POI param model and the BB-lite model around it, wall time
// since a point, calls per second and the median of repeated timings, and synthetic asymmetric dense
// inputs with Poisson-like data (bench/README in docs/benchmarks.md).
#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model.hpp"
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

/// Calls of fn per second: one warm-up call, then calls until `seconds` have passed and at least 3
/// were made.
template <class Fn>
double calls_per_second(Fn&& fn, double seconds) {
  fn();  // warm-up
  int count = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds || count < 3) {
    fn();
    ++count;
  }
  return count / seconds_since(t0);
}

/// The middle value of v (the mean of the two middle ones for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A STREAM-like triad a = b + s c over arrays far larger than the caches; 3 × 8 bytes per element.
class Triad {
 public:
  explicit Triad(int threads) : threads_(threads), a_(kN), b_(kN), c_(kN) {
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < kN; ++i) {
      a_[i] = 0.0;
      b_[i] = 1.0;
      c_[i] = 2.0;
    }
  }
  /// Seconds of one pass.
  double pass() {
    const auto t0 = Clock::now();
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < kN; ++i) a_[i] = b_[i] + 3.0 * c_[i];
    const double t = seconds_since(t0);
    if (a_[kN / 2] != 7.0) fmt::print("triad check failed\n");
    return t;
  }
  /// Bytes per second of a pass that took t seconds.
  static double bandwidth(double t) {
    return 3.0 * 8.0 * kN / t;
  }

 private:
  static constexpr int64_t kN = 40'000'000;
  int threads_;
  std::vector<double> a_, b_, c_;
};

/// A synthetic input of B bins × P processes × S asymmetric systematics, one signal process, every
/// constraint weight 1, its arrays sized for the caller to fill.
inline std::shared_ptr<FitInputData> sized_input(int64_t B, int64_t P, int64_t S) {
  auto in = std::make_shared<FitInputData>();
  in->filename = "synthetic";
  in->nbins = in->nbinsfull = B;
  in->nproc = P;
  in->nsyst = S;
  in->nsignals = 1;
  in->symmetric_tensor = false;
  in->constraintweights = Eigen::VectorXd::Ones(S);
  in->norm.resize(B * P);
  in->logk.resize(B * P * in->logk_width());
  in->sumw.resize(B * P);
  in->sumw2.resize(B * P);
  in->data_obs.resize(B);
  return in;
}

/// B bins × P processes × S asymmetric log-normal systematics, filled by `threads` threads with a
/// generator each (seed 1234 + thread number): norms 10–100, sumw2 0.2·norm, data the total times
/// 0.9–1.1, rounded; each logk value is logk_value(rng, uniform on [0, 1)).
template <class LogkValue>
std::shared_ptr<FitInputData> lognormal_input(int64_t B, int64_t P, int64_t S, int threads,
                                              LogkValue&& logk_value) {
  auto in = sized_input(B, P, S);
  in->systematic_type = SystematicType::log_normal;
#pragma omp parallel num_threads(threads)
  {
    std::mt19937_64 rng(1234 + omp_get_thread_num());
    std::uniform_real_distribution<double> u(0.0, 1.0);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      double tot = 0.0;
      for (int64_t p = 0; p < P; ++p) {
        const int64_t e = b * P + p;
        in->norm[e] = 10.0 + 90.0 * u(rng);
        in->sumw[e] = in->norm[e];
        in->sumw2[e] = 0.2 * in->norm[e];
        tot += in->norm[e];
        double* row = in->logk.data() + e * 2 * S;
        for (int64_t w = 0; w < 2 * S; ++w) row[w] = logk_value(rng, u);
      }
      in->data_obs[b] = std::round(tot * (0.9 + 0.2 * u(rng)));
    }
  }
  return in;
}

/// The model the loss+grad benchmarks time: mu on the first process (BenchMu), BB lite gamma, default
/// point mu = 1 and every systematic at 0.
inline std::shared_ptr<Model> bb_lite_model(std::shared_ptr<FitInputData> in) {
  auto model = std::make_shared<Model>();
  const int64_t P = in->nproc, S = in->nsyst;
  model->input = std::move(in);
  model->options.bin_by_bin_stat = true;
  model->options.bb_mode = BBMode::lite;
  model->bb_type = BBType::gamma;
  model->param_model = std::make_shared<BenchMu>(P);
  model->parameters.x_default = Eigen::VectorXd::Zero(1 + S);
  model->parameters.x_default[0] = 1.0;
  return model;
}

/// B bins × P processes × S asymmetric systematics, fixed seed: norms 10–100, |logk| < 0.01, data the
/// rounded total.
inline std::shared_ptr<FitInputData> synthetic_input(int64_t B, int64_t P, int64_t S) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  auto in = sized_input(B, P, S);
  for (int64_t p = 0; p < P; ++p) in->procs.push_back(p == 0 ? "sig" : fmt::format("bkg{}", p));
  in->signals = {"sig"};
  for (int64_t s = 0; s < S; ++s) in->systs.push_back(fmt::format("syst{}", s));
  const int64_t W = in->logk_width();
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
