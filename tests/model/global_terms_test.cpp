// Global terms (docs/likelihood.md "Constraint term", docs/model.md "Global terms") and the SVD regulariser
// (docs/model.md "The regularisation term") vs finite differences.
#include "rabbit/model/global_terms.hpp"

#include <gtest/gtest.h>

#include <Eigen/LU>
#include <cmath>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/regularizer.hpp"
#include "rabbit/postfit/regularizer_mapping.hpp"
#include "support/finite_differences.hpp"
#include "support/small_input.hpp"

namespace rabbit {
namespace {

using Fn = std::function<double(const Eigen::VectorXd&, Eigen::VectorXd*, const Eigen::MatrixXd*,
                                Eigen::MatrixXd*, Eigen::MatrixXd*)>;

/// Value/grad/HVP/Hessian of an "adds to" evaluation against central finite differences.
void check_term(const Fn& f, const Eigen::VectorXd& x) {
  const int64_t n = x.size();
  Eigen::VectorXd g = Eigen::VectorXd::Zero(n);
  Eigen::MatrixXd H = Eigen::MatrixXd::Zero(n, n);
  const double v = f(x, &g, nullptr, nullptr, &H);
  EXPECT_DOUBLE_EQ(v, f(x, nullptr, nullptr, nullptr, nullptr));
  const double h = 1e-5;
  const auto value = [&](const Eigen::VectorXd& y) {
    Eigen::VectorXd gy = Eigen::VectorXd::Zero(n);
    return f(y, &gy, nullptr, nullptr, nullptr);
  };
  const auto grad = [&](const Eigen::VectorXd& y) {
    Eigen::VectorXd gy = Eigen::VectorXd::Zero(n);
    f(y, &gy, nullptr, nullptr, nullptr);
    return gy;
  };
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(g[i], test::central_partial(value, x, i, h), 1e-7 * (1 + std::abs(g[i]))) << "grad " << i;
    const Eigen::VectorXd col = test::central_partial(grad, x, i, h);
    EXPECT_LT((H.col(i) - col).cwiseAbs().maxCoeff(), 1e-6) << "hessian column " << i;
  }
  Eigen::MatrixXd V(n, 2);
  for (int64_t i = 0; i < n; ++i) {
    V(i, 0) = 0.3 * i - 1.0;
    V(i, 1) = std::sin(1.0 + i);
  }
  Eigen::MatrixXd HV = Eigen::MatrixXd::Zero(n, 2);
  Eigen::VectorXd g2 = Eigen::VectorXd::Zero(n);
  f(x, &g2, &V, &HV, nullptr);
  EXPECT_LT((HV - H * V).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((g2 - g).cwiseAbs().maxCoeff(), 1e-14);
}

std::shared_ptr<FitInputData> input_with_external_terms() {
  auto in = test::small_input();
  ExternalTerm t1;
  t1.name = "ext1";
  t1.params = {"sig", "b", "noi"};
  t1.grad_values = Eigen::Vector3d(0.5, -1.0, 2.0);
  Eigen::Matrix3d H;
  H << 2.0, 0.5, 0.0, -0.3, 1.0, 0.2, 0.1, 0.0, 3.0;  // not symmetric on purpose
  t1.hess = Eigen::MatrixXd(H);
  ExternalTerm t2;  // Hessian only, repeats "b" (contributions accumulate)
  t2.name = "ext2";
  t2.params = {"b", "b"};
  t2.hess = Eigen::MatrixXd(Eigen::Matrix2d::Identity());
  in->external_terms = {t1, t2};
  return in;
}

TEST(GlobalTerms, ConstraintTermValueAndDerivatives) {
  ModelOptions options;
  options.set_constraint_minimum = {{"b", 0.5}};
  auto model = build_model(test::small_input(), options);
  Eigen::VectorXd xi(5);
  xi << 1.2, 0.9, 0.3, 4.0, -0.2;  // names sig, sig2, a, noi, b; cw = [0, 0, 1, 0, 1]
  const double expected = 0.5 * (0.3 * 0.3 + (-0.2 - 0.5) * (-0.2 - 0.5));
  EXPECT_DOUBLE_EQ(model->global_terms->xi_terms(xi, nullptr, nullptr, nullptr, nullptr), expected);
  check_term([&](auto&&... a) { return model->global_terms->xi_terms(a...); }, xi);
  // Centres are state: toys move them and the term follows.
  model->parameters.constraint_centres[2] = 0.3;
  EXPECT_DOUBLE_EQ(model->global_terms->xi_terms(xi, nullptr, nullptr, nullptr, nullptr), 0.5 * 0.49);
  model->parameters.reset_state();
  EXPECT_DOUBLE_EQ(model->global_terms->xi_terms(xi, nullptr, nullptr, nullptr, nullptr), expected);
  // No external terms: the x-space part is zero.
  EXPECT_EQ(model->global_terms->x_terms(xi, nullptr, nullptr, nullptr, nullptr), 0.0);
  EXPECT_DOUBLE_EQ(constraint_full_nll_constant(model->parameters), 2 * 0.9189385332046727);
}

TEST(GlobalTerms, ExternalTermsOnStoredX) {
  auto model = build_model(input_with_external_terms(), ModelOptions{});
  Eigen::VectorXd x(5);
  x << 1.2, 0.9, 0.3, 4.0, -0.2;
  // By hand: x_sub = (sig, b, noi) = (1.2, -0.2, 4.0).
  const Eigen::Vector3d xs(1.2, -0.2, 4.0);
  Eigen::Matrix3d H;
  H << 2.0, 0.5, 0.0, -0.3, 1.0, 0.2, 0.1, 0.0, 3.0;
  // Plus ext1's centring constant ½ μᵀHₛμ with μ = −Hₛ⁻¹g (rabbit PR #147; ext2 has no g: 0).
  const Eigen::Matrix3d hs = 0.5 * (H + H.transpose());
  const Eigen::Vector3d mu = -hs.inverse() * Eigen::Vector3d(0.5, -1.0, 2.0);
  const double expected =
      Eigen::Vector3d(0.5, -1.0, 2.0).dot(xs) + 0.5 * xs.dot(H * xs) + 0.5 * 2 * 0.04 + 0.5 * mu.dot(hs * mu);
  EXPECT_NEAR(model->global_terms->x_terms(x, nullptr, nullptr, nullptr, nullptr), expected, 1e-13);
  check_term([&](auto&&... a) { return model->global_terms->x_terms(a...); }, x);
  // --fullNll: ½(k ln 2π − ln det Hₛ) per term (ext2: the 2x2 identity).
  const double ln2pi = std::log(2.0 * M_PI);
  EXPECT_NEAR(model->global_terms->x_terms_full_constant(),
              0.5 * (3 * ln2pi - std::log(hs.determinant())) + 0.5 * (2 * ln2pi), 1e-13);
}

// rabbit PR #147 (docs/model.md "External terms"): which scalars a term gets. Names: sig, sig2, a, noi, b.
TEST(GlobalTerms, ExternalTermGaussianScalars) {
  struct Eval {
    double value, full_constant;
  };
  auto eval = [](const ExternalTerm& t, const Eigen::VectorXd& x) {
    auto in = test::small_input();
    in->external_terms = {t};
    auto model = build_model(in, ModelOptions{});
    return Eval{model->global_terms->x_terms(x, nullptr, nullptr, nullptr, nullptr),
                model->global_terms->x_terms_full_constant()};
  };
  const double ln2pi = std::log(2.0 * M_PI);
  Eigen::Matrix2d h;
  h << 4.0, 1.0, 1.0, 2.0;
  const Eigen::Vector2d mu(0.5, -1.0);
  const double half_mu_h_mu = 0.5 * mu.dot(h * mu);
  Eigen::VectorXd at_mu = Eigen::VectorXd::Zero(5);
  at_mu[2] = mu[0];    // a
  at_mu[4] = mu[1];    // b
  ExternalTerm gauss;  // N(μ, H⁻¹) stored expanded: g = −Hμ
  gauss.name = "gauss";
  gauss.params = {"a", "b"};
  gauss.grad_values = Eigen::VectorXd(-h * mu);
  gauss.hess = Eigen::MatrixXd(h);
  // Dense: derived, the term is ½(x−μ)ᵀH(x−μ) (0 at μ) and lognorm = ½(2 ln 2π − ln 7).
  Eval e = eval(gauss, at_mu);
  EXPECT_NEAR(e.value, 0.0, 1e-14);
  EXPECT_NEAR(e.full_constant, 0.5 * (2 * ln2pi - std::log(7.0)), 1e-14);
  // Stored as sparse without scalars: rabbit leaves it as it was (−½μᵀHμ at μ, no lognorm).
  ExternalTerm sparse = gauss;
  sparse.hess_was_sparse = true;
  e = eval(sparse, at_mu);
  EXPECT_NEAR(e.value, -half_mu_h_mu, 1e-14);
  EXPECT_EQ(e.full_constant, 0.0);
  // Stored scalars win, also over the derivation; one stored, the other derived.
  ExternalTerm stored = gauss;
  stored.const_value = 10.0;
  stored.lognorm = -3.0;
  e = eval(stored, at_mu);
  EXPECT_NEAR(e.value, 10.0 - half_mu_h_mu, 1e-13);
  EXPECT_EQ(e.full_constant, -3.0);
  stored.lognorm.reset();
  EXPECT_NEAR(eval(stored, at_mu).full_constant, 0.5 * (2 * ln2pi - std::log(7.0)), 1e-14);
  sparse.const_value = half_mu_h_mu;
  EXPECT_NEAR(eval(sparse, at_mu).value, 0.0, 1e-14);
  // Singular H with g in its range: the pseudo-inverse centres it (0 on the line a + b = 1);
  // det H = 0, so no lognorm.
  ExternalTerm singular;
  singular.name = "singular";
  singular.params = {"a", "b"};
  singular.hess = Eigen::MatrixXd::Ones(2, 2);
  singular.grad_values = Eigen::VectorXd(Eigen::Vector2d(-1.0, -1.0));  // −H·(1, 0)
  Eigen::VectorXd on_line = Eigen::VectorXd::Zero(5);
  on_line[2] = 0.25;
  on_line[4] = 0.75;
  e = eval(singular, on_line);
  EXPECT_NEAR(e.value, 0.0, 1e-14);
  EXPECT_EQ(e.full_constant, 0.0);
  // Indefinite H (det < 0): no lognorm; no g: no const.
  ExternalTerm indefinite;
  indefinite.name = "indefinite";
  indefinite.params = {"a", "b"};
  indefinite.hess = Eigen::MatrixXd(Eigen::Vector2d(1.0, -1.0).asDiagonal());
  e = eval(indefinite, at_mu);
  EXPECT_NEAR(e.value, 0.5 * (0.25 - 1.0), 1e-14);
  EXPECT_EQ(e.full_constant, 0.0);
  // Gradient only: a tilt with nothing to centre.
  ExternalTerm tilt;
  tilt.name = "tilt";
  tilt.params = {"noi"};
  tilt.grad_values = Eigen::VectorXd::Constant(1, 0.3);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(5);
  x[3] = 2.0;
  e = eval(tilt, x);
  EXPECT_NEAR(e.value, 0.6, 1e-15);
  EXPECT_EQ(e.full_constant, 0.0);
}

TEST(GlobalTerms, UnknownExternalParameterIsAnInputError) {
  auto in = input_with_external_terms();
  in->external_terms[1].params = {"b", "missing"};
  try {
    build_model(in, ModelOptions{});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "small.hdf5: external term 'ext2' refers to parameter 'missing', which is not in the model");
  }
  in->external_terms[1].params = {"b"};
  EXPECT_THROW(build_model(in, ModelOptions{}), InputError);  // 1 parameter, 2x2 Hessian
}

TEST(SvdRegularizer, LaplacianWithEdgeRepeatingPadding) {
  auto in = test::small_input();
  SvdRegularizer reg(postfit::regularizer_mapping(*in, {"Select", "ch0"}));
  EXPECT_EQ(reg.shape(), (std::vector<int64_t>{3}));
  const Eigen::Vector3d lap = reg.laplacian(Eigen::Vector3d(1.0, 4.0, 2.0));
  EXPECT_EQ(lap, Eigen::Vector3d(3.0, -5.0, 2.0));
  EXPECT_THROW(reg.penalty_observables(Eigen::Vector4d::Ones(), nullptr), Error);  // not armed
}

TEST(SvdRegularizer, TwoDimensionalValueAndDerivatives) {
  auto in = test::small_input();
  // Re-shape the observed channel as 2x2 plus one masked bin: 5 bins in all.
  in->nbins = 4;
  in->nbinsfull = 5;
  in->channels[0].axes[0].size = 2;
  AxisInfo z = in->channels[0].axes[0];
  z.name = "z";
  in->channels[0].axes.push_back(z);
  in->channels[0].stop = 4;
  in->channels[1].start = 4;
  in->channels[1].stop = 5;
  SvdRegularizer reg(postfit::regularizer_mapping(*in, {"Select", "ch0"}));
  EXPECT_EQ(reg.shape(), (std::vector<int64_t>{2, 2}));
  Eigen::VectorXd nu0(5);
  nu0 << 10.0, 0.0, 8.0, 5.0, 100.0;  // one empty cell: d = 1 there
  reg.set_expectations(Eigen::VectorXd(), &nu0);
  Eigen::VectorXd nu(5);
  nu << 12.0, 3.0, 7.0, 6.0, 90.0;
  // d = [1.2, 1, 0.875, 1.2]; Lap d over a 2x2 grid with edge padding.
  const Eigen::Vector4d d(1.2, 1.0, 0.875, 1.2);
  const Eigen::Vector4d lap(d[1] - d[0] + d[2] - d[0], d[0] - d[1] + d[3] - d[1], d[3] - d[2] + d[0] - d[2],
                            d[2] - d[3] + d[1] - d[3]);
  EXPECT_NEAR(reg.penalty_observables(nu, nullptr), lap.squaredNorm(), 1e-14);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(5);
  reg.penalty_observables(nu, &g);
  const double h = 1e-6;
  Eigen::MatrixXd Hfd(5, 5);
  const auto penalty = [&](const Eigen::VectorXd& y) { return reg.penalty_observables(y, nullptr); };
  const auto penalty_grad = [&](const Eigen::VectorXd& y) {
    Eigen::VectorXd gy = Eigen::VectorXd::Zero(5);
    reg.penalty_observables(y, &gy);
    return gy;
  };
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(g[i], test::central_partial(penalty, nu, i, h), 1e-8);
    Hfd.col(i) = test::central_partial(penalty_grad, nu, i, h);
  }
  EXPECT_EQ(g[1], 0.0);  // the y⁰ = 0 cell is constant
  EXPECT_EQ(g[4], 0.0);  // masked channel not regularised
  const Eigen::MatrixXd Hv = reg.hessian_product_observables(nu, Eigen::MatrixXd::Identity(5, 5));
  EXPECT_LT((Hv - Hfd).cwiseAbs().maxCoeff(), 1e-6);
}

TEST(SvdRegularizer, ModelHelpersApplyTheStrength) {
  auto in = test::small_input();
  ModelOptions options;
  options.regularization = {RegularizationSpec{"SVD", {"Project", "ch0", "x"}}};
  options.regularizer_mapping = postfit::regularizer_mapping;
  options.regularization_strength = 0.5;
  auto model = build_model(in, options);
  ASSERT_EQ(model->regularizers.size(), 1u);
  EXPECT_TRUE(needs_observables(*model));
  const Eigen::VectorXd nu0 = Eigen::Vector4d(1.0, 2.0, 3.0, 4.0), nu = Eigen::Vector4d(1.5, 2.0, 2.0, 4.0);
  model->regularizers[0]->set_expectations(Eigen::VectorXd(), &nu0);
  const double raw = model->regularizers[0]->penalty_observables(nu, nullptr);
  EXPECT_GT(raw, 0.0);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(4);
  EXPECT_DOUBLE_EQ(observable_penalty(*model, nu, &g), std::exp(1.0) * raw);
  const Eigen::MatrixXd U = Eigen::MatrixXd::Identity(4, 4);
  EXPECT_LT((observable_penalty_hessian_product(*model, nu, U) -
             std::exp(1.0) * model->regularizers[0]->hessian_product_observables(nu, U))
                .cwiseAbs()
                .maxCoeff(),
            1e-15);
  options.regularization = {RegularizationSpec{"TV", {"Select", "ch0"}}};
  try {
    build_model(in, options);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()), "-r/--regularization: unknown regulariser 'TV'; supported: SVD");
  }
  options.regularization = {RegularizationSpec{"SVD", {"Select", "nochannel"}}};
  EXPECT_THROW(build_model(in, options), OptionError);
}

}  // namespace
}  // namespace rabbit

namespace rabbit {
namespace {

/// A parameter-only penalty Σ_i a_i ξ_i⁴ (none is built in; exercises the xi_terms path).
class QuarticPenalty final : public Regularizer {
 public:
  std::string name() const override { return "Quartic"; }
  bool needs_observables() const override { return false; }
  void set_expectations(const Eigen::VectorXd& xi, const Eigen::VectorXd* observables) override {
    EXPECT_EQ(observables, nullptr);
    a_ = Eigen::VectorXd::LinSpaced(xi.size(), 0.5, 1.5);
    armed_ = true;
  }
  bool armed() const override { return armed_; }
  double penalty_parameters(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                            Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    const Eigen::ArrayXd x = xi.array();
    if (grad) *grad += (4.0 * a_.array() * x.cube()).matrix();
    const Eigen::VectorXd h2 = (12.0 * a_.array() * x.square()).matrix();
    if (HV && V) *HV += h2.asDiagonal() * (*V);
    if (hess) hess->diagonal() += h2;
    return (a_.array() * x.pow(4)).sum();
  }

 private:
  Eigen::VectorXd a_;
  bool armed_ = false;
};

TEST(GlobalTerms, ParameterOnlyRegularizerWithStrength) {
  ModelOptions options;
  options.regularization_strength = -0.25;
  auto model = build_model(test::small_input(), options);
  auto reg = std::make_shared<QuarticPenalty>();
  model->regularizers.push_back(reg);
  EXPECT_FALSE(needs_observables(*model));
  Eigen::VectorXd xi(5);
  xi << 1.2, 0.9, 0.3, 4.0, -0.2;
  try {
    model->global_terms->xi_terms(xi, nullptr, nullptr, nullptr, nullptr);
    FAIL() << "un-armed regulariser evaluated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Regularizer Quartic not armed"), std::string::npos);
  }
  reg->set_expectations(xi, nullptr);
  const double constraint = 0.5 * (0.3 * 0.3 + 0.2 * 0.2);
  const double penalty = reg->penalty_parameters(xi, nullptr, nullptr, nullptr, nullptr);
  EXPECT_NEAR(model->global_terms->xi_terms(xi, nullptr, nullptr, nullptr, nullptr),
              constraint + std::exp(-0.5) * penalty, 1e-12);
  check_term([&](auto&&... a) { return model->global_terms->xi_terms(a...); }, xi);
  // τ is read at every call (--lCurveOptimize changes it).
  model->options.regularization_strength = 0.0;
  EXPECT_NEAR(model->global_terms->xi_terms(xi, nullptr, nullptr, nullptr, nullptr), constraint + penalty,
              1e-12);
}

}  // namespace
}  // namespace rabbit
