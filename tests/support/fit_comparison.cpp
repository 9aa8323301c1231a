#include "support/fit_comparison.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <sstream>

#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::Hist;
using rabbit::result::ResultReader;

namespace rabbit::test {

double FitTolerances::relative(const std::string& where, const std::string& quantity, const std::string& label,
                               double standard) const {
  for (const KnownDeviation& k : known_deviations)
    if (where == k.where && quantity == k.quantity && label == k.label) return k.relative;
  return standard;
}

std::string format_summary(const DeviationSummary& summary) {
  std::ostringstream line;
  line << std::setprecision(2);
  for (const auto& [quantity, d] : summary) line << "; " << quantity << " " << d.relative << "/" << d.absolute;
  return line.str();
}

ReferenceRun run_reference_case(const Json& reference, const fs::path& tensor_dir, const fs::path& out_dir,
                                const std::string& extra_args) {
  ReferenceRun run;
  const fs::path tensor = tensor_dir / reference.at("tensor").string();
  const fs::path exe = binary_dir() / "rabbit_fit";
  run.command = shell_quote(exe.string()) + " " + shell_quote(tensor.string());
  for (const auto& a : reference.at("args").strings()) run.command += " " + shell_quote(a);
  if (!extra_args.empty()) run.command += " " + extra_args;
  run.command += " -o " + shell_quote(out_dir.string()) + " --outname fit.hdf5";
  if (!fs::exists(tensor)) {
    run.output = "reference tensor missing: " + tensor.string();
    return run;
  }
  if (!fs::exists(exe)) {
    run.output = exe.string() + " not built (target rabbit_fit_app)";
    return run;
  }
  const CommandResult r = run_command(run.command);
  run.exit_code = r.exit_code;
  run.output = r.output;
  run.result_file = out_dir / "fit.hdf5";
  // A recorded --postfix renames it (fit_POSTFIX.hdf5): then take the one result file there.
  if (!fs::exists(run.result_file) && fs::is_directory(out_dir))
    for (const auto& e : fs::directory_iterator(out_dir))
      if (e.path().extension() == ".hdf5") run.result_file = e.path();
  return run;
}

namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os << std::setprecision(12) << v;
  return os.str();
}

// One compared quantity: counts entries outside tolerance, keeps the worst one (largest ratio of
// deviation to allowed deviation) and the largest deviations for the summary line. Reports on
// destruction.
class Comparison {
 public:
  /// `category` names the summary entry this comparison's largest deviations go to.
  Comparison(std::string where, std::string quantity, DeviationSummary* summary = nullptr, std::string category = "")
      : where_(std::move(where)), quantity_(std::move(quantity)), summary_(summary), category_(std::move(category)) {}
  Comparison(const Comparison&) = delete;
  Comparison& operator=(const Comparison&) = delete;

  void check(const std::string& label, double ours, double ref, double allowed) {
    ++n_;
    double ratio = 0.0;
    if (std::isnan(ref) || std::isnan(ours)) {
      ratio = (std::isnan(ref) && std::isnan(ours)) ? 0.0 : INFINITY;
    } else {
      const double dev = std::abs(ours - ref);
      ratio = dev == 0.0 ? 0.0 : (allowed > 0.0 ? dev / allowed : INFINITY);
      if (ref != 0.0) max_rel_ = std::max(max_rel_, dev / std::abs(ref));
      max_abs_ = std::max(max_abs_, dev);
    }
    if (ratio > 1.0) ++bad_;
    if (ratio >= worst_ratio_) {
      worst_ratio_ = ratio;
      worst_ = label + ": ours " + fmt(ours) + " vs rabbit " + fmt(ref) + " (allowed " + fmt(allowed) + ")";
    }
  }
  void missing(const std::string& what) {
    ++bad_;
    worst_ = "missing in our result: " + what;
    worst_ratio_ = INFINITY;
  }
  void mismatch(const std::string& what) {
    ++bad_;
    worst_ = what;
    worst_ratio_ = INFINITY;
  }
  ~Comparison() {
    if (bad_ > 0)
      ADD_FAILURE() << where_ << " " << quantity_ << ": " << bad_ << " of " << n_ << " outside tolerance; worst "
                    << worst_;
    if (summary_ && n_ > 0) {
      Deviation& d = (*summary_)[category_.empty() ? quantity_ : category_];
      d.relative = std::max(d.relative, max_rel_);
      d.absolute = std::max(d.absolute, max_abs_);
    }
  }

 private:
  std::string where_, quantity_;
  DeviationSummary* summary_;
  std::string category_;
  size_t n_ = 0, bad_ = 0;
  double worst_ratio_ = -1.0, max_rel_ = 0.0, max_abs_ = 0.0;
  std::string worst_;
};

// A reference histogram aligned with ours: for every reference entry (row-major), the label and
// the flat index into our histogram; -1 where ours lacks a category.
struct Alignment {
  std::vector<std::string> labels;
  std::vector<long> ours;
  std::vector<int64_t> ref_shape;
  std::string error;
};

Alignment align(const Json& ref, const Hist& ours) {
  Alignment a;
  const auto& axes = ref.at("axes").array();
  if (axes.size() != ours.shape.size()) {
    a.error = "rank " + std::to_string(ours.shape.size()) + " vs " + std::to_string(axes.size());
    return a;
  }
  std::vector<std::vector<long>> index_map(axes.size());
  std::vector<std::vector<std::string>> axis_labels(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (const Json* labels = axes[i].find("labels")) {
      for (const auto& l : labels->strings()) {
        const auto& ol = ours.axis_labels[i];
        const auto it = std::find(ol.begin(), ol.end(), l);
        index_map[i].push_back(it == ol.end() ? -1 : static_cast<long>(it - ol.begin()));
        axis_labels[i].push_back(l);
      }
    } else {
      const long n = static_cast<long>(axes[i].at("edges").size()) - 1;
      // Our histograms of flow channels carry the flow bins; rabbit's JSON has none.
      const long offset = (ours.shape[i] > n && axes[i].at("underflow").boolean()) ? 1 : 0;
      if (ours.shape[i] < n + offset) {
        a.error = "axis " + std::to_string(i) + " has " + std::to_string(ours.shape[i]) + " bins, rabbit " +
                  std::to_string(n);
        return a;
      }
      for (long k = 0; k < n; ++k) {
        index_map[i].push_back(k + offset);
        axis_labels[i].push_back(std::to_string(k));
      }
    }
    a.ref_shape.push_back(static_cast<int64_t>(index_map[i].size()));
  }
  size_t total = 1;
  for (auto n : a.ref_shape) total *= static_cast<size_t>(n);
  std::vector<int64_t> idx(axes.size(), 0);
  for (size_t flat = 0; flat < total; ++flat) {
    long ours_flat = 0;
    std::string label;
    for (size_t i = 0; i < axes.size(); ++i) {
      const long k = index_map[i][static_cast<size_t>(idx[i])];
      ours_flat = (k < 0 || ours_flat < 0) ? -1 : ours_flat * ours.shape[i] + k;
      label += (i ? "," : "") + axis_labels[i][static_cast<size_t>(idx[i])];
    }
    a.ours.push_back(ours_flat);
    a.labels.push_back("[" + label + "]");
    for (size_t i = axes.size(); i-- > 0;) {
      if (++idx[i] < a.ref_shape[i]) break;
      idx[i] = 0;
    }
  }
  return a;
}

// One case against one result file; every compare_* adds to summary_.
class FitComparison {
 public:
  FitComparison(std::string case_name, const ResultReader& reader, const FitTolerances& tolerances)
      : case_name_(std::move(case_name)), r_(reader), tol_(tolerances) {}

  void compare_group(const std::string& group_key, const Json& ref);
  DeviationSummary& summary() { return summary_; }

 private:
  void compare_parameters(const std::string& where, const std::string& g, const Json& ref);
  void compare_covariance(const std::string& where, const std::string& g, const Json& cov);
  void compare_impacts(const std::string& where, const std::string& key, const Json& ref, const Hist& ours);
  void compare_mappings(const std::string& where, const std::string& g, const Json& mappings);
  void compare_hist(const std::string& where, const std::string& quantity, const Json& ref, const Hist& ours);

  std::string case_name_;
  const ResultReader& r_;
  const FitTolerances& tol_;
  DeviationSummary summary_;
  // The fitted parameters' names and uncertainties, for the impacts' floor.
  std::vector<std::string> names_;
  std::vector<double> sigmas_;
};

void FitComparison::compare_group(const std::string& group_key, const Json& ref) {
  const bool fit_to_data = group_key.empty() || group_key == "data_obs" || group_key == "results";
  const std::string g = fit_to_data ? "results" : "results_" + group_key;
  const std::string where = case_name_ + " [" + g + "]";
  if (!r_.exists(g)) {
    ADD_FAILURE() << where << ": our result file has no group " << g;
    return;
  }

  if (const Json* nll = ref.find("nllvalreduced"); nll && !nll->is_null()) {
    Comparison c(where, "nllvalreduced", &summary_, "nll");
    if (!r_.exists(g + "/nllvalreduced")) c.missing("nllvalreduced");
    else c.check("nllvalreduced", r_.scalar(g + "/nllvalreduced"), nll->number(), tol_.nll_absolute);
  }
  if (const Json* ndf = ref.find("ndfsat")) {
    Comparison c(where, "ndfsat");
    if (!r_.exists(g + "/ndfsat")) c.missing("ndfsat");
    else c.check("ndfsat", r_.scalar(g + "/ndfsat"), ndf->number(), 0.0);
  }
  compare_parameters(where, g, ref);
  if (const Json* cov = ref.find("cov")) compare_covariance(where, g, *cov);
  for (const char* key : {"impacts", "impacts_grouped", "global_impacts", "global_impacts_grouped"}) {
    const Json* h = ref.find(key);
    if (!h) continue;
    if (!r_.exists(g + "/" + key)) {
      Comparison(where, key).missing(key);
      continue;
    }
    compare_impacts(where, key, *h, r_.hist(g + "/" + key));
  }
  if (const Json* mappings = ref.find("mappings")) compare_mappings(where, g, *mappings);
}

// Values to a relative tolerance or that fraction of the uncertainty, uncertainties relative.
void FitComparison::compare_parameters(const std::string& where, const std::string& g, const Json& ref) {
  names_.clear();
  sigmas_.clear();
  for (const std::string key : {"parms_prefit", "parms"}) {
    const Json* p = ref.find(key);
    if (!p) continue;
    Comparison values(where, key + " values", &summary_), uncert(where, key + " uncertainties", &summary_, key + " sigma");
    if (!r_.exists(g + "/" + key)) {
      values.missing(key);
      continue;
    }
    const Hist ours = r_.hist(g + "/" + key);
    const auto labels = p->at("axes")[0].at("labels").strings();
    const auto rv = p->at("values").flatten_numbers();
    const Json* variances = p->find("variances");
    const bool has_variances = variances && variances->is_array();
    const auto rvar = has_variances ? variances->flatten_numbers() : std::vector<double>();
    for (size_t i = 0; i < labels.size(); ++i) {
      const auto& ol = ours.axis_labels[0];
      const auto it = std::find(ol.begin(), ol.end(), labels[i]);
      if (it == ol.end()) {
        values.missing(labels[i]);
        continue;
      }
      const size_t k = static_cast<size_t>(it - ol.begin());
      const double sigma = has_variances ? std::sqrt(rvar[i]) : 0.0;
      values.check(labels[i], ours.values[k], rv[i], tol_.parameter_relative * std::max(std::abs(rv[i]), sigma));
      if (has_variances) uncert.check(labels[i], std::sqrt(ours.variances[k]), sigma, tol_.parameter_relative * sigma);
      if (key == "parms") {
        names_.push_back(labels[i]);
        sigmas_.push_back(sigma);
      }
    }
  }
}

void FitComparison::compare_covariance(const std::string& where, const std::string& g, const Json& cov) {
  Comparison c(where, "cov", &summary_);
  if (!r_.exists(g + "/cov")) return c.missing("cov");
  const Hist ours = r_.hist(g + "/cov");
  const Alignment a = align(cov, ours);
  if (!a.error.empty()) return c.missing("cov shape: " + a.error);
  const auto rv = cov.at("values").flatten_numbers();
  const size_t n = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(rv.size()))));
  for (size_t k = 0; k < rv.size(); ++k) {
    if (a.ours[k] < 0) {
      c.missing("cov" + a.labels[k]);
      continue;
    }
    const double si = std::sqrt(std::abs(rv[(k / n) * n + k / n])), sj = std::sqrt(std::abs(rv[(k % n) * n + k % n]));
    c.check(a.labels[k], ours.values[a.ours[k]], rv[k], tol_.covariance_relative * si * sj);
  }
}

void FitComparison::compare_impacts(const std::string& where, const std::string& key, const Json& ref,
                                    const Hist& ours) {
  const Alignment a = align(ref, ours);
  Comparison c(where, key, &summary_);
  if (!a.error.empty()) return c.missing(key + " shape: " + a.error);
  // Same rows and columns in the same order, not only the same values by name.
  for (size_t axis = 0; axis < ours.axis_labels.size(); ++axis) {
    const Json* labels = ref.at("axes")[axis].find("labels");
    if (labels && labels->strings() != ours.axis_labels[axis])
      c.mismatch("labels of axis " + std::to_string(axis) + " differ from rabbit's (names or order)");
  }
  const std::vector<double> rv = ref.at("values").flatten_numbers();
  const auto rows = ref.at("axes")[0].at("labels").strings();
  const size_t ncol = rv.size() / std::max<size_t>(rows.size(), 1);
  for (size_t k = 0; k < rv.size(); ++k) {
    if (a.ours[k] < 0) {
      c.missing(key + a.labels[k]);
      continue;
    }
    const auto it = std::find(names_.begin(), names_.end(), rows[k / ncol]);
    const double poi_sigma = it == names_.end() ? 0.0 : sigmas_[static_cast<size_t>(it - names_.begin())];
    const double rel = tol_.relative(where, key, a.labels[k], tol_.impact_relative);
    c.check(a.labels[k], ours.values[a.ours[k]], rv[k],
            std::max(rel * std::abs(rv[k]), tol_.impact_floor_of_poi_sigma * poi_sigma));
  }
}

void FitComparison::compare_mappings(const std::string& where, const std::string& g, const Json& mappings) {
  for (const auto& [mapping, mref] : mappings.object()) {
    const std::string mg = g + "/mappings/" + rabbit::result::escape_key(mapping);
    const std::string mw = where + " " + mapping;
    for (const char* key : {"chi2_prefit", "chi2", "ndf_prefit", "ndf"}) {
      const Json* v = mref.find(key);
      if (!v) continue;
      Comparison c(mw, key, &summary_, "chi2/ndf");
      if (!r_.exists(mg + "/" + key)) c.missing(key);
      else
        c.check(key, r_.scalar(mg + "/" + key), v->number(),
                tol_.relative(mw, key, key, tol_.chi2_relative) * std::max(1.0, std::abs(v->number())));
    }
    const Json* channels = mref.find("channels");
    if (!channels) continue;
    for (const auto& [channel, cref] : channels->object()) {
      for (const auto& [hname, href] : cref.object()) {
        // The data covariance is an input, compared by the io tests; everything else is a result.
        if (hname.rfind("cov_", 0) == 0) continue;
        const std::string path =
            mg + "/channels/" + rabbit::result::escape_key(channel) + "/" + rabbit::result::escape_key(hname);
        const std::string quantity = channel + "/" + hname;
        if (!r_.exists(path)) {
          Comparison(mw, quantity).missing(path);
          continue;
        }
        compare_hist(mw, quantity, href, r_.hist(path));
      }
    }
  }
}

void FitComparison::compare_hist(const std::string& where, const std::string& quantity, const Json& ref,
                                 const Hist& ours) {
  const Alignment a = align(ref, ours);
  Comparison values(where, quantity + " values", &summary_, "hist values");
  if (!a.error.empty()) return values.missing(quantity + " shape: " + a.error);
  const std::vector<double> rv = ref.at("values").flatten_numbers();
  double scale = 0.0;
  for (double v : rv) scale = std::max(scale, std::abs(v));
  for (size_t k = 0; k < rv.size(); ++k) {
    if (a.ours[k] < 0) {
      values.missing(quantity + a.labels[k]);
      continue;
    }
    values.check(a.labels[k], ours.values[a.ours[k]], rv[k],
                 std::max(tol_.hist_value_relative * std::abs(rv[k]), tol_.hist_value_floor_of_largest * scale));
  }
  const Json* rvar = ref.find("variances");
  if (!rvar || rvar->is_null()) return;
  Comparison sigmas(where, quantity + " uncertainties", &summary_, "hist uncertainties");
  if (ours.variances.empty()) return sigmas.missing(quantity + " variances");
  const std::vector<double> rs = rvar->flatten_numbers();
  for (size_t k = 0; k < rs.size(); ++k) {
    if (a.ours[k] < 0) continue;
    const double ref_sigma = std::sqrt(rs[k]);
    sigmas.check(a.labels[k], std::sqrt(ours.variances[a.ours[k]]), ref_sigma, tol_.hist_sigma_relative * ref_sigma);
  }
}

}  // namespace

DeviationSummary compare_fit_result(const std::string& case_name, const Json& expected_results,
                                    const std::string& our_result_file, const FitTolerances& tolerances) {
  const ResultReader reader(our_result_file);
  FitComparison comparison(case_name, reader, tolerances);
  for (const auto& [group, results] : expected_results.object()) comparison.compare_group(group, results);
  return comparison.summary();
}

}  // namespace rabbit::test
