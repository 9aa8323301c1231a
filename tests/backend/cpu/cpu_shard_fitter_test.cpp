// The CPU shard inside the real Fitter and build_model: x-space derivatives with squared POIs,
// frozen parameters and an external term with a non-symmetric H (docs/likelihood.md "Tests").
#include <gtest/gtest.h>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/model.hpp"
#include "support/finite_differences.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

void check_fitter(const ShardConfig& c, bool freeze, bool external) {
  auto in = make_test_input(c);
  if (external) {
    ExternalTerm t;
    t.name = "ext";
    t.params = {"sig", "s1", "s2"};
    t.grad_values = VectorXd::Constant(3, 0.3);
    MatrixXd h(3, 3);
    h << 2.0, 0.5, 0.1, -0.2, 1.5, 0.3, 0.4, 0.0, 1.0;  // not symmetric
    t.hess = h;
    in->external_terms.push_back(t);
  }
  ModelOptions opt;
  opt.bb_mode = c.bb_mode;
  opt.bb_type = c.bb_type;
  opt.bin_by_bin_stat = c.bb;
  if (freeze) opt.freeze_parameters = {"s2", "sig"};
  auto model = build_model(in, opt);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(make_cpu_shard(model, 0, 4, 1));
  shards.push_back(make_cpu_shard(model, 4, in->nbins, 1));
  Fitter fitter(model, std::move(shards));
  const int64_t n = fitter.size();
  VectorXd x = model->parameters.x_default;
  x[0] = 1.07;
  for (int64_t i = 1; i < n; ++i) x[i] = 0.3 * std::sin(1.0 + i);
  VectorXd g;
  MatrixXd H;
  const double f = fitter.value_grad_hess(x, g, H);
  const auto& frozen = model->parameters.frozen;
  // the external term's Hessian on its parameters (frozen rows keep only this part)
  MatrixXd Hext = MatrixXd::Zero(n, n);
  for (const auto& t : in->external_terms) {
    const MatrixXd hs = 0.5 * (*t.hess + t.hess->transpose());
    for (size_t a = 0; a < t.params.size(); ++a)
      for (size_t b = 0; b < t.params.size(); ++b)
        Hext(model->parameters.index(t.params[a]), model->parameters.index(t.params[b])) += hs(a, b);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (frozen[i]) {
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(H(i, j), Hext(i, j)) << "frozen row " << i;
        EXPECT_EQ(H(j, i), Hext(j, i)) << "frozen column " << i;
      }
      continue;
    }
    const double h = 1e-5;
    const double fd = test::central_partial([&](const VectorXd& y) { return fitter.value(y); }, x, i, h);
    EXPECT_NEAR(g[i], fd, 2e-6 * std::max(1.0, std::abs(fd))) << "grad " << i;
    const VectorXd fdh = test::central_partial(
        [&](const VectorXd& y) {
          VectorXd gy;
          fitter.value_grad(y, gy);
          return gy;
        },
        x, i, h);
    for (int64_t j = 0; j < n; ++j) {
      if (frozen[j]) continue;
      EXPECT_NEAR(H(j, i), fdh[j], 2e-6 * std::max(1.0, std::abs(fdh[j]))) << "hess " << j << "," << i;
    }
  }
  VectorXd gv;
  MatrixXd HV;
  EXPECT_NEAR(fitter.value_grad_hvp(x, MatrixXd::Identity(n, n), gv, HV), f, 1e-12 * std::abs(f));
  EXPECT_LT((HV - H).cwiseAbs().maxCoeff(), 1e-10 * H.cwiseAbs().maxCoeff());
  if (freeze && !external) {
    const int64_t s2 = model->parameters.index("s2");
    ASSERT_GE(s2, 0);
    EXPECT_EQ(g[s2], 0.0);
    EXPECT_EQ(g[0], 0.0);
    EXPECT_EQ(H.row(s2).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(H.col(0).cwiseAbs().maxCoeff(), 0.0);
  }
}

TEST(FitterIntegration, SquaredPoiFrozenAndExternal) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (bool freeze : {false, true})
      for (bool external : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "mode " << int(mode) << " freeze " << freeze << " ext " << external);
        ShardConfig c;
        c.bb_mode = mode;
        c.bb_type = mode == BBMode::full ? BBType::normal_multiplicative : BBType::gamma;
        check_fitter(c, freeze, external);
      }
}

}  // namespace
}  // namespace rabbit::testing
