#!/usr/bin/env bash
# Build the libFuzzer harnesses with clang-16 (ASan + UBSan) into build/fuzz/ (or $1).
# clang-16 and libclang-rt-16-dev come from scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/fuzz}"
cc="${HL_FUZZ_CC:-clang-16}"
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "fuzz/build.sh: $cc not found; install it with scripts/setup.sh (apt-get install clang-16 libclang-rt-16-dev)" >&2
  exit 2
fi
mkdir -p "$out"
flags=(-g -O1 -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iruntime/src -Wall -Wextra)
"$cc" "${flags[@]}" -o "$out/plan_parse_fuzz" fuzz/plan_parse_fuzz.c runtime/src/plan_parse.c
"$cc" "${flags[@]}" -D_GNU_SOURCE -o "$out/options_fuzz" fuzz/options_fuzz.c runtime/src/options.c
echo "$out/plan_parse_fuzz $out/options_fuzz"
