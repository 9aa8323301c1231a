// The per-point cache: repeated evaluations at one ξ reuse phase A and the profile; results must be
// bit-identical to an uncached evaluation, and new observations or β centres must invalidate it.
#include <gtest/gtest.h>

#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

struct Result {
  double f;
  VectorXd g;
  MatrixXd hv;
};
Result hvp(CpuShardEvaluator& shard, const VectorXd& xi, const MatrixXd& V) {
  Result r;
  r.f = shard.value_grad_hvp(xi, V, r.g, r.hv);
  return r;
}
void expect_identical(const Result& a, const Result& b) {
  EXPECT_EQ(a.f, b.f);
  EXPECT_EQ(a.g, b.g);
  EXPECT_EQ(a.hv, b.hv);
}

TEST(PointCache, RepeatedEvaluationsAreBitIdenticalAndInvalidated) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
      for (bool sparse : {false, true})
        for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq}) {
          ShardConfig c;
          c.bb_mode = mode;
          c.bb_type = type;
          c.sparse = sparse;
          c.likelihood = lik;
          SCOPED_TRACE(::testing::Message() << int(mode) << int(type) << sparse << int(lik));
          auto in = make_test_input(c);
          auto model = make_test_model(in, c);
          CpuShardEvaluator cached(model, 1, in->nbins, 2);
          const VectorXd xi = test_point(*model), xi2 = xi * 0.97;
          const MatrixXd V = MatrixXd::Random(xi.size(), 3), V2 = MatrixXd::Random(xi.size(), 1);
          auto fresh = [&] { return CpuShardEvaluator(model, 1, in->nbins, 2); };
          // fill with value_grad, then HVPs of several directions at that point
          VectorXd g;
          cached.value_grad(xi, g);
          {
            auto f1 = fresh();
            expect_identical(hvp(cached, xi, V), hvp(f1, xi, V));
            auto f2 = fresh();
            expect_identical(hvp(cached, xi, V2), hvp(f2, xi, V2));
            auto f3 = fresh();
            EXPECT_EQ(cached.value(xi), f3.value(xi));
          }
          // another point, then back
          {
            auto f1 = fresh();
            expect_identical(hvp(cached, xi2, V), hvp(f1, xi2, V));
            auto f2 = fresh();
            expect_identical(hvp(cached, xi, V2), hvp(f2, xi, V2));
          }
          // new observations at the same point
          VectorXd nobs = in->data_obs * 1.1;
          if (lik == DataLikelihood::chisq) nobs.array() += 1.0;
          cached.set_observed(nobs, VectorXd());
          {
            auto f1 = fresh();
            f1.set_observed(nobs, VectorXd());
            expect_identical(hvp(cached, xi, V), hvp(f1, xi, V));
          }
          // new β centres at the same point
          VectorXd b0 = cached.beta_centres();
          for (int64_t i = 0; i < b0.size(); ++i) b0[i] += 0.01 * ((i % 3) + 1);
          cached.set_beta_centres(b0);
          {
            auto f1 = fresh();
            f1.set_observed(nobs, VectorXd());
            f1.set_beta_centres(b0);
            expect_identical(hvp(cached, xi, V), hvp(f1, xi, V));
          }
          // the Hessian path is not cached and agrees with the HVP columns
          MatrixXd H;
          cached.value_grad_hess(xi, g, H);
          const MatrixXd I = MatrixXd::Identity(xi.size(), xi.size());
          VectorXd g2;
          MatrixXd HI;
          cached.value_grad_hvp(xi, I, g2, HI);
          EXPECT_LT((H - HI).cwiseAbs().maxCoeff(), 1e-9 * std::max(1.0, H.cwiseAbs().maxCoeff()));
        }
}

}  // namespace
}  // namespace rabbit::testing
