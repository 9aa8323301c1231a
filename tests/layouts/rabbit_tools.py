"""Runs upstream rabbit's own readers and scripts (PyPI rabbit-fit, wums) on our result files.

Driven by tests/layouts/rabbit_ecosystem_test.cpp, which runs our rabbit_fit, hands this script a
manifest and checks what it reports against our own reader:

    python rabbit_tools.py MANIFEST.json REPORT.json

MANIFEST: [{"name", "file", "results": [KEY or null, ...], "plot_dir": DIR or null,
            "upstream_file": PATH (optional: write a file as upstream's Workspace does, for our reader),
            "mapping_plots": {"dir": DIR, "mappings": [[NAME, ARG, ...], ...]} (optional),
            "hist_impacts": [[NAME, ARG, ...], ...] (optional: rabbit_print_impacts.py --globalImpacts -m, scaled by 1e6)}]
REPORT:   {name: {"groups": {KEY or "": {"entries": {PATH: hist or number}, "meta": {...},
           "aliases": {...}, "printed": {SCRIPT: {"ok", "stdout", "error"}}}},
           "plots": {SCRIPT: {"ok", "error", "files": [...]}},
           "mapping_plots": {MAPPING KEY: {"ok", "error", "files", "chi2": {FITTYPE: [chi2, ndf, saturated]}}},
           "hist_impacts": {MAPPING KEY: {"grouped": {"ok", "stdout", "error"}, "ungrouped": {...}}}}}

Everything runs in this one process: the scripts through runpy with their command line in
sys.argv and their stdout captured. A failure is recorded in the report, never raised, so the C++
test names the case and the script.
"""

import contextlib
import io
import json
import math
import os
import runpy
import sys
import traceback

import numpy as np
from rabbit import io_tools


def number(value):
    value = float(value)
    return value if math.isfinite(value) else str(value)  # NaN/inf as text: strict JSON


def describe_hist(h):
    axes = []
    for a in h.axes:
        axis = {"name": a.name, "type": type(a).__name__}
        if type(a).__name__ == "StrCategory":
            axis["labels"] = [str(x) for x in a]
        else:
            axis["edges"] = [float(e) for e in a.edges]
        axes.append(axis)
    variances = h.variances()
    return {
        "axes": axes,
        "storage": type(h.storage_type()).__name__,
        "label": h.label,
        "name": h.name,
        "values": [number(v) for v in np.asarray(h.values()).ravel()],
        "variances": None if variances is None else [number(v) for v in np.asarray(variances).ravel()],
    }


def entries(tree, prefix=""):
    """Every histogram and scalar of a fit result dict, by key path ('mappings/BaseMapping/...')."""
    out = {}
    for key, value in tree.items():
        if key == "physics_models":  # rabbit-fit 0.2.5's name of `mappings`, checked as an alias
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(entries(value, path + "/"))
        elif hasattr(value, "get") and callable(value.get):
            out[path] = describe_hist(value.get())
        elif isinstance(value, (bool, int, float, np.number, np.bool_)):
            out[path] = {"scalar": number(value), "python_type": type(value).__name__}
        elif isinstance(value, str):
            out[path] = {"text": value}
    return out


def run_script(module, argv):
    stdout = io.StringIO()
    saved = sys.argv
    sys.argv = [module] + argv
    try:
        with contextlib.redirect_stdout(stdout):
            runpy.run_module(module, run_name="__main__")
        return {"ok": True, "stdout": stdout.getvalue()}
    except SystemExit as e:
        return {"ok": e.code in (None, 0), "stdout": stdout.getvalue(), "error": f"exit {e.code}"}
    except Exception:
        return {"ok": False, "stdout": stdout.getvalue(), "error": traceback.format_exc()}
    finally:
        sys.argv = saved


def check_group(path, key):
    fitresult, meta = io_tools.get_fitresult(path, key, meta=True)
    group = {
        "entries": entries(fitresult),
        "meta": {
            "keys": list(meta.keys()),
            "procs": [str(p) for p in meta["procs"].astype(str)],
            "poi_names": [str(p) for p in io_tools.get_poi_names(meta)],
            "meta_info_keys": list(meta["meta_info"].keys()),
            "args_outputFormat": meta["meta_info"]["args"].get("outputFormat"),
            "channels": list(meta["meta_info_input"]["channel_info"].keys()),
        },
        "aliases": {
            "physics_models_is_mappings": ("mappings" not in fitresult)
            or (fitresult.get("physics_models") is fitresult["mappings"]),
            "signals_is_pois": meta.get("signals") is meta.get("pois"),
        },
        "printed": {},
    }
    result = [] if key is None else ["--result", key]
    printed = group["printed"]
    if "parms" in fitresult:
        printed["pulls"] = run_script("bin.rabbit_print_pulls_and_constraints", [path] + result)
    if "impacts_grouped" in fitresult:
        printed["impacts_grouped"] = run_script("bin.rabbit_print_impacts", [path] + result)
    if "impacts" in fitresult:
        printed["impacts"] = run_script("bin.rabbit_print_impacts", [path, "-u"] + result)
    if "global_impacts_grouped" in fitresult:
        printed["global_impacts_grouped"] = run_script("bin.rabbit_print_impacts", [path, "--globalImpacts"] + result)
    if "global_impacts" in fitresult:
        printed["global_impacts"] = run_script("bin.rabbit_print_impacts", [path, "--globalImpacts", "-u"] + result)
    return group


def plots(path, plot_dir):
    out = {}
    for name, module, argv in [
        ("pulls_and_impacts", "bin.rabbit_plot_pulls_and_impacts", [path, "-o", f"{plot_dir}/impacts"]),
        ("hists", "bin.rabbit_plot_hists", [path, "-m", "BaseMapping", "-o", f"{plot_dir}/hists"]),
        ("hists_prefit", "bin.rabbit_plot_hists", [path, "-m", "BaseMapping", "--prefit", "-o", f"{plot_dir}/hists"]),
    ]:
        run = run_script(module, argv)
        folder = argv[-1]
        run["files"] = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        run.pop("stdout", None)
        out[name] = run
    return out


def mapping_plots(path, plot_dir, mappings):
    """rabbit_plot_hists.py -m NAME ARGS... for each mapping (postfit and --prefit), and the chi2 and
    ndf that the script's own get_chi2 takes from the mapping's results for the plots' label."""
    out = {}
    script = runpy.run_module("bin.rabbit_plot_hists", run_name="rabbit_plot_hists")  # its functions
    fitresult = io_tools.get_fitresult(path)
    for tokens in mappings:
        key = " ".join(tokens)
        folder = f"{plot_dir}/{key.replace(' ', '_')}"
        run = run_script("bin.rabbit_plot_hists", [path, "-m", *tokens, "-o", folder])
        prefit = run_script("bin.rabbit_plot_hists", [path, "-m", *tokens, "--prefit", "-o", folder])
        if not prefit["ok"]:
            run = {**prefit, "ok": False}
        run.pop("stdout", None)
        run["files"] = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        try:
            instance = fitresult["physics_models"][key]
            run["chi2"] = {}
            for fittype in ("postfit", "prefit"):
                chi2, ndf, saturated = script["get_chi2"](instance, False, fittype)
                run["chi2"][fittype] = [number(chi2), int(ndf), bool(saturated)]
        except Exception:
            run["ok"] = False
            run["error"] = traceback.format_exc()
        out[key] = run
    return out


def hist_impacts(path, mappings):
    """rabbit_print_impacts.py --globalImpacts [-u] --scale 1e6 -m NAME ARGS...: the global impacts on every
    bin of a mapping's postfit histogram, grouped and per parameter, as the script prints them (scaled, so
    that its five decimals show the small impacts on a ratio)."""
    out = {}
    for tokens in mappings:
        common = [path, "--globalImpacts", "--scale", "1e6"]
        out[" ".join(tokens)] = {
            "grouped": run_script("bin.rabbit_print_impacts", [*common, "-m", *tokens]),
            "ungrouped": run_script("bin.rabbit_print_impacts", [*common, "-u", "-m", *tokens]),
        }
    return out


def write_upstream_file(path):
    """A result file written by wums' own pickler as upstream's Workspace writes one (hist objects,
    numpy scalars and name arrays, Blosc compression), for our reader to read: its entries."""
    import h5py
    import hist
    from wums import ioutils

    parms = ["sig", "bkg_norm", "slope"]
    h_parms = hist.Hist(hist.axis.StrCategory(parms, name="parms"), storage=hist.storage.Weight(), name="parms")
    h_parms.values()[...] = [1.0, -0.25, 0.5]
    h_parms.variances()[...] = [0.01, 0.5, 0.7]
    h_cov = hist.Hist(
        hist.axis.StrCategory(parms, name="parms_x"), hist.axis.StrCategory(parms, name="parms_y"), name="cov"
    )
    h_cov.values()[...] = np.arange(9.0).reshape(3, 3) + 0.5
    h_chan = hist.Hist(
        hist.axis.Regular(4, 0.0, 1.0, name="x"),
        hist.axis.Variable([0.0, 1.0, 3.0], name="y"),
        hist.axis.StrCategory(["a", "b"], name="processes"),
        storage=hist.storage.Weight(),
        name="hist_postfit",
        label="postfit expected number of events, ",
    )
    h_chan.values(flow=True)[...] = np.arange(6 * 4 * 3, dtype=float).reshape(6, 4, 3)
    h_chan.variances(flow=True)[...] = 0.5 * np.arange(6 * 4 * 3, dtype=float).reshape(6, 4, 3)
    h_scan = hist.Hist(hist.axis.StrCategory(np.array([-1.5, 0.0, 2.5]).astype(str), name="scan"), name="nll_scan_sig")
    h_scan.values()[...] = [0.5, 0.0, 1.25]
    proxy = ioutils.H5PickleProxy
    results = {
        "parms": proxy(h_parms),
        "cov": proxy(h_cov),
        "mappings": {"BaseMapping": {"channels": {"ch0": {"hist_postfit": proxy(h_chan)}}, "ndf": 3, "chi2": 1.5}},
        "nll_scan_sig": proxy(h_scan),
        "nllvalreduced": np.float64(2.5),
        "ndfsat": np.int32(7),
        "edmval": np.float64(1e-20),
        "postfit_profile": True,
    }
    meta = {
        "meta_info": {"time": "now", "command": "rabbit_fit.py", "args": {"toys": [0]}},
        "procs": np.array([b"a", b"b"], dtype=object),
        "pois": np.array([b"sig"]),
        "nois": np.array([], dtype=object),
    }
    with h5py.File(path, "w") as f:
        ioutils.pickle_dump_h5py("meta", meta, f)
        ioutils.pickle_dump_h5py("results", results, f)
    return {"entries": entries(results), "procs": ["a", "b"], "pois": ["sig"]}


def main():
    manifest_path, report_path = sys.argv[1], sys.argv[2]
    with open(manifest_path) as f:
        manifest = json.load(f)
    report = {}
    for case in manifest:
        entry = {"groups": {}}
        for key in case["results"]:
            try:
                entry["groups"][key or ""] = check_group(case["file"], key)
            except Exception:
                entry["groups"][key or ""] = {"error": traceback.format_exc()}
        if case.get("plot_dir"):
            entry["plots"] = plots(case["file"], case["plot_dir"])
        if case.get("mapping_plots"):
            try:
                entry["mapping_plots"] = mapping_plots(
                    case["file"], case["mapping_plots"]["dir"], case["mapping_plots"]["mappings"]
                )
            except Exception:
                entry["mapping_plots"] = {"_error": {"ok": False, "error": traceback.format_exc()}}
        if case.get("hist_impacts"):
            entry["hist_impacts"] = hist_impacts(case["file"], case["hist_impacts"])
        report[case["name"]] = entry
        if case.get("upstream_file"):
            try:
                report["_upstream_written"] = write_upstream_file(case["upstream_file"])
            except Exception:
                report["_upstream_written"] = {"error": traceback.format_exc()}
    import boost_histogram, h5py, hist, wums  # noqa: E401 (versions, for the test's message)

    report["_versions"] = {
        "numpy": np.__version__,
        "hist": hist.__version__,
        "boost_histogram": boost_histogram.__version__,
        "h5py": h5py.__version__,
        "python": sys.version.split()[0],
    }
    with open(report_path, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
