// The built-in param models of docs/model.md "Param models": Ones, Mu, Mixture and their composite.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "abcd_param_models.hpp"
#include "axis_param_models.hpp"
#include "name_list.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/param_model.hpp"

namespace rabbit {
namespace {

/// μ⁰: ones, overridden by --expectSignal. Every defaults-taking model validates *all* given
/// names against its own parameters (as rabbit does, also inside a composite).
Eigen::VectorXd effective_defaults(const std::string& model_name, const std::vector<std::string>& names,
                                   const std::vector<std::pair<std::string, double>>& expect_signal) {
  Eigen::VectorXd mu0 = Eigen::VectorXd::Ones(static_cast<int64_t>(names.size()));
  for (const auto& [name, value] : expect_signal) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw OptionError(
          fmt::format("--expectSignal: '{}' is not a parameter of param model {} (its parameters: [{}])",
                      name, model_name, fmt::join(names, ", ")));
    mu0[it - names.begin()] = value;
  }
  return mu0;
}

class OnesModel final : public ParamModel {
 public:
  explicit OnesModel(int64_t nproc) : nproc_(nproc) {}
  int64_t npoi() const override { return 0; }
  int64_t npou() const override { return 0; }
  std::vector<std::string> names() const override { return {}; }
  Eigen::VectorXd default_values() const override { return Eigen::VectorXd(0); }
  void rates(const Eigen::VectorXd&, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    r = Eigen::VectorXd::Ones(nproc_);
    if (jac) jac->setZero(nproc_, 0);
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd&) const override {
    return Eigen::MatrixXd(0, 0);
  }
  bool is_linear() const override { return true; }

 private:
  int64_t nproc_;
};

/// One POI per signal process: r_p = μ_p for the P_s signals (the first processes), 1 otherwise.
class MuModel final : public ParamModel {
 public:
  MuModel(const FitInputData& input, const std::vector<std::pair<std::string, double>>& expect_signal,
          bool allow_negative)
      : nproc_(input.nproc), names_(input.signals), allow_negative_(allow_negative) {
    if (static_cast<int64_t>(names_.size()) > nproc_)
      throw InputError(
          fmt::format("{}: {} signals but only {} processes", input.filename, names_.size(), nproc_));
    defaults_ = effective_defaults("Mu", names_, expect_signal);
  }
  int64_t npoi() const override { return static_cast<int64_t>(names_.size()); }
  int64_t npou() const override { return 0; }
  std::vector<std::string> names() const override { return names_; }
  Eigen::VectorXd default_values() const override { return defaults_; }
  void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    const int64_t m = npoi();
    r = Eigen::VectorXd::Ones(nproc_);
    r.head(m) = pi.head(m);
    if (jac) {
      jac->setZero(nproc_, m);
      for (int64_t i = 0; i < m; ++i) (*jac)(i, i) = 1.0;
    }
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd&) const override {
    return Eigen::MatrixXd::Zero(npoi(), npoi());
  }
  bool allow_negative_param() const override { return allow_negative_; }
  bool is_linear() const override { return npoi() == 0 || allow_negative_; }

 private:
  int64_t nproc_;
  std::vector<std::string> names_;
  bool allow_negative_;
  Eigen::VectorXd defaults_;
};

/// Mixing parameters π_i: the i-th primary process gets π_i, the i-th complementary 1 − π_i.
/// As in rabbit, "i-th" counts in process-list order, not in the order the user typed
/// (docs/model.md "Param models"); the names follow the typed order.
class MixtureModel final : public ParamModel {
 public:
  MixtureModel(const FitInputData& input, const std::vector<std::string>& args,
               const std::vector<std::pair<std::string, double>>& expect_signal, bool allow_negative)
      : nproc_(input.nproc), allow_negative_(allow_negative) {
    if (args.size() != 2)
      throw OptionError(
          fmt::format("--paramModel Mixture: expected exactly 2 arguments (primaries and complementaries as "
                      "comma lists), got {}",
                      args.size()));
    const auto primaries = split_commas(args[0], Blanks::keep);
    const auto complementaries = split_commas(args[1], Blanks::keep);
    if (primaries.size() != complementaries.size())
      throw OptionError(fmt::format(
          "--paramModel Mixture: primary and complementary lists must have the same length, got {} and {}",
          primaries.size(), complementaries.size()));
    auto check_known = [&](const std::vector<std::string>& list) {
      std::vector<std::string> missing;
      for (const auto& p : list)
        if (std::find(input.procs.begin(), input.procs.end(), p) == input.procs.end()) missing.push_back(p);
      if (!missing.empty())
        throw OptionError(fmt::format("--paramModel Mixture: [{}] not found in processes [{}]",
                                      fmt::join(missing, ", "), fmt::join(input.procs, ", ")));
    };
    check_known(primaries);
    check_known(complementaries);
    // Duplicates or a process on both sides make rabbit's scatter ill-defined; refuse them.
    std::vector<std::string> all = primaries;
    all.insert(all.end(), complementaries.begin(), complementaries.end());
    std::vector<std::string> sorted = all;
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end())
      throw OptionError(fmt::format("--paramModel Mixture: process '{}' is listed more than once", *dup));
    for (int64_t p = 0; p < nproc_; ++p) {
      const auto& proc = input.procs[p];
      if (std::find(primaries.begin(), primaries.end(), proc) != primaries.end()) primary_idx_.push_back(p);
      if (std::find(complementaries.begin(), complementaries.end(), proc) != complementaries.end())
        complementary_idx_.push_back(p);
    }
    for (size_t i = 0; i < primaries.size(); ++i)
      names_.push_back(primaries[i] + "_" + complementaries[i] + "_mixing");
    defaults_ = effective_defaults("Mixture", names_, expect_signal);
  }
  int64_t npoi() const override { return static_cast<int64_t>(names_.size()); }
  int64_t npou() const override { return 0; }
  std::vector<std::string> names() const override { return names_; }
  Eigen::VectorXd default_values() const override { return defaults_; }
  void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    const int64_t m = npoi();
    r = Eigen::VectorXd::Ones(nproc_);
    if (jac) jac->setZero(nproc_, m);
    for (int64_t i = 0; i < m; ++i) {
      r[primary_idx_[i]] = pi[i];
      r[complementary_idx_[i]] = 1.0 - pi[i];
      if (jac) {
        (*jac)(primary_idx_[i], i) = 1.0;
        (*jac)(complementary_idx_[i], i) = -1.0;
      }
    }
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd&) const override {
    return Eigen::MatrixXd::Zero(npoi(), npoi());
  }
  bool allow_negative_param() const override { return allow_negative_; }
  bool is_linear() const override { return false; }  // as rabbit declares it

 private:
  int64_t nproc_;
  bool allow_negative_;
  std::vector<int64_t> primary_idx_, complementary_idx_;
  std::vector<std::string> names_;
  Eigen::VectorXd defaults_;
};

/// Product of sub-models with the layout [POIs of all | POUs of all] (docs/model.md "Param models").
class CompositeModel final : public ParamModel {
 public:
  CompositeModel(std::vector<std::shared_ptr<const ParamModel>> models, int64_t nproc)
      : models_(std::move(models)), nproc_(nproc) {
    int64_t poi_offset = 0, pou_offset = 0;
    for (const auto& m : models_) {
      poi_offset_.push_back(poi_offset);
      pou_offset_.push_back(pou_offset);
      poi_offset += m->npoi();
      pou_offset += m->npou();
    }
    npoi_ = poi_offset;
    npou_ = pou_offset;
    int votes_negative = 0, votes_positive = 0, active = 0;
    bool all_linear = true;
    for (const auto& m : models_) {
      if (m->npoi() > 0) (m->allow_negative_param() ? votes_negative : votes_positive)++;
      if (m->nparams() > 0) {
        ++active;
        all_linear = all_linear && m->is_linear();
      }
    }
    if (votes_negative > 0 && votes_positive > 0)
      throw OptionError(
          "--paramModel: the POI-carrying sub-models of the composite disagree on --allowNegativeParam");
    allow_negative_ = votes_negative > 0;
    is_linear_ = nparams() == 0 || (allow_negative_ && active <= 1 && all_linear);
    for (size_t k = 0; k < models_.size(); ++k) {
      const auto n = models_[k]->names();
      for (int64_t i = 0; i < models_[k]->npoi(); ++i) names_.push_back(n[i]);
    }
    for (size_t k = 0; k < models_.size(); ++k) {
      const auto n = models_[k]->names();
      for (int64_t i = models_[k]->npoi(); i < models_[k]->nparams(); ++i) names_.push_back(n[i]);
    }
  }
  int64_t npoi() const override { return npoi_; }
  int64_t npou() const override { return npou_; }
  std::vector<std::string> names() const override { return names_; }
  Eigen::VectorXd default_values() const override {
    Eigen::VectorXd out(nparams());
    for (size_t k = 0; k < models_.size(); ++k) scatter(k, models_[k]->default_values(), out);
    return out;
  }
  void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    const size_t nm = models_.size();
    std::vector<Eigen::VectorXd> rs(nm);
    std::vector<Eigen::MatrixXd> js(nm);
    for (size_t k = 0; k < nm; ++k) models_[k]->rates(gather(k, pi), rs[k], jac ? &js[k] : nullptr);
    r = Eigen::VectorXd::Ones(nproc_);
    for (size_t k = 0; k < nm; ++k) r = r.cwiseProduct(rs[k]);
    if (!jac) return;
    jac->setZero(nproc_, nparams());
    for (size_t k = 0; k < nm; ++k) {
      const Eigen::VectorXd others = product_except(rs, k, k);
      const Eigen::MatrixXd jk = others.asDiagonal() * js[k];
      for (int64_t i = 0; i < models_[k]->nparams(); ++i) jac->col(position(k, i)) += jk.col(i);
    }
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd& pi, const Eigen::VectorXd& w) const override {
    const size_t nm = models_.size();
    std::vector<Eigen::VectorXd> rs(nm);
    std::vector<Eigen::MatrixXd> js(nm);
    std::vector<Eigen::VectorXd> pis(nm);
    for (size_t k = 0; k < nm; ++k) {
      pis[k] = gather(k, pi);
      models_[k]->rates(pis[k], rs[k], &js[k]);
    }
    Eigen::MatrixXd out = Eigen::MatrixXd::Zero(nparams(), nparams());
    for (size_t k = 0; k < nm; ++k) {
      // Own curvature of model k, weighted by the other factors.
      const Eigen::VectorXd wk = w.cwiseProduct(product_except(rs, k, k));
      const Eigen::MatrixXd ck = models_[k]->rate_curvature(pis[k], wk);
      for (int64_t a = 0; a < ck.rows(); ++a)
        for (int64_t b = 0; b < ck.cols(); ++b) out(position(k, a), position(k, b)) += ck(a, b);
      // Cross terms between models k and l: Σ_p w_p Π_{others} r_p ∂r_k/∂a ∂r_l/∂b.
      for (size_t l = 0; l < nm; ++l) {
        if (l == k) continue;
        const Eigen::VectorXd wkl = w.cwiseProduct(product_except(rs, k, l));
        const Eigen::MatrixXd block = js[k].transpose() * wkl.asDiagonal() * js[l];
        for (int64_t a = 0; a < block.rows(); ++a)
          for (int64_t b = 0; b < block.cols(); ++b) out(position(k, a), position(l, b)) += block(a, b);
      }
    }
    return out;
  }
  bool allow_negative_param() const override { return allow_negative_; }
  bool is_linear() const override { return is_linear_; }
  // The bin-range methods: ParamModel's defaults (built on rates() above) while every member is
  // bin-independent; with a bin-dependent member (ABCD), the product rule over the members' own
  // bin-range methods (docs/model.md "Bin-dependent param models").
  bool bin_independent() const override {
    return std::all_of(models_.begin(), models_.end(), [](const auto& m) { return m->bin_independent(); });
  }
  void bin_rates(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, Eigen::MatrixXd& r) const override {
    if (bin_independent()) return ParamModel::bin_rates(pi, b0, b1, r);
    r = Eigen::MatrixXd::Ones(b1 - b0, nproc_);
    for (size_t k = 0; k < models_.size(); ++k) {
      Eigen::MatrixXd rk;
      models_[k]->bin_rates(gather(k, pi), b0, b1, rk);
      r = r.cwiseProduct(rk);
    }
  }
  Eigen::SparseMatrix<double, Eigen::RowMajor> rate_jacobian(const Eigen::VectorXd& pi, int64_t b0,
                                                             int64_t b1) const override {
    if (bin_independent()) return ParamModel::rate_jacobian(pi, b0, b1);
    const auto rs = member_bin_rates(pi, b0, b1);
    Eigen::SparseMatrix<double, Eigen::RowMajor> out((b1 - b0) * nproc_, nparams());
    for (size_t k = 0; k < models_.size(); ++k) {
      // ∂r/∂π_k = (Π_{l≠k} r_l) ∂r_k/∂π_k, placed at the composite positions of model k's parameters
      const Eigen::VectorXd others = flat_product_except(rs, k, k);
      const Eigen::SparseMatrix<double, Eigen::RowMajor> placed =
          models_[k]->rate_jacobian(gather(k, pi), b0, b1) * placement(k);
      out += others.asDiagonal() * placed;
    }
    return out;
  }
  void rates_vjp(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, const Eigen::MatrixXd& w,
                 Eigen::VectorXd& g) const override {
    if (bin_independent()) return ParamModel::rates_vjp(pi, b0, b1, w, g);
    g = rate_jacobian(pi, b0, b1).transpose() * flat(w);
  }
  void rates_jvp(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, const Eigen::MatrixXd& v,
                 Eigen::MatrixXd& dr) const override {
    if (bin_independent()) return ParamModel::rates_jvp(pi, b0, b1, v, dr);
    dr = rate_jacobian(pi, b0, b1) * v;
  }
  Eigen::MatrixXd curvature_product(const Eigen::VectorXd& pi, int64_t b0, int64_t b1,
                                    const Eigen::MatrixXd& w, const Eigen::MatrixXd& v) const override {
    if (bin_independent()) return ParamModel::curvature_product(pi, b0, b1, w, v);
    const auto rs = member_bin_rates(pi, b0, b1);
    const int64_t nb = b1 - b0, nm = static_cast<int64_t>(models_.size());
    const Eigen::VectorXd wf = flat(w);
    std::vector<Eigen::SparseMatrix<double, Eigen::RowMajor>> js(nm);
    std::vector<Eigen::SparseMatrix<double, Eigen::RowMajor>> place(nm);
    for (int64_t k = 0; k < nm; ++k) {
      js[k] = models_[k]->rate_jacobian(gather(k, pi), b0, b1);
      place[k] = placement(k);
    }
    Eigen::MatrixXd out = Eigen::MatrixXd::Zero(nparams(), v.cols());
    for (int64_t k = 0; k < nm; ++k) {
      // own curvature of model k, weighted by the other factors
      const Eigen::VectorXd wk = wf.cwiseProduct(flat_product_except(rs, k, k));
      Eigen::MatrixXd wk_bins(nb, nproc_);
      for (int64_t b = 0; b < nb; ++b) wk_bins.row(b) = wk.segment(b * nproc_, nproc_).transpose();
      const Eigen::MatrixXd vk = place[k] * v;
      out += place[k].transpose() * models_[k]->curvature_product(gather(k, pi), b0, b1, wk_bins, vk);
      // cross terms: Σ_bp w_bp Π_{others} r_bp ∂r_k/∂a ∂r_l/∂b
      for (int64_t l = 0; l < nm; ++l) {
        if (l == k) continue;
        const Eigen::VectorXd wkl = wf.cwiseProduct(flat_product_except(rs, k, l));
        const Eigen::MatrixXd jl_v = js[l] * (place[l] * v);
        out += place[k].transpose() * (js[k].transpose() * (wkl.asDiagonal() * jl_v));
      }
    }
    return out;
  }
  Eigen::VectorXd prior_sigmas() const override { return permuted_priors(true); }
  Eigen::VectorXd prior_means() const override { return permuted_priors(false); }

 private:
  /// Position in the composite vector of parameter i of sub-model k.
  int64_t position(size_t k, int64_t i) const {
    const int64_t np = models_[k]->npoi();
    return i < np ? poi_offset_[k] + i : npoi_ + pou_offset_[k] + (i - np);
  }
  Eigen::VectorXd gather(size_t k, const Eigen::VectorXd& pi) const {
    Eigen::VectorXd out(models_[k]->nparams());
    for (int64_t i = 0; i < out.size(); ++i) out[i] = pi[position(k, i)];
    return out;
  }
  void scatter(size_t k, const Eigen::VectorXd& v, Eigen::VectorXd& out) const {
    for (int64_t i = 0; i < v.size(); ++i) out[position(k, i)] = v[i];
  }
  /// Selection [nparams(model k) × nparams()]: row i picks the composite position of k's parameter i.
  Eigen::SparseMatrix<double, Eigen::RowMajor> placement(size_t k) const {
    Eigen::SparseMatrix<double, Eigen::RowMajor> s(models_[k]->nparams(), nparams());
    for (int64_t i = 0; i < models_[k]->nparams(); ++i) s.insert(i, position(k, i)) = 1.0;
    return s;
  }
  /// w [nb × P] flattened as rows b·P + p (the row order of rate_jacobian).
  static Eigen::VectorXd flat(const Eigen::MatrixXd& w) {
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> wr = w;
    return Eigen::Map<const Eigen::VectorXd>(wr.data(), wr.size());
  }
  std::vector<Eigen::VectorXd> member_bin_rates(const Eigen::VectorXd& pi, int64_t b0, int64_t b1) const {
    std::vector<Eigen::VectorXd> rs(models_.size());
    for (size_t k = 0; k < models_.size(); ++k) {
      Eigen::MatrixXd rk;
      models_[k]->bin_rates(gather(k, pi), b0, b1, rk);
      rs[k] = flat(rk);
    }
    return rs;
  }
  Eigen::VectorXd flat_product_except(const std::vector<Eigen::VectorXd>& rs, size_t skip1,
                                      size_t skip2) const {
    Eigen::VectorXd p = Eigen::VectorXd::Ones(rs.empty() ? 0 : rs[0].size());
    for (size_t j = 0; j < rs.size(); ++j)
      if (j != skip1 && j != skip2) p = p.cwiseProduct(rs[j]);
    return p;
  }
  Eigen::VectorXd product_except(const std::vector<Eigen::VectorXd>& rs, size_t skip1, size_t skip2) const {
    Eigen::VectorXd p = Eigen::VectorXd::Ones(nproc_);
    for (size_t j = 0; j < rs.size(); ++j)
      if (j != skip1 && j != skip2) p = p.cwiseProduct(rs[j]);
    return p;
  }
  Eigen::VectorXd permuted_priors(bool sigmas) const {
    bool any = false;
    for (const auto& m : models_) any = any || m->prior_sigmas().size() > 0;
    if (!any) return {};
    Eigen::VectorXd out(nparams());
    for (size_t k = 0; k < models_.size(); ++k) {
      Eigen::VectorXd v = sigmas ? models_[k]->prior_sigmas() : models_[k]->prior_means();
      // A sub-model without priors: no constraint (NaN sigma) and "use the stored default" (NaN mean).
      if (v.size() == 0)
        v = Eigen::VectorXd::Constant(models_[k]->nparams(), std::numeric_limits<double>::quiet_NaN());
      scatter(k, v, out);
    }
    return out;
  }

  std::vector<std::shared_ptr<const ParamModel>> models_;
  int64_t nproc_;
  int64_t npoi_ = 0, npou_ = 0;
  std::vector<int64_t> poi_offset_, pou_offset_;
  std::vector<std::string> names_;
  bool allow_negative_ = false;
  bool is_linear_ = true;
};

void expect_no_arguments(const ParamModelSpec& spec) {
  if (!spec.args.empty())
    throw OptionError(fmt::format("--paramModel {} takes no arguments, got {}", spec.name, spec.args.size()));
}

std::shared_ptr<const ParamModel> make_ones(const FitInputData& input, const ParamModelSpec& spec,
                                            const ExpectSignal&, bool) {
  expect_no_arguments(spec);
  return std::make_shared<OnesModel>(input.nproc);
}

std::shared_ptr<const ParamModel> make_mu(const FitInputData& input, const ParamModelSpec& spec,
                                          const ExpectSignal& expect_signal, bool allow_negative) {
  expect_no_arguments(spec);
  return std::make_shared<MuModel>(input, expect_signal, allow_negative);
}

std::shared_ptr<const ParamModel> make_mixture(const FitInputData& input, const ParamModelSpec& spec,
                                               const ExpectSignal& expect_signal, bool allow_negative) {
  return std::make_shared<MixtureModel>(input, spec.args, expect_signal, allow_negative);
}

/// The registry of --paramModel names (docs/architecture.md "How to add a param model"): one line per model.
struct ParamModelEntry {
  const char* name;
  bool bin_dependent;
  std::shared_ptr<const ParamModel> (*make)(const FitInputData&, const ParamModelSpec&, const ExpectSignal&,
                                            bool);
};
constexpr ParamModelEntry kParamModels[] = {
    {"Ones", false, make_ones},
    {"Mu", false, make_mu},
    {"Mixture", false, make_mixture},
    {"ABCD", true, make_abcd},
    {"ExtendedABCD", true, make_extended_abcd},
    {"SmoothABCD", true, make_smooth_abcd},
    {"SmoothExtendedABCD", true, make_smooth_extended_abcd},
    {"ABCDIsoMT", true, make_abcd_isomt},
    {"ExtendedABCDIsoMT", true, make_extended_abcd_isomt},
    {"SmoothABCDIsoMT", true, make_smooth_abcd_isomt},
    {"SmoothExtendedABCDIsoMT", true, make_smooth_extended_abcd_isomt},
    {"AxisNormModel", true, make_axis_norm},
    {"AxisExpModel", true, make_axis_exp},
    {"AxisBernsteinModel", true, make_axis_bernstein},
};

}  // namespace

const std::vector<std::string>& supported_param_models() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : kParamModels) out.emplace_back(e.name);
    return out;
  }();
  return names;
}

bool param_model_depends_on_bin(const std::string& name) {
  for (const auto& e : kParamModels)
    if (name == e.name) return e.bin_dependent;
  return false;
}

std::shared_ptr<const ParamModel> make_param_model(
    const FitInputData& input, const std::vector<ParamModelSpec>& specs,
    const std::vector<std::pair<std::string, double>>& expect_signal, bool allow_negative_param) {
  std::vector<ParamModelSpec> list = specs;
  if (list.empty()) list.push_back(ParamModelSpec{});
  std::vector<std::shared_ptr<const ParamModel>> models;
  for (const auto& spec : list) {
    const auto entry = std::find_if(std::begin(kParamModels), std::end(kParamModels),
                                    [&](const ParamModelEntry& e) { return spec.name == e.name; });
    if (entry == std::end(kParamModels))
      throw OptionError(
          fmt::format("--paramModel: unknown param model '{}'; supported: {} (rabbit's "
                      "SaturatedProjectModel and user-defined models are not implemented)",
                      spec.name, fmt::join(supported_param_models(), ", ")));
    models.push_back(entry->make(input, spec, expect_signal, allow_negative_param));
  }
  if (models.size() == 1) return models.front();
  return std::make_shared<CompositeModel>(std::move(models), input.nproc);
}

}  // namespace rabbit
