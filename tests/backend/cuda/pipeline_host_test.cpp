// The CUDA shard's pipeline (shard_pipeline.hpp) run on the host: the same orchestration and the same
// element bodies as on the GPU, with host memory, loops instead of kernel launches and Eigen instead of
// cuBLAS. Compared with the CPU shard (loss, gradient, HVP, Hessian profiled and not, β) for every BB
// mode and type, dense and sparse, 1 and 3 shards — so everything but the launch plumbing and the
// cuBLAS calls is tested without a GPU.
#include <gtest/gtest.h>

#include "host_ops.hpp"
#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "rabbit/model/regularizer.hpp"
#include "rabbit/postfit/regularizer_mapping.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using fixtures::scaled_max_error;
using testing::make_test_input;
using testing::make_test_model;
using testing::ShardConfig;

using testing::host_shard;

using Case = fixtures::NamedConfig;

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool sparse : {false, true}) {
    const std::string tag = sparse ? "sparse" : "dense";
    // The test data keep their empty bin (bin 3) in every case: Poisson lite n = 0 takes the factored
    // roots, with the closed form's derivatives on the ν = 0 root (docs/likelihood.md "Corner cases chosen").
    for (auto& [name, cfg] : fixtures::bb_mode_matrix(sparse)) out.push_back({name, cfg});
    ShardConfig c;
    c.sparse = sparse;
    c.symmetric = true;
    c.lognormal = false;
    c.mixture = true;
    out.push_back({tag + "_normal_symmetric_mixture", c});
    c = ShardConfig();
    c.sparse = sparse;
    c.lognormal = false;
    out.push_back({tag + "_normal_asymmetric", c});
    c = ShardConfig();
    c.sparse = sparse;
    c.square_poi = true;
    c.zero_variance_process = false;
    c.min_bb_kstat = 5.0;
    out.push_back({tag + "_squared_rate_minkstat", c});
  }
  return out;
}

class PipelineHostTest : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineHostTest, AgreesWithCpuShard) {
  const Case& cs = GetParam();
  auto in = make_test_input(cs.cfg);
  auto model = make_test_model(in, cs.cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const int64_t n = model->parameters.size(), B = model->input->nbins;

  std::vector<std::unique_ptr<ShardEvaluator>> cpu_shards;
  cpu_shards.push_back(make_cpu_shard(model, 0, B, 1));
  Fitter cpu(model, std::move(cpu_shards));

  Eigen::MatrixXd V(n, 3);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 3; ++j) V(i, j) = std::cos(0.3 + i * 0.9 + j * 0.4);
  Eigen::VectorXd g1, g2;
  Eigen::MatrixXd hv1, hv2, h1, h2;
  const double f1 = cpu.value_grad_hvp(x, V, g1, hv1);
  ASSERT_TRUE(std::isfinite(f1));
  for (const std::vector<int64_t>& edges :
       {std::vector<int64_t>{0, B}, std::vector<int64_t>{0, 2, 2, 5, B}}) {
    SCOPED_TRACE(std::to_string(edges.size() - 1) + " emulated shard(s)");
    std::vector<std::unique_ptr<ShardEvaluator>> shards;
    for (size_t s = 0; s + 1 < edges.size(); ++s) shards.push_back(host_shard(model, edges[s], edges[s + 1]));
    std::unique_ptr<Fitter> emu = shards.size() == 1
                                      ? std::make_unique<Fitter>(model, std::move(shards))
                                      : std::make_unique<MultiDeviceFitter>(model, std::move(shards));
    const double f2 = emu->value_grad_hvp(x, V, g2, hv2);
    EXPECT_NEAR(f2, f1, 1e-10 * std::max(1.0, std::abs(f1)));
    EXPECT_LE(scaled_max_error(g2, g1), 1e-10);
    EXPECT_LE(scaled_max_error(hv2, hv1), 1e-10);
    for (bool profile : {true, false}) {
      cpu.value_grad_hess(x, g1, h1, profile);
      emu->value_grad_hess(x, g2, h2, profile);
      EXPECT_LE(scaled_max_error(h2, h1), 1e-10) << "profile " << profile;
    }
    EXPECT_LE(scaled_max_error(emu->profiled_beta(x), cpu.profiled_beta(x)), 1e-10);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PipelineHostTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A fit on non-CPU shards (here the emulated CUDA pipeline) gets its postfit yields from a CPU shard
// over all observed bins, built from the same model and kept in step with the observed data: the
// same yields, Jacobians and profiled β as a CPU fit's postfit shard.
TEST(PipelineHost, PostfitShardOfANonCpuFitMatchesTheCpuFit) {
  ShardConfig cfg;
  cfg.bb_mode = BBMode::lite;
  cfg.bb_type = BBType::gamma;
  auto model = make_test_model(make_test_input(cfg), cfg);
  const int64_t B = model->input->nbins, nbf = model->input->nbinsfull;
  const Eigen::VectorXd x = testing::test_point(*model);
  Eigen::VectorXd xi, d1, d2;
  model->parameters.transform(x, xi, d1, d2);

  std::vector<std::unique_ptr<ShardEvaluator>> cpu_shards;
  cpu_shards.push_back(make_cpu_shard(model, 0, B, 1));
  Fitter cpu(model, std::move(cpu_shards));
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(host_shard(model, 0, B / 2));
  shards.push_back(host_shard(model, B / 2, B));
  MultiDeviceFitter emu(model, std::move(shards));

  EXPECT_EQ(&cpu.yield_model(), cpu.shards().front()->yield_model());  // a CPU fit keeps using its own shard
  auto& post = dynamic_cast<CpuShardEvaluator&>(emu.yield_model());
  EXPECT_EQ(&emu.yield_model(), static_cast<YieldModel*>(&post));
  EXPECT_EQ(post.bin_begin(), 0);
  EXPECT_EQ(post.bin_end(), B);

  // New data after the postfit shard exists must reach it (profiled β depends on the data).
  Eigen::VectorXd nobs = model->input->data_obs;
  for (int64_t b = 0; b < B; ++b) nobs[b] = 2.0 + 1.5 * b;
  cpu.set_observed(nobs, Eigen::VectorXd());
  emu.set_observed(nobs, Eigen::VectorXd());
  using Mode = CpuShardEvaluator::BetaMode;
  for (Mode mode : {Mode::none, Mode::stored, Mode::profiled}) {
    Eigen::VectorXd y1, y2;
    Eigen::MatrixXd p1, p2;
    cpu.yield_model().expected_yields(xi, 0, nbf, mode, &y1, &p1);
    post.expected_yields(xi, 0, nbf, mode, &y2, &p2);
    EXPECT_LE(scaled_max_error(y2, y1), 1e-12);
    EXPECT_LE(scaled_max_error(p2, p1), 1e-12);
    EXPECT_LE(scaled_max_error(post.yield_jacobian(xi, 0, nbf, mode),
                               cpu.yield_model().yield_jacobian(xi, 0, nbf, mode)),
              1e-12);
  }
  EXPECT_LE(scaled_max_error(post.profiled_beta(xi), emu.profiled_beta(x)), 1e-10);
}

// Frequentist toys move the BB centres β⁰: Fitter::set_beta_centres reaches the emulated CUDA shards
// (and the postfit shard), which then agree with the CPU shard to 1e-10 again; masked full-mode
// entries keep β⁰ = 1 here (see the refusal below).
TEST(PipelineHost, NewBetaCentresAgreeWithCpuShard) {
  for (BBMode mode : {BBMode::lite, BBMode::full})
    for (BBType type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
      SCOPED_TRACE(std::string(mode == BBMode::lite ? "lite " : "full ") +
                   std::to_string(static_cast<int>(type)));
      ShardConfig cfg;
      cfg.bb_mode = mode;
      cfg.bb_type = type;
      auto in = make_test_input(cfg);
      auto model = make_test_model(in, cfg);
      const int64_t B = model->input->nbins, n = model->parameters.size();
      const Eigen::VectorXd x = testing::test_point(*model);
      std::vector<std::unique_ptr<ShardEvaluator>> cpu_shards;
      cpu_shards.push_back(make_cpu_shard(model, 0, B, 1));
      Fitter cpu(model, std::move(cpu_shards));
      std::vector<std::unique_ptr<ShardEvaluator>> shards;
      shards.push_back(host_shard(model, 0, 2));
      shards.push_back(host_shard(model, 2, B));
      MultiDeviceFitter emu(model, std::move(shards));

      auto& c = static_cast<CpuShardEvaluator&>(*cpu.shards().front());
      Eigen::VectorXd beta0 = c.default_beta_centres();
      for (int64_t i = 0; i < beta0.size(); ++i)
        if (!c.bb_mask()[i])
          beta0[i] += (type == BBType::normal_additive ? 0.4 : 0.25) * std::sin(1.0 + 0.7 * i);
      const double f_default = emu.value(x);
      cpu.set_beta_centres(beta0);
      emu.set_beta_centres(beta0);
      Eigen::MatrixXd V(n, 2);
      for (int64_t i = 0; i < n; ++i) V(i, 0) = std::cos(0.3 + i), V(i, 1) = std::sin(0.2 * i);
      Eigen::VectorXd g1, g2;
      Eigen::MatrixXd hv1, hv2, h1, h2;
      const double f1 = cpu.value_grad_hvp(x, V, g1, hv1), f2 = emu.value_grad_hvp(x, V, g2, hv2);
      EXPECT_GT(std::abs(f2 - f_default), 1e-6);  // the centres did change the NLL
      EXPECT_NEAR(f2, f1, 1e-10 * std::max(1.0, std::abs(f1)));
      EXPECT_LE(scaled_max_error(g2, g1), 1e-10);
      EXPECT_LE(scaled_max_error(hv2, hv1), 1e-10);
      cpu.value_grad_hess(x, g1, h1, true);
      emu.value_grad_hess(x, g2, h2, true);
      EXPECT_LE(scaled_max_error(h2, h1), 1e-10);
      EXPECT_LE(scaled_max_error(emu.profiled_beta(x), cpu.profiled_beta(x)), 1e-10);
      EXPECT_LE(scaled_max_error(emu.yield_model().beta_centres(), beta0), 0.0);
    }
}

// Lite, Poisson, an empty data bin with unit MC weights (make_unit_weight_empty_bin_input) on both
// roots of the n = 0 profile (μ = 0.8, 1.25: the stationary one and ν = 0, where the pipeline writes
// the closed form's derivatives instead of the Schur form) and at their double root (μ = 1, θ = 0:
// value, gradient and β̂; the Hessian jumps there and either side's is right).
TEST(PipelineHost, LiteEmptyBinOnBothRootsAgreesWithCpuShard) {
  for (BBType type : {BBType::normal_additive, BBType::normal_multiplicative, BBType::gamma}) {
    SCOPED_TRACE(static_cast<int>(type));
    ShardConfig cfg;
    cfg.bb_type = type;
    cfg.zero_variance_process = false;
    auto model = make_test_model(testing::make_unit_weight_empty_bin_input(cfg), cfg);
    const int64_t B = model->input->nbins, n = model->parameters.size();
    std::vector<std::unique_ptr<ShardEvaluator>> cpu_shards, shards;
    cpu_shards.push_back(make_cpu_shard(model, 0, B, 1));
    Fitter cpu(model, std::move(cpu_shards));
    shards.push_back(host_shard(model, 0, B));
    Fitter emu(model, std::move(shards));
    for (double mu : {1.0, 0.8, 1.25}) {
      SCOPED_TRACE(mu);
      Eigen::VectorXd x = model->parameters.x_default;
      x[0] = mu;
      if (mu != 1.0) x.tail(n - 1) << 0.02, -0.03, 0.01, -0.02;
      Eigen::VectorXd g1, g2;
      Eigen::MatrixXd h1, h2;
      const double f1 = cpu.value_grad_hess(x, g1, h1, true), f2 = emu.value_grad_hess(x, g2, h2, true);
      ASSERT_TRUE(std::isfinite(f1));
      ASSERT_TRUE(g2.allFinite() && h2.allFinite());
      EXPECT_NEAR(f2, f1, 1e-10 * std::max(1.0, std::abs(f1)));
      EXPECT_LE(scaled_max_error(g2, g1), 1e-10);
      EXPECT_LE(scaled_max_error(emu.profiled_beta(x), cpu.profiled_beta(x)), 1e-10);
      if (mu != 1.0) {
        EXPECT_LE(scaled_max_error(h2, h1), 1e-10);
      }
      cpu.value_grad_hess(x, g1, h1, false);
      emu.value_grad_hess(x, g2, h2, false);
      EXPECT_LE(scaled_max_error(g2, g1), 1e-10) << "profile false";
      if (mu != 1.0) {
        EXPECT_LE(scaled_max_error(h2, h1), 1e-10) << "profile false";
      }
    }
  }
}

// docs/likelihood.md "BB derivative corner cases" item 3: β⁰ ≠ 1 on a masked full-mode entry is where the CPU
// backend follows rabbit's closed form and the pipeline would not; it is refused before the fit.
TEST(PipelineHost, RefusesBetaCentresOnMaskedFullEntries) {
  ShardConfig cfg;
  cfg.bb_mode = BBMode::full;
  auto model = make_test_model(make_test_input(cfg), cfg);
  const int64_t B = model->input->nbins;
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(host_shard(model, 0, B));
  Fitter emu(model, std::move(shards));
  CpuShardEvaluator ref(model, 0, B, 1);
  Eigen::VectorXd beta0 = ref.default_beta_centres();
  int64_t masked = -1;
  for (int64_t i = 0; i < B * model->input->nproc && masked < 0; ++i)
    if (ref.bb_mask()[i]) masked = i;
  ASSERT_GE(masked, 0);
  beta0[masked] = 1.3;
  try {
    emu.set_beta_centres(beta0);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("masked full-mode"), std::string::npos) << m;
    EXPECT_NE(m.find("--backend cpu"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  // Masked channels (bins >= nbins) are never part of a shard: any β⁰ there is fine.
  beta0[masked] = 1.0;
  beta0[beta0.size() - 1] = 1.3;
  EXPECT_NO_THROW(emu.set_beta_centres(beta0));
}

// With several GPUs a shard's buffers must be freed on its own device: the destructor selects it
// although the destroying thread last used another shard's (HostOps counts frees made elsewhere).
TEST(PipelineHost, ShardFreesItsBuffersOnItsOwnDevice) {
  ShardConfig cfg;
  auto model = make_test_model(make_test_input(cfg), cfg);
  const int64_t B = model->input->nbins;
  testing::HostOps::frees_on_wrong_device() = 0;
  auto first = host_shard(model, 0, 2, 0);
  auto second = host_shard(model, 2, B, 1);  // selects device 1 (its constructor uploads)
  first.reset();
  EXPECT_EQ(testing::HostOps::frees_on_wrong_device(), 0);
  second.reset();
  EXPECT_EQ(testing::HostOps::frees_on_wrong_device(), 0);
}

TEST(PipelineHost, RefusesObservableRegularizers) {
  ShardConfig cfg;
  auto in = make_test_input(cfg);
  rabbit::testing::set_obs_and_masked_channels(*in);
  auto model = make_test_model(in, cfg);
  RegularizationSpec spec;
  spec.name = "SVD";
  spec.mapping = {"Select", "masked"};
  model->regularizers = make_regularizers(*in, {spec}, postfit::regularizer_mapping);
  try {
    host_shard(model, 0, model->input->nbins);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("-r/--regularization"), std::string::npos) << m;
    EXPECT_NE(m.find("--backend cpu"), std::string::npos) << m;
  }
}

TEST(PipelineHost, RefusesCovarianceFits) {
  ShardConfig cfg;
  cfg.likelihood = DataLikelihood::covariance;
  cfg.bb_type = BBType::normal_additive;
  auto model = make_test_model(make_test_input(cfg), cfg);
  try {
    host_shard(model, 0, model->input->nbins);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("--covarianceFit"), std::string::npos);
  }
}

}  // namespace
}  // namespace rabbit
