#!/usr/bin/env bash
# Instructions per malloc/free pair (callgrind, exact), for each allocator alone and our
# runtime's off, callsite and a plan on top of glibc and mimalloc: the total of a run of 2N
# pairs minus that of a run of N pairs, divided by N, so that start-up, warm-up and exit
# cancel out. The benchmark's loop costs 14 instructions per pair in every row (12 in main,
# 2 in its site_alloc). Usage: benchmarks/count_pair_instructions.sh [N]
# The build directory is HEAPLAYOUT_BUILD_DIR when set (as for the Python tools), else build/.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-200000}
build=$(realpath "${HEAPLAYOUT_BUILD_DIR:-build}")
exe=$build/benchmarks/malloc_pair
lib=$build/runtime/libheaplayout.so
d=/usr/lib/x86_64-linux-gnu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the plan: one group of the benchmark's call sites (return addresses from its disassembly)
python3 - "$exe" > "$tmp/pair.plan" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, ".")
from heaplayout import elf
b = Path(sys.argv[1]).resolve()
print("heaplayout-plan 1\nstrategy halo\nchunk_size 1048576\nmax_object_size 4096")
print(f"module 0 {elf.build_id(b)} {b}\nskip libc.so.6\ngroup 1 1 1")
for ra in elf.call_return_addresses(b, "main", "site_alloc"):
    print(f"select 1 0:{ra:x}")
print("end")
EOF
total() { # pairs preload policy
  env LD_PRELOAD="$2" HEAPLAYOUT_POLICY="$3" HEAPLAYOUT_PLAN="$tmp/pair.plan" HEAPLAYOUT_MIN_OBJECTS=0 \
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$exe" --pairs "$1" --size 64 >/dev/null 2>"$tmp/cg.err"
  grep -E "^(summary|totals):" "$tmp/cg.out" | head -1 | awk '{print $2}'
}
run() { # name preload policy
  local one two
  one=$(total "$pairs" "$2" "$3")
  two=$(total $((2 * pairs)) "$2" "$3")
  printf '| %s | %.1f |\n' "$1" "$(echo "($two - $one) / $pairs" | bc -l)"
}
echo "command: benchmarks/count_pair_instructions.sh $pairs"
echo
echo "| configuration | instructions per malloc/free pair ((2N - N pairs) / N) |"
echo "|---|---|"
run glibc "" off
run jemalloc "$d/libjemalloc.so.2" off
run mimalloc "$d/libmimalloc.so.2" off
run tcmalloc "$d/libtcmalloc_minimal.so.4" off
run "ours off / glibc" "$lib" off
run "ours callsite (pooled) / glibc" "$lib" callsite
run "ours plan (pooled) / glibc" "$lib" plan
run "ours off / mimalloc" "$lib:$d/libmimalloc.so.2" off
run "ours callsite (pooled) / mimalloc" "$lib:$d/libmimalloc.so.2" callsite
run "ours plan (pooled) / mimalloc" "$lib:$d/libmimalloc.so.2" plan
