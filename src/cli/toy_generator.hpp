#pragma once
// Toys (docs/user-guide.md "Toys"): the pseudo-experiment of each toy
// fit and, with --toysRandomizeParameters, its random start point. Two random streams, both seeded
// from --seed: the toys' data do not depend on whether the start is randomised. The order of the
// draws is part of the result (a toy is reproducible bit for bit from its seed); keep it.
#include <Eigen/Core>
#include <cstdint>
#include <random>

#include "fit_context.hpp"

namespace rabbit::cli {

class ToyGenerator {
 public:
  explicit ToyGenerator(FitContext& ctx);

  /// One toy: randomises the constraint centres / BB centres (or the generating parameters), takes
  /// the expectation (or the observed data) as the mean and throws the counts. nobs/varnobs are
  /// what the fit gets (varnobs empty for Poisson fits). Moves the fitter's β state (see below).
  void throw_toy(const Eigen::VectorXd& values, const Eigen::VectorXd& variances, Eigen::VectorXd& nobs,
                 Eigen::VectorXd& varnobs);
  /// --toysRandomizeParameters: a random start x and a random stored β.
  void randomize_start(Eigen::VectorXd& x);
  /// Puts β⁰ and the stored β back to their defaults on every shard if a toy moved them; called at
  /// the start of every fit (rabbit's defaultassign).
  void restore_beta_defaults();

 private:
  FitContext& ctx_;
  std::mt19937_64 rng_;
  // --toysRandomizeParameters draws from its own stream, so the toys' data do not depend on it.
  std::mt19937_64 start_rng_;
  bool beta_state_changed_ = false;  // a toy moved β⁰ or the stored β away from the defaults
};

}  // namespace rabbit::cli
