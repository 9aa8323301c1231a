// Outer-loop contract: callbacks, method names, warnings, early stopping/restarts, the
// model-failure guard; preconditioner algebra; dense Hessian from HVPs.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <memory>
#include <new>
#include <stdexcept>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "rabbit/minimize/preconditioner.hpp"
#include "support/analytic_objectives.hpp"
#include "support/finite_differences.hpp"
#include "support/log_capture.hpp"

using namespace rabbit;
using rabbit::test::LogCapture;
using rabbit::test::Quadratic;
using rabbit::test::Rosenbrock;
using rabbit::test::WithDirectHessian;

namespace {

Eigen::MatrixXd spd_matrix(int n, double cond, unsigned seed) {
  std::mt19937 rng(seed);
  Eigen::VectorXd w(n);
  for (int i = 0; i < n; ++i) w[i] = std::pow(cond, static_cast<double>(i) / (n - 1));
  return test::with_spectrum(w, rng);
}

}  // namespace

TEST(MinimizerMethods, NamesAndAliases) {
  EXPECT_EQ(parse_minimizer_method("trust-krylov"), MinimizerMethod::trust_krylov);
  EXPECT_EQ(parse_minimizer_method("tf-trust-krylov"), MinimizerMethod::trust_krylov);
  EXPECT_EQ(parse_minimizer_method("trust-ncg"), MinimizerMethod::trust_ncg);
  EXPECT_EQ(parse_minimizer_method("tf-trust-ncg"), MinimizerMethod::trust_ncg);
  EXPECT_EQ(parse_minimizer_method("trust-exact"), MinimizerMethod::trust_exact);
  EXPECT_EQ(parse_minimizer_method("tf-trust-exact"), MinimizerMethod::trust_exact);
  for (const char* refused : {"BFGS", "L-BFGS-B", "CG", "dogleg", "nelder-mead"}) {
    try {
      parse_minimizer_method(refused);
      FAIL() << refused << " accepted";
    } catch (const OptionError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(refused), std::string::npos);
      EXPECT_NE(what.find("trust-krylov"), std::string::npos);
      EXPECT_NE(what.find("tf-trust-exact"), std::string::npos);
    }
  }
  Rosenbrock objective(2);
  MinimizerOptions options;
  options.method = "BFGS";
  EXPECT_THROW(minimize(objective, Eigen::Vector2d(0, 0), options), OptionError);
}

TEST(MinimizerOptionsValidation, TrustRegionArguments) {
  Rosenbrock objective(2);
  auto run = [&](auto tweak) {
    MinimizerOptions options;
    tweak(options);
    return minimize(objective, Eigen::Vector2d(0, 0), options);
  };
  EXPECT_THROW(run([](MinimizerOptions& o) { o.eta = 0.25; }), OptionError);
  EXPECT_THROW(run([](MinimizerOptions& o) { o.eta = -0.1; }), OptionError);
  EXPECT_THROW(run([](MinimizerOptions& o) { o.max_trust_radius = 0; }), OptionError);
  EXPECT_THROW(run([](MinimizerOptions& o) { o.initial_trust_radius = 0; }), OptionError);
  EXPECT_THROW(run([](MinimizerOptions& o) { o.initial_trust_radius = 2000; }), OptionError);
  EXPECT_THROW(run([](MinimizerOptions& o) { o.stall_rel_tol = -1; }), OptionError);
  EXPECT_THROW(run([](MinimizerOptions& o) { o.precondition.transform = "cholesky"; }), OptionError);
}

TEST(Minimizer, FtolWarningOnlyWhenGiven) {
  Rosenbrock objective(2);
  {
    LogCapture capture;
    MinimizerOptions options;
    minimize(objective, Eigen::Vector2d(-1.2, 1), options);
    EXPECT_FALSE(capture.contains("ftol"));
  }
  {
    LogCapture capture;
    MinimizerOptions options;
    options.ftol = 1e-9;
    minimize(objective, Eigen::Vector2d(-1.2, 1), options);
    EXPECT_TRUE(capture.contains("does not implement ftol; ignoring --minimizerFtol"));
  }
}

TEST(Minimizer, CallbackExceptionPropagatesAndSeesAcceptedIterates) {
  for (const char* method : {"trust-krylov", "trust-ncg", "trust-exact"}) {
    WithDirectHessian<Rosenbrock> objective(5);
    int calls = 0;
    double previous = std::numeric_limits<double>::infinity();
    MinimizerOptions options;
    options.method = method;
    options.callback = [&](const IterationInfo& info) {
      ++calls;
      EXPECT_TRUE(std::isfinite(info.f));
      EXPECT_LE(info.f, previous);  // the accepted iterate's value never increases
      EXPECT_NEAR(info.f, objective.f(*info.x), 1e-12 * (1 + std::abs(info.f)));
      previous = info.f;
      EXPECT_EQ(info.iteration, calls);
      if (calls == 4) throw std::runtime_error("stop here");
    };
    Eigen::VectorXd x0(5);
    x0 << -1.2, 1, -0.5, 2, 0.3;
    EXPECT_THROW(minimize(objective, x0, options), std::runtime_error);
    EXPECT_EQ(calls, 4) << method;
  }
}

TEST(Minimizer, MaxiterAndGtol) {
  WithDirectHessian<Rosenbrock> objective(2);
  MinimizerOptions options;
  options.certify = MinimizerOptions::Certify::off;  // the trust-region loop's own stops
  options.maxiter = 3;
  MinimizerResult r = minimize(objective, Eigen::Vector2d(-1.2, 1), options);
  EXPECT_EQ(r.status, status_maxiter);
  EXPECT_EQ(r.iterations, 3);
  options.maxiter = -1;
  options.gtol = 1e-3;
  r = minimize(objective, Eigen::Vector2d(-1.2, 1), options);
  EXPECT_EQ(r.status, status_success);
  EXPECT_TRUE(r.success);
  EXPECT_LT(r.grad.norm(), 1e-3);
  EXPECT_EQ(r.message, "Optimization terminated successfully.");
}

TEST(Minimizer, ProposalsCostOneValueAndNoHvp) {
  // trust-ncg/krylov: each accepted iterate one value_grad, each proposal one value; the model
  // value of the step comes from the solver.
  for (const char* method : {"trust-krylov", "trust-ncg"}) {
    WithDirectHessian<Rosenbrock> objective(10);
    MinimizerOptions options;
    options.method = method;
    options.certify = MinimizerOptions::Certify::off;  // the loop alone (certificates count HVPs/Hessians)
    const MinimizerResult r = minimize(objective, Eigen::VectorXd::Zero(10), options);
    EXPECT_EQ(objective.value_calls + objective.grad_calls, r.nfev);
    EXPECT_EQ(objective.hvp_columns, r.nhvp);
    EXPECT_EQ(objective.hess_calls, 0);
  }
}

// A Hessian-vector product that returns NaN: no model can predict descent.
class BrokenHvp : public WithDirectHessian<Rosenbrock> {
 public:
  BrokenHvp() : WithDirectHessian<Rosenbrock>(4) {}
  void hvp(const Eigen::VectorXd&, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) override {
    HV = Eigen::MatrixXd::Constant(V.rows(), V.cols(), std::numeric_limits<double>::quiet_NaN());
  }
};

TEST(Minimizer, ModelFailureEndsWithStatus4) {
  BrokenHvp objective;
  MinimizerOptions options;
  options.method = "trust-ncg";
  options.certify = MinimizerOptions::Certify::off;
  LogCapture capture;
  const MinimizerResult r = minimize(objective, Eigen::VectorXd::Zero(4), options);
  EXPECT_EQ(r.status, status_model_failure);
  EXPECT_FALSE(r.success);
  EXPECT_FALSE(r.converged);
  EXPECT_TRUE(capture.contains("trust-exact"));
}

TEST(Minimizer, EarlyStoppingAndRestarts) {
  // NaN everywhere except a tiny box: every proposal of radius ≥ 1e-3 is rejected.
  Eigen::MatrixXd A = Eigen::Vector2d(1.0, 4.0).asDiagonal();
  WithDirectHessian<Quadratic> objective(A, Eigen::Vector2d(1.0, -2.0), 1e-3);
  MinimizerOptions options;
  options.early_stopping = 3;
  options.certify = MinimizerOptions::Certify::off;
  const MinimizerResult r = minimize(objective, Eigen::Vector2d(0, 0), options);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.status, status_stopped_early);
  EXPECT_EQ(r.restarts, 1);  // the restart did not reduce the loss: stop
  // Each round: N + 1 recorded callbacks, the (N + 2)-th iteration sees the stall.
  EXPECT_EQ(r.iterations, 10);
  EXPECT_EQ(r.loss_history.size(), 8u);
  EXPECT_EQ(r.x, Eigen::Vector2d(0, 0));

  options.max_restarts = 0;
  EXPECT_EQ(minimize(objective, Eigen::Vector2d(0, 0), options).restarts, 0);

  // Disabled early stopping never stalls.
  options.early_stopping = -1;
  const MinimizerResult free_run = minimize(objective, Eigen::Vector2d(0, 0), options);
  EXPECT_FALSE(free_run.stopped_early);
  EXPECT_NE(free_run.status, status_stopped_early);
}

TEST(Minimizer, NonFiniteStartThrows) {
  Eigen::MatrixXd A = Eigen::Matrix2d::Identity();
  Quadratic objective(A, Eigen::Vector2d(1.0, 1.0), 1.0);
  EXPECT_THROW(minimize(objective, Eigen::Vector2d(5, 5), MinimizerOptions{}), NumericalError);
}

// ---------------------------------------------------------------------------------------------
// Preconditioner

TEST(Preconditioner, IdentityIsANoOp) {
  Eigen::VectorXd x_ref = Eigen::VectorXd::LinSpaced(5, -1, 1);
  Preconditioner pc(x_ref);
  Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(5, 3, 4);
  EXPECT_EQ(pc.to_physical(y), x_ref + y);
  EXPECT_EQ(pc.from_physical(x_ref + y), y);
  PreconditionerOptions o;
  o.enabled = true;
  EXPECT_TRUE(Preconditioner::build(x_ref, Eigen::MatrixXd::Zero(5, 5), o).is_identity());  // all-zero block
}

TEST(Preconditioner, WhitensAFullBlockAtCond1e8) {
  const int n = 12;
  const Eigen::MatrixXd H = spd_matrix(n, 1e8, 3);
  PreconditionerOptions o;
  o.enabled = true;
  o.ridge = 0.0;
  o.blocks = "none";
  const Eigen::VectorXd x_ref = Eigen::VectorXd::Constant(n, 0.5);
  const Preconditioner pc = Preconditioner::build(x_ref, H, o);
  ASSERT_EQ(pc.blocks().size(), 1u);
  Eigen::MatrixXd Hy = H;
  pc.hess_to_internal(Hy);
  EXPECT_LT((Hy - Eigen::MatrixXd::Identity(n, n)).cwiseAbs().maxCoeff(), 1e-6);
  Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(n, -2, 3);
  EXPECT_LT((pc.to_physical(pc.from_physical(x)) - x).norm(), 1e-10 * x.norm());
  Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(n, 0.1, 0.2);
  EXPECT_LT((pc.from_physical(pc.to_physical(y)) - y).norm(), 1e-10);
}

TEST(Preconditioner, PartialBlocksDoNotMixAndChainRuleHolds) {
  const int n = 20;
  Eigen::MatrixXd H = Eigen::MatrixXd::Zero(n, n);
  H.block(0, 0, 7, 7) = spd_matrix(7, 1e4, 5);
  H.block(10, 10, 6, 6) = spd_matrix(6, 1e3, 6);
  for (int i : {7, 8, 9, 16, 17, 18, 19}) H(i, i) = 1.0 + i;
  H(8, 2) = H(2, 8) = 0.001;  // weak coupling to the rest: correlation below 0.1
  PreconditionerOptions o;
  o.enabled = true;
  o.index_sets = {{0, 1, 2, 3, 4, 5, 6}, {10, 11, 12, 13, 14, 15}};
  o.ridge = 0.0;
  o.blocks = "expressions";
  const Eigen::VectorXd x_ref = Eigen::VectorXd::Zero(n);
  const Preconditioner pc = Preconditioner::build(x_ref, H, o);
  ASSERT_EQ(pc.blocks().size(), 2u);
  Eigen::MatrixXd Hy = H;
  pc.hess_to_internal(Hy);
  EXPECT_LT((Hy.block(0, 0, 7, 7) - Eigen::MatrixXd::Identity(7, 7)).cwiseAbs().maxCoeff(), 1e-8);
  EXPECT_LT((Hy.block(10, 10, 6, 6) - Eigen::MatrixXd::Identity(6, 6)).cwiseAbs().maxCoeff(), 1e-8);
  EXPECT_LT(Hy.block(0, 10, 7, 6).cwiseAbs().maxCoeff(), 1e-12);  // no cross-mixing
  EXPECT_EQ(Hy(19, 19), H(19, 19));                               // rest untouched
  EXPECT_LT((Hy - Hy.transpose()).cwiseAbs().maxCoeff(), 1e-12);

  // Internal objective: gradient vs central differences, HVP vs dense transform.
  std::mt19937 rng(1);
  Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(n, -1, 1);
  WithDirectHessian<Quadratic> physical(H, b);
  PreconditionedObjective internal(physical, pc);
  const Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(n, 0.3, -0.2);
  Eigen::VectorXd g;
  internal.value_grad(y, g);
  const auto internal_value = [&](const Eigen::VectorXd& z) { return internal.value(z); };
  for (int i = 0; i < n; ++i) {
    const double fd = test::central_partial(internal_value, y, i, 1e-5);
    EXPECT_NEAR(g[i], fd, 1e-5 * std::abs(fd) + 1e-7);
  }
  Eigen::MatrixXd dense;
  internal.value_grad_hess(y, g, dense);
  Eigen::MatrixXd HV;
  internal.hvp(y, Eigen::MatrixXd::Identity(n, n), HV);
  EXPECT_LT((dense - HV).cwiseAbs().maxCoeff(), 1e-8);
}

TEST(Preconditioner, IndefiniteBlockIsRidgedAndAutoBlocksSplit) {
  const int n = 8;
  Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(n, -0.03, 1.0);
  std::mt19937 rng(9);
  Eigen::MatrixXd H = Eigen::MatrixXd::Zero(2 * n, 2 * n);
  H.topLeftCorner(n, n) = test::with_spectrum(w, rng);
  H.bottomRightCorner(n, n) = spd_matrix(n, 100, 10);
  PreconditionerOptions o;
  o.enabled = true;
  const Preconditioner pc = Preconditioner::build(Eigen::VectorXd::Zero(2 * n), H, o);
  EXPECT_FALSE(pc.is_identity());
  for (const auto& block : pc.blocks()) {
    for (int64_t i : block.indices) {
      // auto blocking never joins the two decoupled halves
      EXPECT_EQ(i < n, block.indices.front() < n);
    }
  }
}

TEST(Minimizer, PreconditionerRebuiltAtTheRestartPoint) {
  // The reference-matrix hook records where the preconditioner is built.
  Eigen::MatrixXd A = Eigen::Vector2d(1.0, 4.0).asDiagonal();
  WithDirectHessian<Quadratic> objective(A, Eigen::Vector2d(1.0, -2.0));
  MinimizerOptions options;
  options.precondition.enabled = true;
  std::vector<Eigen::VectorXd> points;
  options.precondition.reference_matrix = [&](const Eigen::VectorXd& x) {
    points.push_back(x);
    return objective.hessian(x);
  };
  const MinimizerResult r = minimize(objective, Eigen::Vector2d(3, 3), options);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0], Eigen::Vector2d(3, 3));
  EXPECT_NEAR(r.x[0], -1.0, 1e-10);
  EXPECT_NEAR(r.x[1], 0.5, 1e-10);
  EXPECT_LE(r.iterations, 3);  // exact whitening of a quadratic: Newton in one step
}

// ---------------------------------------------------------------------------------------------
// Dense Hessian from batched HVPs (the Objective default)

class HvpOnlyRosenbrock : public Rosenbrock {
 public:
  using Rosenbrock::Rosenbrock;
  int64_t fail_above = -1;  // throw bad_alloc for batches wider than this
  int64_t widest = 0;
  double value_grad_hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override {
    if (fail_above > 0 && V.cols() > fail_above) throw std::bad_alloc();
    widest = std::max<int64_t>(widest, V.cols());
    return Rosenbrock::value_grad_hvp(x, V, grad, HV);
  }
  void hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) override {
    Eigen::VectorXd g;
    value_grad_hvp(x, V, g, HV);
  }
};

TEST(DenseHessian, FromHvpsEqualsAnalyticAndHalvesOnAllocationFailure) {
  const int n = 37;
  Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(n, -1.5, 2.0);
  HvpOnlyRosenbrock objective(n);
  const Eigen::MatrixXd expected = objective.hessian(x);
  for (int64_t batch : {1, 2, 1000}) {
    objective.set_hvp_batch(batch);
    Eigen::VectorXd g;
    Eigen::MatrixXd H;
    const double f = objective.value_grad_hess(x, g, H);
    EXPECT_DOUBLE_EQ(f, objective.f(x));
    EXPECT_LT((g - objective.gradient(x)).cwiseAbs().maxCoeff(), 1e-12 * (1 + g.cwiseAbs().maxCoeff()));
    EXPECT_LT((H - expected).cwiseAbs().maxCoeff(), 1e-12 * expected.cwiseAbs().maxCoeff())
        << "batch " << batch;
  }
  objective.set_hvp_batch(16);
  objective.fail_above = 5;
  objective.widest = 0;
  Eigen::VectorXd g;
  Eigen::MatrixXd H;
  objective.value_grad_hess(x, g, H);
  EXPECT_LT((H - expected).cwiseAbs().maxCoeff(), 1e-12 * expected.cwiseAbs().maxCoeff());
  EXPECT_LE(objective.widest, 5);
  EXPECT_LE(objective.hvp_batch(), 4);  // the reduced batch persists
}

TEST(Preconditioner, SpectralEqualsRidgeOnAPositiveDefiniteBlock) {
  const int n = 9;
  const Eigen::MatrixXd H = spd_matrix(n, 1e5, 21);
  PreconditionerOptions ridge;
  ridge.enabled = true;
  ridge.ridge = 0.0;
  ridge.blocks = "none";
  PreconditionerOptions spectral = ridge;
  spectral.transform = "spectral";
  const Eigen::VectorXd x_ref = Eigen::VectorXd::Zero(n);
  const Preconditioner a = Preconditioner::build(x_ref, H, ridge);
  const Preconditioner b = Preconditioner::build(x_ref, H, spectral);
  ASSERT_EQ(a.blocks().size(), 1u);
  ASSERT_EQ(b.blocks().size(), 1u);
  EXPECT_LT((a.blocks()[0].L - b.blocks()[0].L).cwiseAbs().maxCoeff(),
            1e-8 * a.blocks()[0].L.cwiseAbs().maxCoeff());
  // An indefinite block keeps |Λ|: whitened spectrum is ±1.
  Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(n, 1.0, 50.0);
  w[0] = -2.0;
  std::mt19937 rng(4);
  const Eigen::MatrixXd Hi = test::with_spectrum(w, rng);
  const Preconditioner c = Preconditioner::build(x_ref, Hi, spectral);
  ASSERT_EQ(c.blocks().size(), 1u);
  Eigen::MatrixXd Hy = Hi;
  c.hess_to_internal(Hy);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (Hy + Hy.transpose()));
  EXPECT_NEAR(es.eigenvalues()[0], -1.0, 1e-8);
  EXPECT_NEAR(es.eigenvalues()[n - 1], 1.0, 1e-8);
}
