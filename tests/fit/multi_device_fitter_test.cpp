// MultiDeviceFitter orchestration with a small quadratic-per-bin evaluator: N concurrent shards
// must reproduce the single-shard Fitter (sum in shard order, global terms once, chain rule once),
// observed data must reach every shard, and shard errors must surface on the caller.
#include "rabbit/fit/multi_device_fitter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "rabbit/core/error.hpp"
#include "support/finite_differences.hpp"

namespace rabbit {
namespace {

// L_b(ξ) = ½ w_b (a_b·ξ − n_b)² + c_b (a_b·ξ)³/6 over the shard's bins (cubic so the HVP depends on ξ).
struct ToyProblem {
  Eigen::MatrixXd a;  // nbins × npar
  Eigen::VectorXd w, c;
};

class ToyShard : public ShardEvaluator {
 public:
  ToyShard(const ToyProblem& p, int64_t begin, int64_t end, std::string device)
      : p_(p), begin_(begin), end_(end), device_(std::move(device)) {}
  int64_t bin_begin() const override { return begin_; }
  int64_t bin_end() const override { return end_; }
  std::string device() const override { return device_; }
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd&) override {
    nobs_ = nobs.segment(begin_, end_ - begin_);
    ++observed_calls;
  }
  double value(const Eigen::VectorXd& xi) override {
    Eigen::VectorXd g;
    return value_grad(xi, g);
  }
  double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) override {
    record_thread();
    if (fail) throw NumericalError("toy shard " + device_ + " failed");
    grad = Eigen::VectorXd::Zero(xi.size());
    double f = 0;
    for (int64_t b = begin_; b < end_; ++b) {
      const double t = p_.a.row(b).dot(xi), r = t - nobs_[b - begin_];
      f += 0.5 * p_.w[b] * r * r + p_.c[b] * t * t * t / 6.0;
      grad += (p_.w[b] * r + 0.5 * p_.c[b] * t * t) * p_.a.row(b).transpose();
    }
    return f;
  }
  double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override {
    Eigen::MatrixXd H;
    const double f = value_grad_hess(xi, grad, H, true);
    HV = H * V;
    return f;
  }
  double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool) override {
    const double f = value_grad(xi, grad);
    hess = Eigen::MatrixXd::Zero(xi.size(), xi.size());
    for (int64_t b = begin_; b < end_; ++b) {
      const double t = p_.a.row(b).dot(xi);
      hess += (p_.w[b] + p_.c[b] * t) * p_.a.row(b).transpose() * p_.a.row(b);
    }
    return f;
  }
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override {
    Eigen::VectorXd beta(end_ - begin_);
    for (int64_t b = begin_; b < end_; ++b) beta[b - begin_] = 1.0 + 0.01 * p_.a.row(b).dot(xi);
    return beta;
  }
  void record_thread() {
    std::lock_guard<std::mutex> lock(threads_mutex);
    threads_seen.insert(std::this_thread::get_id());
  }

  int observed_calls = 0;
  bool fail = false;
  std::mutex threads_mutex;
  std::set<std::thread::id> threads_seen;

 private:
  const ToyProblem& p_;
  int64_t begin_, end_;
  std::string device_;
  Eigen::VectorXd nobs_;
};

// Gaussian constraints in ξ and a linear x-space term, so both global parts are exercised.
class ToyGlobalTerms : public GlobalTerms {
 public:
  explicit ToyGlobalTerms(double penalty = 0.0) : penalty_(penalty) {}
  double xi_terms(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                  Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    // ½ Σ ξ_i² over the systematics plus a parameter-only penalty ½ p (Σ ξ)².
    const int64_t n = xi.size();
    double f = 0;
    const double s = xi.sum();
    for (int64_t i = 1; i < n; ++i) f += 0.5 * xi[i] * xi[i];
    f += 0.5 * penalty_ * s * s;
    if (grad) {
      for (int64_t i = 1; i < n; ++i) (*grad)[i] += xi[i];
      grad->array() += penalty_ * s;
    }
    if (HV) {
      for (int64_t i = 1; i < n; ++i) HV->row(i) += V->row(i);
      for (int64_t j = 0; j < V->cols(); ++j) HV->col(j).array() += penalty_ * V->col(j).sum();
    }
    if (hess) {
      for (int64_t i = 1; i < n; ++i) (*hess)(i, i) += 1.0;
      hess->array() += penalty_;
    }
    return f;
  }
  double x_terms(const Eigen::VectorXd& x, Eigen::VectorXd* grad, const Eigen::MatrixXd*, Eigen::MatrixXd*,
                 Eigen::MatrixXd*) const override {
    if (grad) (*grad)[1] += 0.3;
    return 0.3 * x[1];
  }

 private:
  double penalty_;
};

constexpr int64_t kBins = 23;
constexpr int64_t kPar = 5;

ToyProblem make_problem() {
  std::mt19937 rng(7);
  std::normal_distribution<double> g;
  ToyProblem p;
  p.a.resize(kBins, kPar);
  p.w.resize(kBins);
  p.c.resize(kBins);
  for (int64_t b = 0; b < kBins; ++b) {
    for (int64_t j = 0; j < kPar; ++j) p.a(b, j) = g(rng);
    p.w[b] = 1.0 + std::abs(g(rng));
    p.c[b] = 0.1 * g(rng);
  }
  return p;
}

std::shared_ptr<Model> make_model(double penalty = 0.0) {
  auto input = std::make_shared<FitInputData>();
  input->nbins = kBins;
  input->nbinsfull = kBins;
  input->data_obs = Eigen::VectorXd::LinSpaced(kBins, 1.0, 3.0);
  auto model = std::make_shared<Model>();
  model->input = input;
  auto& ps = model->parameters;
  for (int64_t i = 0; i < kPar; ++i) ps.names.push_back("p" + std::to_string(i));
  ps.npoi = 1;  // squared POI: exercises the chain rule T', T''
  ps.nsyst = kPar - 1;
  ps.squared_pois = true;
  ps.x_default = Eigen::VectorXd::Zero(kPar);
  ps.frozen.assign(kPar, false);
  model->global_terms = std::make_shared<ToyGlobalTerms>(penalty);
  return model;
}

std::vector<std::unique_ptr<ShardEvaluator>> make_shards(const ToyProblem& p,
                                                         const std::vector<int64_t>& edges,
                                                         std::vector<ToyShard*>* raw = nullptr) {
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  for (size_t s = 0; s + 1 < edges.size(); ++s) {
    auto shard = std::make_unique<ToyShard>(p, edges[s], edges[s + 1], "toy:" + std::to_string(s));
    if (raw) raw->push_back(shard.get());
    shards.push_back(std::move(shard));
  }
  return shards;
}

void expect_close(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, double rtol) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  const double scale = std::max(1.0, b.cwiseAbs().maxCoeff());
  EXPECT_LE((a - b).cwiseAbs().maxCoeff(), rtol * scale);
}

class MultiDeviceFitterTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(MultiDeviceFitterTest, AgreesWithSingleShard) {
  const ToyProblem p = make_problem();
  auto model = make_model(0.0);
  Fitter single(model, make_shards(p, {0, kBins}));
  std::vector<ToyShard*> raw;
  MultiDeviceFitter multi(model, make_shards(p, GetParam(), &raw));

  Eigen::VectorXd x(kPar);
  x << 0.8, 0.2, -0.4, 0.1, 0.5;
  Eigen::MatrixXd V(kPar, 3);
  V.setRandom();
  Eigen::VectorXd g1, g2;
  Eigen::MatrixXd hv1, hv2, h1, h2;

  const double f1 = single.value_grad_hvp(x, V, g1, hv1);
  const double f2 = multi.value_grad_hvp(x, V, g2, hv2);
  EXPECT_NEAR(f2, f1, 1e-12 * std::abs(f1));
  expect_close(g2, g1, 1e-12);
  expect_close(hv2, hv1, 1e-12);
  EXPECT_NEAR(multi.value(x), single.value(x), 1e-12 * std::abs(f1));
  single.value_grad_hess(x, g1, h1);
  multi.value_grad_hess(x, g2, h2);
  expect_close(h2, h1, 1e-12);
  expect_close(multi.profiled_beta(x), single.profiled_beta(x), 1e-14);

  // The chain rule was applied once: compare with central differences of the value.
  const Eigen::VectorXd gfd =
      test::central_gradient([&](const Eigen::VectorXd& y) { return multi.value(y); }, x, 1e-6);
  for (int64_t i = 0; i < kPar; ++i) EXPECT_NEAR(g2[i], gfd[i], 1e-6 * std::max(1.0, std::abs(g2[i])));

  // New observed data reaches every shard and changes the value identically.
  const Eigen::VectorXd nobs = Eigen::VectorXd::LinSpaced(kBins, 2.0, 0.5);
  single.set_observed(nobs, Eigen::VectorXd());
  multi.set_observed(nobs, Eigen::VectorXd());
  for (auto* s : raw) EXPECT_EQ(s->observed_calls, 2) << s->device();
  EXPECT_NEAR(multi.value(x), single.value(x), 1e-12 * std::abs(single.value(x)));
}

INSTANTIATE_TEST_SUITE_P(Layouts, MultiDeviceFitterTest,
                         ::testing::Values(std::vector<int64_t>{0, 11, 23}, std::vector<int64_t>{0, 7, 8, 23},
                                           std::vector<int64_t>{0, 0, 5, 5, 12, 20, 23, 23},
                                           std::vector<int64_t>{0, 23, 23}));

TEST(MultiDeviceFitter, RunsShardsOnDistinctPersistentThreads) {
  const ToyProblem p = make_problem();
  std::vector<ToyShard*> raw;
  MultiDeviceFitter multi(make_model(), make_shards(p, {0, 6, 12, 18, 23}, &raw));
  Eigen::VectorXd x = Eigen::VectorXd::Constant(kPar, 0.3), g;
  for (int i = 0; i < 20; ++i) multi.value_grad(x, g);
  std::set<std::thread::id> all;
  for (auto* s : raw) {
    EXPECT_EQ(s->threads_seen.size(), 1u) << "shard " << s->device() << " moved between threads";
    all.insert(s->threads_seen.begin(), s->threads_seen.end());
  }
  EXPECT_EQ(all.size(), raw.size());
  EXPECT_TRUE(raw[0]->threads_seen.count(std::this_thread::get_id()));
}

TEST(MultiDeviceFitter, ShardErrorsReachTheCaller) {
  const ToyProblem p = make_problem();
  std::vector<ToyShard*> raw;
  MultiDeviceFitter multi(make_model(), make_shards(p, {0, 10, 23}, &raw));
  raw[1]->fail = true;
  Eigen::VectorXd x = Eigen::VectorXd::Constant(kPar, 0.3), g;
  try {
    multi.value_grad(x, g);
    FAIL() << "expected NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("toy:1"), std::string::npos);
  }
  raw[1]->fail = false;  // the pool keeps working after an error
  EXPECT_TRUE(std::isfinite(multi.value_grad(x, g)));
}

TEST(MultiDeviceFitter, ParameterOnlyPenaltyCountedOnce) {
  const ToyProblem p = make_problem();
  Eigen::VectorXd x(kPar);
  x << 0.8, 0.2, -0.4, 0.1, 0.5;
  Fitter single_plain(make_model(0.0), make_shards(p, {0, kBins}));
  Fitter single_pen(make_model(0.7), make_shards(p, {0, kBins}));
  MultiDeviceFitter multi_plain(make_model(0.0), make_shards(p, {0, 8, 15, 23}));
  MultiDeviceFitter multi_pen(make_model(0.7), make_shards(p, {0, 8, 15, 23}));
  const double shift_single = single_pen.value(x) - single_plain.value(x);
  const double shift_multi = multi_pen.value(x) - multi_plain.value(x);
  EXPECT_GT(shift_single, 0.0);
  EXPECT_NEAR(shift_multi, shift_single, 1e-9 * shift_single);
  Eigen::VectorXd g_plain, g_pen;
  multi_plain.value_grad(x, g_plain);
  multi_pen.value_grad(x, g_pen);
  EXPECT_GT((g_pen - g_plain).norm(), 1e-3);
}

}  // namespace
}  // namespace rabbit
