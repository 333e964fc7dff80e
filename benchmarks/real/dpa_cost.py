"""What the dpa policy costs on the corpus where nothing is gained (issue 23), per program:
its slow-path visits (a native run with the runtime's statistics) and, with
--instructions, the instructions of the allocator alone and of dpa on it (cachegrind
without cache simulation: deterministic, no statistics counted on the fast path).

    python3 -m benchmarks.real.dpa_cost --input measure [--runtime LIB.so,...] [--programs P,...]
    python3 -m benchmarks.real.dpa_cost --input train --instructions --programs cppcheck,yosys [--repeat 3]

Inputs must exist (build/real/inputs: `python3 -m benchmarks.real.run` writes them). Each
program runs on the allocator docs/results.md section 13 measured it with.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.real import corpus  # noqa: E402
from heaplayout import allocators, paths  # noqa: E402

# the allocator underneath per program (docs/results.md section 13's instruction table)
ALLOCATOR = {"sqlite3": "jemalloc", "lua5.4": "tcmalloc", "python3": "jemalloc", "perl-threads": "tcmalloc",
             "gcc-cc1": "tcmalloc", "cppcheck": "mimalloc", "graphviz-dot": "mimalloc", "xsltproc": "tcmalloc",
             "z3": "tcmalloc", "clasp": "glibc", "glpsol": "mimalloc", "jq": "mimalloc", "gawk": "mimalloc",
             "yosys": "jemalloc", "swipl": "jemalloc", "tidy": "tcmalloc"}


def _envs(p: corpus.Program, runtime: str) -> tuple[dict[str, str], dict[str, str]]:
    name = ALLOCATOR.get(p.name, "glibc")
    so = None if name == "glibc" else str(allocators.allocator_library(name))
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HEAPLAYOUT_")}
    base.update(p.env)
    alone = dict(base, **({"LD_PRELOAD": so} if so else {}))
    dpa = dict(base, LD_PRELOAD=runtime + (f":{so}" if so else ""), HEAPLAYOUT_POLICY="dpa", HEAPLAYOUT_PROGRAM=p.exe)
    return alone, dpa


def _run(argv: list[str], env: dict[str, str], stdin: Path | None, cwd: Path) -> None:
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as f:
        subprocess.run(argv, env=env, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd,
                       timeout=1800)


def _instructions(argv: list[str], env: dict[str, str], stdin: Path | None, cwd: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        _run(["valgrind", "-q", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}", *argv],
             env, stdin, cwd)
        m = re.search(r"^summary: (\d+)", out.read_text(), re.M)
        if not m:
            raise RuntimeError(f"no cachegrind summary for {argv[0]}")
        return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", choices=corpus.INPUTS, default="measure")
    ap.add_argument("--runtime", default=str(paths.runtime_library()),
                    help="comma-separated runtime libraries to compare (default: the build's)")
    ap.add_argument("--programs", help="comma-separated corpus programs (default: all)")
    ap.add_argument("--instructions", action="store_true", help="also count instructions under cachegrind")
    ap.add_argument("--repeat", type=int, default=1,
                    help="count each configuration N times, alternating, and take the medians (lua5.4 reseeds "
                         "its string hashing per run: its counts move by about 0.5%%)")
    ap.add_argument("--root", default=str(REPO / "build" / "real" / "inputs"))
    args = ap.parse_args()
    programs = corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None)
    for p in programs:
        d = Path(args.root) / p.name / args.input
        if not d.is_dir():
            print(f"{p.name}: no input in {d}", file=sys.stderr)
            continue
        argv, stdin = p.argv(d), p.stdin_path(d)
        for lib in (os.path.abspath(x) for x in args.runtime.split(",")):
            alone, dpa = _envs(p, lib)
            with tempfile.TemporaryDirectory() as tmp:
                st = Path(tmp) / "stats.json"
                _run(argv, dict(dpa, HEAPLAYOUT_STATS_JSON=str(st)), stdin, d)
                s = json.loads(st.read_text()) if st.exists() else {}
            allocs = sum(q["objects"] for q in s.get("pools", [])) + s.get("forwarded", {}).get("objects", 0)
            d_ = s.get("dpa", {})
            line = (f"{p.name:13s} {Path(lib).name:22s} {ALLOCATOR.get(p.name, 'glibc'):9s} allocations {allocs:>10} "
                    f"groups {d_.get('groups')} slow-path visits {d_.get('slow_allocations')}")
            if args.instructions:
                runs = [(_instructions(argv, alone, stdin, d), _instructions(argv, dpa, stdin, d))
                        for _ in range(max(1, args.repeat))]
                a = statistics.median(r[0] for r in runs)
                b = statistics.median(r[1] for r in runs)
                line += f" instructions alone {a / 1e6:.1f}M dpa {b / 1e6:.1f}M ratio {b / a:.4f}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
