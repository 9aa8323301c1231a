#pragma once
// The command line of rabbit_fit (docs/user-guide.md "Command-line rules"): every upstream option is parsed
// with argparse's behaviour (negative numbers as values, repeated options, bare list options, unique prefixes
// of long options); the typed result is FitOptions. Options that this release does not implement are refused
// with "option --X is not implemented yet"; TensorFlow-only options are accepted with a warning.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/model/model_options.hpp"

namespace rabbit::cli {

/// Thrown by parse_fit_options for --help: the text to print on stdout, exit code 0.
struct HelpRequested {
  std::string text;
};

struct FitOptions {
  // ---- A. input, output, logging
  std::string filename;
  std::string outpath = "./";
  std::string outname = "fitresults.hdf5";
  std::optional<std::string> postfix;
  std::string output_format = "rabbit";  // --outputFormat: rabbit | plain (docs/output-format.md)
  int verbose = 3;
  bool no_color_logger = false;
  /// --tensorPrecision: "file" holds a float32 logk as float32, "double" promotes it
  /// (docs/input-reader.md "Precision"; docs/benchmarks.md "Float32 tensors" for the default).
  std::string tensor_precision = "file";

  // ---- B. model and likelihood (most go straight into ModelOptions)
  ModelOptions model;
  bool param_model_given = false;

  // ---- C. fit and minimizer
  std::string minimizer_method = "trust-krylov";
  std::optional<int64_t> minimizer_maxiter;
  std::optional<double> minimizer_gtol;
  std::optional<double> minimizer_ftol;
  double edm_tol = 1e-15;  // --edmTol: converged when EDM <= edm_tol * max(1, |NLL|)
  int64_t early_stopping = -1;
  bool no_hessian = false;
  bool no_edm = false;
  bool diagnostics = false;
  bool prefit_only = false;
  bool full_nll = false;
  bool no_fit = false;
  bool force_linear = false;  // one Newton step from the start point instead of the fit

  // ---- D. blinding etc. (in model); --unblind given bare means [".*"]
  // ---- E. impacts
  bool do_impacts = false;
  bool global_impacts = false;
  bool gaussian_global_impacts = false;
  // impacts by refits (docs/output-format.md "Impacts by refits")
  bool non_profiled_impacts = false;
  bool asym_impacts = false;
  std::optional<std::vector<std::string>> asym_impacts_include;  // set: given
  std::optional<std::vector<std::string>> asym_impacts_exclude;
  std::string asym_impacts_hess = "exact";  // SciPy trust-constr's; no effect here (user-guide.md)
  double asym_impacts_tol = 1e-6;
  bool global_asym_impacts = false;
  std::optional<std::vector<std::string>> global_asym_impacts_include;  // set: given
  std::optional<std::vector<std::string>> global_asym_impacts_exclude;
  double global_asym_impacts_sigma = 1.0;
  bool global_asym_impacts_linear_warmstart = false;

  // ---- F. histograms
  bool save_hists = false;
  bool save_hists_per_process = false;
  bool compute_hist_errors = false;
  bool compute_hist_errors_per_process = false;
  bool compute_hist_cov = false;
  bool compute_hist_impacts = false;
  bool compute_hist_gaussian_impacts = false;
  bool no_chi2 = false;
  bool compute_variations = false;
  bool compute_saturated_projection_tests = false;
  bool no_postfit_profile_bb = false;
  std::vector<std::vector<std::string>> mappings;  // each: name then arguments
  bool composite_mapping = false;                  // one CompositeMapping of all of them

  // ---- G. scans
  std::optional<std::vector<std::string>> scan;  // set: --scan given; empty: all parameters
  int64_t scan_points = 15;
  double scan_range = 3.0;
  bool scan_range_use_prefit = false;
  std::optional<std::vector<std::string>> contour_scan;
  std::vector<double> contour_levels = {1.0, 2.0};
  std::vector<std::vector<std::string>> scan_2d;          // each --scan2D: the two parameters
  std::vector<std::vector<std::string>> contour_scan_2d;  // each --contourScan2D: the two parameters

  // ---- H. data sets and toys
  std::vector<int64_t> toys = {-1};
  std::optional<std::vector<std::string>> pseudo_data;  // set: given; empty: all sets
  std::string toys_syst_randomize = "frequentist";
  std::string toys_data_randomize = "poisson";
  std::string toys_data_mode = "expected";
  bool toys_randomize_parameters = false;
  int64_t seed = 123456789;

  // ---- I. regularization (the regularisers and tau are in model); the L curve (docs/user-guide.md
  // "Regularization")
  bool l_curve_scan = false;
  bool l_curve_optimize = false;

  // ---- J. external postfit: x (and cov) loaded from a result file or a plain x/parms/cov file
  std::optional<std::string> external_postfit;
  std::optional<std::string> external_postfit_result;
  // Snapshots of the parameters during the fits, in the plain --externalPostfit layout
  // (docs/user-guide.md "Snapshots and resuming a preempted fit"); interval in hours as upstream's.
  std::optional<std::string> snapshot_file;
  double snapshot_interval_hours = 0.0;  // 0: only on SIGTERM/SIGUSR1 and at the end of each fit

  // ---- L. restarts, multi-device
  int64_t max_restarts = -1;
  double stall_rel_tol = 0.0;
  std::string backend = "auto";  // --backend auto|cpu|cuda
  int64_t n_devices = 1;
  int64_t n_threads = 0;      // --nThreads; 0: from the affinity mask and the cgroup CPU quota
  int64_t refit_workers = 0;  // --refitWorkers; 0: from the thread budget (cli/refit_pool.hpp)
  std::vector<int64_t> devices;
  int64_t hvp_batch = 256;
  // Internal-coordinate preconditioner (docs/minimizers.md "Preconditioner").
  bool precondition = false;
  std::vector<std::string>
      precondition_params;                   // names, full-match regexes or group names; empty: default scope
  std::string precondition_blocks = "auto";  // auto | expressions | none
  double precondition_block_threshold = 0.1;
  std::string precondition_from = "hessian";  // hessian | gaussnewton
  double precondition_ridge = 1e-8;
  std::string precondition_transform = "ridge";  // ridge | spectral

  /// The command line as typed (arguments with special characters quoted).
  std::string command;
  /// JSON object {destination name: value} for every option, defaults included (docs/output-format.md "File
  /// tree").
  std::string args_json;
  /// One line per TensorFlow-only or ignored option that was given (logged as warnings).
  std::vector<std::string> warnings;

  /// The result file path: outpath / outname with postfix and ".hdf5" rules applied (docs/user-guide.md
  /// "Options", output).
  std::string output_file() const;
};

/// Parses argv (argv[0] is the program name). Throws OptionError with a one-line message for
/// any bad argument or broken rule on the options alone (check_option_rules, validate_run.hpp), and
/// HelpRequested for -h/--help.
FitOptions parse_fit_options(int argc, const char* const* argv);

/// The --help text.
std::string fit_help_text();

/// Names of the long options (without dashes) that are parsed but refused in this release.
std::vector<std::string> refused_options();

}  // namespace rabbit::cli
