#!/usr/bin/env python3
"""Writes the reference fits of tests/reference/ with upstream rabbit (optional tool).

For every case below, runs upstream `rabbit_fit.py` (Python/TensorFlow) on a tensor of
tests/reference/tensors/ and stores what it wrote as tests/reference/fits/CASE.json in the layout of
tests/reference/README.md: {"tensor", "args", "rabbit_commit", "meta", "results": {GROUP: RESULTS}}.
GROUP is the result group's suffix ("asimov", "toy1", ...; "data_obs" for the plain "results"
group of a fit to data), RESULTS rabbit's results dictionary key by key, every histogram as
{"axes", "values", "variances"} without flow bins. Values stay in rabbit's stored coordinates
(sqrt(mu) for non-negative POIs). Timing histograms (epoch_time) are dropped so that reruns only
differ where rabbit's numbers do.

Never used by the build or the tests; the C++ test tests/reference/reference_fit_test.cpp reads the
JSON files only. Needs a Python environment with rabbit's dependencies (tensorflow, numpy, scipy,
h5py, hist, hdf5plugin, wums) and rabbit's source (github.com/WMass/rabbit):

    python3 -m venv /tmp/pyv
    /tmp/pyv/bin/pip install tensorflow-cpu tensorflow-probability tf-keras numpy scipy h5py \
        hist hdf5plugin 'wums[pickling]'
    /tmp/pyv/bin/python tools/make_reference.py --rabbit /path/to/rabbit [--set mappings] [--cases NAME ...]

The tensors themselves are made by our own rabbit_make_tensor (see tests/reference/README.md).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REFDIR = os.path.join(HERE, "..", "tests", "reference")

# Common option sets: a fit to data (unblinded so that parameters are comparable) with every
# output that the comparison checks.
DATA = ["-t", "0", "--unblind"]
ALL_OUT = ["--doImpacts", "--globalImpacts", "--saveHists", "--computeHistErrors"]
# Upstream's forward-mode (JVP) global impacts fail on sparse tensors with TensorFlow 2.21
# ("No unary variant unary_op function found for op ZEROS_LIKE ... CSRSparseMatrix"); its backward
# mode is used there instead (our rabbit_fit accepts and ignores the option).
SPARSE = ["--globalImpactsDisableJVP"]

# ABCD regions of abcd.hdf5: A = ch_fakes iso:0, B = ch_fakes iso:1, C = ch_C, D = ch_D
ABCD = ["ABCD", "nonprompt", "ch_fakes", "iso:0", "ch_fakes", "iso:1", "ch_C", "ch_D"]

# name -> (tensor, arguments after the tensor file name)
CASES = {
    # tensor layouts and systematic types (default BB: lite gamma)
    "dense_data": ("dense.hdf5", DATA + ALL_OUT),
    "dense_asimov_and_data": ("dense.hdf5", ["-t", "-1", "0", "--unblind", "--doImpacts", "--globalImpacts"]),
    "dense_blinded": ("dense.hdf5", ["-t", "0", "--doImpacts"]),
    "sparse_data": ("sparse_blosc2.hdf5", DATA + ALL_OUT + SPARSE),
    "symmetric_data": ("symmetric.hdf5", DATA + ALL_OUT),
    "normal_data": ("normal.hdf5", DATA + ALL_OUT),
    "normal_symmetric_sparse_data": (
        "normal_symmetric_sparse.hdf5",
        DATA + ["--doImpacts", "--globalImpacts"] + SPARSE,
    ),
    # Barlow-Beeston variants
    "bb_full_gamma": ("dense.hdf5", DATA + ALL_OUT + ["--binByBinStatMode", "full", "--binByBinStatType", "gamma"]),
    "bb_lite_normal_mult": ("dense.hdf5", DATA + ALL_OUT + ["--binByBinStatType", "normal-multiplicative"]),
    "bb_full_normal_mult": (
        "dense.hdf5",
        DATA + ALL_OUT + ["--binByBinStatMode", "full", "--binByBinStatType", "normal-multiplicative"],
    ),
    "bb_lite_normal_add": ("dense.hdf5", DATA + ALL_OUT + ["--binByBinStatType", "normal-additive"]),
    "bb_full_normal_add": (
        "sparse_blosc2.hdf5",
        DATA + ALL_OUT + ["--binByBinStatMode", "full", "--binByBinStatType", "normal-additive"] + SPARSE,
    ),
    # hbetavariations (docs/likelihood.md "Beta variations"): masked-channel yields follow the observed BB parameters.
    # The JSONs wait in tests/reference/pending/ until src/postfit/histograms.cpp adds the masked
    # bins' cross terms of rabbit's pdexpdbeta (CpuShardEvaluator::beta_yield_partials). No global
    # impacts with gamma: upstream fails there ("Tried to take gradients ... of a variable without
    # handle data", its Newton loop).
    "bb_full_gamma_beta_variations": (
        "beta_variations.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--binByBinStatMode", "full", "--binByBinStatType", "gamma"],
    ),
    "bb_full_normal_mult_beta_variations": (
        "beta_variations.hdf5",
        DATA + ALL_OUT + ["--binByBinStatMode", "full", "--binByBinStatType", "normal-multiplicative"],
    ),
    # covariance fit with a BB-masked bin: rabbit's lite normal-multiplicative solve treats it as free
    "covariance_nmult_lite_bb_masked": (
        "covariance_bb_masked.hdf5",
        DATA + ["--doImpacts", "--globalImpacts", "--covarianceFit", "--binByBinStatType", "normal-multiplicative"],
    ),
    "no_bbb": ("dense.hdf5", DATA + ALL_OUT + ["--noBinByBinStat"]),
    # chi2 and covariance likelihoods
    "chisq": ("dense.hdf5", DATA + ALL_OUT + ["--chisqFit"]),
    "covariance_fit": ("dense.hdf5", DATA + ["--doImpacts", "--globalImpacts", "--covarianceFit"]),
    # parameter options and models
    # (no --doImpacts: upstream's grouped impacts fail with "Input matrix is not invertible" when a
    # group contains a frozen parameter)
    "freeze": (
        "dense.hdf5",
        DATA + ["--globalImpacts", "--saveHists", "--computeHistErrors", "--freezeParameters", "slope_background", "norm"],
    ),
    "negative_param_asimov": (
        "dense.hdf5",
        ["-t", "-1", "--allowNegativeParam", "--expectSignal", "sig", "2", "--doImpacts", "--globalImpacts"],
    ),
    "expect_signal": ("symmetric.hdf5", DATA + ["--expectSignal", "sig", "0.5", "--doImpacts"]),
    "mixture": ("dense.hdf5", DATA + ["--paramModel", "Mixture", "bkg", "bkg_2", "--doImpacts", "--globalImpacts"]),
    "pseudodata": ("dense.hdf5", ["-t", "0", "--unblind", "--pseudoData", "original", "--doImpacts"]),
    # global impacts on the bins of BaseMapping (no -m; --saveHists falls back to it)
    "hist_impacts_base": (
        "dense.hdf5",
        DATA + ["--saveHists", "--computeHistErrors", "--computeHistCov", "--computeHistImpacts"],
    ),
    # regularization (-r, docs/model.md "The regularisation term") on dense.hdf5: the SVD penalty on
    # the projection of the observed ch1 on a (without BB: ours refuses BB on regularised observed bins),
    # and on the masked ch0_masked with the default BB
    "reg_svd_project_ch1_a": (
        "dense.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--noBinByBinStat"]
        + ["-r", "SVD", "Project", "ch1", "a", "--regularizationStrength", "1.5"],
    ),
    "reg_svd_select_masked": (
        "dense.hdf5",
        DATA + ["--doImpacts", "-r", "SVD", "Select", "ch0_masked", "--regularizationStrength", "2"],
    ),
    # the same with the histograms: the β part of the regularised masked bins' uncertainties carries the
    # penalty's curvature (docs/likelihood.md "Regularisation and β"), the chi2 the masked β⁰'s response
    "reg_svd_select_masked_hists": (
        "dense.hdf5",
        DATA
        + ["--saveHists", "--computeHistErrors", "--computeHistCov", "--computeHistImpacts"]
        + ["-r", "SVD", "Select", "ch0_masked", "--regularizationStrength", "2"],
    ),
    # The L curve with BB (upstream (948a94a) runs it only with BB: without, lcurve.py fails taking
    # log(ln + lc + lbeta) with lbeta None); docs/model.md "The L curve" says what its l_x reads.
    "reg_lcurve_scan_masked": (
        "dense.hdf5",
        DATA + ["-r", "SVD", "Select", "ch0_masked", "--lCurveScan"],
    ),
    "reg_lcurve_optimize_masked": (
        "dense.hdf5",
        DATA + ["-r", "SVD", "Select", "ch0_masked", "--lCurveOptimize"],
    ),
    # --computeSaturatedProjectionTests: one saturated refit per Project mapping (chi2_saturated,
    # ndf_saturated, edmval_saturated in its group), none for Normalize; kept axes in both orders.
    # (Upstream fails on a Project without kept axes, see docs/differences-from-rabbit.md.)
    "saturated_projection": (
        "dense.hdf5",
        DATA
        + ["--saveHists", "--computeHistErrors", "--computeSaturatedProjectionTests"]
        + ["-m", "Project", "ch1", "a", "-m", "Project", "ch1", "b", "a", "-m", "Project", "ch0", "x"]
        + ["-m", "Normalize", "ch1", "b"],
    ),
    # impacts by refits (docs/output-format.md "Impacts by refits"): shifted frozen values, shifted
    # constraint centres (one case with --globalAsymImpactsSigma and the Gaussian warm start)
    # (upstream groups frozen parameters by their x index where its group lists hold systematic indices, one
    # off by the number of POIs: the frozen ones here share their groups with the next systematic, so its
    # grouped envelopes are right; docs/differences-from-rabbit.md)
    "nonprofiled_impacts": (
        "dense.hdf5",
        DATA + ["--freezeParameters", "slope_2_signal_ch1", "slope_quad_signal_ch0SymAvg", "--nonProfiledImpacts"],
    ),
    # contour-based asymmetric impacts: two nuisances scanned, the freeze-group grouped impacts of all
    "asym_impacts": (
        "dense.hdf5",
        DATA + ["--asymImpacts", "--asymImpactsInclude", "norm", "slope_signal_ch0", "--asymImpactsExclude", "slope_signal"],
    ),
    "global_asym_impacts": ("dense.hdf5", DATA + ["--globalAsymImpacts", "--globalAsymImpactsExclude", "slope_2.*"]),
    "global_asym_impacts_sigma_warmstart": (
        "dense.hdf5",
        DATA
        + ["--globalAsymImpacts", "--globalAsymImpactsInclude", "norm", "slope_signal.*", "bkg_norm"]
        + ["--globalAsymImpactsSigma", "2", "--globalAsymImpactsLinearWarmstart"],
    ),
    # the ABCD family (docs/model.md "Bin-dependent param models") on the tensors of make_abcd_tensors.cpp.
    # --noChi2: with a free rate per bin of A, B, C the prediction's covariance is singular in those bins
    # and the linear chi2 r^T V^-1 r is rounding (upstream gives 3e4 where ours gives 0.09 on extended_abcd).
    # abcd_only_bb_full has no POI: no impacts (the empty impacts histograms' axes differ from upstream's).
    "abcd": ("abcd.hdf5", DATA + ALL_OUT + ["--noChi2", "--paramModel", "Mu", "--paramModel"] + ABCD),
    "abcd_yield_correction": (
        "abcd.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--noChi2", "--paramModel", "Mu"]
        + ["--paramModel", ABCD[0], "yieldCorrection:1"] + ABCD[1:],
    ),
    "abcd_only_bb_full": (
        "abcd.hdf5",
        DATA + ["--saveHists", "--computeHistErrors", "--noChi2", "--binByBinStatMode", "full", "--paramModel"]
        + ABCD,
    ),
    "extended_abcd": (
        "extended_abcd.hdf5",
        DATA + ALL_OUT + ["--noChi2", "--paramModel", "Mu", "--paramModel", "ExtendedABCD", "nonprompt"]
        + ["ch_Ax", "ch_Bx", "ch_A", "ch_B", "ch_C", "ch_D"],
    ),
    # the smooth and IsoMT members (docs/model.md "Smooth ABCD", "The IsoMT variants") on isomt.hdf5 of
    # make_abcd_tensors.cpp: one channel ch, mt(3) x relIso(2) x pt(6) x eta(2); smoothing axis pt, outer eta
    "smooth_abcd": (
        "isomt.hdf5",
        DATA + ALL_OUT + ["--noChi2", "--paramModel", "Mu", "--paramModel", "SmoothABCD", "pt", "nonprompt"]
        + ["ch", "relIso:1", "mt:1", "ch", "relIso:0", "mt:1", "ch", "relIso:1", "mt:2", "ch", "relIso:0", "mt:2"],
    ),
    "smooth_extended_abcd": (
        "isomt.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--noChi2", "--paramModel", "Mu"]
        + ["--paramModel", "SmoothExtendedABCD", "pt", "order:2", "yieldCorrection:1", "nonprompt"]
        + ["ch", "relIso:1", "mt:0", "ch", "relIso:0", "mt:0", "ch", "relIso:1", "mt:1", "ch", "relIso:0", "mt:1"]
        + ["ch", "relIso:1", "mt:2", "ch", "relIso:0", "mt:2"],
    ),
    "abcd_isomt": (
        "isomt.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--noChi2", "--paramModel", "Mu"]
        + ["--paramModel", "ABCDIsoMT"]
        + ["nonprompt", "ch"],
    ),
    "smooth_extended_abcd_isomt": (
        "isomt.hdf5",
        DATA + ["--doImpacts", "--globalImpacts", "--noChi2", "--paramModel", "Mu"]
        + ["--paramModel", "SmoothExtendedABCDIsoMT", "nonprompt", "ch"],
    ),
    # AxisNormModel (docs/model.md "Axis-type param models") composed with Mu on isomt.hdf5: a norm x^2 per
    # (pt, eta) cell for nonprompt (both models pass their parameters through: --allowNegativeParam)
    "axis_norm": (
        "isomt.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--noChi2", "--allowNegativeParam"]
        + ["--paramModel", "Mu", "--paramModel", "AxisNormModel", "ch", "nonprompt", "pt,eta"],
    ),
    # AxisExpModel: exp(lnAmpl + slope x) along pt per eta cell for nonprompt, composed with Mu
    "axis_exp": (
        "isomt.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--noChi2", "--allowNegativeParam"]
        + ["--paramModel", "Mu", "--paramModel", "AxisExpModel", "ch", "nonprompt", "pt", "eta"],
    ),
    # AxisBernsteinModel: softplus endpoints c0, c1 along pt per eta cell for nonprompt, composed with Mu
    "axis_bernstein": (
        "isomt.hdf5",
        DATA + ["--doImpacts", "--saveHists", "--computeHistErrors", "--noChi2", "--allowNegativeParam"]
        + ["--paramModel", "Mu", "--paramModel", "AxisBernsteinModel", "ch", "nonprompt", "pt", "eta"],
    ),
    # one Newton step from the defaults instead of the fit (on dense.hdf5 and normal.hdf5, also with
    # --chisqFit or --noBinByBinStat, the postfit Hessian at the point the step reaches is not
    # positive-definite: upstream and ours end with the same one-line error)
    "force_linear": ("symmetric.hdf5", DATA + ["--forceLinear"]),
    # 2D profile scan on a 5x5 grid (the spiral of two rings)
    "scan2d": ("dense.hdf5", DATA + ["--scan2D", "sig", "bkg_norm", "--scanPoints", "5", "--scanRange", "2"]),
}

# Mappings (`-m NAME ARGS`, spellings of upstream's rabbit/mappings/ parse_args) on dense.hdf5:
# ch0 (axis x, 10 bins), ch1 (axes a: 10 bins, b: 5 bins) and the masked ch0_masked (axis x).
# Written to tests/reference/fits/ (--set mappings) with the other cases; tests/reference/mappings.md lists them.
# Run one case at a time (--cases NAME).
HIST_OUT = ["--saveHists", "--computeHistErrors", "--computeHistCov", "--computeHistImpacts"]
MAPPING_CASES = {
    # a bin range of a (bins 2..7) on ch1, b kept
    "map_select_ch1_range": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Select", "ch1", "a:slice(2,8)"]),
    # processes and a summed axis: sig+bkg of ch1, b summed
    "map_select_ch1_procs_sum": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Select", "ch1", "sig,bkg", "b:sum"]),
    # rebinning of b (the tensor's b edges are 0,1,3,6,10,20) to 0,3,10,20
    "map_select_ch1_rebin": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Select", "ch1", "b:rebin(0,3,10,20)"]),
    "map_project_ch1_a": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Project", "ch1", "a"]),
    # transposed order of the kept axes
    "map_project_ch1_b_a": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Project", "ch1", "b", "a"]),
    # no axes: the channel's total yield (one bin)
    "map_project_ch0_total": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Project", "ch0"]),
    "map_project_masked": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Project", "ch0_masked", "x"]),
    "map_normalize_ch1_b": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Normalize", "ch1", "b"]),
    "map_normalize_ch0": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Normalize", "ch0", "x"]),
    # same axes: masked over observed channel (no data histogram)
    "map_ratio_masked_ch0": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Ratio", "ch0_masked", "ch0"]),
    # different axes with equal bin counts (x of ch0 against a of ch1 with b summed): integer axes a0
    "map_ratio_ch0_ch1": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Ratio", "ch0", "ch1", "None:None", "b:sum"]),
    # process selections on both sides
    "map_ratio_procs": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Ratio", "ch0", "ch0", "sig", "bkg,bkg_2"]),
    # processes on both sides of two channels: the bins' β do not cancel (BB lite, then full)
    "map_ratio_procs_ch0_ch1": (
        "dense.hdf5",
        DATA + HIST_OUT + ["-m", "Ratio", "ch0", "ch1", "sig", "bkg", "None:None", "b:sum"],
    ),
    "map_asymmetry_procs_full": (
        "dense.hdf5",
        DATA
        + HIST_OUT
        + ["--binByBinStatMode", "full", "-m", "Asymmetry", "ch0", "ch1", "sig", "sig", "None:None", "b:sum"],
    ),
    # Difference (n/Σn − d/Σd) of two channels
    "map_difference_ch0_ch1": (
        "dense.hdf5",
        DATA + HIST_OUT + ["-m", "Difference", "ch0", "ch1", "None:None", "b:sum"],
    ),
    # a process-selecting Ratio inside --compositeMapping, with the Gaussian histogram impacts and BB full mode
    "map_composite_ratio_procs_gaussian": (
        "dense.hdf5",
        DATA
        + HIST_OUT
        + ["--computeHistGaussianImpacts", "--binByBinStatMode", "full", "--compositeMapping"]
        + ["-m", "Ratio", "ch0", "ch1", "sig", "bkg", "None:None", "b:sum", "-m", "Project", "ch1", "a"],
    ),
    "map_normratio_ch0_ch1": (
        "dense.hdf5",
        DATA + HIST_OUT + ["-m", "Normratio", "ch0", "ch1", "None:None", "b:sum"],
    ),
    "map_composite": (
        "dense.hdf5",
        DATA
        + HIST_OUT
        + ["--compositeMapping", "-m", "Select", "ch0", "-m", "Project", "ch1", "a"]
        + ["-m", "Normratio", "ch0", "ch1", "None:None", "b:sum"],
    ),
    # the Gaussian global impacts on mapped bins, next to the likelihood-based ones
    "map_gaussian_project_ch1_a": (
        "dense.hdf5",
        DATA + HIST_OUT + ["--computeHistGaussianImpacts", "-m", "Project", "ch1", "a"],
    ),
    # both kinds of histogram impacts with BB full mode (per-process columns), a masked channel included
    "map_hist_impacts_bb_full": (
        "dense.hdf5",
        DATA
        + ["--saveHists", "--computeHistErrors", "--computeHistImpacts", "--computeHistGaussianImpacts"]
        + ["--binByBinStatMode", "full", "--binByBinStatType", "normal-multiplicative"]
        + ["-m", "Project", "ch1", "a", "-m", "Project", "ch0_masked", "x"],
    ),
    # a composite of the mappings of this release only (map_composite needs Select and Normratio)
    "map_composite_project_normalize": (
        "dense.hdf5",
        DATA + HIST_OUT + ["--compositeMapping", "-m", "Project", "ch1", "a", "-m", "Normalize", "ch0", "x"],
    ),
    # two mappings without --compositeMapping (upstream saves BaseMapping only when no -m is given)
    "map_two_mappings": ("dense.hdf5", DATA + HIST_OUT + ["-m", "Project", "ch1", "a", "-m", "Select", "ch0"]),
    # Histograms without --computeHistErrors: upstream stores the propagated variances (weighted
    # storage) whenever it propagates them anyway, for --computeHistCov (the covariance's diagonal)
    # as for --computeHistImpacts, and plain double storage otherwise (per-process histograms too).
    "map_hist_cov_no_errors": (
        "dense.hdf5",
        DATA
        + ["--saveHists", "--saveHistsPerProcess", "--computeHistCov", "--binByBinStatMode", "full"]
        + ["-m", "BaseMapping", "-m", "Project", "ch1", "a", "-m", "Ratio", "ch0", "ch1", "None:None", "b:sum"],
    ),
    "map_hist_impacts_no_errors": (
        "dense.hdf5",
        DATA + ["--saveHists", "--computeHistImpacts", "-m", "BaseMapping", "-m", "Normalize", "ch0", "x"],
    ),
    "hists_no_errors": ("dense.hdf5", DATA + ["--saveHists", "--saveHistsPerProcess", "-m", "Project", "ch1", "a"]),
    # AngularCoefficients and LamTung on angular.hdf5 (pt x helicity, ch0 observed, ch_gen masked)
    "map_angular_coefficients": (
        "angular.hdf5",
        DATA + HIST_OUT + ["-m", "AngularCoefficients", "ch0", "-m", "AngularCoefficients", "ch_gen", "pt:sum"]
        + ["-m", "LamTung", "ch_gen", "sig", "pt:slice(1,4)"],
    ),
}
SETS = {"fits": (CASES, "fits"), "mappings": (MAPPING_CASES, "fits")}


def to_json(obj):
    """rabbit's results (dicts, H5PickleProxy, hist.Hist, numpy) -> plain JSON types."""
    import hist
    import numpy as np
    from wums import ioutils

    if isinstance(obj, ioutils.H5PickleProxy):
        return to_json(obj.get())
    if isinstance(obj, hist.Hist):
        axes = []
        for ax in obj.axes:
            a = {
                "name": ax.name,
                "class": type(ax).__name__,
                "underflow": bool(ax.traits.underflow),
                "overflow": bool(ax.traits.overflow),
            }
            if isinstance(ax, (hist.axis.StrCategory, hist.axis.IntCategory)):
                a["labels"] = [str(v) for v in ax]
            else:
                a["edges"] = [float(e) for e in ax.edges]
            axes.append(a)
        variances = obj.variances()
        return {
            "axes": axes,
            # "Double" or "Weight": boost-histogram reads a Double storage's variances back as its values,
            # so only the storage tells whether rabbit stored variances.
            "storage": obj.storage_type.__name__,
            "values": np.asarray(obj.values(), dtype=float).tolist(),
            "variances": None if variances is None else np.asarray(variances, dtype=float).tolist(),
        }
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items() if k != "epoch_time"}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_json(obj.tolist())
    if isinstance(obj, (bytes, np.bytes_)):
        return obj.decode()
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)


def rabbit_commit(rabbit_dir):
    if os.environ.get("RABBIT_COMMIT"):
        return os.environ["RABBIT_COMMIT"]
    try:
        return subprocess.check_output(
            ["git", "-C", rabbit_dir, "rev-parse", "HEAD"], text=True, stderr=subprocess.DEVNULL
        ).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


_script_mains = {}


def run_script(rabbit_dir, script, argv):
    """Runs upstream's bin/SCRIPT.py main() (SCRIPT: rabbit_fit or rabbit_limit) with argv in this
    process: TensorFlow is imported once for all cases (each main() builds its own Fitter, sets its
    own seeds and writes its own file)."""
    if script not in _script_mains:
        import importlib.util

        if rabbit_dir not in sys.path:
            sys.path.insert(0, rabbit_dir)
        path = os.path.join(rabbit_dir, "bin", f"{script}.py")
        spec = importlib.util.spec_from_file_location(f"{script}_script", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _script_mains[script] = module.main
    saved = sys.argv
    sys.argv = [f"{script}.py", *argv]
    try:
        _script_mains[script]()
    finally:
        sys.argv = saved


def run_case(name, tensor, args, rabbit_dir, commit, outdir, script="rabbit_fit"):
    """Runs SCRIPT on tests/reference/tensors/TENSOR with args and writes outdir/NAME.json."""
    import h5py
    from wums import ioutils

    tensor_path = os.path.join(REFDIR, "tensors", tensor)
    with tempfile.TemporaryDirectory() as tmp:
        run_script(rabbit_dir, script, [tensor_path, *args, "-o", tmp, "--outname", "out.hdf5"])
        results = {}
        with h5py.File(os.path.join(tmp, "out.hdf5"), "r") as f:
            meta = ioutils.pickle_load_h5py(f["meta"])
            for key in f.keys():
                if key == "results" or key.startswith("results_"):
                    group = "data_obs" if key == "results" else key[len("results_"):]
                    results[group] = to_json(ioutils.pickle_load_h5py(f[key]))
    out = {
        "tensor": tensor,
        "args": args,
        "rabbit_commit": commit,
        "meta": {k: to_json(meta[k]) for k in ("procs", "pois", "nois") if k in meta},
        "results": results,
    }
    path = os.path.join(outdir, f"{name}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    return path


def run_cases(cases, names, rabbit_dir, outdir, script="rabbit_fit"):
    """Runs the named cases (default: all) one after the other; exits non-zero naming the failed ones."""
    commit = rabbit_commit(rabbit_dir)
    os.makedirs(outdir, exist_ok=True)
    failed = []
    for name in names or cases:
        tensor, cargs = cases[name]
        print(f"{name}: {tensor} {' '.join(cargs)}", flush=True)
        try:
            print("  ->", run_case(name, tensor, cargs, rabbit_dir, commit, outdir, script), flush=True)
        except (Exception, SystemExit) as e:  # one failing case must not stop the others
            print(f"  FAILED: {type(e).__name__}: {e}", flush=True)
            failed.append(name)
    if failed:
        sys.exit(f"failed cases: {' '.join(failed)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rabbit", required=True, help="directory of rabbit's source (with bin/rabbit_fit.py)")
    parser.add_argument("--cases", nargs="*", default=None, help="only these cases (default: all)")
    parser.add_argument(
        "--set",
        choices=SETS.keys(),
        default="fits",
        help="fits: CASES; mappings: MAPPING_CASES (both into tests/reference/fits)",
    )
    parser.add_argument("--outdir", default=None, help="default: the set's directory in tests/reference")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    args = parser.parse_args()
    cases, subdir = SETS[args.set]
    outdir = args.outdir or os.path.join(REFDIR, subdir)
    if args.list:
        for name, (tensor, cargs) in cases.items():
            print(name, tensor, " ".join(cargs))
        return
    run_cases(cases, args.cases, args.rabbit, outdir)


if __name__ == "__main__":
    main()
