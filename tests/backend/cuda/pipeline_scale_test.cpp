// The CUDA shard's pipeline at scale (docs/sharding-and-gpu.md "Scale and determinism tests"): 20,000
// observed bins plus a masked channel, every BB mode, dense and sparse with thousands of non-zeros per
// column (a full, a nearly empty and an empty column among them), HVP and Hessian batches wider than
// the pipeline's HVP batch (its width from the host policy's fixed budget). Against the CPU shard to 1e-10,
// and two evaluations of one point bitwise identical (also after another point in between). Each check runs
// through the host policy (host_ops.hpp, every build) and, in a CUDA build with a GPU visible, on the GPU
// (ScaleCuda*).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "fitter_evaluation.hpp"
#include "host_ops.hpp"
#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/backend/cuda/cuda_shard.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using fixtures::evaluate;
using fixtures::Evaluation;
using fixtures::expect_close;
using testing::ShardConfig;

struct Shape {
  int64_t bins = 20000, masked = 1000, procs = 4, systs = 6;
};

// Like make_test_input (shard_test_helpers.hpp) at `shape`: absent entries, fully BB-masked bins, a
// process without MC-stat variance, empty data bins (not for χ²), a masked channel. Sparse columns
// have different densities: column 0 every entry, 1 about 1 %, 2 none, the others about 30 %.
std::shared_ptr<FitInputData> make_scale_input(const Shape& s, const ShardConfig& c) {
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  auto in = std::make_shared<FitInputData>();
  const int64_t B = s.bins, Bf = s.bins + s.masked, P = s.procs, S = s.systs;
  in->filename = "in-memory scale";
  in->nbins = B;
  in->nbinsmasked = s.masked;
  in->nbinsfull = Bf;
  in->nproc = P;
  in->nsyst = S;
  in->nsignals = 1;
  for (int64_t p = 0; p < P; ++p) in->procs.push_back(p == 0 ? "sig" : "bkg" + std::to_string(p));
  in->signals = {"sig"};
  for (int64_t k = 0; k < S; ++k) in->systs.push_back("s" + std::to_string(k));
  in->constraintweights = Eigen::VectorXd::Ones(S);
  in->symmetric_tensor = c.symmetric;
  in->systematic_type = c.lognormal ? SystematicType::log_normal : SystematicType::normal;
  const int64_t W = in->logk_width();
  std::vector<double> norm(Bf * P), logk(Bf * P * W, 0.0);
  for (int64_t i = 0; i < Bf * P; ++i) {
    const double v = (i * 7 + 3) % 23 == 0 ? 0.0 : 5.0 + 95.0 * uni(rng);  // some absent entries
    norm[i] = v;
    for (int64_t w = 0; w < W && v != 0.0; ++w) {
      double k = 0.12 * (uni(rng) - 0.5) * (w >= S ? 0.5 : 1.0);
      if (!c.lognormal) k *= v;
      logk[i * W + w] = k;
    }
  }
  in->sumw.assign(Bf * P, 0.0);
  in->sumw2.assign(Bf * P, 0.0);
  for (int64_t b = 0; b < Bf; ++b)
    for (int64_t p = 0; p < P; ++p) {
      const int64_t i = b * P + p;
      const bool bb_masked_bin = b % 97 == 5;
      in->sumw[i] = bb_masked_bin ? 0.0 : norm[i];
      in->sumw2[i] =
          bb_masked_bin || (c.zero_variance_process && p == P - 1) ? 0.0 : norm[i] * (0.05 + 0.3 * uni(rng));
    }
  in->data_obs.resize(B);
  for (int64_t b = 0; b < B; ++b) {
    double tot = 0.0;
    for (int64_t p = 0; p < P; ++p) tot += norm[b * P + p];
    in->data_obs[b] = std::round(tot * (0.85 + 0.3 * uni(rng)));
    if (c.likelihood != DataLikelihood::chisq && b % 101 == 7) in->data_obs[b] = 0.0;
  }
  in->sparse = c.sparse;
  if (!c.sparse) {
    in->norm = std::move(norm);
    in->logk = std::move(logk);
    return in;
  }
  auto& L = in->logk_sparse;
  L.rowptr.push_back(0);
  for (int64_t i = 0; i < Bf * P; ++i) {
    if (norm[i] == 0.0) continue;
    in->norm.push_back(norm[i]);
    in->norm_index.push_back(i);
    for (int64_t w = 0; w < W; ++w) {
      const double keep = w == 0 ? 1.0 : w == 1 ? 0.01 : w == 2 ? 0.0 : 0.3;
      if (uni(rng) >= keep) continue;
      L.cols.push_back(static_cast<int32_t>(w));
      L.values.push_back(logk[i * W + w]);
    }
    L.rowptr.push_back(static_cast<int64_t>(L.cols.size()));
  }
  return in;
}

enum class Where { host, cuda };

// Pipeline shards over [edges[s], edges[s+1]) on the host policy or on GPU 0.
std::unique_ptr<Fitter> pipeline_fitter(Where where, std::shared_ptr<Model> model,
                                        const std::vector<int64_t>& edges) {
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  for (size_t s = 0; s + 1 < edges.size(); ++s) {
    if (where == Where::host) {
      shards.push_back(testing::host_shard(model, edges[s], edges[s + 1]));
    } else {
#ifdef RABBIT_HAVE_CUDA
      shards.push_back(make_cuda_shard(model, edges[s], edges[s + 1], 0));
#endif
    }
  }
  return fixtures::fitter_over(std::move(model), std::move(shards));
}

template <class M>
bool bitwise_equal(const M& a, const M& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

void expect_bitwise(const Evaluation& a, const Evaluation& b) {
  EXPECT_EQ(std::memcmp(&a.f, &b.f, sizeof(double)), 0) << a.f << " vs " << b.f;
  EXPECT_TRUE(bitwise_equal(a.g, b.g));
  EXPECT_TRUE(bitwise_equal(a.hv, b.hv));
  EXPECT_TRUE(bitwise_equal(a.h, b.h));
  EXPECT_TRUE(bitwise_equal(a.beta, b.beta));
}

using Case = fixtures::NamedConfig;

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool sparse : {false, true}) {
    for (auto& [name, cfg] : fixtures::bb_mode_matrix(sparse)) out.push_back({name, cfg});
    ShardConfig c;
    c.sparse = sparse;
    c.lognormal = false;
    out.push_back({std::string(sparse ? "sparse" : "dense") + "_normal_asymmetric", c});
  }
  return out;
}

// Every BB mode at 20,000 bins, split unevenly over three shards.
void agrees_at_scale(Where where, const ShardConfig& cfg) {
  auto model = testing::make_test_model(make_scale_input(Shape(), cfg), cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const Eigen::MatrixXd V = fixtures::test_directions(model->parameters.size(), 3);
  const int64_t B = model->input->nbins;
  const Evaluation ref = evaluate(*fixtures::single_cpu_fitter(model), x, V);
  expect_close(evaluate(*pipeline_fitter(where, model, {0, 7001, 7001 + B / 3, B}), x, V), ref);
}

// HVP directions and Hessian columns wider than one batch (249 columns in the host policy's 8 MiB):
// 301 parameters, 300 directions.
void batches_cross_the_width(Where where, bool sparse) {
  ShardConfig cfg;
  cfg.sparse = sparse;
  cfg.bb_mode = BBMode::full;
  const Shape shape{.bins = 200, .masked = 20, .procs = 3, .systs = 300};
  auto model = testing::make_test_model(make_scale_input(shape, cfg), cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const Eigen::MatrixXd V = fixtures::test_directions(model->parameters.size(), 300);
  const Evaluation ref = evaluate(*fixtures::single_cpu_fitter(model), x, V);
  expect_close(evaluate(*pipeline_fitter(where, model, {0, shape.bins}), x, V), ref);
}

// The HVP batch at the width of the Ops budget (here 100 columns: 301 parameters in 4 batches),
// allocated at the first HVP and reused by later batches and calls; one synchronisation per call and
// per further batch; a budget below one column is refused with a one-line error.
TEST(ScaleHostBatches, AllocatedOnceAtTheBudgetWidth) {
  ShardConfig cfg;
  cfg.bb_mode = BBMode::full;
  const Shape shape{.bins = 200, .masked = 20, .procs = 3, .systs = 300};
  auto model = testing::make_test_model(make_scale_input(shape, cfg), cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const Eigen::MatrixXd V = fixtures::test_directions(model->parameters.size(), 300);
  const Evaluation ref = evaluate(*fixtures::single_cpu_fitter(model), x, V);
  // One column: δΛ and ω (600 entries), δN, z, t (600 bin-processes), direction and result (600
  // tensor columns), dr and the per-process sums (3 processes).
  const uint64_t column = 8 * (2 * 600 + 3 * 600 + 2 * 600 + 2 * 3);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(testing::host_shard(model, 0, shape.bins, 0, 100 * column + column / 2));
  auto fitter = fixtures::fitter_over(model, std::move(shards));
  Eigen::VectorXd g;
  Eigen::MatrixXd h;
  fitter->value_grad_hess(x, g, h, true);
  const int64_t after_first = testing::HostOps::allocations();
  const Evaluation got = evaluate(*fitter, x, V);
  EXPECT_EQ(testing::HostOps::allocations(), after_first) << "HVP batch buffers reallocated";
  expect_close(got, ref);

  // One synchronisation per call; HVP and Hessian batches beyond the first wait once each.
  auto& syncs = testing::HostOps::synchronizations();
  int64_t before = syncs;
  fitter->value(x);
  EXPECT_EQ(syncs - before, 1) << "value";
  before = syncs;
  fitter->value_grad(x, g);
  EXPECT_EQ(syncs - before, 1) << "value_grad";
  Eigen::MatrixXd hv;
  before = syncs;
  fitter->value_grad_hvp(x, V.leftCols(3), g, hv);
  EXPECT_EQ(syncs - before, 1) << "value_grad_hvp, 3 directions";
  before = syncs;
  fitter->value_grad_hvp(x, V, g, hv);
  EXPECT_EQ(syncs - before, 3) << "value_grad_hvp, 300 directions in batches of 100";
  before = syncs;
  fitter->value_grad_hess(x, g, h, true);
  // Dense: the θθ block as a SYRK and the π column in one HVP batch, one wait (before the SYRK path,
  // 4: the 301 identity columns in batches of 100).
  EXPECT_EQ(syncs - before, 1) << "value_grad_hess, 301 parameters, SYRK path";

  std::vector<std::unique_ptr<ShardEvaluator>> small;
  small.push_back(testing::host_shard(model, 0, shape.bins, 0, column - 1));
  auto starved = fixtures::fitter_over(model, std::move(small));
  try {
    starved->value_grad_hess(x, g, h, true);
    ADD_FAILURE() << "a batch budget below one column was accepted";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("one HVP batch column"), std::string::npos) << e.what();
  }
}

// The same point twice on one fitter (another point in between) and once on a fresh one: bitwise equal.
void repeats_bitwise(Where where, bool sparse) {
  ShardConfig cfg;
  cfg.sparse = sparse;
  cfg.bb_mode = BBMode::full;
  auto model = testing::make_test_model(make_scale_input(Shape(), cfg), cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const Eigen::VectorXd y = x + Eigen::VectorXd::Constant(x.size(), 0.05);
  const Eigen::MatrixXd V = fixtures::test_directions(model->parameters.size(), 3);
  const int64_t B = model->input->nbins;
  auto fitter = pipeline_fitter(where, model, {0, B / 2, B});
  const Evaluation first = evaluate(*fitter, x, V);
  evaluate(*fitter, y, V);
  expect_bitwise(evaluate(*fitter, x, V), first);
  expect_bitwise(evaluate(*pipeline_fitter(where, model, {0, B / 2, B}), x, V), first);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

class ScaleHost : public ::testing::TestWithParam<Case> {};
TEST_P(ScaleHost, AgreesWithCpuShard) {
  agrees_at_scale(Where::host, GetParam().cfg);
}
INSTANTIATE_TEST_SUITE_P(Modes, ScaleHost, ::testing::ValuesIn(cases()), case_name);

TEST(ScaleHostBatches, CrossTheBatchWidthDense) {
  batches_cross_the_width(Where::host, false);
}
TEST(ScaleHostBatches, CrossTheBatchWidthSparse) {
  batches_cross_the_width(Where::host, true);
}
TEST(ScaleHostRepeat, BitwiseIdenticalDense) {
  repeats_bitwise(Where::host, false);
}
TEST(ScaleHostRepeat, BitwiseIdenticalSparse) {
  repeats_bitwise(Where::host, true);
}

class ScaleCuda : public ::testing::TestWithParam<Case> {};
TEST_P(ScaleCuda, AgreesWithCpuShard) {
  RABBIT_REQUIRE_GPU();
  agrees_at_scale(Where::cuda, GetParam().cfg);
}
INSTANTIATE_TEST_SUITE_P(Modes, ScaleCuda, ::testing::ValuesIn(cases()), case_name);

TEST(ScaleCudaBatches, CrossTheBatchWidthDense) {
  RABBIT_REQUIRE_GPU();
  batches_cross_the_width(Where::cuda, false);
}
TEST(ScaleCudaBatches, CrossTheBatchWidthSparse) {
  RABBIT_REQUIRE_GPU();
  batches_cross_the_width(Where::cuda, true);
}
TEST(ScaleCudaRepeat, BitwiseIdenticalDense) {
  RABBIT_REQUIRE_GPU();
  repeats_bitwise(Where::cuda, false);
}
TEST(ScaleCudaRepeat, BitwiseIdenticalSparse) {
  RABBIT_REQUIRE_GPU();
  repeats_bitwise(Where::cuda, true);
}

}  // namespace
}  // namespace rabbit
