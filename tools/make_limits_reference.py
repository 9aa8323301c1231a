#!/usr/bin/env python3
"""Writes the reference asymptotic limits of tests/reference/limits/ with upstream rabbit_limit.py.

The companion of tools/make_reference.py (same environment, same JSON conventions and the same
helpers: see its docstring and tests/reference/README.md). For every case below, runs upstream
`rabbit_limit.py` on a tensor of tests/reference/tensors/ and stores its result groups as
tests/reference/limits/CASE.json: {"tensor", "args", "rabbit_commit", "meta", "results"}.
Never used by the build or the tests; tests/reference/reference_limit_test.cpp reads the JSON.

rabbit_limit.py at 948a94a unpacks five values from Fitter.expected_with_variance, which returns
seven, so every `-m` run stops with a ValueError before its first limit. This tool wraps that method
to return its first five values (what the script means: expected value and variance first), which
changes nothing else (rabbit_limit.py calls it only for a mapping).

    /path/to/python tools/make_limits_reference.py --rabbit /path/to/rabbit [--cases NAME ...]
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_reference import REFDIR, run_cases  # noqa: E402

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
    # Asimov, data and two toys (TensorFlow's random stream: only the -1 and 0 groups are comparable
    # number for number, the toys by their layout)
    "limits_toys": (
        "dense.hdf5",
        ["-t", "-1", "0", "2", "--seed", "42", "--unblind", "--asymptoticLimits", "sig", "--allowNegativeParam"],
    ),
    # the pseudodata set "original" instead of the data
    "limits_pseudodata": (
        "dense.hdf5",
        ["-t", "-1", "0", "--unblind", "--pseudoData", "original", "--asymptoticLimits", "sig",
         "--allowNegativeParam"],
    ),
    # a limit on the total yield of the masked channel (the first -m); "background only" freezes sig at
    # its default 1 (at 0 the signal-shape nuisances are not constrained and the Hessian is singular)
    "limits_mapping_masked": (
        "dense.hdf5",
        ["-t", "-1", "0", "--unblind", "--asymptoticLimits", "sig", "-m", "Project", "ch0_masked",
         "--modes", "gaussian", "--allowNegativeParam"],
    ),
}


def patch_expected_with_variance(rabbit_dir):
    """See the docstring: rabbit_limit.py's five-value unpack of a seven-value return."""
    if rabbit_dir not in sys.path:
        sys.path.insert(0, rabbit_dir)
    from rabbit import fitter

    original = fitter.Fitter.expected_with_variance
    if getattr(original, "_first_five", False):
        return

    def first_five(self, *args, **kwargs):
        return original.__get__(self, type(self))(*args, **kwargs)[:5]

    first_five._first_five = True
    fitter.Fitter.expected_with_variance = first_five


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rabbit", required=True, help="directory of rabbit's source (with bin/rabbit_limit.py)")
    parser.add_argument("--cases", nargs="*", default=None, help="only these cases (default: all)")
    parser.add_argument("--outdir", default=os.path.join(REFDIR, "limits"))
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    args = parser.parse_args()
    if args.list:
        for name, (tensor, cargs) in CASES.items():
            print(name, tensor, " ".join(cargs))
        return
    patch_expected_with_variance(args.rabbit)
    run_cases(CASES, args.cases, args.rabbit, args.outdir, script="rabbit_limit")


if __name__ == "__main__":
    main()
