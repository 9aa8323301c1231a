#!/usr/bin/env python3
"""Writes the reference asymptotic limits of tests/reference/limits/ with upstream rabbit_limit.py.

The companion of tools/make_reference.py (same environment, same JSON conventions: see its
docstring and tests/reference/README.md). For every case below, runs upstream `rabbit_limit.py`
on a tensor of tests/reference/tensors/ and stores its result groups as
tests/reference/limits/CASE.json: {"tensor", "args", "rabbit_commit", "meta", "results"}.
Never used by the build or the tests; tests/reference/reference_limit_test.cpp reads the JSON.

    /path/to/python tools/make_limits_reference.py --rabbit /path/to/rabbit [--cases NAME ...]
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_reference import REFDIR, rabbit_commit, to_json  # noqa: E402

# name -> (tensor, arguments after the tensor file name)
CASES = {
    # expected limits on the Asimov dataset (upstream's default -t -1), POI stored as sqrt(mu)
    "limits_asimov": ("dense.hdf5", ["--asymptoticLimits", "sig", "--levels", "0.05", "0.1"]),
    # same with a POI that may go negative
    "limits_asimov_negative": (
        "dense.hdf5",
        ["--asymptoticLimits", "sig", "--levels", "0.05", "--allowNegativeParam"],
    ),
    # observed (Gaussian) and expected limits from the background-only fit to data
    "limits_data_negative": (
        "dense.hdf5",
        ["-t", "0", "--unblind", "--asymptoticLimits", "sig", "--levels", "0.05", "--allowNegativeParam"],
    ),
}

_main = None


def rabbit_limit(rabbit_dir, argv):
    global _main
    if _main is None:
        import importlib.util

        sys.path.insert(0, rabbit_dir)
        script = os.path.join(rabbit_dir, "bin", "rabbit_limit.py")
        spec = importlib.util.spec_from_file_location("rabbit_limit_script", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _main = module.main
    saved = sys.argv
    sys.argv = ["rabbit_limit.py", *argv]
    try:
        _main()
    finally:
        sys.argv = saved


def run_case(name, tensor, args, rabbit_dir, commit, outdir):
    import h5py
    from wums import ioutils

    tensor_path = os.path.join(REFDIR, "tensors", tensor)
    with tempfile.TemporaryDirectory() as tmp:
        rabbit_limit(rabbit_dir, [tensor_path, *args, "-o", tmp, "--outname", "limits.hdf5"])
        results = {}
        with h5py.File(os.path.join(tmp, "limits.hdf5"), "r") as f:
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rabbit", required=True, help="directory of rabbit's source (with bin/rabbit_limit.py)")
    parser.add_argument("--cases", nargs="*", default=None, help="only these cases (default: all)")
    parser.add_argument("--outdir", default=os.path.join(REFDIR, "limits"))
    args = parser.parse_args()
    commit = rabbit_commit(args.rabbit)
    os.makedirs(args.outdir, exist_ok=True)
    failed = []
    for name in args.cases or CASES:
        tensor, cargs = CASES[name]
        print(f"{name}: {tensor} {' '.join(cargs)}", flush=True)
        try:
            print("  ->", run_case(name, tensor, cargs, args.rabbit, commit, args.outdir), flush=True)
        except (Exception, SystemExit) as e:  # one failing case must not stop the others
            print(f"  FAILED: {type(e).__name__}: {e}", flush=True)
            failed.append(name)
    if failed:
        sys.exit(f"failed cases: {' '.join(failed)}")


if __name__ == "__main__":
    main()
