#!/usr/bin/env bash
# Wall time of upstream rabbit_fit.py (Python/TensorFlow) vs our rabbit_fit on the same tensors,
# same options, same machine, both pinned to the same cores. Optional: needs a Python environment
# with upstream rabbit's dependencies (see tools/make_reference.py) and rabbit's source.
#
#   bench/compare_with_rabbit.sh [-b BUILD_DIR] [-p PYTHON] [-r RABBIT_SRC] [-n REPEAT] [-c CORES]
#                                [-w WORK_DIR] [--bins B --procs P --systs S]
#
# Tensors: (a) examples/example_tensor.hdf5, (b) a larger one written by BUILD_DIR/make_bench_tensor
# (bench/make_bench_tensor.cpp). Option sets: "-t 0" and "-t 0 --doImpacts --globalImpacts"
# (both with --unblind). Every run is repeated REPEAT times; the minimum wall time is reported
# (the machine is shared; the minimum is the least disturbed run). Prints one table row per
# (tensor, options): seconds of upstream, ours, and the ratio, plus both reduced NLLs as a check.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build="$here/build"
python=/tmp/pyv/bin/python
rabbit=/tmp/wt
repeat=3
cores=2
work=$(mktemp -d /tmp/compare_with_rabbit.XXXXXX)
bins=2000 procs=5 systs=200

while [ $# -gt 0 ]; do
  case "$1" in
    -b) build=$2; shift 2 ;;
    -p) python=$2; shift 2 ;;
    -r) rabbit=$2; shift 2 ;;
    -n) repeat=$2; shift 2 ;;
    -c) cores=$2; shift 2 ;;
    -w) work=$2; shift 2 ;;
    --bins) bins=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --systs) systs=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

for f in "$build/rabbit_fit" "$build/make_bench_tensor" "$rabbit/bin/rabbit_fit.py" "$python"; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 2; }
done
mkdir -p "$work"

# Pin both programs to the same cores and tell each runtime how many threads to use.
cpu_list="0-$((cores - 1))"
pin=(taskset -c "$cpu_list")
command -v taskset >/dev/null || pin=()
export OMP_NUM_THREADS=$cores TF_NUM_INTRAOP_THREADS=$cores TF_NUM_INTEROP_THREADS=1 TF_CPP_MIN_LOG_LEVEL=2

large="$work/bench_${bins}x${procs}x${systs}.hdf5"
"$build/make_bench_tensor" -o "$large" --bins "$bins" --procs "$procs" --systs "$systs" >/dev/null

# min wall seconds over $repeat runs of "$@"; the output of the last run goes to $work/last.log
time_min() {
  local best="" t0 t1 dt
  for _ in $(seq "$repeat"); do
    t0=$(date +%s.%N)
    "${pin[@]}" "$@" >"$work/last.log" 2>&1 || { echo "FAILED: $*" >&2; tail -20 "$work/last.log" >&2; return 1; }
    t1=$(date +%s.%N)
    dt=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$dt < $best" | bc -l)" = 1 ]; then best=$dt; fi
  done
  printf '%.2f' "$best"
}

nll_of() {  # reduced NLL of the fit to data in a result file (ours: plain HDF5; rabbit: pickled)
  "$python" - "$1" "$2" <<'EOF'
import sys, h5py
kind, path = sys.argv[1], sys.argv[2]
with h5py.File(path, "r") as f:
    if kind == "ours":
        print(f"{float(f['results/nllvalreduced'][()]):.10f}")
    else:
        from wums import ioutils
        print(f"{float(ioutils.pickle_load_h5py(f['results'])['nllvalreduced']):.10f}")
EOF
}

printf '%-34s %-36s %10s %10s %8s  %s\n' tensor options rabbit_s ours_s ratio "nll rabbit / ours"
for tensor in "$here/examples/example_tensor.hdf5" "$large"; do
  for opts in "-t 0 --unblind" "-t 0 --unblind --doImpacts --globalImpacts"; do
    # shellcheck disable=SC2086
    t_up=$(time_min env PYTHONPATH="$rabbit" "$python" "$rabbit/bin/rabbit_fit.py" "$tensor" $opts \
      -o "$work/up" --outname fit.hdf5)
    # shellcheck disable=SC2086
    t_ours=$(time_min "$build/rabbit_fit" "$tensor" $opts -o "$work/ours" --outname fit.hdf5)
    ratio=$(echo "$t_up / $t_ours" | bc -l)
    printf '%-34s %-36s %10s %10s %8.1f  %s / %s\n' "$(basename "$tensor")" "$opts" "$t_up" "$t_ours" "$ratio" \
      "$(nll_of rabbit "$work/up/fit.hdf5")" "$(nll_of ours "$work/ours/fit.hdf5")"
  done
done
