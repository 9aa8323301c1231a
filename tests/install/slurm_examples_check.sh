#!/usr/bin/env bash
# ctest "slurm_examples" (label install): the slurm scripts in examples/slurm parse (`bash -n`) and
# every option they pass to rabbit_fit is one that `rabbit_fit --help` lists.
# Arguments: RABBIT_FIT SLURM_EXAMPLES_DIR
set -euo pipefail
rabbit_fit="$1" dir="$2"
help="$("$rabbit_fit" --help)"
shopt -s nullglob
scripts=("$dir"/*.sbatch)
((${#scripts[@]})) || { echo "slurm_examples_check: no *.sbatch in $dir" >&2; exit 1; }
status=0 checked=0
for f in "${scripts[@]}"; do
  bash -n "$f" || { echo "slurm_examples_check: $f does not parse (bash -n)" >&2; status=1; }
  # The rabbit_fit command lines, continuation lines joined, comments left out.
  commands="$(sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' "$f" | grep -E '^[^#]*(^|[[:space:]])rabbit_fit[[:space:]]' || true)"
  [ -n "$commands" ] || { echo "slurm_examples_check: $f runs no rabbit_fit" >&2; status=1; }
  for opt in $(grep -oE '(^|[[:space:](])--?[A-Za-z][A-Za-z0-9]*' <<<"$commands" | sed 's/^[[:space:](]*//' | sort -u); do
    checked=$((checked + 1))
    if ! grep -qE "(^|[[:space:],])${opt}([[:space:],=]|$)" <<<"$help"; then
      echo "slurm_examples_check: $f passes $opt, which rabbit_fit --help does not list" >&2
      status=1
    fi
  done
done
((status)) || echo "slurm_examples_check: ${#scripts[@]} scripts parse, $checked rabbit_fit options exist"
exit "$status"
