#!/usr/bin/env bash
# Wall time of upstream rabbit_fit.py (Python/TensorFlow) vs our rabbit_fit on the same tensors,
# same options, same machine, both pinned to the same cores. Optional: needs a Python environment
# with upstream rabbit's dependencies (see tools/make_reference.py) and rabbit's source.
#
#   bench/compare_with_rabbit.sh [-b BUILD_DIR] [-p PYTHON] [-r RABBIT_SRC] [-n REPEAT] [-c CORES]
#                                [-w WORK_DIR] [--bins B --procs P --systs S]
#                                [--tensors LIST] [--opts 'OPTS;OPTS...'] [--contention]
#                                [--cpu-cap FACTOR]
#
# Tensors (--tensors, space-separated; default "example bench:BxPxS" with --bins/--procs/--systs,
# 2000x5x200): "example" is examples/example_tensor.hdf5, "bench:BxPxS" one written by
# BUILD_DIR/make_bench_tensor (symmetric, our writer), "rabbit:BxPxS" one written by upstream's own
# TensorWriter (bench/make_rabbit_tensor.py: asymmetric, 1 + P + S parameters) as analyses write
# them. Option sets (--opts, separated by ';'): default "-t 0 --unblind" and "-t 0 --unblind
# --doImpacts --globalImpacts". Runs alternate upstream, ours, upstream, ours … REPEAT times per
# (tensor, options); the minimum wall time is reported (the machine is shared; the minimum is the
# least disturbed run) with the CPU seconds (user + sys, all threads) and peak RSS of that run; on a
# loaded machine wall times measure the queue, and the CPU seconds are the comparable number.
# --cpu-cap FACTOR: ours runs first, then upstream under a CPU-time limit of FACTOR × our CPU
# seconds (prlimit --cpu): an upstream run stopped by the limit prints "> LIMIT" and a CPU ratio
# "> FACTOR", enough to show a ≥ FACTOR goal without waiting for fits that take upstream hours; a
# SIGKILL before the limit (the kernel's out-of-memory killer) is reported as such, with no ratio.
# --contention: a busy loop pinned to the last of the CORES runs during every run of both programs
# (a shared node). Prints one row per (tensor, options): wall seconds of upstream and ours and their
# ratio, CPU seconds and their ratio, both peak RSS, both reduced NLLs as a check. The output of the
# last run is in WORK_DIR/last.log.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build="$here/build"
python=/tmp/pyv/bin/python
rabbit=/tmp/wt
repeat=3
cores=2
work=$(mktemp -d /tmp/compare_with_rabbit.XXXXXX)
bins=2000 procs=5 systs=200
tensors=""
opt_sets="-t 0 --unblind;-t 0 --unblind --doImpacts --globalImpacts"
contention=0
cpu_cap=""

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
    --tensors) tensors=$2; shift 2 ;;
    --opts) opt_sets=$2; shift 2 ;;
    --contention) contention=1; shift ;;
    --cpu-cap) cpu_cap=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$tensors" ] || tensors="example bench:${bins}x${procs}x${systs}"

for f in "$build/rabbit_fit" "$rabbit/bin/rabbit_fit.py" "$python" /usr/bin/time; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 2; }
done
mkdir -p "$work"

# Pin both programs to the same cores and tell each runtime how many threads to use.
cpu_list="0-$((cores - 1))"
pin=(taskset -c "$cpu_list")
command -v taskset >/dev/null || pin=()
export OMP_NUM_THREADS=$cores TF_NUM_INTRAOP_THREADS=$cores TF_NUM_INTEROP_THREADS=1 TF_CPP_MIN_LOG_LEVEL=2

# the file of a tensor spec, written into $work the first time
tensor_file() {
  local spec=$1 kind b p s out
  case "$spec" in
    example) echo "$here/examples/example_tensor.hdf5"; return ;;
    bench:*x*x* | rabbit:*x*x*) kind=${spec%%:*}; IFS=x read -r b p s <<<"${spec#*:}" ;;
    *) echo "--tensors: unknown tensor $spec (example, bench:BxPxS, rabbit:BxPxS)" >&2; return 2 ;;
  esac
  out="$work/${kind}_${b}x${p}x${s}.hdf5"
  if [ ! -e "$out" ]; then
    if [ "$kind" = bench ]; then
      [ -e "$build/make_bench_tensor" ] || { echo "missing $build/make_bench_tensor" >&2; return 2; }
      "$build/make_bench_tensor" -o "$out" --bins "$b" --procs "$p" --systs "$s" >/dev/null
    else
      PYTHONPATH="$rabbit" "$python" "$here/bench/make_rabbit_tensor.py" -o "$out" --bins "$b" --procs "$p" \
        --systs "$s" >"$work/make_tensor.log" 2>&1 || { tail -5 "$work/make_tensor.log" >&2; return 2; }
    fi
  fi
  echo "$out"
}

busy_pid=""
stop_busy() {
  if [ -n "$busy_pid" ]; then kill "$busy_pid" 2>/dev/null || true; wait "$busy_pid" 2>/dev/null || true; fi
  busy_pid=""
}
trap stop_busy EXIT
start_busy() {  # with --contention: one busy loop on the last of the cores for the duration of a run
  [ "$contention" = 1 ] || return 0
  taskset -c "$((cores - 1))" sh -c 'while :; do :; done' &
  busy_pid=$!
}

# one run of "$@" on the pinned cores: prints "wall_s cpu_s peak_rss_MB"; its output goes to last.log.
# With cpu_limit set (seconds), the run is stopped there and prints "capped cpu_s peak_rss_MB".
cpu_limit=""
time_one() {
  local t0 t1 limit=()
  [ -z "$cpu_limit" ] || limit=(prlimit --cpu="$cpu_limit:$((cpu_limit + 10))")
  start_busy
  t0=$(date +%s.%N)
  if ! /usr/bin/time -f '%U %S %M' -o "$work/usage" "${limit[@]}" "${pin[@]}" "$@" >"$work/last.log" 2>&1; then
    stop_busy
    # SIGXCPU at the soft limit (SIGKILL at the hard one, 10 s later, if it was ignored)
    if [ -n "$cpu_limit" ] && grep -Eq "signal (24|9)$" "$work/usage"; then
      local user sys rss cpu
      read -r user sys rss < <(tail -1 "$work/usage")
      cpu=$(echo "$user + $sys" | bc -l)
      # a SIGKILL well before the limit is not the limit: the kernel's out-of-memory killer
      if [ "$(echo "$cpu >= 0.98 * $cpu_limit" | bc -l)" = 1 ]; then
        echo "capped $cpu $((rss / 1024))"
      else
        echo "killed $cpu $((rss / 1024))"
      fi
      return 0
    fi
    echo "FAILED: $*" >&2
    tail -20 "$work/last.log" >&2
    return 1
  fi
  t1=$(date +%s.%N)
  stop_busy
  local user sys rss
  read -r user sys rss < <(tail -1 "$work/usage")
  echo "$(echo "$t1 - $t0" | bc -l) $(echo "$user + $sys" | bc -l) $((rss / 1024))"
}

nll_of() {  # reduced NLL of the fit to data in a result file (plain HDF5 or rabbit's pickled layout)
  "$python" - "$1" <<'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    if isinstance(f.get("results/nllvalreduced"), h5py.Dataset):
        print(f"{float(f['results/nllvalreduced'][()]):.10f}")
    else:
        from wums import ioutils
        print(f"{float(ioutils.pickle_load_h5py(f['results'])['nllvalreduced']):.10f}")
EOF
}

if [ "$contention" = 1 ]; then echo "contention: a busy loop on CPU $((cores - 1)) during every run"; fi
printf '%-28s %-64s %9s %9s %6s %9s %9s %6s %9s %9s  %s\n' tensor options rabbit_s ours_s ratio \
  rabbit_cpu ours_cpu ratio rabbit_MB ours_MB "nll rabbit / ours"
IFS=';' read -r -a sets <<<"$opt_sets"
for spec in $tensors; do
  tensor=$(tensor_file "$spec")
  for opts in "${sets[@]}"; do
    best_up="" best_ours="" cpu_up="" cpu_ours="" rss_up="" rss_ours=""
    capped=0
    for _ in $(seq "$repeat"); do
      if [ -n "$cpu_cap" ]; then  # ours first: its CPU time sets upstream's limit
        # shellcheck disable=SC2086
        out=$(time_one "$build/rabbit_fit" "$tensor" $opts -o "$work/ours" --outname fit.hdf5)
        read -r t c m <<<"$out"
        if [ -z "$best_ours" ] || [ "$(echo "$t < $best_ours" | bc -l)" = 1 ]; then best_ours=$t cpu_ours=$c rss_ours=$m; fi
        cpu_limit=$(echo "($cpu_cap * $c + 0.999) / 1" | bc)
      fi
      # shellcheck disable=SC2086
      out=$(time_one env PYTHONPATH="$rabbit" "$python" "$rabbit/bin/rabbit_fit.py" "$tensor" $opts \
        -o "$work/up" --outname fit.hdf5)
      cpu_limit=""
      read -r t c m <<<"$out"
      if [ "$t" = capped ] || [ "$t" = killed ]; then
        capped=$t best_up=$t cpu_up=$c rss_up=$m
        break
      fi
      if [ -z "$best_up" ] || [ "$(echo "$t < $best_up" | bc -l)" = 1 ]; then best_up=$t cpu_up=$c rss_up=$m; fi
      [ -z "$cpu_cap" ] || continue
      # shellcheck disable=SC2086
      out=$(time_one "$build/rabbit_fit" "$tensor" $opts -o "$work/ours" --outname fit.hdf5)
      read -r t c m <<<"$out"
      if [ -z "$best_ours" ] || [ "$(echo "$t < $best_ours" | bc -l)" = 1 ]; then best_ours=$t cpu_ours=$c rss_ours=$m; fi
    done
    if [ "$capped" = capped ]; then
      printf '%-28s %-64s %9s %9.2f %6s %9s %9.2f %6s %9s %9s  stopped at the CPU limit / %s\n' "$(basename "$tensor")" \
        "$opts" "-" "$best_ours" "-" "> $(printf %.0f "$cpu_up")" "$cpu_ours" "> $cpu_cap" "$rss_up" "$rss_ours" \
        "$(nll_of "$work/ours/fit.hdf5")"
      continue
    fi
    if [ "$capped" = killed ]; then
      printf '%-28s %-64s %9s %9.2f %6s %9s %9.2f %6s %9s %9s  upstream killed (SIGKILL before the CPU limit: out of memory) / %s\n' \
        "$(basename "$tensor")" "$opts" "-" "$best_ours" "-" "$(printf %.0f "$cpu_up")" "$cpu_ours" "-" "$rss_up" \
        "$rss_ours" "$(nll_of "$work/ours/fit.hdf5")"
      continue
    fi
    printf '%-28s %-64s %9.2f %9.2f %6.1f %9.2f %9.2f %6.1f %9s %9s  %s / %s\n' "$(basename "$tensor")" "$opts" \
      "$best_up" "$best_ours" "$(echo "$best_up / $best_ours" | bc -l)" "$cpu_up" "$cpu_ours" \
      "$(echo "$cpu_up / $cpu_ours" | bc -l)" "$rss_up" "$rss_ours" \
      "$(nll_of "$work/up/fit.hdf5")" "$(nll_of "$work/ours/fit.hdf5")"
  done
done
