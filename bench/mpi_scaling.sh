#!/usr/bin/env bash
# MPI scaling (docs/mpi.md "Measurements", docs/benchmarks.md "MPI scaling"): a generated dense tensor,
# its loss+gradient (mpi_loss_grad_bench) and its full fit (rabbit_fit -t 0) on one process and on N
# MPI ranks (CPU shards), the runs interleaved (1 N1 N2 1 N1 N2 ...) and repeated, because the
# machine may be shared; the load average is printed with every run. Per run: the time (ms per
# loss+grad; wall and minimizer time of the fit), rank 0's time in its own shard and in the exchange
# (broadcasting the request, waiting in the gather for the slowest rank: the communication share),
# and every rank's peak memory. At the end, the efficiency T(1) / (N · T(N)) over the best runs.
# usage: bench/mpi_scaling.sh BUILD_DIR [--bins B] [--procs P] [--systs S] [--ranks N1,N2,...]
#        [--repeat R] [--iters K]
# More ranks than cores are oversubscribed (mpiexec --oversubscribe); MPIEXEC_ARGS adds to mpiexec's
# options (e.g. "--bind-to none": Open MPI binds each of up to 2 ranks to one core by default). Needs a build with MPI and
# -DRABBIT_BUILD_BENCH=ON (make_bench_tensor, mpi_loss_grad_bench); as root the
# OMPI_ALLOW_RUN_AS_ROOT variables are set here.
set -euo pipefail
usage="usage: bench/mpi_scaling.sh BUILD_DIR [--bins B] [--procs P] [--systs S] [--ranks N1,N2,...] [--repeat R] [--iters K]"
build=$(realpath "${1:?$usage}")
shift
bins=20000 procs=8 systs=64 ranks=2 repeat=2 iters=20
while (($#)); do
  case "$1" in
    --bins) bins=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --systs) systs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "mpi_scaling: unknown argument $1 ($usage)" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tensor="$work/t.hdf5"
"$build/make_bench_tensor" -o "$tensor" --bins "$bins" --procs "$procs" --systs "$systs" >/dev/null
echo "tensor: $bins bins x $procs processes x $((systs + procs)) systematics, $(du -m "$tensor" | cut -f1) MB on disk; $(nproc) cores"
times="$work/times"  # KIND N SECONDS, one line per run

load() { cut -d' ' -f1 /proc/loadavg; }

# rank 0's exchange share, the part of it that the slowest rank's excess over rank 0's shard does not
# explain (the messages themselves, and rank 0 waiting while the others were not evaluating either),
# and every rank's peak memory, from a run's log
mpi_summary() {
  local log=$1 share busiest mem
  busiest=$(grep -oE 'rank [1-9][0-9]*: peak memory .* [0-9.]+ s answering' "$log" |
    awk '{ if ($(NF-2) > m) m = $(NF-2) } END { print m + 0 }')
  share=$(grep -oE 'rank 0: [0-9.]+ s in its shard, [0-9.]+ s sending' "$log" |
    awk -v b="$busiest" '{ w = b - $3; if (w < 0) w = 0; m = $8 - w; if (m < 0) m = 0
      printf "shard %s s, exchange %s s (%.0f%%; slowest other rank busy %.3f s, leaving %.3f s = %.0f%% unexplained by imbalance)",
             $3, $8, 100 * $8 / ($3 + $8), b, m, 100 * m / ($3 + $8)}')
  mem=$(grep -oE 'rank [0-9]+: peak memory [0-9.]+ MiB over the run, tensor [0-9.]+ MiB' "$log" |
    sed -E 's/rank ([0-9]+): peak memory ([0-9.]+) MiB over the run, tensor ([0-9.]+) MiB/rank \1 \2 MiB (tensor \3)/' |
    paste -sd, -)
  echo "$share; $mem"
}

loss_grad() {  # N: loss+grad on N ranks (1: a plain process)
  local n=$1 log="$work/lg.log" l t extra="-"
  l=$(load)
  if [ "$n" = 1 ]; then
    /usr/bin/time -f "peak %M kB" "$build/mpi_loss_grad_bench" "$tensor" --iters "$iters" >"$log" 2>&1
    extra=$(grep -oE 'peak [0-9]+ kB' "$log" | awk '{printf "rank 0 %.0f MiB", $2 / 1024}')
  else
    mpiexec --oversubscribe ${MPIEXEC_ARGS:-} -n "$n" "$build/mpi_loss_grad_bench" "$tensor" --iters "$iters" >"$log" 2>&1
    extra=$(mpi_summary "$log")
  fi
  t=$(grep -oE '[0-9.]+ ms per loss\+grad' "$log" | cut -d' ' -f1)
  echo "loss_grad $n $t" >>"$times"
  printf "loss+grad %d rank(s) [load %s]: %s ms per call; %s\n" "$n" "$l" "$t" "$extra"
}

fit() {  # N: one fit on N ranks (1: a plain process)
  local n=$1 log="$work/fit.log" l t0 t1 f extra
  l=$(load)
  t0=$(date +%s.%N)
  if [ "$n" = 1 ]; then
    /usr/bin/time -f "peak %M kB" "$build/rabbit_fit" "$tensor" -t 0 -o "$work" >"$log" 2>&1
    extra=$(grep -oE 'peak [0-9]+ kB' "$log" | awk '{printf "-; rank 0 %.0f MiB", $2 / 1024}')
  else
    mpiexec --oversubscribe ${MPIEXEC_ARGS:-} -n "$n" "$build/rabbit_fit" "$tensor" -t 0 -o "$work" >"$log" 2>&1
    extra=$(mpi_summary "$log")
  fi
  t1=$(date +%s.%N)
  f=$(grep -oE 'converged .* s$' "$log" | sed -E 's/.*(nfev [0-9]+, nhvp [0-9]+, nhess [0-9]+), ([0-9.]+) s$/\2 s (\1)/')
  echo "fit $n ${f%% s*}" >>"$times"
  printf "fit %d rank(s) [load %s]: wall %.2f s, fit %s; %s\n" "$n" "$l" "$(echo "$t1 - $t0" | bc)" "$f" "$extra"
}

for ((r = 0; r < repeat; ++r)); do
  for n in 1 ${ranks//,/ }; do
    loss_grad "$n"
    fit "$n"
  done
done
# efficiency over the best run of each kind and rank count: T(1) / (N · T(N))
awk '{ k = $1 " " $2; if (!(k in best) || $3 < best[k]) best[k] = $3; kinds[$1]; ns[$2] }
  END { for (kind in kinds) for (n in ns) if (n > 1 && ((kind " " n) in best))
          printf "efficiency %s %d ranks: %.2f (best of runs: %g against %g on 1)\n", kind, n,
                 best[kind " 1"] / (n * best[kind " " n]), best[kind " " n], best[kind " 1"] }' "$times" | sort
