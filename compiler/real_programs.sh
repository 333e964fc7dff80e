#!/usr/bin/env bash
# Three C programs nobody here wrote (Debian's bc, gzip, lua5.4 sources), each built twice with
# its own build system -- CC=clang-16 and CC=compiler/bin/heaplayout-cc -- and run on the same
# inputs; the outputs must be byte-identical (docs/results.md, issue 27).
# Needs a deb-src entry for the configured mirror (apt-get source). Usage:
#   compiler/real_programs.sh WORKDIR      (HEAPLAYOUT_BUILD_DIR must point at a build with the plugin)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: real_programs.sh WORKDIR}
mkdir -p "$work" && cd "$work"
cc_pool="$here/bin/heaplayout-cc"
[ -d src ] || { mkdir src && (cd src && apt-get source -q --download-only bc gzip lua5.4 >/dev/null); }

build() { # build <variant> <compiler>: one tree per variant
  local v=$1 cc=$2 stats="$work/$1.stats.jsonl"
  rm -rf "$v" "$stats" && mkdir "$v" && cd "$v"
  tar xf ../src/bc_*.orig.tar.gz && tar xf ../src/gzip_*.orig.tar.xz && tar xf ../src/lua5.4_*.orig.tar.gz
  local ccv="$cc"
  [ "$v" = pool ] && ccv="$cc --stats-file=$stats"
  (cd bc-* && ./configure -q CC="$ccv" CFLAGS="-O2 -g" >/dev/null && make -s -C lib >/dev/null \
     && make -s -C bc >/dev/null && make -s -C dc >/dev/null)
  (cd gzip-* && ./configure -q CC="$ccv" CFLAGS="-O2 -g" >/dev/null && make -s >/dev/null)
  (cd lua-* && make -s -C src posix CC="$ccv" MYCFLAGS="-g" >/dev/null)
  cd ..
}

run_all() { # run_all <variant>: every program's output into <variant>.out
  local v=$1 d="$work/$1"
  {
    echo "== bc"; printf 'scale=800\n4*a(1)\ne(1)\nsqrt(2)\ndefine f(n){if(n<2)return 1;return n*f(n-1)}\nf(400)\n' | "$d"/bc-*/bc/bc -l
    echo "== dc"; echo '2 4000 ^ p 17 k 2 v p' | "$d"/bc-*/dc/dc
    echo "== gzip"; "$d"/gzip-*/gzip -9 -c "$work/input.txt" | sha256sum; "$d"/gzip-*/gzip -9 -c "$work/input.txt" | "$d"/gzip-*/gzip -dc | sha256sum
    echo "== lua"; "$d"/lua-*/src/lua "$work/script.lua"
  } > "$work/$v.out" 2>&1
}

python3 - "$work/input.txt" <<'EOF'
import random, sys
r = random.Random(27)
words = [''.join(r.choice('abcdefghij') for _ in range(r.randint(2, 9))) for _ in range(5000)]
with open(sys.argv[1], 'w') as f:
    for _ in range(400000):
        f.write(r.choice(words) + (' ' if r.random() < 0.9 else '\n'))
EOF
cat > "$work/script.lua" <<'EOF'
-- tables, strings, closures and the collector: what lua's heap holds
local t = {}
for i = 1, 200000 do t[i] = {id = i, name = "n" .. (i * 7919 % 100003), next = t[i - 1]} end
local s, words = 0, {}
for i = 1, #t, 3 do s = s + #t[i].name; words[#words + 1] = t[i].name end
table.sort(words)
local counts = {}
for _, w in ipairs(words) do counts[w:sub(1, 3)] = (counts[w:sub(1, 3)] or 0) + 1 end
local keys = {}
for k in pairs(counts) do keys[#keys + 1] = k end
table.sort(keys)
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print(s, #words, words[1], words[#words], #keys, counts[keys[1]], fib(25))
collectgarbage()
print(string.format("%.3f", collectgarbage("count") > 0 and 1 or 0))
EOF

build plain clang-16
build pool "$cc_pool"
run_all plain
run_all pool
cmp "$work/plain.out" "$work/pool.out" && echo "identical: $(grep -c '^==' "$work/pool.out") programs"
