// The preconditioner is a change of variables only (docs/minimizers.md "Preconditioner"): on the
// example model, minimize() ends at the same minimum with it as without it, for every method,
// scope, reference matrix (exact Hessian or Gauss-Newton), block rule and transform. In process:
// the model, the fitter and minimize() directly. How rabbit_fit's --precondition* options reach
// minimize() (names, regexes and groups resolved to index sets) is checked by one rabbit_fit run
// in tests/cli/rabbit_fit_test.cpp (RabbitFit.PreconditionerOptionsReachTheFit).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "rabbit/model/model.hpp"
#include "support/error_measures.hpp"
#include "support/log_capture.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

using test::relative_error;

struct Minimum {
  Eigen::VectorXd x;
  double nll = 0.0;
  Eigen::VectorXd variances;  // diagonal of the inverse Hessian at x
};

// The example tensor fitted to its data, blinding off (rabbit_fit -t 0 --unblind).
class PreconditionedFit : public ::testing::Test {
 protected:
  void SetUp() override {
    input_ = std::make_shared<FitInputData>(
        read_fit_input((test::source_dir() / "examples" / "example_tensor.hdf5").string()));
    model_ = build_model(input_, ModelOptions{});
    fitter_ = make_fitter(model_, FitterOptions{});
    fitter_->set_observed(input_->data_obs, Eigen::VectorXd());
    set_verbosity(3);  // "Preconditioned ..." is an info line
  }

  Minimum fit(const MinimizerOptions& options) {
    const MinimizerResult r = minimize(*fitter_, model_->parameters.x_default, options);
    if (options.certify == MinimizerOptions::Certify::off)
      EXPECT_TRUE(r.success) << r.message;
    else
      EXPECT_TRUE(r.converged) << r.stop_reason;
    Minimum m;
    m.x = r.x;
    Eigen::VectorXd grad;
    Eigen::MatrixXd hess;
    m.nll = fitter_->value_grad_hess(r.x, grad, hess);
    m.variances = hess.inverse().diagonal();
    return m;
  }

  // Parameter indices of a systematic group of the input (systematics follow the POIs and the
  // model's own parameters).
  std::vector<int64_t> group(const std::string& name) const {
    const auto g = std::find(input_->systgroups.begin(), input_->systgroups.end(), name);
    EXPECT_NE(g, input_->systgroups.end()) << name;
    const int64_t offset = model_->parameters.npoi + model_->parameters.npou;
    std::vector<int64_t> members;
    for (auto k : input_->systgroupidxs.at(static_cast<size_t>(g - input_->systgroups.begin())))
      members.push_back(offset + k);
    return members;
  }

  int64_t parameter(const std::string& name) const {
    const auto& names = model_->parameters.names;
    return static_cast<int64_t>(std::find(names.begin(), names.end(), name) - names.begin());
  }

  // Fisher information at x (--preconditionFrom gaussnewton): the exact Hessian with the data
  // replaced by the prediction at x, then the data restored.
  Eigen::MatrixXd gauss_newton_matrix(const Eigen::VectorXd& x) {
    Eigen::VectorXd xi, d1, d2, prediction, grad;
    model_->parameters.transform(x, xi, d1, d2);
    fitter_->yield_model().expected_yields(xi, 0, input_->nbins, YieldModel::BetaMode::profiled, &prediction);
    const Eigen::VectorXd data = fitter_->observed();
    Eigen::MatrixXd hess;
    fitter_->set_observed(prediction, Eigen::VectorXd());
    fitter_->value_grad_hess(x, grad, hess);
    fitter_->set_observed(data, Eigen::VectorXd());
    return hess;
  }

  std::shared_ptr<FitInputData> input_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<Fitter> fitter_;
};

// The variants of rabbit_fit's former CLI test, as PreconditionerOptions.
struct Variant {
  std::string tag;
  PreconditionerOptions options;
  std::string log_line;  // what minimize() logs when it applies them
};

TEST_F(PreconditionedFit, ReachesTheUnpreconditionedMinimum) {
  std::vector<Variant> variants;
  {  // rabbit_fit's default scope: the unconstrained parameters, automatic blocks
    Variant v{"default", {}, "Preconditioned 1 of 1 block(s), 3 parameters"};
    std::vector<int64_t> unconstrained;
    for (int64_t i = 0; i < model_->parameters.size(); ++i)
      if (model_->parameters.constraint_weights[i] == 0.0) unconstrained.push_back(i);
    ASSERT_FALSE(unconstrained.empty());
    v.options.index_sets = {unconstrained};
    variants.push_back(v);
  }
  {  // every parameter, one block
    Variant v{"all", {}, "Preconditioned 1 of 1 block(s), 13 parameters"};
    v.options.blocks = "none";
    variants.push_back(v);
  }
  {  // the Gauss-Newton reference matrix, blocks split at correlation 0.01
    Variant v{"gn", {}, "Preconditioned 1 of 1 block(s), 13 parameters"};
    v.options.from = "gaussnewton";
    v.options.blocks = "auto";
    v.options.block_threshold = 0.01;
    v.options.reference_matrix = [this](const Eigen::VectorXd& x) { return gauss_newton_matrix(x); };
    variants.push_back(v);
  }
  {  // eigen-decomposition transform with a larger ridge
    Variant v{"spectral", {}, "Preconditioned 1 of 1 block(s), 13 parameters"};
    v.options.transform = "spectral";
    v.options.ridge = 1e-6;
    variants.push_back(v);
  }
  {  // one block per expression: the groups "slopes" (8 members) and "norm" (1), the POI "sig"
    Variant v{"groups", {}, "Preconditioned 3 of 3 block(s), 10 parameters"};
    v.options.index_sets = {group("slopes"), group("norm"), {parameter("sig")}};
    ASSERT_EQ(v.options.index_sets[0].size(), 8u);
    ASSERT_EQ(v.options.index_sets[1].size(), 1u);
    ASSERT_LT(v.options.index_sets[2][0], model_->parameters.size());
    v.options.blocks = "expressions";
    variants.push_back(v);
  }

  // With the certificate (rabbit_fit's setting) the Newton polish on the physical objective would
  // hide a preconditioner that stops the trust region elsewhere; without it, the trust region's own
  // end point is compared.
  for (const auto certify : {MinimizerOptions::Certify::automatic, MinimizerOptions::Certify::off})
    for (const char* method : {"trust-krylov", "trust-exact", "trust-ncg"}) {
      SCOPED_TRACE(std::string(method) + (certify == MinimizerOptions::Certify::off ? ", certify off" : ""));
      MinimizerOptions plain;
      plain.method = method;
      plain.certify = certify;
      const Minimum ref = fit(plain);
      for (const auto& v : variants) {
        SCOPED_TRACE(v.tag);
        MinimizerOptions options = plain;
        options.precondition = v.options;
        options.precondition.enabled = true;
        test::LogCapture log;
        const Minimum m = fit(options);
        EXPECT_TRUE(log.contains(v.log_line)) << "not applied";
        EXPECT_NEAR(m.nll, ref.nll, 1e-8);
        for (Eigen::Index i = 0; i < m.x.size(); ++i) {
          EXPECT_NEAR(m.x[i], ref.x[i], 1e-3 * std::sqrt(ref.variances[i])) << model_->parameters.names[i];
          EXPECT_LT(relative_error(m.variances[i], ref.variances[i]), 1e-5) << model_->parameters.names[i];
        }
      }
    }
}

}  // namespace
}  // namespace rabbit
