#!/usr/bin/env bash
# MPI scaling of one fit (docs/mpi.md "Measurements"): a generated tensor fitted by one process and
# by N MPI ranks (CPU shards), the runs interleaved (1 N 1 N ...) and repeated, because the machine
# may be shared. Per run: wall time, the minimizer's time and evaluations, rank 0's time in its own
# shard and in the exchange (sending requests, waiting for the slowest rank's reply), and the peak
# memory of every rank. The efficiency of N ranks is T(1) / (N · T(N)) over the best runs.
# usage: bench/mpi_scaling.sh BUILD_DIR [--bins B] [--procs P] [--systs S] [--ranks N] [--repeat R]
# Needs a build with MPI (rabbit_fit) and -DRABBIT_BUILD_BENCH=ON (make_bench_tensor); as root the
# OMPI_ALLOW_RUN_AS_ROOT variables are set here.
set -euo pipefail
build=$(realpath "${1:?usage: bench/mpi_scaling.sh BUILD_DIR [--bins B] [--procs P] [--systs S] [--ranks N] [--repeat R]}")
shift
bins=20000 procs=8 systs=64 ranks=2 repeat=2
while (($#)); do
  case "$1" in
    --bins) bins=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --systs) systs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "mpi_scaling: unknown argument $1" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tensor="$work/t.hdf5"
"$build/make_bench_tensor" -o "$tensor" --bins "$bins" --procs "$procs" --systs "$systs" >/dev/null
echo "tensor: $bins bins x $procs processes x $((systs + procs)) systematics, $(du -m "$tensor" | cut -f1) MB on disk; $(nproc) cores"

run() {  # N: one fit on N ranks (1: a plain process); prints one line
  local n=$1 log="$work/run.log" t0 t1
  t0=$(date +%s.%N)
  if [ "$n" = 1 ]; then
    /usr/bin/time -f "peak %M kB" "$build/rabbit_fit" "$tensor" -t 0 -o "$work" >"$log" 2>&1
  else
    mpiexec --oversubscribe -n "$n" "$build/rabbit_fit" "$tensor" -t 0 -o "$work" >"$log" 2>&1
  fi
  t1=$(date +%s.%N)
  local fit mem share
  fit=$(grep -oE 'converged .* s$' "$log" | sed -E 's/.*(nfev [0-9]+, nhvp [0-9]+, nhess [0-9]+), ([0-9.]+) s$/\2 s (\1)/')
  if [ "$n" = 1 ]; then
    mem=$(grep -oE 'peak [0-9]+ kB' "$log" | awk '{printf "rank 0 %.0f MiB", $2 / 1024}')
    share="-"
  else
    mem=$(grep -oE 'rank [0-9]+: .*tensor [0-9.]+ MiB, peak memory [0-9.]+ MiB' "$log" |
      sed -E 's/rank ([0-9]+): .*tensor ([0-9.]+) MiB, peak memory ([0-9.]+) MiB.*/rank \1 \3 MiB (tensor \2)/' | paste -sd, -)
    share=$(grep -oE 'rank 0: [0-9.]+ s in its shard, [0-9.]+ s sending' "$log" |
      awk '{printf "shard %s s, exchange %s s (%.0f%%)", $3, $8, 100 * $8 / ($3 + $8)}')
  fi
  printf "%d rank(s): wall %.2f s, fit %s; %s; %s\n" "$n" "$(echo "$t1 - $t0" | bc)" "$fit" "$share" "$mem"
}

for ((r = 0; r < repeat; ++r)); do
  run 1
  run "$ranks"
done
