#include "rabbit/cli/options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "rabbit/core/error.hpp"

namespace rabbit::cli {
namespace {

// How an option takes its values (argparse nargs/action, docs/user-guide.md "Command-line rules").
enum class Kind { flag, scalar, list_plus, list_star, append, append_pair, optional_scalar };
enum class Type { str, integer, real };
// implemented: works end to end; refused: parsed, then "not implemented yet"; ignored: TF-only.
enum class Tier { implemented, refused, ignored };

struct Spec {
  std::string names;  // CLI11 name string, e.g. "-o,--outpath"
  std::string dest;
  Kind kind;
  Type type;
  std::string default_json;
  std::vector<std::string> choices;
  Tier tier;
  std::string help;
};

const std::vector<Spec>& specs() {
  using K = Kind;
  using T = Type;
  using R = Tier;
  static const std::vector<Spec> table = {
      // A. input, output and logging
      {"-o,--outpath", "outpath", K::scalar, T::str, "\"./\"", {}, R::implemented, "output directory; created if missing"},
      {"--outname", "outname", K::scalar, T::str, "\"fitresults.hdf5\"", {}, R::implemented,
       "output file name inside outpath (may contain sub-directories); '.hdf5' appended if it has no '.'"},
      {"-p,--postfix", "postfix", K::scalar, T::str, "null", {}, R::implemented,
       "inserted before the extension: fitresults_<postfix>.hdf5"},
      {"--outputFormat", "outputFormat", K::scalar, T::str, "\"rabbit\"", {"rabbit", "plain"}, R::implemented,
       "layout of the result file: rabbit's own (read by rabbit's io_tools and scripts) or plain HDF5 "
       "(rabbit-cpp option; docs/output-format.md)"},
      {"-v,--verbose", "verbose", K::scalar, T::integer, "3", {"0", "1", "2", "3", "4"}, R::implemented,
       "log level: 0 critical, 1 error, 2 warning, 3 info, 4 debug"},
      {"--noColorLogger", "noColorLogger", K::flag, T::str, "false", {}, R::implemented, "log without ANSI colours"},
      // B. model and likelihood
      {"--paramModel", "paramModel", K::append, T::str, "null", {}, R::implemented,
       "MODEL [ARG...]: param model (repeatable; several form a composite); default Mu"},
      {"--expectSignal", "expectSignal", K::append_pair, T::str, "null", {}, R::implemented,
       "NAME VALUE: default value of a param-model parameter (repeatable)"},
      {"--allowNegativeParam", "allowNegativeParam", K::flag, T::str, "false", {}, R::implemented,
       "POIs enter linearly (mu = x) instead of mu = x^2"},
      {"--chisqFit", "chisqFit", K::flag, T::str, "false", {}, R::implemented, "diagonal Gaussian chi2 instead of Poisson"},
      {"--covarianceFit", "covarianceFit", K::flag, T::str, "false", {}, R::implemented,
       "chi2 with the full data covariance of the input"},
      {"--noBinByBinStat", "noBinByBinStat", K::flag, T::str, "false", {}, R::implemented,
       "disable the Barlow-Beeston MC-stat nuisances"},
      {"--binByBinStatType", "binByBinStatType", K::scalar, T::str, "\"automatic\"",
       {"automatic", "gamma", "normal-additive", "normal-multiplicative"}, R::implemented, "constraint pdf of beta"},
      {"--binByBinStatMode", "binByBinStatMode", K::scalar, T::str, "\"lite\"", {"lite", "full"}, R::implemented,
       "one beta per bin (lite) or per bin and process (full)"},
      {"--minBBKstat", "minBBKstat", K::scalar, T::real, "0.0", {}, R::implemented,
       "also mask (fix at beta0) the BB entries whose kstat = sumw^2/sumw2 is below this value"},
      // C. fit and minimizer
      {"--minimizerMethod", "minimizerMethod", K::scalar, T::str, "\"trust-krylov\"",
       {"trust-krylov", "trust-exact", "BFGS", "L-BFGS-B", "CG", "trust-ncg", "dogleg", "tf-trust-krylov",
        "tf-trust-ncg", "tf-trust-exact"},
       R::implemented,
       "trust-krylov (GLTR), trust-ncg (Steihaug-CG), trust-exact (More-Sorensen), tf- aliases; "
       "BFGS, L-BFGS-B, CG, dogleg are refused"},
      {"--minimizerMaxiter", "minimizerMaxiter", K::scalar, T::integer, "null", {}, R::implemented,
       "cap on outer trust-region iterations (default 200*n)"},
      {"--minimizerGtol", "minimizerGtol", K::scalar, T::real, "null", {}, R::implemented,
       "stop when the internal-coordinate gradient norm is below this (default 0: never)"},
      {"--minimizerFtol", "minimizerFtol", K::scalar, T::real, "null", {}, R::implemented,
       "read by L-BFGS-B only: accepted, warned about and ignored"},
      {"--edmTol", "edmTol", K::scalar, T::real, "1e-15", {}, R::implemented,
       "the fit is converged only when EDM = g.H^-1.g/2 <= edmTol * max(1, |NLL|) with a positive-definite "
       "Hessian (rabbit-cpp option); raise it to relax"},
      {"--earlyStopping", "earlyStopping", K::scalar, T::integer, "-1", {}, R::implemented,
       "stop after N outer iterations without reduction of the loss; <= 0 disables"},
      {"--noHessian", "noHessian", K::flag, T::str, "false", {}, R::implemented,
       "never build the dense Hessian; EDM and POI/NOI variances by conjugate gradients"},
      {"--noEDM", "noEDM", K::flag, T::str, "false", {}, R::implemented,
       "with --noHessian: skip the CG step too (no EDM, NaN variances); no effect otherwise"},
      {"--forceLinear", "forceLinear", K::flag, T::str, "false", {}, R::refused,
       "treat the NLL as quadratic: one Newton step [not implemented yet]"},
      {"--noFit", "noFit", K::flag, T::str, "false", {}, R::implemented,
       "skip the minimization; postfit quantities at the start point"},
      {"--diagnostics", "diagnostics", K::flag, T::str, "false", {}, R::implemented, "extra diagnostic logs"},
      {"--prefitOnly", "prefitOnly", K::flag, T::str, "false", {}, R::implemented,
       "only prefit outputs: no blinding, no fit, no postfit outputs"},
      {"--fullNll", "fullNll", K::flag, T::str, "false", {}, R::implemented,
       "also compute the full NLL with all constants (nllvalfull)"},
      // D. blinding, constraint centres, frozen parameters
      {"--unblind", "unblind", K::list_star, T::str, "[]", {}, R::implemented,
       "[EXPR...]: unblind the matching POIs and NOIs; bare unblinds all"},
      {"--blindingGroup", "blindingGroup", K::list_star, T::str, "[]", {}, R::implemented,
       "EXPR...: parameters matching one expression share a blinding offset seeded by the expression (first match "
       "wins); matching --unblind too aborts"},
      {"--setConstraintMinimum", "setConstraintMinimum", K::append_pair, T::str, "[]", {}, R::implemented,
       "NAME VALUE: constraint centre theta0 of a nuisance (repeatable)"},
      {"--freezeParameters", "freezeParameters", K::list_plus, T::str, "[]", {}, R::implemented,
       "EXPR...: freeze the matching parameters (names or full-match regexes)"},
      {"--prefitUnconstrainedNuisanceUncertainty", "prefitUnconstrainedNuisanceUncertainty", K::scalar, T::real,
       "0.0", {}, R::implemented, "prefit sigma of unconstrained parameters"},
      // E. uncertainties and impacts
      {"--doImpacts", "doImpacts", K::flag, T::str, "false", {}, R::implemented,
       "traditional impacts (impacts, impacts_grouped)"},
      {"--globalImpacts", "globalImpacts", K::flag, T::str, "false", {}, R::implemented,
       "likelihood-based global impacts"},
      {"--gaussianGlobalImpacts", "gaussianGlobalImpacts", K::flag, T::str, "false", {}, R::implemented,
       "Gaussian global impacts"},
      {"--globalImpactsDisableJVP", "globalImpactsDisableJVP", K::flag, T::str, "false", {}, R::ignored,
       "TensorFlow algorithm choice: accepted and ignored"},
      {"--nonProfiledImpacts", "nonProfiledImpacts", K::flag, T::str, "false", {}, R::refused,
       "impacts of frozen parameters by shift and refit [not implemented yet]"},
      {"--asymImpacts", "asymImpacts", K::flag, T::str, "false", {}, R::refused,
       "asymmetric traditional impacts [not implemented yet]"},
      {"--asymImpactsInclude", "asymImpactsInclude", K::list_plus, T::str, "null", {}, R::refused,
       "restrict --asymImpacts [not implemented yet]"},
      {"--asymImpactsExclude", "asymImpactsExclude", K::list_plus, T::str, "null", {}, R::refused,
       "restrict --asymImpacts [not implemented yet]"},
      {"--asymImpactsHess", "asymImpactsHess", K::scalar, T::str, "\"exact\"", {"exact", "hvp", "frozen", "bfgs", "sr1"},
       R::refused, "contour-solver Hessian mode [not implemented yet]"},
      {"--asymImpactsTol", "asymImpactsTol", K::scalar, T::real, "1e-06", {}, R::refused,
       "contour-solver tolerance [not implemented yet]"},
      {"--globalAsymImpacts", "globalAsymImpacts", K::flag, T::str, "false", {}, R::refused,
       "asymmetric global impacts [not implemented yet]"},
      {"--globalAsymImpactsInclude", "globalAsymImpactsInclude", K::list_plus, T::str, "null", {}, R::refused,
       "restrict --globalAsymImpacts [not implemented yet]"},
      {"--globalAsymImpactsExclude", "globalAsymImpactsExclude", K::list_plus, T::str, "null", {}, R::refused,
       "restrict --globalAsymImpacts [not implemented yet]"},
      {"--globalAsymImpactsSigma", "globalAsymImpactsSigma", K::scalar, T::real, "1.0", {}, R::refused,
       "shift size in prefit sigmas [not implemented yet]"},
      {"--globalAsymImpactsLinearWarmstart", "globalAsymImpactsLinearWarmstart", K::flag, T::str, "false", {},
       R::refused, "start refits at the Gaussian prediction [not implemented yet]"},
      // F. histograms and mappings
      {"--saveHists", "saveHists", K::flag, T::str, "false", {}, R::implemented,
       "save observed, prefit and postfit histograms"},
      {"--saveHistsPerProcess", "saveHistsPerProcess", K::flag, T::str, "false", {}, R::implemented,
       "also save per-process histograms"},
      {"--computeHistErrors", "computeHistErrors", K::flag, T::str, "false", {}, R::implemented,
       "variances of the inclusive histograms"},
      {"--computeHistErrorsPerProcess", "computeHistErrorsPerProcess", K::flag, T::str, "false", {}, R::implemented,
       "variances of the per-process histograms"},
      {"--computeHistCov", "computeHistCov", K::flag, T::str, "false", {}, R::implemented,
       "bin-by-bin covariance of the inclusive histograms"},
      {"--computeHistImpacts", "computeHistImpacts", K::flag, T::str, "false", {}, R::refused,
       "global impacts on histogram bins [not implemented yet]"},
      {"--computeHistGaussianImpacts", "computeHistGaussianImpacts", K::flag, T::str, "false", {}, R::refused,
       "Gaussian global impacts on histogram bins [not implemented yet]"},
      {"--computeVariations", "computeVariations", K::flag, T::str, "false", {}, R::implemented,
       "histograms with each parameter varied by +-1 sigma"},
      {"--noChi2", "noChi2", K::flag, T::str, "false", {}, R::implemented, "skip the linear chi2 of each mapping"},
      {"--computeSaturatedProjectionTests", "computeSaturatedProjectionTests", K::flag, T::str, "false", {},
       R::refused, "saturated test per Project mapping [not implemented yet]"},
      {"--noPostfitProfileBB", "noPostfitProfileBB", K::flag, T::str, "false", {}, R::implemented,
       "postfit histograms without profiling beta (postfit_profile = False)"},
      {"-m,--mapping", "mapping", K::append, T::str, "[]", {}, R::implemented,
       "NAME [ARG...]: mapping for the output histograms (this release: BaseMapping)"},
      {"--compositeMapping", "compositeMapping", K::flag, T::str, "false", {}, R::refused,
       "wrap all mappings into one [not implemented yet]"},
      // G. scans
      {"--scan", "scan", K::list_star, T::str, "null", {}, R::implemented,
       "[PARAM...]: 1D profile-likelihood scans; bare scans every parameter"},
      {"--scanPoints", "scanPoints", K::scalar, T::integer, "15", {}, R::implemented, "points per scan"},
      {"--scanRange", "scanRange", K::scalar, T::real, "3.0", {}, R::implemented,
       "half-range in units of the postfit sigma"},
      {"--scanRangeUsePrefit", "scanRangeUsePrefit", K::flag, T::str, "false", {}, R::implemented,
       "scan offsets in absolute x units instead of postfit sigmas"},
      {"--scan2D", "scan2D", K::append, T::str, "null", {}, R::refused, "P1 P2: 2D scan [not implemented yet]"},
      {"--contourScan", "contourScan", K::list_star, T::str, "null", {}, R::implemented,
       "[PARAM...]: likelihood contours at --contourLevels; bare means every parameter"},
      {"--contourLevels", "contourLevels", K::list_plus, T::real, "[1.0, 2.0]", {}, R::implemented,
       "levels in standard deviations"},
      {"--contourScan2D", "contourScan2D", K::append, T::str, "null", {}, R::refused,
       "P1 P2: 2D contours (not implemented upstream either)"},
      // H. data sets, toys, pseudodata
      {"-t,--toys", "toys", K::list_plus, T::integer, "[-1]", {}, R::implemented,
       "fits in order: -1 Asimov, 0 data, N>=1 toys 1..N (deterministic for --seed)"},
      {"--pseudoData", "pseudoData", K::list_star, T::str, "null", {}, R::implemented,
       "[NAME...]: fit the input's pseudodata sets instead of the data; bare means all"},
      {"--toysSystRandomize", "toysSystRandomize", K::scalar, T::str, "\"frequentist\"",
       {"frequentist", "bayesian", "none"}, R::implemented, "randomization of the constraint centres in toys"},
      {"--toysDataRandomize", "toysDataRandomize", K::scalar, T::str, "\"poisson\"", {"poisson", "normal", "none"},
       R::implemented, "randomization of the toy counts"},
      {"--toysDataMode", "toysDataMode", K::scalar, T::str, "\"expected\"", {"expected", "observed"},
       R::implemented, "toy mean: expectation or observed data"},
      {"--toysRandomizeParameters", "toysRandomizeParameters", K::flag, T::str, "false", {}, R::implemented,
       "start each toy fit at x ~ N(x0, prefit sigma) (frozen parameters kept) with the stored beta ~ "
       "N(beta0, sqrt(sumw2))"},
      {"--seed", "seed", K::scalar, T::integer, "123456789", {}, R::implemented, "random seed"},
      // I. regularization
      {"-r,--regularization", "regularization", K::append, T::str, "[]", {}, R::refused,
       "NAME MAPPING [ARG...]: regularization [not implemented yet]"},
      {"--regularizationStrength", "regularizationStrength", K::scalar, T::real, "0.0", {}, R::refused,
       "tau [not implemented yet]"},
      {"--lCurveScan", "lCurveScan", K::flag, T::str, "false", {}, R::refused, "L-curve scan [not implemented yet]"},
      {"--lCurveOptimize", "lCurveOptimize", K::flag, T::str, "false", {}, R::refused,
       "tau of maximum curvature [not implemented yet]"},
      // J. external postfit
      {"--externalPostfit", "externalPostfit", K::scalar, T::str, "null", {}, R::implemented,
       "FILE: start every fit at the x (and use the cov) stored there for the parameters of the same name; a "
       "result file of rabbit_fit or a plain file with datasets x, parms and optionally cov"},
      {"--externalPostfitResult", "externalPostfitResult", K::scalar, T::str, "null", {}, R::implemented,
       "KEY: the result group results_KEY of the --externalPostfit file (default: results, else results_asimov)"},
      // K. TensorFlow-specific
      {"--eager", "eager", K::flag, T::str, "false", {}, R::ignored, "TensorFlow eager mode: ignored"},
      {"--hvpMethod", "hvpMethod", K::scalar, T::str, "\"revrev\"", {"fwdrev", "revrev"}, R::ignored,
       "TensorFlow autodiff mode: ignored"},
      {"--jitCompile", "jitCompile", K::scalar, T::str, "\"auto\"", {"auto", "on", "off"}, R::ignored,
       "TensorFlow XLA: ignored"},
      // L. restarts, preconditioner, multi-device
      {"--maxRestarts", "maxRestarts", K::scalar, T::integer, "-1", {}, R::implemented,
       "restarts after early stopping: -1 while improving, 0 never, N at most N"},
      {"--stallRelTol", "stallRelTol", K::scalar, T::real, "0.0", {}, R::implemented,
       "relative-improvement threshold of early stopping (>= 0)"},
      {"--precondition", "precondition", K::flag, T::str, "false", {}, R::implemented,
       "minimise in internal coordinates x = x_ref + L^-T y whitened by a reference Hessian"},
      {"--preconditionParams", "preconditionParams", K::list_plus, T::str, "null", {}, R::implemented,
       "EXPR...: parameters to precondition (names, full-match regexes or systematic groups; "
       "default: all unconstrained, non-frozen parameters)"},
      {"--preconditionBlocks", "preconditionBlocks", K::optional_scalar, T::str, "\"auto\"",
       {"auto", "expressions", "none"}, R::implemented,
       "auto: correlation components; expressions: one block per expression; none: one block"},
      {"--preconditionBlockThreshold", "preconditionBlockThreshold", K::scalar, T::real, "0.1", {}, R::implemented,
       "correlation threshold of auto blocking (>= 0)"},
      {"--preconditionFrom", "preconditionFrom", K::scalar, T::str, "\"hessian\"", {"hessian", "gaussnewton"},
       R::implemented, "reference matrix: exact Hessian or Gauss-Newton (Fisher) matrix"},
      {"--preconditionRidge", "preconditionRidge", K::scalar, T::real, "1e-08", {}, R::implemented,
       "initial ridge relative to the block's largest diagonal (>= 0)"},
      {"--preconditionTransform", "preconditionTransform", K::scalar, T::str, "\"ridge\"", {"ridge", "spectral"},
       R::implemented, "whitening: ridge-regularised Cholesky or spectral (|eigenvalues|)"},
      {"--backend", "backend", K::scalar, T::str, "\"auto\"", {"auto", "cpu", "cuda"}, R::implemented,
       "where the likelihood runs: cuda (GPUs; an error when none is visible or the build has no CUDA), cpu, or auto "
       "(CUDA when a GPU is visible and the fit is one the CUDA backend supports, else CPU) (rabbit-cpp option)"},
      {"--nDevices", "nDevices", K::scalar, T::integer, "1", {}, R::implemented, "number of bin shards / devices"},
      {"--devices", "devices", K::list_plus, T::integer, "null", {}, R::implemented,
       "explicit GPU indices; count must equal --nDevices"},
      {"--hvpBatch", "hvpBatch", K::scalar, T::integer, "256", {}, R::implemented,
       "batch width of the dense Hessian assembled from HVPs"},
      {"--snapshotFile", "snapshotFile", K::scalar, T::str, "null", {}, R::refused,
       "parameter snapshots [not implemented yet]"},
      {"--snapshotInterval", "snapshotInterval", K::scalar, T::real, "0.0", {}, R::refused,
       "snapshot interval in hours [not implemented yet]"},
  };
  return table;
}

std::string long_name(const Spec& s) {
  auto pos = s.names.find("--");
  return s.names.substr(pos + 2);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

int64_t to_int(const std::string& opt, const std::string& v) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size())
    throw OptionError(fmt::format("argument --{}: invalid int value: '{}'", opt, v));
  return out;
}

double to_real(const std::string& opt, const std::string& v) {
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
    // An out-of-range or non-numeric value: the error below names it.
  }
  std::string lower = v;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower == "nan") return std::nan("");
  if (lower == "inf" || lower == "+inf") return INFINITY;
  if (lower == "-inf") return -INFINITY;
  throw OptionError(fmt::format("argument --{}: invalid float value: '{}'", opt, v));
}

std::string json_number(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string json_value(const Spec& s, const std::string& v) {
  switch (s.type) {
    case Type::integer: return std::to_string(to_int(long_name(s), v));
    case Type::real: return json_number(to_real(long_name(s), v));
    default: return json_string(v);
  }
}

std::string json_list(const Spec& s, const std::vector<std::string>& vs) {
  std::string out = "[";
  for (size_t i = 0; i < vs.size(); ++i) out += (i ? ", " : "") + json_value(s, vs[i]);
  return out + "]";
}

std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") ==
                        std::string::npos)
    return a;
  std::string out = "'";
  for (char c : a) out += (c == '\'') ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

/// argparse accepts unique prefixes of long options; CLI11 does not, so expand them first.
std::vector<std::string> expand_prefixes(const std::vector<std::string>& args, const std::set<std::string>& longs) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (!longs.count(name)) {
        std::vector<std::string> matches;
        for (const auto& l : longs)
          if (l.rfind(name, 0) == 0) matches.push_back(l);
        if (matches.size() > 1) {
          std::string list;
          for (const auto& m : matches) list += (list.empty() ? "--" : ", --") + m;
          throw OptionError(fmt::format("ambiguous option: --{} could match {}", name, list));
        }
        if (matches.size() == 1) {
          out.push_back("--" + matches[0] + (eq == std::string::npos ? "" : a.substr(eq)));
          continue;
        }
      }
    }
    out.push_back(a);
  }
  return out;
}

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
      app.add_flag_callback(s.names, [occ] { occ->push_back({}); }, help);
      continue;
    }
    auto* opt = app.add_option_function<std::vector<std::string>>(
        s.names, [occ](const std::vector<std::string>& v) { occ->push_back(v); }, help);
    opt->trigger_on_parse();
    switch (s.kind) {
      case Kind::scalar: opt->expected(1); break;
      case Kind::optional_scalar: opt->expected(0, 1); break;
      case Kind::list_plus:
      case Kind::append: opt->expected(1, -1); break;
      case Kind::list_star: opt->expected(0, -1); break;
      case Kind::append_pair: opt->expected(2); break;
      default: break;
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
            throw OptionError(fmt::format("argument --{}: invalid choice: '{}' (choose from {})", name, v, c));
          }
    }
    std::string value = s.default_json;
    if (!occ.empty()) {
      const auto& last = occ.back();
      switch (s.kind) {
        case Kind::flag: value = "true"; break;
        case Kind::scalar: value = json_value(s, last.at(0)); break;
        case Kind::optional_scalar: value = json_value(s, last.empty() || last[0].empty() ? "auto" : last[0]); break;
        case Kind::list_plus: value = json_list(s, last); break;
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
    if (s.dest == "mapping" && occ.empty()) {
      // Upstream records mapping after the BaseMapping fallback of docs/user-guide.md "Rules across options" rule 5; filled below.
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
  for (const auto& p : parsed.occurrences["expectSignal"]) m.expect_signal.emplace_back(p.at(0), to_real("expectSignal", p.at(1)));
  m.allow_negative_param = flag("allowNegativeParam");
  const bool chisq = flag("chisqFit"), covfit = flag("covarianceFit");
  if (chisq && covfit) throw OptionError("options --chisqFit and --covarianceFit are mutually exclusive");
  m.likelihood = chisq ? DataLikelihood::chisq : covfit ? DataLikelihood::covariance : DataLikelihood::poisson;
  m.bin_by_bin_stat = !flag("noBinByBinStat");
  if (auto* v = last("binByBinStatType")) {
    const std::string& t = v->at(0);
    m.bb_type = t == "gamma"             ? BBType::gamma
                : t == "normal-additive" ? BBType::normal_additive
                : t == "normal-multiplicative" ? BBType::normal_multiplicative
                                               : BBType::automatic;
  }
  if (auto* v = last("binByBinStatMode")) m.bb_mode = v->at(0) == "full" ? BBMode::full : BBMode::lite;
  real("minBBKstat", m.min_bb_kstat);
  if (!(m.min_bb_kstat >= 0.0) || std::isnan(m.min_bb_kstat))
    throw OptionError(fmt::format("argument --minBBKstat: must be >= 0, got {}", m.min_bb_kstat));
  if (covfit && m.bin_by_bin_stat && m.bb_type == BBType::gamma)
    throw OptionError("--covarianceFit with bin-by-bin statistics requires --binByBinStatType normal-additive, "
                      "normal-multiplicative or automatic");
  // C.
  str("minimizerMethod", o.minimizer_method);
  {
    static const std::set<std::string> refused_methods = {"BFGS", "L-BFGS-B", "CG", "dogleg"};
    if (refused_methods.count(o.minimizer_method))
      throw OptionError(fmt::format("--minimizerMethod {} is not implemented; use trust-krylov, trust-ncg or trust-exact",
                                    o.minimizer_method));
  }
  if (auto* v = last("minimizerMaxiter")) o.minimizer_maxiter = to_int("minimizerMaxiter", v->at(0));
  if (auto* v = last("minimizerGtol")) o.minimizer_gtol = to_real("minimizerGtol", v->at(0));
  if (auto* v = last("minimizerFtol")) {
    o.minimizer_ftol = to_real("minimizerFtol", v->at(0));
    o.warnings.push_back(fmt::format("{} does not implement ftol; ignoring --minimizerFtol", o.minimizer_method));
  }
  integer("earlyStopping", o.early_stopping);
  if (auto* v = last("edmTol")) o.edm_tol = to_real("edmTol", v->at(0));
  if (!(o.edm_tol > 0.0) || !std::isfinite(o.edm_tol))
    throw OptionError(fmt::format("--edmTol must be a positive number, got {}", o.edm_tol));
  o.no_hessian = flag("noHessian");
  o.no_edm = flag("noEDM");
  o.no_fit = flag("noFit");
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
  // F.
  o.save_hists = flag("saveHists");
  o.save_hists_per_process = flag("saveHistsPerProcess");
  o.compute_hist_errors = flag("computeHistErrors");
  o.compute_hist_errors_per_process = flag("computeHistErrorsPerProcess");
  o.compute_hist_cov = flag("computeHistCov");
  o.no_chi2 = flag("noChi2");
  o.compute_variations = flag("computeVariations");
  o.no_postfit_profile_bb = flag("noPostfitProfileBB");
  for (const auto& mp : parsed.occurrences["mapping"]) {
    if (mp.at(0) != "BaseMapping")
      throw OptionError(fmt::format("mapping {} is not implemented yet (this release supports BaseMapping)", mp.at(0)));
    o.mappings.push_back(mp);
  }
  if (o.mappings.empty() && o.save_hists) o.mappings.push_back({"BaseMapping"});
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
  if (o.scan_points < 1) throw OptionError("argument --scanPoints: must be >= 1");
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
  if (o.external_postfit_result && !o.external_postfit)
    throw OptionError("--externalPostfitResult needs --externalPostfit");
  // L.
  integer("maxRestarts", o.max_restarts);
  real("stallRelTol", o.stall_rel_tol);
  if (o.stall_rel_tol < 0) throw OptionError("argument --stallRelTol: must be >= 0");
  str("backend", o.backend);
  integer("nDevices", o.n_devices);
  if (o.n_devices < 1) throw OptionError("argument --nDevices: must be >= 1");
  if (auto* v = last("devices")) {
    for (const auto& s : *v) {
      int64_t d = to_int("devices", s);
      if (d < 0) throw OptionError(fmt::format("argument --devices: negative device index {}", d));
      o.devices.push_back(d);
    }
    if (static_cast<int64_t>(o.devices.size()) != o.n_devices)
      throw OptionError(fmt::format("--devices lists {} indices but --nDevices is {}", o.devices.size(), o.n_devices));
  }
  integer("hvpBatch", o.hvp_batch);
  if (o.hvp_batch < 1) throw OptionError("argument --hvpBatch: must be >= 1");
  o.precondition = flag("precondition");
  if (auto* v = last("preconditionParams")) o.precondition_params = nonempty(*v);
  if (auto* v = last("preconditionBlocks")) o.precondition_blocks = v->empty() || v->at(0).empty() ? "auto" : v->at(0);
  real("preconditionBlockThreshold", o.precondition_block_threshold);
  if (!(o.precondition_block_threshold >= 0.0) || !std::isfinite(o.precondition_block_threshold))
    throw OptionError(fmt::format("argument --preconditionBlockThreshold: must be a finite number >= 0, got {}",
                                  o.precondition_block_threshold));
  str("preconditionFrom", o.precondition_from);
  real("preconditionRidge", o.precondition_ridge);
  if (!(o.precondition_ridge >= 0.0) || !std::isfinite(o.precondition_ridge))
    throw OptionError(
        fmt::format("argument --preconditionRidge: must be a finite number >= 0, got {}", o.precondition_ridge));
  str("preconditionTransform", o.precondition_transform);
  if (!o.precondition) {
    for (const char* dep : {"preconditionParams", "preconditionBlocks", "preconditionBlockThreshold", "preconditionFrom",
                            "preconditionRidge", "preconditionTransform"})
      if (given.count(dep)) o.warnings.push_back(fmt::format("--{} has no effect without --precondition", dep));
  }

  // docs/user-guide.md "Rules across options" rule 10 up front, then the refusals of this release (one line each, first one wins).
  if (given.count("contourScan2D")) throw OptionError("Likelihood contour scans in 2D are not yet implemented");
  for (const auto& s : specs())
    if (s.tier == Tier::refused && given.count(long_name(s)))
      throw OptionError(fmt::format("option --{} is not implemented yet", long_name(s)));

  // docs/user-guide.md "Rules across options" rule 1: --noHessian incompatibilities, all listed in one message.
  if (o.no_hessian) {
    std::vector<std::string> bad;
    if (o.do_impacts) bad.push_back("--doImpacts");
    if (o.compute_variations) bad.push_back("--computeVariations");
    if (o.save_hists && !o.no_chi2) bad.push_back("--saveHists (without --noChi2)");
    if (o.compute_hist_errors) bad.push_back("--computeHistErrors");
    if (o.compute_hist_errors_per_process) bad.push_back("--computeHistErrorsPerProcess");
    if (o.compute_hist_cov) bad.push_back("--computeHistCov");
    if (o.scan && !o.scan_range_use_prefit) bad.push_back("--scan (without --scanRangeUsePrefit)");
    if (o.contour_scan) bad.push_back("--contourScan");
    if (!bad.empty()) {
      std::string list;
      for (const auto& b : bad) list += (list.empty() ? "" : ", ") + b;
      throw OptionError("--noHessian is incompatible with: " + list);
    }
  }

  // mapping is recorded after the BaseMapping fallback (docs/output-format.md "File tree").
  if (parsed.occurrences["mapping"].empty() && !o.mappings.empty()) {
    auto pos = json.find("\"mapping\": []");
    if (pos != std::string::npos) json.replace(pos, 13, "\"mapping\": [[\"BaseMapping\"]]");
  }
  o.args_json = json + "}";
  return o;
}

}  // namespace rabbit::cli
