#!/bin/bash
# alternate base/new likelihood_bench runs; print loss+grad GB/s and the interleaved median ratio
for r in $(seq 1 ${1:-4}); do
  for v in base main; do
    out=$(taskset -c 0,1 /work/$v/build/likelihood_bench 10000 10 1000 2 2 2>&1)
    lg=$(echo "$out" | grep "^loss+grad:" | awk '{print $4}')
    hvp=$(echo "$out" | grep "^loss+grad+HVP" | awk '{print $5}')
    ratio=$(echo "$out" | grep "^ratio" | awk '{print $4}')
    inter=$(echo "$out" | grep "^interleaved" | sed 's/.*median\/median //')
    echo "$r $v lg=$lg GB/s hvp=$hvp ratio=$ratio interleaved_med=$inter"
  done
done
