#!/usr/bin/env bash
# Install what is missing, then build everything. Idempotent: a second run only rebuilds.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
have() { dpkg -s "$1" >/dev/null 2>&1; }
# sqlite3, lua5.4, jq: real programs the tests run under the runtime (test_real_programs.py, test_real_corpus.py)
# clang-16, libclang-rt-16-dev: the libFuzzer harnesses in fuzz/ (test_fuzz.py, benchmarks/fuzz_plan.py)
# chromium: headless rendering of `heaplayout report`'s page (test_report.py)
# llvm-16-dev: headers and CMake files for the pool allocation pass plugin in compiler/ (test_cc_plugin.py)
for pkg in build-essential cmake ninja-build valgrind libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 sqlite3 lua5.4 jq xz-utils python3-pip \
           clang-16 libclang-rt-16-dev chromium llvm-16-dev; do
  have "$pkg" || need_pkgs+=("$pkg")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "[setup] installing: ${need_pkgs[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# the `heaplayout` command must run this checkout's package: asked from outside the checkout
# (inside it, `import heaplayout` always finds the local folder), so that another checkout's
# editable install is replaced rather than silently used by the demo
installed=$(cd / && python3 -c "import heaplayout, pytest, hypothesis; print(heaplayout.__file__)" 2>/dev/null || true)
if [ "$installed" != "$PWD/heaplayout/__init__.py" ] || ! command -v heaplayout >/dev/null 2>&1; then
  echo "[setup] installing the heaplayout Python package (editable)"
  python3 -m pip install -q -e ".[test]"
fi

scripts/build.sh
