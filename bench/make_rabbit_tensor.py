"""Writes a benchmark tensor with upstream rabbit's own TensorWriter (bench/compare_with_rabbit.sh).

    PYTHONPATH=RABBIT_SRC python bench/make_rabbit_tensor.py -o FILE --bins B --procs P --systs S

One observed channel "ch0" with B regular bins; a signal "sig" and P-1 backgrounds with smooth
falling/rising shapes (the shapes of bench/make_bench_tensor.cpp); one 2.5 % normalisation systematic
per process and S shape systematics, each an asymmetric linear tilt (up and down of different size,
1-5 %) on a process chosen in turn, so that rabbit writes the asymmetric (logkavg, logkhalfdiff)
tensor as it does for real analyses. Parameters: 1 + P + S. Data: Poisson fluctuations around the
nominal total (numpy, fixed seed). This is the tensor layout a physicist's fit reads, which
make_bench_tensor (symmetric, written by our own writer) is not.
"""

import argparse
import os

import hist
import numpy as np

from rabbit import tensorwriter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--output", required=True, help="output HDF5 file")
    parser.add_argument("--bins", type=int, default=2000)
    parser.add_argument("--procs", type=int, default=5)
    parser.add_argument("--systs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    axis = hist.axis.Regular(args.bins, 0.0, 1.0, name="x")
    x = axis.centers

    def make(values):
        h = hist.Hist(axis, storage=hist.storage.Double())
        h.values()[...] = values
        return h

    procs = ["sig"] + [f"bkg{p}" for p in range(1, args.procs)]
    shapes = {"sig": 200.0 * np.exp(-0.5 * ((x - 0.5) / 0.15) ** 2) + 20.0}
    for p in range(1, args.procs):
        slope = (-1.0) ** p * (0.5 + 0.1 * p)
        shapes[procs[p]] = 400.0 / args.procs * (1.0 + slope * (x - 0.5)) + 5.0

    writer = tensorwriter.TensorWriter()
    writer.add_channel([axis], "ch0")
    total = sum(shapes.values())
    writer.add_data(make(rng.poisson(total).astype(np.float64)), "ch0")
    for name in procs:
        writer.add_process(make(shapes[name]), name, "ch0", signal=(name == "sig"))
    for name in procs:
        writer.add_norm_systematic(f"norm_{name}", name, "ch0", 1.025)
    tilt = x - 0.5
    for s in range(args.systs):
        name = procs[s % args.procs]
        size = 0.01 + 0.04 * rng.random()
        up = shapes[name] * (1.0 + size * tilt)
        down = shapes[name] * (1.0 - 0.7 * size * tilt)
        writer.add_systematic([make(up), make(down)], f"shape_{s}", name, "ch0", mirror=False, symmetrize=None)

    out_dir, out_name = os.path.split(os.path.abspath(args.output))
    writer.write(outfolder=out_dir, outfilename=os.path.splitext(out_name)[0])


if __name__ == "__main__":
    main()
