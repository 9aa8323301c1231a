#pragma once
// Small in-memory fit inputs and models for the CPU shard tests.
#include <Eigen/Core>
#include <Eigen/LU>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/backend/cpu/shared_likelihood.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/global_terms.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/param_model.hpp"

namespace rabbit::testing {

/// r_p = μ_p for the signals (Mu), optionally squared for the first signal to exercise 𝒞_ππ.
class TestMuModel : public ParamModel {
 public:
  TestMuModel(int64_t nproc, int64_t nsig, bool square_first = false)
      : nproc_(nproc), nsig_(nsig), square_(square_first) {}
  int64_t npoi() const override { return nsig_; }
  int64_t npou() const override { return 0; }
  std::vector<std::string> names() const override {
    std::vector<std::string> n;
    for (int64_t i = 0; i < nsig_; ++i) n.push_back("sig" + std::to_string(i));
    return n;
  }
  Eigen::VectorXd default_values() const override { return Eigen::VectorXd::Ones(nsig_); }
  void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    r = Eigen::VectorXd::Ones(nproc_);
    if (jac) jac->setZero(nproc_, nsig_);
    for (int64_t i = 0; i < nsig_; ++i) {
      if (i == 0 && square_) {
        r[i] = pi[i] * pi[i];
        if (jac) (*jac)(i, i) = 2.0 * pi[i];
      } else {
        r[i] = pi[i];
        if (jac) (*jac)(i, i) = 1.0;
      }
    }
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd& w) const override {
    Eigen::MatrixXd c = Eigen::MatrixXd::Zero(nsig_, nsig_);
    if (square_ && nsig_ > 0) c(0, 0) = 2.0 * w[0];
    return c;
  }

 private:
  int64_t nproc_, nsig_;
  bool square_;
};

/// Mixture: process prim gets μ, process comp gets 1 − μ.
class TestMixtureModel : public ParamModel {
 public:
  TestMixtureModel(int64_t nproc, int64_t prim, int64_t comp) : nproc_(nproc), prim_(prim), comp_(comp) {}
  int64_t npoi() const override { return 1; }
  int64_t npou() const override { return 0; }
  std::vector<std::string> names() const override { return {"a_c_mixing"}; }
  Eigen::VectorXd default_values() const override { return Eigen::VectorXd::Ones(1); }
  void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    r = Eigen::VectorXd::Ones(nproc_);
    r[prim_] = pi[0];
    r[comp_] = 1.0 - pi[0];
    if (jac) {
      jac->setZero(nproc_, 1);
      (*jac)(prim_, 0) = 1.0;
      (*jac)(comp_, 0) = -1.0;
    }
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd&) const override {
    return Eigen::MatrixXd::Zero(1, 1);
  }

 private:
  int64_t nproc_, prim_, comp_;
};

/// Constraint term ½ Σ cw (ξ − x0)² in ξ space and one external term g·x + ½ xᵀHx on x.
class TestGlobalTerms : public GlobalTerms {
 public:
  Eigen::VectorXd cw, x0, ext_g;
  Eigen::MatrixXd ext_h;  // n × n, may be non-symmetric; empty for none
  double xi_terms(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                  Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    const Eigen::VectorXd d = xi - x0;
    if (grad) *grad += cw.cwiseProduct(d);
    if (V && HV) *HV += cw.asDiagonal() * (*V);
    if (hess) hess->diagonal() += cw;
    return 0.5 * d.dot(cw.cwiseProduct(d));
  }
  double x_terms(const Eigen::VectorXd& x, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                 Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    if (ext_h.size() == 0) return 0.0;
    const Eigen::MatrixXd hs = 0.5 * (ext_h + ext_h.transpose());
    if (grad) *grad += ext_g + hs * x;
    if (V && HV) *HV += hs * (*V);
    if (hess) *hess += hs;
    return ext_g.dot(x) + 0.5 * x.dot(ext_h * x);
  }
};

struct ShardConfig {
  bool sparse = false;
  bool symmetric = false;
  bool lognormal = true;
  DataLikelihood likelihood = DataLikelihood::poisson;
  bool bb = true;
  BBType bb_type = BBType::gamma;
  BBMode bb_mode = BBMode::lite;
  bool zero_variance_process = true;  // process 2 without MC-stat uncertainty
  bool masked_channel = true;
  bool mixture = false;
  bool square_poi = false;
  double min_bb_kstat = 0.0;
  bool bb_masked_bin = true;  // bin 4 without MC statistics
  bool legacy_kstat = false;  // per-bin sumw/sumw2 as derived from the legacy hkstat
  unsigned seed = 1;
  int64_t nbins = 6;  // observed bins (≥ 6: bins 2, 3 and 4 are the special ones below)
};

/// 6 (c.nbins) observed + 3 masked bins, 3 processes (0 = signal), 4 systematics; one bin with zero MC sum
/// of weights (fully BB-masked), one empty data bin, one absent (zero) template entry.
inline std::shared_ptr<FitInputData> make_test_input(const ShardConfig& c) {
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  auto in = std::make_shared<FitInputData>();
  const int64_t B = c.nbins, Bm = c.masked_channel ? 3 : 0, Bf = B + Bm, P = 3, S = 4;
  in->filename = "in-memory";
  in->nbins = B;
  in->nbinsmasked = Bm;
  in->nbinsfull = Bf;
  in->nproc = P;
  in->nsyst = S;
  in->nsignals = 1;
  in->procs = {"sig", "bkg1", "bkg2"};
  in->signals = {"sig"};
  in->systs = {"s0", "s1", "s2", "s3"};
  in->constraintweights = Eigen::VectorXd::Ones(S);
  in->symmetric_tensor = c.symmetric;
  in->systematic_type = c.lognormal ? SystematicType::log_normal : SystematicType::normal;
  const int64_t W = in->logk_width();
  std::vector<double> norm(Bf * P), logk(Bf * P * W, 0.0);
  for (int64_t b = 0; b < Bf; ++b)
    for (int64_t p = 0; p < P; ++p) {
      double v = 5.0 + 45.0 * uni(rng);
      if (b == 2 && p == 1) v = 0.0;  // absent entry
      norm[b * P + p] = v;
      if (v == 0.0) continue;
      for (int64_t w = 0; w < W; ++w) {
        double k = 0.15 * (uni(rng) - 0.5);
        if (w >= S) k *= 0.5;
        if (!c.lognormal) k *= v;  // absolute variations
        logk[(b * P + p) * W + w] = k;
      }
    }
  in->sumw.assign(Bf * P, 0.0);
  in->sumw2.assign(Bf * P, 0.0);
  for (int64_t b = 0; b < Bf; ++b)
    for (int64_t p = 0; p < P; ++p) {
      const double v = norm[b * P + p];
      in->sumw[b * P + p] = v;
      in->sumw2[b * P + p] = v * (0.05 + 0.3 * uni(rng));
      if (c.zero_variance_process && p == 2) in->sumw2[b * P + p] = 0.0;
      if (b == 4 && c.bb_masked_bin) {  // fully BB-masked bin
        in->sumw[b * P + p] = 0.0;
        in->sumw2[b * P + p] = 0.0;
      }
    }
  if (c.legacy_kstat) {
    std::vector<double> sw(Bf, 0.0), sw2(Bf, 0.0);
    for (int64_t b = 0; b < Bf; ++b)
      for (int64_t p = 0; p < P; ++p) {
        sw[b] += in->sumw[b * P + p];
        sw2[b] += in->sumw2[b * P + p];
      }
    in->sumw = sw;
    in->sumw2 = sw2;
    in->sumw_per_bin = true;
  }
  in->data_obs.resize(B);
  for (int64_t b = 0; b < B; ++b) {
    double tot = 0.0;
    for (int64_t p = 0; p < P; ++p) tot += norm[b * P + p];
    in->data_obs[b] = std::round(tot * (0.85 + 0.3 * uni(rng)));
  }
  if (c.likelihood != DataLikelihood::chisq && c.likelihood != DataLikelihood::covariance)
    in->data_obs[3] = 0.0;
  if (c.likelihood == DataLikelihood::covariance) {
    Eigen::MatrixXd L = Eigen::MatrixXd::Zero(B, B);
    for (int64_t i = 0; i < B; ++i) {
      L(i, i) = std::sqrt(in->data_obs[i]) * (1.0 + 0.2 * uni(rng));
      for (int64_t j = 0; j < i; ++j) L(i, j) = 2.0 * (uni(rng) - 0.5);
    }
    const Eigen::MatrixXd C = L * L.transpose();
    in->data_cov_inv = C.inverse();
  }
  in->sparse = c.sparse;
  if (!c.sparse) {
    in->norm = norm;
    in->logk = logk;
  } else {
    in->logk_sparse.rowptr.push_back(0);
    for (int64_t i = 0; i < Bf * P; ++i) {
      if (norm[i] == 0.0) continue;
      in->norm.push_back(norm[i]);
      in->norm_index.push_back(i);
      for (int64_t w = 0; w < W; ++w) {
        const double k = logk[i * W + w];
        if (k == 0.0 || (w % 3 == 1 && i % 2 == 0)) continue;  // make it genuinely sparse
        in->logk_sparse.cols.push_back(static_cast<int32_t>(w));
        in->logk_sparse.values.push_back(k);
      }
      in->logk_sparse.rowptr.push_back(static_cast<int64_t>(in->logk_sparse.cols.size()));
    }
  }
  return in;
}

/// make_test_input (dense) with unit MC weights (sumw2 = sumw) and bin 3 empty (data 0, Poisson) with
/// the integer yields 10, 20, 12: at the nominal point (μ = 1, θ = 0) its σ² = ν⁰ = k = 42, the
/// double root of the lite n = 0 profile (docs/likelihood.md "Corner cases chosen").
inline std::shared_ptr<FitInputData> make_unit_weight_empty_bin_input(const ShardConfig& c) {
  auto in = make_test_input(c);
  const int64_t P = in->nproc;
  const double yields[] = {10.0, 20.0, 12.0};
  for (int64_t p = 0; p < P; ++p) in->norm[3 * P + p] = in->sumw[3 * P + p] = yields[p];
  in->sumw2 = in->sumw;
  in->data_obs[3] = 0.0;
  return in;
}

/// Dense twin of a sparse input (zero-filled), for dense-vs-sparse comparisons.
/// Channel metadata of make_test_input's layout: "obs" (the observed bins, 0–5 by default) and "masked"
/// (the three after them), each one regular axis "x", as a regulariser's Select mapping needs them.
inline void set_obs_and_masked_channels(FitInputData& in) {
  ChannelInfo obs, masked;
  obs.name = "obs";
  obs.start = 0;
  obs.stop = in.nbins;
  masked.name = "masked";
  masked.masked = true;
  masked.start = in.nbins;
  masked.stop = in.nbinsfull;
  AxisInfo ax;
  ax.kind = "regular";
  ax.name = "x";
  ax.size = in.nbins;
  obs.axes = {ax};
  ax.size = in.nbinsfull - in.nbins;
  masked.axes = {ax};
  in.channels = {obs, masked};
  in.has_meta = true;
}

inline std::shared_ptr<FitInputData> densify(const FitInputData& sp) {
  auto in = std::make_shared<FitInputData>(sp);
  const int64_t P = sp.nproc, W = sp.logk_width();
  in->sparse = false;
  in->norm.assign(sp.nbinsfull * P, 0.0);
  in->logk.assign(sp.nbinsfull * P * W, 0.0);
  for (size_t e = 0; e < sp.norm_index.size(); ++e) {
    const int64_t f = sp.norm_index[e];
    in->norm[f] = sp.norm[e];
    for (int64_t i = sp.logk_sparse.rowptr[e]; i < sp.logk_sparse.rowptr[e + 1]; ++i)
      in->logk[f * W + sp.logk_sparse.cols[i]] = sp.logk_sparse.values[i];
  }
  in->norm_index.clear();
  in->logk_sparse = SparseLogk();
  return in;
}

inline std::shared_ptr<Model> make_test_model(std::shared_ptr<FitInputData> in, const ShardConfig& c) {
  auto m = std::make_shared<Model>();
  m->input = in;
  m->options.likelihood = c.likelihood;
  m->options.bin_by_bin_stat = c.bb;
  m->options.bb_type = c.bb_type;
  m->options.bb_mode = c.bb_mode;
  m->options.min_bb_kstat = c.min_bb_kstat;
  m->bb_type = c.bb_type;
  if (c.mixture)
    m->param_model = std::make_shared<TestMixtureModel>(in->nproc, 0, 2);
  else
    m->param_model = std::make_shared<TestMuModel>(in->nproc, in->nsignals, c.square_poi);
  const int64_t M = m->param_model->nparams(), n = M + in->nsyst;
  auto& ps = m->parameters;
  ps.names = m->param_model->names();
  for (const auto& s : in->systs) ps.names.push_back(s);
  ps.npoi = M;
  ps.nsyst = in->nsyst;
  ps.x_default = Eigen::VectorXd::Zero(n);
  ps.x_default.head(M).setConstant(c.mixture ? 0.5 : 1.0);
  ps.constraint_weights = Eigen::VectorXd::Zero(n);
  ps.constraint_weights.tail(in->nsyst) = in->constraintweights;
  ps.constraint_centres = ps.x_default;
  ps.frozen.assign(n, false);
  auto gt = std::make_shared<TestGlobalTerms>();
  gt->cw = ps.constraint_weights;
  gt->x0 = ps.constraint_centres;
  m->global_terms = gt;
  return m;
}

/// A point ξ with θ both inside and outside the |θ| < ½ interpolation region.
inline Eigen::VectorXd test_point(const Model& m) {
  const int64_t M = m.param_model->nparams(), S = m.input->nsyst;
  Eigen::VectorXd xi(M + S);
  for (int64_t i = 0; i < M; ++i) xi[i] = 1.13 - 0.2 * i;
  const double th[] = {0.31, -0.72, 0.12, -0.27};
  for (int64_t s = 0; s < S; ++s) xi[M + s] = th[s % 4];
  return xi;
}

}  // namespace rabbit::testing
