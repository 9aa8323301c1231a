#include "toy_generator.hpp"

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "rabbit/core/error.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;

ToyGenerator::ToyGenerator(FitContext& ctx) : ctx_(ctx) {
  const auto seed = static_cast<uint64_t>(ctx.options.seed);
  rng_.seed(seed);
  std::seed_seq start_seed{seed, uint64_t{0x5eed0001}};
  start_rng_.seed(start_seed);
}

void ToyGenerator::restore_beta_defaults() {
  if (!beta_state_changed_) return;
  ctx_.fitter->set_beta_centres(ctx_.yield_model().default_beta_centres());
  beta_state_changed_ = false;
}

// docs/user-guide.md "Toys": what each option combination draws.
void ToyGenerator::throw_toy(const VectorXd& values, const VectorXd& variances, VectorXd& nobs,
                             VectorXd& varnobs) {
  const auto& o = ctx_.options;
  auto& ps = ctx_.model->parameters;
  auto& fitter = *ctx_.fitter;
  auto& c = ctx_.yield_model();
  std::normal_distribution<double> gauss(0.0, 1.0);
  const DataLikelihood lik = ctx_.model->options.likelihood;
  if (lik == DataLikelihood::covariance && o.toys_data_randomize == "poisson")
    throw OptionError("--toysDataRandomize poisson is not allowed with --covarianceFit");
  VectorXd xgen = ps.x_default;
  const VectorXd var_x0 = ps.constraint_centre_variance();
  if (o.toys_syst_randomize == "frequentist") {
    for (int64_t i = 0; i < ps.size(); ++i)
      if (var_x0(i) > 0.0)
        ps.constraint_centres(i) = ps.constraint_centres_default(i) + std::sqrt(var_x0(i)) * gauss(rng_);
  } else if (o.toys_syst_randomize == "bayesian") {
    for (int64_t i = 0; i < ps.size(); ++i)
      if (var_x0(i) > 0.0) xgen(i) = ps.constraint_centres(i) + std::sqrt(var_x0(i)) * gauss(rng_);
  }
  VectorXd beta0, beta;
  if (c.has_bb() && o.toys_syst_randomize != "none") {
    const VectorXd& k = c.bb_kstat();
    beta0 = c.beta_centres();
    beta = c.stored_beta();
    for (int64_t e = 0; e < beta0.size(); ++e) {
      if (o.toys_syst_randomize == "frequentist") {
        switch (ctx_.model->bb_type) {
          case BBType::gamma:
            beta0(e) = static_cast<double>(std::poisson_distribution<int64_t>(k(e) * beta(e))(rng_)) / k(e);
            break;
          case BBType::normal_multiplicative:
            beta0(e) = beta(e) + gauss(rng_) / std::sqrt(k(e));
            break;
          default:
            beta0(e) = beta(e) + gauss(rng_);
            break;
        }
      } else {
        switch (ctx_.model->bb_type) {
          case BBType::gamma:
            beta(e) = std::gamma_distribution<double>(k(e) * beta0(e) + 1.0, 1.0)(rng_) / k(e);
            break;
          case BBType::normal_multiplicative:
            beta(e) = beta0(e) + gauss(rng_) / std::sqrt(k(e));
            break;
          default:
            beta(e) = beta0(e) + gauss(rng_);
            break;
        }
      }
    }
    // Bayesian toys generate the data at the thrown β; frequentist toys at the nominal β, and
    // only the constraint centres β⁰ move (set below, after the data are generated).
    if (o.toys_syst_randomize == "bayesian") fitter.set_stored_beta(beta);
    beta_state_changed_ = true;
  }
  VectorXd central;
  if (o.toys_data_mode == "expected")
    c.expected_yields(ctx_.xi(xgen), 0, ctx_.input->nbins, YieldModel::BetaMode::stored, &central);
  else
    central = values;
  if (beta0.size() > 0 && o.toys_syst_randomize == "frequentist") fitter.set_beta_centres(beta0);
  nobs = central;
  const bool given_var = variances.size() > 0;
  if (o.toys_data_randomize == "poisson") {
    for (int64_t i = 0; i < nobs.size(); ++i)
      nobs(i) = static_cast<double>(std::poisson_distribution<int64_t>(std::max(central(i), 0.0))(rng_));
    varnobs = nobs;
  } else if (o.toys_data_randomize == "normal") {
    if (lik == DataLikelihood::covariance && ctx_.input->data_cov_inv) {
      Eigen::LLT<MatrixXd> llt(ctx_.input->data_cov_inv->inverse());
      VectorXd z(nobs.size());
      for (int64_t i = 0; i < z.size(); ++i) z(i) = gauss(rng_);
      nobs = central + llt.matrixL() * z;
    } else {
      for (int64_t i = 0; i < nobs.size(); ++i) {
        double v = (lik == DataLikelihood::chisq && given_var) ? variances(i) : central(i);
        nobs(i) = central(i) + std::sqrt(std::max(v, 0.0)) * gauss(rng_);
      }
    }
    varnobs = given_var ? variances : nobs;
  } else {
    varnobs = given_var ? variances : nobs;
  }
  if (lik == DataLikelihood::poisson) varnobs = VectorXd();
  // The fit starts from the defaults with β at its (possibly thrown) centre.
  if (beta_state_changed_) fitter.set_stored_beta(c.beta_centres());
}

// --toysRandomizeParameters (docs/user-guide.md "Toys"): x ~ N(x, sqrt(var_prefit)) where the
// prefit variance is positive, and the stored beta ~ N(beta0, sqrt(sigma2_beta)) with the absolute
// sumw2 for every BB type, as upstream. Frozen parameters keep their value: they are not fitted.
void ToyGenerator::randomize_start(VectorXd& x) {
  auto& ps = ctx_.model->parameters;
  const auto& input = *ctx_.input;
  std::normal_distribution<double> gauss(0.0, 1.0);
  const VectorXd var = prefit_variances(*ctx_.model);
  for (int64_t i = 0; i < ps.size(); ++i)
    if (var(i) > 0.0 && !ps.frozen[i]) x(i) += std::sqrt(var(i)) * gauss(start_rng_);
  auto& c = ctx_.yield_model();
  if (!c.has_bb()) return;
  const int64_t ne = c.bb_entries(), np = input.nproc;
  VectorXd beta = c.beta_centres();
  for (int64_t e = 0; e < ne; ++e) {
    double sigma2 = 0.0;
    if (ctx_.bb_full || input.sumw_per_bin) {
      sigma2 = input.sumw2[e];
    } else {
      for (int64_t p = 0; p < np; ++p) sigma2 += input.sumw2[e * np + p];
    }
    beta(e) += std::sqrt(std::max(sigma2, 0.0)) * gauss(start_rng_);
  }
  ctx_.fitter->set_stored_beta(beta);
  beta_state_changed_ = true;
}

}  // namespace rabbit::cli
