#!/usr/bin/env bash
# ctest "install_relocatable" (label install): `cmake --install` of the already-built tree into a
# temporary prefix, which is then MOVED; the moved copy must still work (docs/install.md):
#  1. every installed ELF file finds its libraries through $ORIGIN only (the CUDA plugin may also
#     name the CUDA toolkit's directory), and ldd resolves librabbit_* and libblosc2 inside the
#     moved prefix;
#  2. the installed rabbit_fit fits the example tensor to a result file;
#  3. a tiny project outside the checkout (tests/install/consumer) builds with find_package(rabbit),
#     links rabbit::io and reads the example tensor's sizes, which must match the installed
#     rabbit_inspect's summary.
# Arguments: BUILD_DIR SOURCE_DIR CXX_COMPILER [CUDA_TOOLKIT_LIBRARY_DIR]
set -euo pipefail
build="$1" source="$2" cxx="$3" cuda_libdir="${4:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH RABBIT_CUDA_PLUGIN
fail() { echo "install_check: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/first" >/dev/null
mv "$tmp/first" "$tmp/moved"
prefix="$tmp/moved"
[ -x "$prefix/bin/rabbit_fit" ] || fail "no bin/rabbit_fit in the installed prefix"
[ -f "$prefix/lib/cmake/rabbit/rabbitConfig.cmake" ] || fail "no lib/cmake/rabbit/rabbitConfig.cmake"

# 1. RUNPATHs and library resolution.
for f in "$prefix"/bin/* "$prefix"/lib/librabbit_*.so "$prefix"/lib/rabbit/*.so; do
  [ -f "$f" ] || continue
  runpath="$(readelf -d "$f" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')"
  IFS=: read -ra entries <<<"$runpath"
  for e in "${entries[@]}"; do
    [[ "$e" == '$ORIGIN'* ]] && continue
    [[ -n "$cuda_libdir" && "$f" == */lib/rabbit/* && "$e" == "$cuda_libdir" ]] && continue
    fail "$f has RUNPATH entry '$e' outside the prefix (only \$ORIGIN/... is relocatable)"
  done
done
ldd_out="$(ldd "$prefix/bin/rabbit_fit")"
if grep -q "not found" <<<"$ldd_out"; then fail "ldd $prefix/bin/rabbit_fit: $(grep 'not found' <<<"$ldd_out" | head -1)"; fi
for lib in librabbit_core librabbit_io librabbit_fit libblosc2; do
  resolved="$(sed -n "s/^[[:space:]]*$lib[^ ]* => \([^ ]*\) .*/\1/p" <<<"$ldd_out")"
  [ -n "$resolved" ] || fail "ldd $prefix/bin/rabbit_fit lists no $lib"
  [[ "$(realpath "$resolved")" == "$(realpath "$prefix")/lib/"* ]] ||
    fail "$lib resolves to $resolved, outside the moved prefix"
done

# 2. A fit with the installed rabbit_fit.
"$prefix/bin/rabbit_fit" "$source/examples/example_tensor.hdf5" -o "$tmp/out" -t 0 >"$tmp/fit.log" 2>&1 ||
  { cat "$tmp/fit.log"; fail "the installed rabbit_fit failed on examples/example_tensor.hdf5"; }
[ -s "$tmp/out/fitresults.hdf5" ] || fail "the installed rabbit_fit wrote no $tmp/out/fitresults.hdf5"

# 3. A consumer project against the moved prefix.
cmake -S "$source/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "find_package(rabbit) failed against the moved prefix"; }
cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "the consumer did not build against the moved prefix"; }
got="$("$tmp/consumer/tensor_sizes" "$source/examples/example_tensor.hdf5")"
want="$("$prefix/bin/rabbit_inspect" --noDiagnostics "$source/examples/example_tensor.hdf5" |
  sed -n 's/^bins: \([0-9]*\) observed.*; processes \([0-9]*\); nuisances \([0-9]*\) .*/bins \1 processes \2 systematics \3/p')"
[ -n "$want" ] || fail "could not read the sizes from rabbit_inspect's summary"
[ "$got" == "$want" ] || fail "consumer printed '$got', rabbit_inspect says '$want'"
echo "install_check: moved prefix works (fit, RUNPATH \$ORIGIN, find_package consumer: $got)"
