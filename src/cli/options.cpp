// rabbit_fit's command line (docs/user-guide.md "Command-line rules"): CLI11 reads the tokens with
// argparse's behaviour (option_table, argparse_compat), this unit turns them into FitOptions and the
// recorded options, refuses what this release does not implement, and hands the result to the
// rules across options (check_option_rules, validate_run.hpp).
#include "rabbit/cli/options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "argparse_compat.hpp"
#include "option_table.hpp"
#include "rabbit/cli/validate_run.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::cli {

using namespace detail;

namespace {

struct Parsed {
  std::map<std::string, std::vector<std::vector<std::string>>> occurrences;  // by dest
  std::string filename;
};

void build_app(CLI::App& app, Parsed& parsed) {
  app.set_help_flag("-h,--help", "show this help message and exit");
  app.add_option("filename", parsed.filename, "input tensor (HDF5)")->required();
  for (const auto& s : specs()) {
    std::string help = s.help;
    if (s.tier == Tier::refused && help.find("not implemented") == std::string::npos)
      help += " [not implemented yet]";
    if (s.default_json != "null" && s.kind != Kind::flag) help += " (default: " + s.default_json + ")";
    if (!s.choices.empty()) {
      std::string c;
      for (const auto& ch : s.choices) c += (c.empty() ? "" : ", ") + ch;
      help += " {" + c + "}";
    }
    auto* occ = &parsed.occurrences[s.dest];
    if (s.kind == Kind::flag) {
      app.add_flag_callback(
          s.names, [occ] { occ->push_back({}); }, help);
      continue;
    }
    auto* opt = app.add_option_function<std::vector<std::string>>(
        s.names, [occ](const std::vector<std::string>& v) { occ->push_back(v); }, help);
    opt->trigger_on_parse();
    switch (s.kind) {
      case Kind::scalar:
        opt->expected(1);
        break;
      case Kind::optional_scalar:
        opt->expected(0, 1);
        break;
      case Kind::list_plus:
      case Kind::append:
        opt->expected(1, -1);
        break;
      case Kind::list_star:
        opt->expected(0, -1);
        break;
      case Kind::append_pair:
        opt->expected(2);
        break;
      default:
        break;
    }
  }
}

}  // namespace

std::vector<std::string> refused_options() {
  std::vector<std::string> out;
  for (const auto& s : specs())
    if (s.tier == Tier::refused) out.push_back(long_name(s));
  return out;
}

std::string fit_help_text() {
  CLI::App app("rabbit_fit: binned profile-likelihood fit of a rabbit input tensor", "rabbit_fit");
  Parsed parsed;
  build_app(app, parsed);
  return app.help();
}

std::string FitOptions::output_file() const {
  std::string name = outname;
  if (std::filesystem::path(name).filename().string().find('.') == std::string::npos) name += ".hdf5";
  if (postfix) {
    std::filesystem::path p(name);
    std::string stem = p.stem().string();
    std::string ext = p.extension().string();
    name = (p.parent_path() / (stem + "_" + *postfix + ext)).string();
  }
  return (std::filesystem::path(outpath) / name).string();
}

FitOptions parse_fit_options(int argc, const char* const* argv) {
  std::set<std::string> longs;
  for (const auto& s : specs()) longs.insert(long_name(s));
  longs.insert("help");
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  args = expand_prefixes(args, longs);

  CLI::App app("rabbit_fit: binned profile-likelihood fit of a rabbit input tensor", "rabbit_fit");
  Parsed parsed;
  build_app(app, parsed);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    throw HelpRequested{app.help()};
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    throw OptionError(msg);
  }

  FitOptions o;
  o.filename = parsed.filename;
  o.command = argc > 0 ? quote_arg(argv[0]) : "rabbit_fit";
  for (int i = 1; i < argc; ++i) o.command += " " + quote_arg(argv[i]);

  // Values per destination: the last occurrence for scalars and lists, all for append kinds.
  std::string json = "{\"filename\": " + json_string(o.filename);
  std::set<std::string> given;
  for (const auto& s : specs()) {
    const auto& occ = parsed.occurrences[s.dest];
    const std::string name = long_name(s);
    if (!occ.empty()) given.insert(name);
    if (!occ.empty() && !s.choices.empty()) {
      for (const auto& o2 : occ)
        for (const auto& v : o2)
          if (!(v.empty() && s.kind == Kind::optional_scalar) &&  // bare optional value: its const
              std::find(s.choices.begin(), s.choices.end(), v) == s.choices.end()) {
            std::string c;
            for (const auto& ch : s.choices) c += (c.empty() ? "'" : ", '") + ch + "'";
            throw OptionError(
                fmt::format("argument --{}: invalid choice: '{}' (choose from {})", name, v, c));
          }
    }
    std::string value = s.default_json;
    if (!occ.empty()) {
      const auto& last = occ.back();
      switch (s.kind) {
        case Kind::flag:
          value = "true";
          break;
        case Kind::scalar:
          value = json_value(s, last.at(0));
          break;
        case Kind::optional_scalar:
          value = json_value(s, last.empty() || last[0].empty() ? "auto" : last[0]);
          break;
        case Kind::list_plus:
          value = json_list(s, last);
          break;
        case Kind::list_star: {
          std::vector<std::string> vals;
          for (const auto& v : last)
            if (!v.empty()) vals.push_back(v);
          if (vals.empty() && s.dest == "unblind") vals = {".*"};
          value = json_list(s, vals);
          break;
        }
        case Kind::append:
        case Kind::append_pair: {
          value = "[";
          for (size_t i = 0; i < occ.size(); ++i) value += (i ? ", " : "") + json_list(s, occ[i]);
          value += "]";
          break;
        }
      }
    }
    json += ", " + json_string(s.dest) + ": " + value;
    if (!occ.empty() && s.tier == Tier::ignored)
      o.warnings.push_back(fmt::format("option --{} is specific to TensorFlow and is ignored", name));
  }

  auto last = [&](const char* dest) -> const std::vector<std::string>* {
    const auto& occ = parsed.occurrences[dest];
    return occ.empty() ? nullptr : &occ.back();
  };
  auto flag = [&](const char* dest) { return !parsed.occurrences[dest].empty(); };
  auto str = [&](const char* dest, std::string& out) {
    if (auto* v = last(dest)) out = v->at(0);
  };
  auto integer = [&](const char* dest, int64_t& out) {
    if (auto* v = last(dest)) out = to_int(dest, v->at(0));
  };
  auto real = [&](const char* dest, double& out) {
    if (auto* v = last(dest)) out = to_real(dest, v->at(0));
  };
  auto nonempty = [](const std::vector<std::string>& v) {
    std::vector<std::string> out;
    for (const auto& s : v)
      if (!s.empty()) out.push_back(s);
    return out;
  };

  // A.
  str("outpath", o.outpath);
  str("outname", o.outname);
  if (auto* v = last("postfix")) o.postfix = v->at(0);
  str("outputFormat", o.output_format);
  str("tensorPrecision", o.tensor_precision);
  int64_t verbose = 3;
  integer("verbose", verbose);
  o.verbose = static_cast<int>(verbose);
  o.no_color_logger = flag("noColorLogger");
  // B.
  ModelOptions& m = o.model;
  for (const auto& pm : parsed.occurrences["paramModel"]) {
    ParamModelSpec spec;
    spec.name = pm.at(0);
    spec.args.assign(pm.begin() + 1, pm.end());
    m.param_models.push_back(spec);
  }
  o.param_model_given = !m.param_models.empty();
  for (const auto& p : parsed.occurrences["expectSignal"])
    m.expect_signal.emplace_back(p.at(0), to_real("expectSignal", p.at(1)));
  m.allow_negative_param = flag("allowNegativeParam");
  const bool chisq = flag("chisqFit"), covfit = flag("covarianceFit");
  // Both choose the one data likelihood of FitOptions, so they exclude each other here, as upstream's
  // mutually exclusive argparse group does (docs/user-guide.md "Rules across options").
  if (chisq && covfit) throw OptionError("options --chisqFit and --covarianceFit are mutually exclusive");
  m.likelihood = chisq    ? DataLikelihood::chisq
                 : covfit ? DataLikelihood::covariance
                          : DataLikelihood::poisson;
  m.bin_by_bin_stat = !flag("noBinByBinStat");
  if (auto* v = last("binByBinStatType")) {
    const std::string& t = v->at(0);
    m.bb_type = t == "gamma"                   ? BBType::gamma
                : t == "normal-additive"       ? BBType::normal_additive
                : t == "normal-multiplicative" ? BBType::normal_multiplicative
                                               : BBType::automatic;
  }
  if (auto* v = last("binByBinStatMode")) m.bb_mode = v->at(0) == "full" ? BBMode::full : BBMode::lite;
  real("minBBKstat", m.min_bb_kstat);
  // C.
  str("minimizerMethod", o.minimizer_method);
  {
    static const std::set<std::string> refused_methods = {"BFGS", "L-BFGS-B", "CG", "dogleg"};
    if (refused_methods.count(o.minimizer_method))
      throw OptionError(
          fmt::format("--minimizerMethod {} is not implemented; use trust-krylov, trust-ncg or trust-exact",
                      o.minimizer_method));
  }
  if (auto* v = last("minimizerMaxiter")) o.minimizer_maxiter = to_int("minimizerMaxiter", v->at(0));
  if (auto* v = last("minimizerGtol")) o.minimizer_gtol = to_real("minimizerGtol", v->at(0));
  if (auto* v = last("minimizerFtol")) {
    o.minimizer_ftol = to_real("minimizerFtol", v->at(0));
    o.warnings.push_back(
        fmt::format("{} does not implement ftol; ignoring --minimizerFtol", o.minimizer_method));
  }
  integer("earlyStopping", o.early_stopping);
  if (auto* v = last("edmTol")) o.edm_tol = to_real("edmTol", v->at(0));
  o.no_hessian = flag("noHessian");
  o.no_edm = flag("noEDM");
  o.no_fit = flag("noFit");
  o.force_linear = flag("forceLinear");
  o.diagnostics = flag("diagnostics");
  o.prefit_only = flag("prefitOnly");
  o.full_nll = flag("fullNll");
  // D.
  if (auto* v = last("unblind")) {
    m.unblind = nonempty(*v);
    if (m.unblind.empty()) m.unblind = {".*"};
  }
  if (auto* v = last("blindingGroup")) m.blinding_groups = nonempty(*v);
  for (const auto& p : parsed.occurrences["setConstraintMinimum"])
    m.set_constraint_minimum.emplace_back(p.at(0), to_real("setConstraintMinimum", p.at(1)));
  if (auto* v = last("freezeParameters")) m.freeze_parameters = *v;
  real("prefitUnconstrainedNuisanceUncertainty", m.prefit_unconstrained_nuisance_uncertainty);
  // E.
  o.do_impacts = flag("doImpacts");
  o.global_impacts = flag("globalImpacts");
  o.gaussian_global_impacts = flag("gaussianGlobalImpacts");
  o.non_profiled_impacts = flag("nonProfiledImpacts");
  o.global_asym_impacts = flag("globalAsymImpacts");
  o.asym_impacts = flag("asymImpacts");
  if (auto* v = last("asymImpactsInclude")) o.asym_impacts_include = *v;
  if (auto* v = last("asymImpactsExclude")) o.asym_impacts_exclude = *v;
  str("asymImpactsHess", o.asym_impacts_hess);
  real("asymImpactsTol", o.asym_impacts_tol);
  if (flag("asymImpactsHess"))
    o.warnings.push_back(
        "--asymImpactsHess chooses the Hessian of SciPy's trust-constr; the contour points here are found by "
        "profile fits and it has no effect");
  if (auto* v = last("globalAsymImpactsInclude")) o.global_asym_impacts_include = *v;
  if (auto* v = last("globalAsymImpactsExclude")) o.global_asym_impacts_exclude = *v;
  real("globalAsymImpactsSigma", o.global_asym_impacts_sigma);
  o.global_asym_impacts_linear_warmstart = flag("globalAsymImpactsLinearWarmstart");
  // The refinements of --globalAsymImpacts alone would silently do nothing.
  for (const char* name : {"globalAsymImpactsInclude", "globalAsymImpactsExclude", "globalAsymImpactsSigma",
                           "globalAsymImpactsLinearWarmstart"})
    if (!o.global_asym_impacts && flag(name))
      throw OptionError(fmt::format("--{} needs --globalAsymImpacts", name));
  for (const char* name : {"asymImpactsInclude", "asymImpactsExclude", "asymImpactsHess", "asymImpactsTol"})
    if (!o.asym_impacts && flag(name)) throw OptionError(fmt::format("--{} needs --asymImpacts", name));
  // F.
  o.save_hists = flag("saveHists");
  o.save_hists_per_process = flag("saveHistsPerProcess");
  o.compute_hist_errors = flag("computeHistErrors");
  o.compute_hist_errors_per_process = flag("computeHistErrorsPerProcess");
  o.compute_hist_cov = flag("computeHistCov");
  o.compute_hist_impacts = flag("computeHistImpacts");
  o.compute_hist_gaussian_impacts = flag("computeHistGaussianImpacts");
  o.no_chi2 = flag("noChi2");
  o.compute_variations = flag("computeVariations");
  o.compute_saturated_projection_tests = flag("computeSaturatedProjectionTests");
  o.no_postfit_profile_bb = flag("noPostfitProfileBB");
  for (const auto& mp : parsed.occurrences["mapping"]) {
    // The name is checked here, the arguments when the mapping is built on the input (before any fit).
    const auto names = postfit::supported_mappings();
    if (std::find(names.begin(), names.end(), mp.at(0)) == names.end())
      throw OptionError(fmt::format("mapping {} is not implemented yet (this release supports {})", mp.at(0),
                                    fmt::join(names, ", ")));
    o.mappings.push_back(mp);
  }
  if (o.mappings.empty() && o.save_hists) o.mappings.push_back({"BaseMapping"});
  o.composite_mapping = flag("compositeMapping");
  // I. The regulariser's name and mapping are checked when the model is built on the input (regularizer.hpp).
  for (const auto& r : parsed.occurrences["regularization"]) {
    if (r.size() < 2)
      throw OptionError(fmt::format("argument -r/--regularization: expected NAME MAPPING [ARG...], got '{}'",
                                    fmt::join(r, " ")));
    m.regularization.push_back(RegularizationSpec{r[0], std::vector<std::string>(r.begin() + 1, r.end())});
  }
  real("regularizationStrength", m.regularization_strength);
  o.l_curve_scan = flag("lCurveScan");
  o.l_curve_optimize = flag("lCurveOptimize");
  // G.
  if (auto* v = last("scan")) o.scan = nonempty(*v);
  integer("scanPoints", o.scan_points);
  real("scanRange", o.scan_range);
  o.scan_range_use_prefit = flag("scanRangeUsePrefit");
  if (auto* v = last("contourScan")) o.contour_scan = nonempty(*v);
  if (auto* v = last("contourLevels")) {
    o.contour_levels.clear();
    for (const auto& s : *v) o.contour_levels.push_back(to_real("contourLevels", s));
  }
  o.scan_2d = parsed.occurrences["scan2D"];
  o.contour_scan_2d = parsed.occurrences["contourScan2D"];
  // H.
  if (auto* v = last("toys")) {
    o.toys.clear();
    for (const auto& s : *v) o.toys.push_back(to_int("toys", s));
  }
  if (auto* v = last("pseudoData")) o.pseudo_data = nonempty(*v);
  str("toysSystRandomize", o.toys_syst_randomize);
  str("toysDataRandomize", o.toys_data_randomize);
  str("toysDataMode", o.toys_data_mode);
  o.toys_randomize_parameters = flag("toysRandomizeParameters");
  integer("seed", o.seed);
  // J.
  if (auto* v = last("externalPostfit")) o.external_postfit = v->at(0);
  if (auto* v = last("externalPostfitResult")) o.external_postfit_result = v->at(0);
  if (auto* v = last("snapshotFile")) o.snapshot_file = v->at(0);
  real("snapshotInterval", o.snapshot_interval_hours);
  if (!(o.snapshot_interval_hours >= 0.0) || !std::isfinite(o.snapshot_interval_hours))
    throw OptionError(fmt::format("argument --snapshotInterval: must be a number of hours >= 0, got {}",
                                  o.snapshot_interval_hours));
  if (o.snapshot_interval_hours > 0.0 && !o.snapshot_file)
    throw OptionError("--snapshotInterval needs --snapshotFile (where the snapshots are written)");
  // L.
  integer("maxRestarts", o.max_restarts);
  real("stallRelTol", o.stall_rel_tol);
  str("backend", o.backend);
  integer("nDevices", o.n_devices);
  if (auto* v = last("devices"))
    for (const auto& s : *v) o.devices.push_back(to_int("devices", s));
  integer("hvpBatch", o.hvp_batch);
  integer("nThreads", o.n_threads);
  integer("refitWorkers", o.refit_workers);
  o.precondition = flag("precondition");
  if (auto* v = last("preconditionParams")) o.precondition_params = nonempty(*v);
  if (auto* v = last("preconditionBlocks"))
    o.precondition_blocks = v->empty() || v->at(0).empty() ? "auto" : v->at(0);
  real("preconditionBlockThreshold", o.precondition_block_threshold);
  str("preconditionFrom", o.precondition_from);
  real("preconditionRidge", o.precondition_ridge);
  str("preconditionTransform", o.precondition_transform);
  if (!o.precondition) {
    for (const char* dep : {"preconditionParams", "preconditionBlocks", "preconditionBlockThreshold",
                            "preconditionFrom", "preconditionRidge", "preconditionTransform"})
      if (given.count(dep))
        o.warnings.push_back(fmt::format("--{} has no effect without --precondition", dep));
  }

  // What this release does not implement is refused before the rules are checked (one line each, first one
  // wins);
  for (const auto& s : specs())
    if (s.tier == Tier::refused && given.count(long_name(s)))
      throw OptionError(fmt::format("option --{} is not implemented yet", long_name(s)));

  // The rules on values and across options (docs/user-guide.md "Rules across options"), after the refusals.
  check_option_rules(o);

  // mapping is recorded after the BaseMapping fallback (docs/output-format.md "File tree").
  if (parsed.occurrences["mapping"].empty() && !o.mappings.empty()) {
    auto pos = json.find("\"mapping\": []");
    if (pos != std::string::npos) json.replace(pos, 13, "\"mapping\": [[\"BaseMapping\"]]");
  }
  o.args_json = json + "}";
  return o;
}

}  // namespace rabbit::cli
