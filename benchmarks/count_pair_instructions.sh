#!/usr/bin/env bash
# Instructions per malloc/free pair (callgrind, exactly repeatable), for each allocator and
# our runtime on top of glibc and mimalloc. The loop itself costs ~10 instructions per pair
# in every configuration. Usage: benchmarks/count_pair_instructions.sh [pairs]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-1000000}
exe=build/benchmarks/malloc_pair
lib=$PWD/build/runtime/libheaplayout.so
d=/usr/lib/x86_64-linux-gnu
run() { # name, preload, policy
  local out; out=$(mktemp)
  env LD_PRELOAD="$2" HEAPLAYOUT_POLICY="$3" HEAPLAYOUT_MIN_OBJECTS=0 \
    valgrind --tool=callgrind --callgrind-out-file="$out" "$exe" --pairs "$pairs" --size 64 >/dev/null 2>"$out.err"
  local total; total=$(grep -E "^(summary|totals):" "$out" | head -1 | awk '{print $2}')
  printf '| %s | %.1f |\n' "$1" "$(echo "$total / $pairs" | bc -l)"
  rm -f "$out" "$out.err"
}
echo "command: benchmarks/count_pair_instructions.sh $pairs"
echo
echo "| configuration | instructions per malloc/free pair (whole program / pairs) |"
echo "|---|---|"
run glibc "" off
run jemalloc "$d/libjemalloc.so.2" off
run mimalloc "$d/libmimalloc.so.2" off
run tcmalloc "$d/libtcmalloc_minimal.so.4" off
run "ours off / glibc" "$lib" off
run "ours callsite (pooled) / glibc" "$lib" callsite
run "ours off / mimalloc" "$lib:$d/libmimalloc.so.2" off
run "ours callsite (pooled) / mimalloc" "$lib:$d/libmimalloc.so.2" callsite
