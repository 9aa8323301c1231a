// Sharded (MultiDeviceFitter over CPU shards) vs single-device (one CPU shard) on the CPU shard's
// in-memory test models: loss, gradient, HVP, Hessian (profiled and not) and profiled β for dense
// and sparse tensors, every BB mode and type, masked channels, 1/2/3/7 shards (uneven and empty
// ones); full fits through every minimizer; the up-front refusals; the bin partition.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using fixtures::cpu_shards_at;
using fixtures::scaled_max_error;
using fixtures::single_cpu_fitter;
using testing::make_test_input;
using testing::make_test_model;
using testing::ShardConfig;

using Case = fixtures::NamedConfig;

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool sparse : {false, true}) {
    const std::string tag = sparse ? "sparse" : "dense";
    auto base = [&] {
      ShardConfig c;
      c.sparse = sparse;
      return c;
    };
    ShardConfig c = base();
    c.bb = false;
    out.push_back({tag + "_nobb", c});
    for (BBMode mode : {BBMode::lite, BBMode::full})
      for (BBType type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
        c = base();
        c.bb_mode = mode;
        c.bb_type = type;
        out.push_back({tag + (mode == BBMode::lite ? "_lite_" : "_full_") +
                           (type == BBType::gamma             ? "gamma"
                            : type == BBType::normal_additive ? "nadd"
                                                              : "nmult"),
                       c});
      }
    c = base();
    c.likelihood = DataLikelihood::chisq;
    out.push_back({tag + "_chisq_lite_gamma", c});
    c = base();
    c.symmetric = true;
    c.lognormal = false;
    c.mixture = true;
    out.push_back({tag + "_normal_symmetric_mixture", c});
    c = base();
    c.square_poi = true;
    c.zero_variance_process = false;
    c.min_bb_kstat = 5.0;
    out.push_back({tag + "_squared_rate_minkstat", c});
  }
  return out;
}

void expect_agree(Fitter& sharded, Fitter& single, const Eigen::VectorXd& x, const std::string& what) {
  SCOPED_TRACE(what);
  const int64_t n = single.size();
  Eigen::MatrixXd V(n, 3);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 3; ++j) V(i, j) = std::sin(1.0 + i * 0.7 + j * 1.3);
  Eigen::VectorXd g1, g2;
  Eigen::MatrixXd hv1, hv2, h1, h2;
  const double f1 = single.value_grad_hvp(x, V, g1, hv1);
  const double f2 = sharded.value_grad_hvp(x, V, g2, hv2);
  ASSERT_TRUE(std::isfinite(f1));
  EXPECT_NEAR(f2, f1, 1e-12 * std::max(1.0, std::abs(f1)));
  EXPECT_NEAR(sharded.value(x), single.value(x), 1e-12 * std::max(1.0, std::abs(f1)));
  EXPECT_LE(scaled_max_error(g2, g1), 1e-12);
  EXPECT_LE(scaled_max_error(hv2, hv1), 1e-12);
  for (bool profile : {true, false}) {
    single.value_grad_hess(x, g1, h1, profile);
    sharded.value_grad_hess(x, g2, h2, profile);
    EXPECT_LE(scaled_max_error(h2, h1), 1e-12) << "profile " << profile;
    EXPECT_LE(scaled_max_error(h2, h2.transpose()), 1e-12) << "symmetry, profile " << profile;
  }
  EXPECT_LE(scaled_max_error(sharded.profiled_beta(x), single.profiled_beta(x)), 1e-12);
}

class ShardedCpuTest : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedCpuTest, AgreesWithSingleDevice) {
  const ShardConfig& cfg = GetParam().cfg;
  auto model = make_test_model(make_test_input(cfg), cfg);
  auto single = single_cpu_fitter(model);
  const Eigen::VectorXd x = testing::test_point(*model);
  for (int n : {1, 2, 3, 7}) {
    FitterOptions fo;
    fo.n_devices = n;
    fo.backend = Backend::cpu;
    fo.threads = 2;
    auto sharded = make_fitter(model, fo);
    ASSERT_EQ(static_cast<int>(sharded->shards().size()), n);
    if (n > 1) {
      EXPECT_NE(dynamic_cast<MultiDeviceFitter*>(sharded.get()), nullptr);
    }
    expect_agree(*sharded, *single, x, std::to_string(n) + " shard(s)");
  }
  // Uneven and empty shards.
  auto uneven = cpu_shards_at(model, {0, 0, 1, 5, 5, model->input->nbins});
  expect_agree(*uneven, *single, x, "uneven shards [0,0) [0,1) [1,5) [5,5) [5,6)");

  // New observed data reaches every shard.
  Eigen::VectorXd nobs = model->input->data_obs;
  for (int64_t b = 0; b < nobs.size(); ++b) nobs[b] = std::round(nobs[b] * 1.1) + 1.0;
  single->set_observed(nobs, Eigen::VectorXd());
  uneven->set_observed(nobs, Eigen::VectorXd());
  expect_agree(*uneven, *single, x, "after set_observed");
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardedCpuTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Adds ½ p (Σ ξ)² — a penalty on the parameters only — to the model's global terms.
class PenalisedGlobalTerms : public GlobalTerms {
 public:
  PenalisedGlobalTerms(std::shared_ptr<const GlobalTerms> base, double p) : base_(std::move(base)), p_(p) {}
  double xi_terms(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                  Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    const double s = xi.sum();
    if (grad) grad->array() += p_ * s;
    if (V && HV)
      for (int64_t j = 0; j < V->cols(); ++j) HV->col(j).array() += p_ * V->col(j).sum();
    if (hess) hess->array() += p_;
    return base_->xi_terms(xi, grad, V, HV, hess) + 0.5 * p_ * s * s;
  }
  double x_terms(const Eigen::VectorXd& x, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                 Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    return base_->x_terms(x, grad, V, HV, hess);
  }

 private:
  std::shared_ptr<const GlobalTerms> base_;
  double p_;
};

TEST(ShardedCpu, ParameterOnlyPenaltyShiftsBothEqually) {
  ShardConfig cfg;
  auto plain = make_test_model(make_test_input(cfg), cfg);
  auto penalised = std::make_shared<Model>(*plain);
  penalised->global_terms = std::make_shared<PenalisedGlobalTerms>(plain->global_terms, 0.8);
  const Eigen::VectorXd x = testing::test_point(*plain);
  FitterOptions fo;
  fo.n_devices = 3;
  fo.backend = Backend::cpu;
  auto s_plain = make_fitter(plain, fo), s_pen = make_fitter(penalised, fo);
  auto d_plain = single_cpu_fitter(plain), d_pen = single_cpu_fitter(penalised);
  const double shift_sharded = s_pen->value(x) - s_plain->value(x);
  const double shift_single = d_pen->value(x) - d_plain->value(x);
  EXPECT_GT(shift_single, 0.0);
  EXPECT_NEAR(shift_sharded, shift_single, 1e-9 * shift_single);
  EXPECT_NEAR(s_pen->value(x), d_pen->value(x), 1e-9 * std::abs(d_pen->value(x)));
  Eigen::VectorXd g_plain, g_pen;
  s_plain->value_grad(x, g_plain);
  s_pen->value_grad(x, g_pen);
  EXPECT_GT((g_pen - g_plain).norm(), 1e-3);
}

struct FitSummary {
  Eigen::VectorXd x, sigma;
  double nll = 0, edm = 0;
};

FitSummary fit(Fitter& fitter, const std::string& method) {
  MinimizerOptions mo;
  mo.method = method;
  const Eigen::VectorXd x0 = fitter.parameters().x_default;
  const MinimizerResult r = minimize(fitter, x0, mo);
  FitSummary s;
  s.x = r.x;
  Eigen::VectorXd g;
  Eigen::MatrixXd H;
  s.nll = fitter.value_grad_hess(r.x, g, H);
  const Eigen::LLT<Eigen::MatrixXd> llt(H);
  EXPECT_EQ(llt.info(), Eigen::Success);
  s.edm = 0.5 * g.dot(llt.solve(g));
  s.sigma = llt.solve(Eigen::MatrixXd::Identity(H.rows(), H.cols())).diagonal().cwiseSqrt();
  return s;
}

TEST(ShardedCpu, FullFitsAgreeWithSingleDevice) {
  for (const bool sparse : {false, true}) {
    ShardConfig cfg;
    cfg.sparse = sparse;
    auto model = make_test_model(make_test_input(cfg), cfg);
    for (const std::string method : {"trust-krylov", "trust-ncg", "trust-exact"}) {
      SCOPED_TRACE(method + (sparse ? " sparse" : " dense"));
      auto single = single_cpu_fitter(model);
      const FitSummary ref = fit(*single, method);
      EXPECT_LT(ref.edm, 1e-4);
      for (int n : {2, 3}) {
        FitterOptions fo;
        fo.n_devices = n;
        fo.backend = Backend::cpu;
        auto sharded = make_fitter(model, fo);
        const FitSummary s = fit(*sharded, method);
        EXPECT_LT(s.edm, 1e-4);
        EXPECT_NEAR(s.nll, ref.nll, 1e-9);
        EXPECT_LE((s.x - ref.x).cwiseAbs().maxCoeff(), 1e-7);
        EXPECT_LE(scaled_max_error(s.sigma, ref.sigma), 1e-6);
      }
    }
  }
}

TEST(ShardedCpu, RefusedFeaturesNameTheOptionBeforeTheFit) {
  ShardingRequest req;
  req.fitter.n_devices = 2;
  req.likelihood = DataLikelihood::covariance;
  req.regularizers = {"SVD"};
  req.global_impacts = true;
  try {
    check_sharding_supported(req);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    const std::string m = e.what();
    for (const char* s : {"--nDevices 2", "multi-device mode", "--covarianceFit", "Drop --nDevices"})
      EXPECT_NE(m.find(s), std::string::npos) << s << " missing from: " << m;
    // CPU shards evaluate -r (the first shard adds the penalty of all bins)
    EXPECT_EQ(m.find("--regularization"), std::string::npos) << m;
  }
  req.fitter.n_devices = 1;
  EXPECT_NO_THROW(check_sharding_supported(req));  // single device: all of these run
  req.fitter.n_devices = 2;
  req.likelihood = DataLikelihood::poisson;
  EXPECT_NO_THROW(check_sharding_supported(req));  // -r and global impacts with BB run sharded
  req.regularizers.clear();
  req.diagnostics = true;
  EXPECT_THROW(check_sharding_supported(req), OptionError);  // the β-space EDM does not
  req.bin_by_bin_stat = false;
  EXPECT_NO_THROW(check_sharding_supported(req));
  req.fitter.n_devices = 0;
  EXPECT_THROW(check_sharding_supported(req), OptionError);

  // make_fitter refuses a covariance model before building any shard.
  ShardConfig cfg;
  cfg.likelihood = DataLikelihood::covariance;
  cfg.bb_type = BBType::normal_additive;
  auto model = make_test_model(make_test_input(cfg), cfg);
  FitterOptions fo;
  fo.n_devices = 2;
  fo.backend = Backend::cpu;
  try {
    make_fitter(model, fo);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("--covarianceFit"), std::string::npos);
  }
  fo.n_devices = 1;
  EXPECT_NO_THROW(make_fitter(model, fo));
}

TEST(ShardedCpu, CudaBackendWithoutGpuIsAResourceError) {
  ShardConfig cfg;
  auto model = make_test_model(make_test_input(cfg), cfg);
  FitterOptions fo;
  fo.backend = Backend::cuda;
  std::string why;
  if (!visible_gpus(&why).empty()) GTEST_SKIP() << "a GPU is visible";
  EXPECT_THROW(make_fitter(model, fo), ResourceError);
  EXPECT_THROW(parse_backend("gpu"), OptionError);
  EXPECT_EQ(parse_backend("cuda"), Backend::cuda);
}

// CPU fits keep the host linear algebra and read their postfit yields from their own first shard;
// only CUDA fits get cuSOLVER and a separate postfit CPU shard (tests/backend/cuda).
TEST(ShardedCpu, CpuFitsUseHostLinalgAndTheirOwnShardForPostfit) {
  ShardConfig cfg;
  auto model = make_test_model(make_test_input(cfg), cfg);
  for (int n : {1, 3}) {
    FitterOptions fo;
    fo.n_devices = n;
    fo.backend = Backend::cpu;
    auto fitter = make_fitter(model, fo);
    EXPECT_EQ(&fitter->dense_linalg(), &default_linalg()) << n;
    EXPECT_EQ(fitter->dense_linalg_ptr(), nullptr) << n;
    EXPECT_EQ(&fitter->yield_model(), fitter->shards().front()->yield_model()) << n;
  }
}

TEST(Partition, DenseIsUniformLikeLinspace) {
  FitInputData in;
  in.nbins = 10;
  in.nproc = 2;
  in.nsyst = 3;
  const auto r = partition_bins(in, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (std::pair<int64_t, int64_t>(0, 3)));
  EXPECT_EQ(r[1], (std::pair<int64_t, int64_t>(3, 6)));
  EXPECT_EQ(r[2], (std::pair<int64_t, int64_t>(6, 10)));
  const auto many = partition_bins(in, 12);  // more shards than bins: empty shards, still a tiling
  int64_t covered = 0, empty = 0;
  for (size_t s = 0; s < many.size(); ++s) {
    EXPECT_EQ(many[s].first, covered);
    covered = many[s].second;
    empty += many[s].first == many[s].second;
  }
  EXPECT_EQ(covered, 10);
  EXPECT_EQ(empty, 2);
}

TEST(Partition, SparseBalancesStoredEntries) {
  // 8 bins, 1 process; bins 0-1 hold 100 logk nonzeros each, the rest 1: two shards split after bin 1.
  FitInputData in;
  in.sparse = true;
  in.nbins = 8;
  in.nbinsfull = 10;  // two masked bins at the end are never sharded
  in.nproc = 1;
  in.nsyst = 100;
  in.logk_sparse.rowptr = {0};
  for (int64_t b = 0; b < 10; ++b) {
    in.norm_index.push_back(b);
    const int64_t nnz = b < 2 ? 100 : 1;
    in.logk_sparse.rowptr.push_back(in.logk_sparse.rowptr.back() + nnz);
  }
  const auto r = partition_bins(in, 2);
  EXPECT_EQ(r[0], (std::pair<int64_t, int64_t>(0, 1)));
  EXPECT_EQ(r[1], (std::pair<int64_t, int64_t>(1, 8)));
}

}  // namespace
}  // namespace rabbit
