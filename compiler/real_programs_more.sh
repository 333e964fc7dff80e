#!/usr/bin/env bash
# Two more C programs nobody here wrote, from Debian's sources: zlib (its own build system,
# minigzip and the example test program) and sqlite's parser generator lemon (one source file
# compiled and linked in one command: a whole program, so global pools are allowed). Each is
# built with clang-16 and with compiler/bin/heaplayout-cc and run on the same inputs; the
# outputs must be byte-identical (docs/results.md, issue 27). Usage:
#   compiler/real_programs_more.sh WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: real_programs_more.sh WORKDIR}
mkdir -p "$work" && cd "$work"
cc_pool="$here/bin/heaplayout-cc"
[ -d src ] || { mkdir src && (cd src && apt-get source -q --download-only zlib sqlite3 >/dev/null); }

build() { # build <variant> <compiler>
  local v=$1 cc=$2 stats="$work/$1.stats.jsonl"
  rm -rf "$v" "$stats" && mkdir "$v" && cd "$v"
  tar xjf ../src/zlib_*.orig.tar.bz2
  tar xf ../src/sqlite3_*.orig.tar.xz --wildcards '*/tool/lemon.c' '*/tool/lempar.c' '*/src/parse.y'
  local ccv="$cc"
  [ "$v" = pool ] && ccv="$cc --stats-file=$stats"
  (cd zlib-* && CC="$ccv" CFLAGS="-O2 -g" ./configure --static >/dev/null && make -s minigzip example >/dev/null)
  (cd sqlite3-*/tool && $ccv -O2 -g lemon.c -o lemon)
  cd ..
}

run_all() { # run_all <variant>
  local d="$work/$1"
  {
    echo "== minigzip"; "$d"/zlib-*/minigzip -9 < "$work/input.txt" | sha256sum
    "$d"/zlib-*/minigzip -9 < "$work/input.txt" | "$d"/zlib-*/minigzip -d | sha256sum
    echo "== example"; (cd "$d"/zlib-* && ./example "$work/$1.example.gz")
    echo "== lemon"; (cd "$d"/sqlite3-*/tool && cp ../src/parse.y . && ./lemon -s parse.y && sha256sum parse.c parse.h)
  } > "$work/$1.out" 2>&1
}

python3 - "$work/input.txt" <<'EOF'
import random, sys
r = random.Random(27)
words = [''.join(r.choice('abcdefghij') for _ in range(r.randint(2, 9))) for _ in range(5000)]
with open(sys.argv[1], 'w') as f:
    for _ in range(400000):
        f.write(r.choice(words) + (' ' if r.random() < 0.9 else '\n'))
EOF

build plain clang-16
build pool "$cc_pool"
run_all plain
run_all pool
cmp "$work/plain.out" "$work/pool.out" && echo "identical: $(grep -c '^==' "$work/pool.out") programs"
