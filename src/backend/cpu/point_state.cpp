#include "point_state.hpp"

#include <fmt/format.h>

#include "rabbit/backend/cpu/shared_likelihood.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/model/param_model.hpp"

namespace rabbit::cpu_detail {

using likelihood::interpolation;

inline void PointState::prepare(const ShardState& s, const Eigen::VectorXd& xi, const Eigen::MatrixXd* V) {
  const int64_t S = s.nsyst_, M = s.nparams_, P = s.nproc_, W = s.layout.W;
  if (xi.size() != s.nx_)
    throw Error(fmt::format("CPU shard: ξ has length {}, the model has {}", xi.size(), s.nx_));
  m.resize(W);
  hp.resize(S);
  hpp.resize(S);
  for (int64_t j = 0; j < S; ++j) {
    const double th = xi[M + j];
    m[j] = th;
    double h, h1, h2;
    interpolation(th, h, h1, h2);
    if (s.layout.symmetric) {
      h1 = 1.0;
      h2 = 0.0;
    } else {
      m[S + j] = h;
    }
    hp[j] = h1;
    hpp[j] = h2;
  }
  pi = xi.head(M);
  nproc = P;
  bin_dependent = s.bin_rates_;
  if (bin_dependent) {
    const ParamModel& pm = *s.model_->param_model;
    Eigen::MatrixXd rates_by_bin;
    pm.bin_rates(pi, 0, s.nbinsfull_, rates_by_bin);
    rb.resize(s.nbinsfull_ * P);
    for (int64_t b = 0; b < s.nbinsfull_; ++b) rb.segment(b * P, P) = rates_by_bin.row(b).transpose();
    jb = pm.rate_jacobian(pi, 0, s.nbinsfull_);
    r.resize(0);
    jr.resize(0, 0);
  } else if (s.model_->param_model) {
    s.model_->param_model->rates(pi, r, &jr);
  } else {
    r = Eigen::VectorXd::Ones(P);
    jr.setZero(P, 0);
  }
  k = V ? V->cols() : 0;
  if (V) {
    Vpi = V->topRows(M);
    Vtheta = V->bottomRows(S);
    Um.resize(W, k);
    Um.topRows(S) = Vtheta;
    if (!s.layout.symmetric) Um.bottomRows(S) = hp.asDiagonal() * Vtheta;
    if (bin_dependent) {
      drb = jb * Vpi;
    } else {
      dr = jr * Vpi;
    }
  }
}

}  // namespace rabbit::cpu_detail
