#include "option_table.hpp"

namespace rabbit::cli::detail {

const std::vector<Spec>& specs() {
  using K = Kind;
  using T = Type;
  using R = Tier;
  // One row per option, several rows per line where they fit: clang-format would spread each row over
  // eight lines.
  // clang-format off
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
      {"--tensorPrecision", "tensorPrecision", K::scalar, T::str, "\"file\"", {"file", "double"}, R::implemented,
       "precision of the logk tensor in memory: file keeps a float32 one as float32 (accumulating in double), "
       "double promotes it (rabbit-cpp option; docs/input-reader.md \"Precision\")"},
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
      {"--forceLinear", "forceLinear", K::flag, T::str, "false", {}, R::implemented,
       "treat the NLL as quadratic: one Newton step from the start point"},
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
      {"--nonProfiledImpacts", "nonProfiledImpacts", K::flag, T::str, "false", {}, R::implemented,
       "impacts of frozen parameters: shift each by +-1 prefit sigma and refit (nonprofiled_impacts_asym)"},
      {"--asymImpacts", "asymImpacts", K::flag, T::str, "false", {}, R::implemented,
       "asymmetric impacts from the Delta(2NLL)=1 contour of each nuisance (impacts_asym)"},
      {"--asymImpactsInclude", "asymImpactsInclude", K::list_plus, T::str, "null", {}, R::implemented,
       "REGEX...: only these nuisances for --asymImpacts"},
      {"--asymImpactsExclude", "asymImpactsExclude", K::list_plus, T::str, "null", {}, R::implemented,
       "REGEX...: no such nuisances for --asymImpacts"},
      {"--asymImpactsHess", "asymImpactsHess", K::scalar, T::str, "\"exact\"", {"exact", "hvp", "frozen", "bfgs", "sr1"},
       R::implemented, "SciPy trust-constr's Hessian mode: accepted, warned about, no effect"},
      {"--asymImpactsTol", "asymImpactsTol", K::scalar, T::real, "1e-06", {}, R::implemented,
       "accept a contour point when its Delta NLL is within this of the target (relative)"},
      {"--globalAsymImpacts", "globalAsymImpacts", K::flag, T::str, "false", {}, R::implemented,
       "asymmetric global impacts: shift each constraint centre by +-Sigma and refit (global_impacts_asym)"},
      {"--globalAsymImpactsInclude", "globalAsymImpactsInclude", K::list_plus, T::str, "null", {}, R::implemented,
       "REGEX...: only these sources for --globalAsymImpacts"},
      {"--globalAsymImpactsExclude", "globalAsymImpactsExclude", K::list_plus, T::str, "null", {}, R::implemented,
       "REGEX...: no such sources for --globalAsymImpacts"},
      {"--globalAsymImpactsSigma", "globalAsymImpactsSigma", K::scalar, T::real, "1.0", {}, R::implemented,
       "--globalAsymImpacts shift in prefit sigmas"},
      {"--globalAsymImpactsLinearWarmstart", "globalAsymImpactsLinearWarmstart", K::flag, T::str, "false", {},
       R::implemented, "start each --globalAsymImpacts refit at the Gaussian prediction (needs the covariance)"},
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
      {"--computeHistImpacts", "computeHistImpacts", K::flag, T::str, "false", {}, R::implemented,
       "global impacts on histogram bins (inclusive in processes)"},
      {"--computeHistGaussianImpacts", "computeHistGaussianImpacts", K::flag, T::str, "false", {}, R::implemented,
       "Gaussian global impacts on histogram bins (inclusive in processes)"},
      {"--computeVariations", "computeVariations", K::flag, T::str, "false", {}, R::implemented,
       "histograms with each parameter varied by +-1 sigma"},
      {"--noChi2", "noChi2", K::flag, T::str, "false", {}, R::implemented, "skip the linear chi2 of each mapping"},
      {"--computeSaturatedProjectionTests", "computeSaturatedProjectionTests", K::flag, T::str, "false", {},
       R::implemented, "saturated likelihood test per -m Project mapping (with --saveHists)"},
      {"--noPostfitProfileBB", "noPostfitProfileBB", K::flag, T::str, "false", {}, R::implemented,
       "postfit histograms without profiling beta (postfit_profile = False)"},
      {"-m,--mapping", "mapping", K::append, T::str, "[]", {}, R::implemented,
       "NAME [ARG...]: mapping for the output histograms (BaseMapping, Project, Normalize, Select, Ratio, "
       "Normratio, Difference, Asymmetry, AngularCoefficients, LamTung)"},
      {"--compositeMapping", "compositeMapping", K::flag, T::str, "false", {}, R::implemented,
       "wrap all mappings into one, with the covariance across them"},
      // G. scans
      {"--scan", "scan", K::list_star, T::str, "null", {}, R::implemented,
       "[PARAM...]: 1D profile-likelihood scans; bare scans every parameter"},
      {"--scanPoints", "scanPoints", K::scalar, T::integer, "15", {}, R::implemented, "points per scan"},
      {"--scanRange", "scanRange", K::scalar, T::real, "3.0", {}, R::implemented,
       "half-range in units of the postfit sigma"},
      {"--scanRangeUsePrefit", "scanRangeUsePrefit", K::flag, T::str, "false", {}, R::implemented,
       "scan offsets in absolute x units instead of postfit sigmas"},
      {"--scan2D", "scan2D", K::append, T::str, "null", {}, R::implemented,
       "P1 P2: 2D profile-likelihood scan on a --scanPoints square grid (repeatable)"},
      {"--contourScan", "contourScan", K::list_star, T::str, "null", {}, R::implemented,
       "[PARAM...]: likelihood contours at --contourLevels; bare means every parameter"},
      {"--contourLevels", "contourLevels", K::list_plus, T::real, "[1.0, 2.0]", {}, R::implemented,
       "levels in standard deviations"},
      {"--contourScan2D", "contourScan2D", K::append, T::str, "null", {}, R::implemented,
       "P1 P2: 2D likelihood contours at --contourLevels, --scanPoints angles (repeatable)"},
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
      {"-r,--regularization", "regularization", K::append, T::str, "[]", {}, R::implemented,
       "NAME MAPPING [ARG...]: add exp(2 tau) times the penalty NAME (SVD) of the mapping's output (a -m mapping "
       "linear in the yields with one channel: Select, Project) to the NLL; repeatable"},
      {"--regularizationStrength", "regularizationStrength", K::scalar, T::real, "0.0", {}, R::implemented,
       "tau: the regularization penalty is weighted by exp(2 tau)"},
      {"--lCurveScan", "lCurveScan", K::flag, T::str, "false", {}, R::implemented,
       "with -r: fit at tau = 1.7, 1.8, ..., 2.1 and write the L-curve curvature there (step_tau, step_lcurve)"},
      {"--lCurveOptimize", "lCurveOptimize", K::flag, T::str, "false", {}, R::implemented,
       "with -r: Newton search for the tau of maximum L-curve curvature, which the fit then uses (best_tau, "
       "best_lcurve)"},
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
      {"--nThreads", "nThreads", K::scalar, T::integer, "0", {}, R::implemented,
       "CPU threads of the fit (all CPU shards together); 0: the CPUs of the process's affinity mask and cgroup "
       "CPU quota, whichever is fewer (rabbit-cpp option)"},
      {"--refitWorkers", "refitWorkers", K::scalar, T::integer, "0", {}, R::implemented,
       "refits of --asymImpacts, --nonProfiledImpacts and --globalAsymImpacts run at once, each fitter with "
       "--nThreads/N threads; 0: one per thread, fewer when memory is short; 1: one after another (rabbit-cpp "
       "option)"},
      {"--snapshotFile", "snapshotFile", K::scalar, T::str, "null", {}, R::implemented,
       "FILE: write the parameters of the fit in progress there (x, parms: the plain --externalPostfit layout) "
       "every --snapshotInterval, on SIGTERM/SIGUSR1 and at the end of each minimization"},
      {"--snapshotInterval", "snapshotInterval", K::scalar, T::real, "0.0", {}, R::implemented,
       "hours between snapshots during a minimization (fractions allowed); 0: only on signals and at the end"},
  };
  // clang-format on
  return table;
}

std::string long_name(const Spec& s) {
  auto pos = s.names.find("--");
  return s.names.substr(pos + 2);
}

}  // namespace rabbit::cli::detail
