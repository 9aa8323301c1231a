// The regularisation penalty's β terms of the postfit histograms (src/postfit/penalty_beta_terms.cpp;
// docs/likelihood.md "Regularisation and β") against central differences: the row sums of ∂²P/∂β² (rabbit's
// pd2ldbeta2 through the penalty) and the cross derivatives ∂²P/∂x∂β of the masked channel's entries, for
// the BB types and modes whose yields β scales or shifts.
#include "src/postfit/penalty_beta_terms.hpp"

#include <gtest/gtest.h>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/regularizer.hpp"
#include "rabbit/postfit/regularizer_mapping.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = YieldModel::BetaMode;

TEST(PenaltyBetaTerms, AgreeWithFiniteDifferences) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
      SCOPED_TRACE(::testing::Message() << "mode " << int(mode) << " type " << int(type));
      ShardConfig c;
      c.bb_mode = mode;
      c.bb_type = type;
      auto in = make_test_input(c);
      set_obs_and_masked_channels(*in);
      auto model = make_test_model(in, c);
      model->options.regularization_strength = 0.4;
      model->regularizers = make_regularizers(*in, {RegularizationSpec{"SVD", {"Select", "masked"}}},
                                              postfit::regularizer_mapping);
      std::vector<std::unique_ptr<ShardEvaluator>> shards;
      shards.push_back(make_cpu_shard(model, 0, in->nbins, 1));
      Fitter fitter(model, std::move(shards));
      YieldModel& shard = fitter.yield_model();
      const int64_t nobs = in->nbins, nbf = in->nbinsfull, P = in->nproc;
      const VectorXd x0 = test_point(*model) * 0.5;
      VectorXd nu0;
      shard.expected_yields(x0, 0, nbf, Mode::stored, &nu0);
      model->regularizers[0]->set_expectations(x0, &nu0);
      const VectorXd xi = test_point(*model);
      const VectorXd beta = shard.stored_beta();
      const int64_t ne = beta.size(), n = xi.size();
      const auto r = postfit::bb_response(*model, shard, fitter, xi, xi, true);

      // ν, ∇_ν P and ∇_x P = Jᵀ ∇_ν P (x = ξ here) with β in place of the stored β
      auto nu_at = [&](const VectorXd& b) {
        shard.set_stored_beta(b);
        VectorXd nu;
        shard.expected_yields(xi, 0, nbf, Mode::stored, &nu);
        return nu;
      };
      auto penalty_grad = [&](const VectorXd& nu) {
        VectorXd g = VectorXd::Zero(nbf);
        observable_penalty(*model, nu, &g);
        return g;
      };
      auto x_grad = [&](const VectorXd& b) {
        const VectorXd g = penalty_grad(nu_at(b));
        return VectorXd(shard.yield_jacobian(xi, 0, nbf, Mode::stored).transpose() * g);
      };
      const double h = 1e-3;
      auto unit = [&](int64_t e) { return VectorXd(VectorXd::Unit(ne, e)); };
      MatrixXd D(nbf, ne);  // ∂ν/∂β (ν is linear in β: exact up to rounding)
      for (int64_t e = 0; e < ne; ++e)
        D.col(e) = (nu_at(beta + h * unit(e)) - nu_at(beta - h * unit(e))) / (2 * h);
      VectorXd ones = VectorXd::Zero(ne);  // the masked channel's entries
      for (int64_t b = nobs; b < nbf; ++b)
        for (int64_t p = 0; p < (r.full ? P : 1); ++p) ones(r.entry(b, p)) = 1.0;
      const VectorXd rows_fd =
          (D.transpose() * (penalty_grad(nu_at(beta + h * ones)) - penalty_grad(nu_at(beta - h * ones)))) /
          (2 * h);
      const VectorXd nu = nu_at(beta);
      const VectorXd rows = postfit::penalty_beta_row_sums(*model, nu, r);
      ASSERT_EQ(rows.size(), ne);
      EXPECT_GT(rows_fd.cwiseAbs().maxCoeff(), 1e-6);
      EXPECT_LT((rows - rows_fd).cwiseAbs().maxCoeff(), 1e-7 * rows_fd.cwiseAbs().maxCoeff())
          << rows.transpose() << "\n"
          << rows_fd.transpose();

      const MatrixXd J = shard.yield_jacobian(xi, 0, nbf, Mode::stored);
      const MatrixXd R = postfit::penalty_masked_beta_response(*model, shard, xi, VectorXd::Ones(n), nu, J,
                                                               MatrixXd::Identity(n, n), r);
      int64_t k = 0;
      for (int64_t b = nobs; b < nbf; ++b)
        for (int64_t p = 0; p < (r.full ? P : 1); ++p) {
          const int64_t e = r.entry(b, p);
          if (D(b, e) == 0.0 || r.q(e) == 0.0) continue;
          ASSERT_LT(k, R.cols());
          const VectorXd K_fd = (x_grad(beta + h * unit(e)) - x_grad(beta - h * unit(e))) / (2 * h);
          const double scale = std::sqrt(r.c(e) / (r.q(e) * r.q(e)));
          EXPECT_LT((R.col(k) - scale * K_fd).cwiseAbs().maxCoeff(),
                    1e-7 * (scale * K_fd).cwiseAbs().maxCoeff())
              << "entry " << e << "\n"
              << R.col(k).transpose() << "\n"
              << (scale * K_fd).transpose();
          ++k;
        }
      EXPECT_EQ(k, R.cols());
      shard.set_stored_beta(beta);
    }
}

}  // namespace
}  // namespace rabbit::testing
