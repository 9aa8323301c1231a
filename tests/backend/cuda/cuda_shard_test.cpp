// CUDA shard vs CPU shard on the CPU shard's in-memory test models: loss, gradient, HVP and Hessian
// to 1e-10 relative, profiled β, 1/2/3 CUDA shards on one GPU, and a full fit to 1e-8 in NLL.
// Compiled in every build; skips with a message when the build has no CUDA or no GPU is visible.
#include "rabbit/backend/cuda/cuda_shard.hpp"

#include <gtest/gtest.h>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/backend/cuda/cusolver_linalg.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using fixtures::regular_model;
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
    for (auto& [name, cfg] : fixtures::bb_mode_matrix(sparse)) out.push_back({name, cfg});
    ShardConfig c;
    c.sparse = sparse;
    c.symmetric = true;
    c.lognormal = false;
    c.mixture = true;
    out.push_back({tag + "_normal_symmetric_mixture", c});
    c = ShardConfig();
    c.sparse = sparse;
    c.square_poi = true;
    out.push_back({tag + "_squared_rate", c});
  }
  return out;
}

#ifdef RABBIT_HAVE_CUDA
std::unique_ptr<Fitter> cuda_fitter(std::shared_ptr<Model> model, int nshards) {
  const auto ranges = partition_bins(*model->input, nshards);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  for (const auto& [a, b] : ranges) shards.push_back(make_cuda_shard(model, a, b, 0));
  return fixtures::fitter_over(model, std::move(shards));
}
#endif

class CudaShardTest : public ::testing::TestWithParam<Case> {};

TEST_P(CudaShardTest, AgreesWithCpu) {
  RABBIT_REQUIRE_GPU();
#ifdef RABBIT_HAVE_CUDA
  auto model = regular_model(GetParam().cfg);
  auto cpu = single_cpu_fitter(model);
  const Eigen::VectorXd x = testing::test_point(*model);
  const int64_t n = cpu->size();
  Eigen::MatrixXd V(n, 4);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 4; ++j) V(i, j) = std::cos(0.3 + i * 0.9 + j * 0.4);
  Eigen::VectorXd g1, g2;
  Eigen::MatrixXd hv1, hv2, h1, h2;
  const double f1 = cpu->value_grad_hvp(x, V, g1, hv1);
  for (int shards : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(shards) + " CUDA shard(s)");
    auto gpu = cuda_fitter(model, shards);
    const double f2 = gpu->value_grad_hvp(x, V, g2, hv2);
    EXPECT_NEAR(f2, f1, 1e-10 * std::max(1.0, std::abs(f1)));
    EXPECT_NEAR(gpu->value(x), f1, 1e-10 * std::max(1.0, std::abs(f1)));
    EXPECT_LE(scaled_max_error(g2, g1), 1e-10);
    EXPECT_LE(scaled_max_error(hv2, hv1), 1e-10);
    for (bool profile : {true, false}) {
      cpu->value_grad_hess(x, g1, h1, profile);
      gpu->value_grad_hess(x, g2, h2, profile);
      EXPECT_LE(scaled_max_error(h2, h1), 1e-10) << "profile " << profile;
    }
    EXPECT_LE(scaled_max_error(gpu->profiled_beta(x), cpu->profiled_beta(x)), 1e-10);
  }
#endif
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaShardTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(CudaShard, FullFitAgreesWithCpu) {
  RABBIT_REQUIRE_GPU();
#ifdef RABBIT_HAVE_CUDA
  ShardConfig cfg;
  auto model = regular_model(cfg);
  MinimizerOptions mo;
  auto cpu = single_cpu_fitter(model);
  const MinimizerResult ref = minimize(*cpu, model->parameters.x_default, mo);
  for (int shards : {1, 2}) {
    auto gpu = cuda_fitter(model, shards);
    const MinimizerResult r = minimize(*gpu, model->parameters.x_default, mo);
    EXPECT_NEAR(r.f, ref.f, 1e-8);
    EXPECT_LE((r.x - ref.x).cwiseAbs().maxCoeff(), 1e-6);
  }
#endif
}

TEST(CudaShard, MakeFitterPlacesShardsOnTheGpu) {
  RABBIT_REQUIRE_GPU();
  ShardConfig cfg;
  auto model = regular_model(cfg);
  FitterOptions fo;
  fo.n_devices = 2;
  fo.backend = Backend::cuda;
  auto fitter = make_fitter(model, fo);
  for (const auto& s : fitter->shards()) EXPECT_EQ(s->device().rfind("cuda:", 0), 0u) << s->device();
#ifdef RABBIT_HAVE_CUDA
  // The minimizers' dense factorisations go to cuSOLVER on the first shard's device.
  EXPECT_NE(dynamic_cast<const CusolverLinalg*>(&fitter->dense_linalg()), nullptr);
#endif
}

// Postfit yields of a CUDA fit come from a CPU shard over the same input (Fitter::yield_model),
// in step with the data the GPU shards see.
TEST(CudaShard, PostfitShardOfACudaFitMatchesTheCpuFit) {
  RABBIT_REQUIRE_GPU();
  ShardConfig cfg;
  auto model = regular_model(cfg);
  FitterOptions fo;
  fo.n_devices = 2;
  fo.backend = Backend::cuda;
  auto gpu = make_fitter(model, fo);
  auto cpu = single_cpu_fitter(model);
  Eigen::VectorXd nobs = model->input->data_obs;
  for (int64_t b = 0; b < nobs.size(); ++b) nobs[b] += 1.0 + 0.5 * b;
  gpu->set_observed(nobs, Eigen::VectorXd());
  cpu->set_observed(nobs, Eigen::VectorXd());
  const Eigen::VectorXd x = testing::test_point(*model);
  Eigen::VectorXd xi, d1, d2, y1, y2;
  model->parameters.transform(x, xi, d1, d2);
  const int64_t nbf = model->input->nbinsfull;
  using Mode = CpuShardEvaluator::BetaMode;
  cpu->yield_model().expected_yields(xi, 0, nbf, Mode::profiled, &y1);
  gpu->yield_model().expected_yields(xi, 0, nbf, Mode::profiled, &y2);
  EXPECT_LE(scaled_max_error(y2, y1), 1e-12);
  EXPECT_LE(scaled_max_error(gpu->yield_model().profiled_beta(xi), gpu->profiled_beta(x)), 1e-10);
}

// What the CUDA shard refuses runs on the CPU under --backend auto, and is refused in one line under
// --backend cuda.
TEST(CudaShard, AutoBackendRunsUnsupportedModelsOnTheCpu) {
  RABBIT_REQUIRE_GPU();
  ShardConfig cfg;
  cfg.likelihood = DataLikelihood::covariance;
  cfg.bb_type = BBType::normal_additive;
  auto model = make_test_model(make_test_input(cfg), cfg);
  auto fitter = make_fitter(model, FitterOptions());
  EXPECT_EQ(fitter->shards().front()->device(), "cpu");
  FitterOptions fo;
  fo.backend = Backend::cuda;
  EXPECT_THROW(make_fitter(model, fo), OptionError);
}

// --devices 0,0: two shards, each with its own stream and cuBLAS handle, on one GPU (the multi-device
// code on a one-GPU machine), against the CPU to 1e-10.
TEST(CudaShard, TwoShardsOnOneGpuAgreeWithCpu) {
  RABBIT_REQUIRE_GPU();
  ShardConfig cfg;
  cfg.bb_mode = BBMode::full;
  auto model = regular_model(cfg);
  FitterOptions fo;
  fo.n_devices = 2;
  fo.devices = {0, 0};
  fo.backend = Backend::cuda;
  auto gpu = make_fitter(model, fo);
  ASSERT_EQ(gpu->shards().size(), 2u);
  EXPECT_EQ(gpu->shards()[0]->device(), gpu->shards()[1]->device());
  EXPECT_EQ(gpu->shards()[0]->device().rfind("cuda:", 0), 0u) << gpu->shards()[0]->device();
  auto cpu = single_cpu_fitter(model);
  const Eigen::VectorXd x = testing::test_point(*model);
  Eigen::MatrixXd V(cpu->size(), 2);
  for (int64_t i = 0; i < V.rows(); ++i) V(i, 0) = std::cos(0.3 + i), V(i, 1) = std::sin(0.2 * i);
  Eigen::VectorXd g1, g2;
  Eigen::MatrixXd hv1, hv2;
  const double f1 = cpu->value_grad_hvp(x, V, g1, hv1), f2 = gpu->value_grad_hvp(x, V, g2, hv2);
  EXPECT_NEAR(f2, f1, 1e-10 * std::max(1.0, std::abs(f1)));
  EXPECT_LE(scaled_max_error(g2, g1), 1e-10);
  EXPECT_LE(scaled_max_error(hv2, hv1), 1e-10);
}

// NVML (dlopen, hand-declared structs) and nvidia-smi both describe the visible GPU at the bus id
// CUDA reports, with about the same memory in use: checks the struct layouts on the real driver.
TEST(CudaDevices, NvmlAndNvidiaSmiSeeTheVisibleGpu) {
  RABBIT_REQUIRE_GPU();
  std::string why;
  const auto gpus = visible_gpus(&why);
  std::string nvml_failure, smi_failure;
  const auto nvml = query_nvml_occupancy(&nvml_failure);
  ASSERT_TRUE(nvml.has_value()) << nvml_failure;
  const auto smi = query_nvidia_smi_occupancy(&smi_failure);
  for (const GpuInfo& g : gpus) {
    SCOPED_TRACE(g.pci.str());
    auto at = [&](const std::vector<GpuOccupancy>& list) -> const GpuOccupancy* {
      for (const auto& o : list)
        if (o.pci == g.pci) return &o;
      return nullptr;
    };
    const GpuOccupancy* n = at(*nvml);
    ASSERT_NE(n, nullptr) << "NVML lists no GPU at the bus id CUDA reports";
    EXPECT_LE(n->used_bytes, g.total_bytes);
    if (smi) {
      const GpuOccupancy* s = at(*smi);
      ASSERT_NE(s, nullptr) << "nvidia-smi lists no GPU at the bus id CUDA reports";
      EXPECT_LE(std::abs(static_cast<double>(n->used_bytes) - static_cast<double>(s->used_bytes)),
                512.0 * 1048576);
    }
  }
}

TEST(CudaShard, MissingDeviceIsOneResourceErrorLine) {
  if (!built_with_cuda()) GTEST_SKIP() << "built without CUDA (configure with -DRABBIT_CUDA=ON)";
#ifdef RABBIT_HAVE_CUDA
  ShardConfig cfg;
  auto model = regular_model(cfg);
  try {
    make_cuda_shard(model, 0, model->input->nbins, 4096);
    FAIL() << "expected ResourceError";
  } catch (const ResourceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda:4096"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
#endif
}

}  // namespace
}  // namespace rabbit
