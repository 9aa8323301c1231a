// The CPU shard with a bin-dependent param model (docs/likelihood.md "Bin-dependent rates"): the NLL's
// gradient, HVP and Hessian with Mu × ABCD (and the smooth and IsoMT members) against finite differences in
// several likelihood configurations, shards that sum to the whole, and the postfit yield Jacobians (masked
// bins included).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <Eigen/LU>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/shard_evaluator.hpp"
#include "rabbit/model/yield_model.hpp"
#include "support/abcd_input.hpp"
#include "support/finite_differences.hpp"
#include "support/isomt_input.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

struct Config {
  bool sparse = false;
  bool normal_systematics = false;
  bool bb = true;
  BBType bb_type = BBType::gamma;
  BBMode bb_mode = BBMode::lite;
  DataLikelihood likelihood = DataLikelihood::poisson;
  std::string abcd = "ABCD";
  bool yield_correction = false;
};

std::string describe(const Config& c) {
  return fmt::format("{}{}_{}_bb{}{}_{}_lik{}{}", c.abcd, c.yield_correction ? "_yc" : "",
                     c.sparse ? "sparse" : "dense", c.bb ? static_cast<int>(c.bb_type) : -1,
                     c.bb_mode == BBMode::full ? "full" : "lite",
                     c.normal_systematics ? "normal" : "lognormal", static_cast<int>(c.likelihood), "");
}

/// The smooth and IsoMT members run on isomt_input(), ABCD and ExtendedABCD on abcd_input().
bool on_isomt_input(const Config& c) {
  return c.abcd.rfind("Smooth", 0) == 0 || c.abcd.find("IsoMT") != std::string::npos;
}

std::shared_ptr<Model> abcd_model(const Config& c) {
  auto in = on_isomt_input(c) ? test::isomt_input(c.sparse) : test::abcd_input(c.sparse);
  if (c.normal_systematics) {  // absolute variations
    in->systematic_type = SystematicType::normal;
    const int64_t W = in->logk_width();
    if (!c.sparse)
      for (int64_t i = 0; i < in->nbinsfull * in->nproc; ++i)
        for (int64_t w = 0; w < W; ++w) in->logk[i * W + w] *= in->norm[i];
  }
  if (c.likelihood == DataLikelihood::covariance) {
    MatrixXd cov = in->data_obs.asDiagonal();
    for (int64_t b = 0; b + 1 < in->nbins; ++b) cov(b, b + 1) = cov(b + 1, b) = 0.2 * std::sqrt(cov(b, b));
    in->data_cov_inv = cov.inverse();
  }
  ModelOptions o;
  std::vector<std::string> args =
      c.abcd == "ABCD" ? test::abcd_arguments()
                       : std::vector<std::string>{"nonprompt", "fakes", "iso:0", "pt:0", "fakes", "iso:0",
                                                  "pt:1",      "fakes", "iso:1", "pt:0", "fakes", "iso:1",
                                                  "pt:1",      "ch_C",  "pt:0",  "ch_D", "pt:1"};
  if (c.abcd == "SmoothABCD") args = test::smooth_abcd_arguments();
  if (c.abcd == "SmoothExtendedABCD") args = test::smooth_extended_abcd_arguments();
  if (c.abcd.find("IsoMT") != std::string::npos) args = {"nonprompt", "ch"};
  if (c.yield_correction)  // after the smoothing axis of SmoothABCD and SmoothExtendedABCD
    args.insert(args.begin() + (c.abcd.rfind("Smooth", 0) == 0 && c.abcd.find("IsoMT") == std::string::npos),
                "yieldCorrection:1");
  o.param_models = {ParamModelSpec{"Mu", {}}, ParamModelSpec{c.abcd, args}};
  o.likelihood = c.likelihood;
  o.bin_by_bin_stat = c.bb;
  o.bb_type = c.bb_type;
  o.bb_mode = c.bb_mode;
  return build_model(in, o);
}

VectorXd abcd_point(const Model& m, bool smooth = false) {
  const int64_t n = m.parameters.names.size(), M = m.parameters.npoi + m.parameters.npou;
  VectorXd xi(n);
  xi[0] = 1.2;
  for (int64_t i = 1; i < M; ++i) xi[i] = smooth ? 0.2 * std::sin(1.3 * i) : 0.85 + 0.06 * i;
  for (int64_t s = M; s < n; ++s) xi[s] = s % 2 ? 0.4 : -0.7;
  return xi;
}

double rel_err(double a, double b, double scale) {
  return std::abs(a - b) / std::max({std::abs(b), scale, 1e-3});
}

void check_nll_derivatives(const Config& c) {
  SCOPED_TRACE(describe(c));
  auto model = abcd_model(c);
  const VectorXd xi = abcd_point(*model, c.abcd.rfind("Smooth", 0) == 0);
  const int64_t n = xi.size();
  auto shard = make_cpu_shard(model, 0, model->input->nbins, 2);
  VectorXd g;
  const double f = shard->value_grad(xi, g);
  ASSERT_TRUE(std::isfinite(f));
  ASSERT_EQ(g.size(), n);
  const double gscale = g.cwiseAbs().maxCoeff();
  const auto value = [&](const VectorXd& x) { return shard->value(x); };
  const auto grad = [&](const VectorXd& x) {
    VectorXd gx;
    shard->value_grad(x, gx);
    return gx;
  };
  for (int64_t i = 0; i < n; ++i) {
    const double fd = test::central_partial(value, xi, i, 1e-5, test::FdStep::relative);
    EXPECT_LT(rel_err(g[i], fd, 1e-3 * gscale), 2e-6) << "grad " << i << " analytic " << g[i] << " fd " << fd;
  }
  VectorXd gh;
  MatrixXd H;
  shard->value_grad_hess(xi, gh, H, true);
  const double hscale = H.cwiseAbs().maxCoeff();
  EXPECT_LT((H - H.transpose()).cwiseAbs().maxCoeff(), 1e-12 * hscale);
  VectorXd gv;
  MatrixXd HV;
  const MatrixXd V = MatrixXd::Random(n, 3);
  shard->value_grad_hvp(xi, V, gv, HV);
  EXPECT_LT((HV - H * V).cwiseAbs().maxCoeff(), 1e-10 * hscale * 3);
  for (int64_t i = 0; i < n; ++i) {
    const VectorXd fd = test::central_partial(grad, xi, i, 1e-5, test::FdStep::relative);
    for (int64_t j = 0; j < n; ++j)
      EXPECT_LT(rel_err(H(j, i), fd[j], 1e-3 * hscale), 2e-6)
          << "hess " << j << "," << i << " analytic " << H(j, i) << " fd " << fd[j];
  }
}

TEST(CpuShardAbcd, NllDerivativesAgreeWithFiniteDifferences) {
  std::vector<Config> configs;
  for (bool sparse : {false, true})
    for (auto [type, mode] : {std::pair{BBType::gamma, BBMode::lite}, std::pair{BBType::gamma, BBMode::full},
                              std::pair{BBType::normal_multiplicative, BBMode::full},
                              std::pair{BBType::normal_additive, BBMode::lite}}) {
      Config c;
      c.sparse = sparse;
      c.bb_type = type;
      c.bb_mode = mode;
      configs.push_back(c);
    }
  Config c;
  c.bb = false;
  configs.push_back(c);
  c.normal_systematics = true;  // ρ per (bin, process)
  configs.push_back(c);
  c.bb = true;
  c.yield_correction = true;
  configs.push_back(c);
  c = Config{};
  c.likelihood = DataLikelihood::chisq;
  configs.push_back(c);
  c.likelihood = DataLikelihood::covariance;
  c.bb_type = BBType::normal_additive;
  configs.push_back(c);
  c = Config{};
  c.abcd = "ExtendedABCD";
  configs.push_back(c);
  c.yield_correction = true;
  c.bb_mode = BBMode::full;
  configs.push_back(c);
  for (const char* smooth : {"SmoothABCD", "SmoothExtendedABCD", "SmoothABCDIsoMT", "ABCDIsoMT"}) {
    c = Config{};
    c.abcd = smooth;
    configs.push_back(c);
  }
  c = Config{};
  c.abcd = "SmoothExtendedABCD";
  c.sparse = true;
  c.yield_correction = true;
  c.bb_mode = BBMode::full;
  configs.push_back(c);
  for (const auto& config : configs) check_nll_derivatives(config);
}

TEST(CpuShardAbcd, ShardsSumToTheWhole) {
  for (const char* name : {"ABCD", "SmoothExtendedABCD"}) {
    SCOPED_TRACE(name);
    Config c;
    c.abcd = name;
    auto model = abcd_model(c);
    const VectorXd xi = abcd_point(*model, on_isomt_input(c));
    const int64_t n = xi.size(), B = model->input->nbins, cut = on_isomt_input(c) ? 17 : 3;
    auto whole = make_cpu_shard(model, 0, B, 1);
    auto first = make_cpu_shard(model, 0, cut, 1);
    auto second = make_cpu_shard(model, cut, B, 1);
    const MatrixXd V = MatrixXd::Random(n, 2);
    VectorXd g, g1, g2;
    MatrixXd HV, HV1, HV2;
    const double f = whole->value_grad_hvp(xi, V, g, HV);
    const double f1 = first->value_grad_hvp(xi, V, g1, HV1);
    const double f2 = second->value_grad_hvp(xi, V, g2, HV2);
    EXPECT_NEAR(f1 + f2, f, 1e-12 * std::abs(f));
    EXPECT_LT((g1 + g2 - g).cwiseAbs().maxCoeff(), 1e-10 * g.cwiseAbs().maxCoeff());
    EXPECT_LT((HV1 + HV2 - HV).cwiseAbs().maxCoeff(), 1e-10 * HV.cwiseAbs().maxCoeff());
  }
}

TEST(CpuShardAbcd, YieldJacobiansAgreeWithFiniteDifferences) {
  for (const char* name : {"ABCD", "SmoothABCD"})
    for (bool bb : {false, true}) {
      SCOPED_TRACE(std::string(name) + (bb ? " with BB" : " without BB"));
      Config c;
      c.abcd = name;
      c.bb = bb;
      auto model = abcd_model(c);
      const VectorXd xi = abcd_point(*model, on_isomt_input(c));
      auto shard = make_cpu_shard(model, 0, model->input->nbins, 1);
      YieldModel& ym = *shard->yield_model();
      const int64_t Bf = model->input->nbinsfull;
      const auto mode = YieldModel::BetaMode::profiled;
      const auto yields = [&](const VectorXd& x) {
        VectorXd nu;
        ym.expected_yields(x, 0, Bf, mode, &nu);
        return nu;
      };
      const MatrixXd J = ym.yield_jacobian(xi, 0, Bf, mode);
      const MatrixXd J_fd = test::central_jacobian(yields, xi, 1e-6);
      EXPECT_LT((J - J_fd).cwiseAbs().maxCoeff(), 1e-6 * J.cwiseAbs().maxCoeff());
      const auto process_yields = [&](const VectorXd& x) {
        VectorXd nu;
        MatrixXd per_process;
        ym.expected_yields(x, 0, Bf, YieldModel::BetaMode::stored, &nu, &per_process);
        VectorXd out(per_process.size());
        for (int64_t b = 0; b < per_process.rows(); ++b)
          out.segment(b * per_process.cols(), per_process.cols()) = per_process.row(b).transpose();
        return out;
      };
      const MatrixXd Jp = ym.process_yield_jacobian(xi, 0, Bf, YieldModel::BetaMode::stored);
      const MatrixXd Jp_fd = test::central_jacobian(process_yields, xi, 1e-6);
      EXPECT_LT((Jp - Jp_fd).cwiseAbs().maxCoeff(), 1e-6 * Jp.cwiseAbs().maxCoeff());
    }
}

}  // namespace
}  // namespace rabbit
