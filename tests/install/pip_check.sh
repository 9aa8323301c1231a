#!/usr/bin/env bash
# ctest "pip_install" (label pip): pip builds the checkout's wheel (what `pip install .` does first)
# and installs it into a fresh virtual environment, without network (docs/install.md "pip"), then:
#  1. the installed programs find their libraries inside the package (RUNPATH $ORIGIN only; ldd
#     resolves librabbit_* and libblosc2 there), and every command on the venv's PATH answers --help;
#  2. the example fit through the command rabbit_fit on PATH, and through rabbit_cpp.fit/load (rabbit's
#     layout read with rabbit's io_tools, the plain layout with h5py), give the POI of the build
#     tree's rabbit_fit (rabbit_compare, and the value read back);
#  3. rabbit_cpp.fit raises RabbitError with rabbit_fit's one-line message on a bad option.
# scikit-build-core comes from WHEELS_DIR (.deps/wheels) and the readers (h5py, hist, wums,
# rabbit-fit) from PYENV (.deps/pyenv), both made by scripts/setup. The package is built in
# PIP_BUILD_DIR, kept between runs: the first run compiles the libraries and programs once more (no
# tests, no CUDA, a unity build: the longest test of CI, docs/install.md "pip"), later runs only what
# changed. The build runs in a virtual environment kept there
# too (PIP_BUILD_DIR/python-backend): scikit-build-core clears its build folder when it is run from
# another path, so building from each run's fresh environment would recompile everything.
# Arguments: SOURCE_DIR PIP_BUILD_DIR BUILD_TREE_RABBIT_FIT WHEELS_DIR PYENV
set -euo pipefail
source="$1" pip_build="$2" reference_fit="$3" wheels="$4" pyenv="$5"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH RABBIT_CUDA_PLUGIN PYTHONPATH
fail() { echo "pip_check: $*" >&2; exit 1; }
ls "$wheels"/scikit_build_core-*.whl >/dev/null 2>&1 || fail "no scikit-build-core wheel in $wheels: run scripts/setup"
[ -x "$pyenv/bin/python" ] || fail "no $pyenv: run scripts/setup"

backend="$pip_build/python-backend"
if ! "$backend/bin/python" -c "import scikit_build_core" 2>/dev/null; then
  python3 -m venv --clear "$backend"
  "$backend/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$wheels" \
    scikit-build-core >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "could not install scikit-build-core from $wheels"; }
fi
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL="${RABBIT_JOBS:-$(nproc)}" "$backend/bin/python" -m pip wheel --disable-pip-version-check \
  --no-index --no-build-isolation --no-deps -C build-dir="$pip_build" -C cmake.define.RABBIT_CUDA=OFF \
  -C cmake.define.CMAKE_UNITY_BUILD=ON \
  -w "$tmp/dist" "$source" >"$tmp/pip.log" 2>&1 || { tail -40 "$tmp/pip.log"; fail "pip wheel $source failed"; }
echo "pip_check: pip wheel took $((SECONDS - start)) s"
venv="$tmp/venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps "$tmp"/dist/rabbit_cpp-*.whl \
  >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install of the wheel into a fresh venv failed"; }
site="$("$venv/bin/python" -c 'import rabbit_cpp, os; print(os.path.dirname(rabbit_cpp.__file__))')"
[[ "$site" == "$venv"/* ]] || fail "rabbit_cpp imported from $site, not from the venv"

# 1. Libraries found inside the package; every command on PATH.
for f in "$site"/bin/* "$site"/lib/librabbit_*.so; do
  runpath="$(readelf -d "$f" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')"
  IFS=: read -ra entries <<<"$runpath"
  for e in "${entries[@]}"; do
    [[ "$e" == '$ORIGIN'* ]] || fail "$f has RUNPATH entry '$e' outside the package"
  done
done
ldd_out="$(ldd "$site/bin/rabbit_fit")"
if grep -q "not found" <<<"$ldd_out"; then fail "ldd $site/bin/rabbit_fit: $(grep 'not found' <<<"$ldd_out" | head -1)"; fi
for lib in librabbit_core librabbit_fit libblosc2; do
  resolved="$(sed -n "s/^[[:space:]]*$lib[^ ]* => \([^ ]*\) .*/\1/p" <<<"$ldd_out")"
  [[ -n "$resolved" && "$(realpath "$resolved")" == "$(realpath "$site")/lib/"* ]] ||
    fail "$lib resolves to '$resolved', not inside $site/lib"
done
export PATH="$venv/bin:$PATH"
for cmd in rabbit_fit rabbit_compare rabbit_inspect rabbit_limit rabbit_make_tensor rabbit_print_impacts \
  rabbit_print_pulls_and_constraints; do
  [ "$(command -v "$cmd")" == "$venv/bin/$cmd" ] || fail "$cmd on PATH is $(command -v "$cmd"), not the venv's"
  "$cmd" --help >/dev/null 2>&1 || fail "$cmd --help failed"
done

# 2. The example through the command on PATH, against the build tree's rabbit_fit.
example="$source/examples/example_tensor.hdf5"
rabbit_fit "$example" -o "$tmp/cli" -t 0 >"$tmp/cli.log" 2>&1 || { cat "$tmp/cli.log"; fail "rabbit_fit (venv) failed"; }
"$reference_fit" "$example" -o "$tmp/ref" -t 0 >"$tmp/ref.log" 2>&1 || { cat "$tmp/ref.log"; fail "$reference_fit failed"; }
rabbit_compare "$tmp/ref/fitresults.hdf5" "$tmp/cli/fitresults.hdf5" >"$tmp/compare.log" 2>&1 ||
  { cat "$tmp/compare.log"; fail "the venv's rabbit_fit differs from the build tree's"; }

# 2-3. rabbit_cpp.fit/load, with the readers of .deps/pyenv (same Python as the venv).
readers="$("$pyenv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
cd "$tmp"
PYTHONPATH="$readers" "$venv/bin/python" - "$example" "$tmp/ref/fitresults.hdf5" <<'EOF' || fail "rabbit_cpp checks failed"
import sys
import rabbit_cpp

example, reference = sys.argv[1:]
ref = rabbit_cpp.load(reference)["parms"].get()[{"parms": "sig"}]
for fmt in ("rabbit", "plain"):
    path = rabbit_cpp.fit(example, "-t", "0", "--outputFormat", fmt, output=f"py_{fmt}")
    sig = rabbit_cpp.load(path)["parms"].get()[{"parms": "sig"}]
    if abs(sig.value - ref.value) > 1e-9 * abs(ref.value) or abs(sig.variance - ref.variance) > 1e-9 * ref.variance:
        sys.exit(f"pip_check: sig = {sig} from the {fmt} layout, the build tree's rabbit_fit gives {ref}")
    print(f"pip_check: rabbit_cpp.fit/load ({fmt} layout): sig = {sig.value:.6f} +- {sig.variance ** 0.5:.6f}")
try:
    rabbit_cpp.fit(example, "--noSuchOption")
    sys.exit("pip_check: rabbit_cpp.fit accepted --noSuchOption")
except rabbit_cpp.RabbitError as e:
    message = str(e)
    if not message.startswith("rabbit_fit: error:") or "\n" in message or "noSuchOption" not in message:
        sys.exit(f"pip_check: RabbitError is not rabbit_fit's one-line error: {message!r}")
EOF
echo "pip_check: installed in a fresh venv; rabbit_fit on PATH and rabbit_cpp.fit/load agree with the build tree"
