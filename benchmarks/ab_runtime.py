#!/usr/bin/env python3
"""Two builds of the runtime on one program: interleaved wall time, or exact cachegrind counts.

For a change to the runtime itself (a layout of its metadata, a fast path): the same policy
and allocator underneath, the library of one build against another's, and the allocator
alone beside them. Times are interleaved round by round in rotating order and compared as
paired ratios (docs/bench.md); `--cachegrind` instead runs each configuration once under
cachegrind, whose instruction and miss counts are exact.

    python3 benchmarks/ab_runtime.py --before OLD.so --after NEW.so [--policy callsite]
        [--allocator glibc|jemalloc|mimalloc|tcmalloc|PATH] [--plan FILE] [--rounds 11]
        [--cachegrind] [--cwd DIR] [--stdin FILE] -- PROG [ARGS...]

Copy a library aside before rebuilding (`cp build/runtime/libheaplayout.so /tmp/old.so`):
both paths are read at every run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from heaplayout import allocators  # noqa: E402
from heaplayout.bench_stats import paired_ratios, spread  # noqa: E402

CACHEGRIND = ("valgrind", "--tool=cachegrind", "--cache-sim=yes", "--D1=32768,8,64", "--LL=4194304,16,64",
              "--cachegrind-out-file=/dev/null")


def config_env(lib: Path | None, args: argparse.Namespace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HEAPLAYOUT_")}
    under = allocators.allocator_library(args.allocator)
    preload = [str(p) for p in (lib, under) if p is not None]
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    if lib is not None:
        env["HEAPLAYOUT_POLICY"] = "plan" if args.plan else args.policy
        env["HEAPLAYOUT_PROGRAM"] = args.program[0]
        if args.plan:
            env["HEAPLAYOUT_PLAN"] = str(args.plan)
    return env


def run_once(argv: list[str], env: dict[str, str], args: argparse.Namespace) -> subprocess.CompletedProcess:
    with open(args.stdin or os.devnull, "rb") as inp:
        return subprocess.run(argv, env=env, cwd=args.cwd, stdin=inp, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)


def counts(stderr: str) -> dict[str, int]:
    out = {}
    for key, label in (("I", r"I\s+refs"), ("D1", r"D1\s+misses"), ("LL", r"LL misses")):
        m = re.search(label + r":\s+([\d,]+)", stderr)
        out[key] = int(m.group(1).replace(",", "")) if m else -1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the runtime library to compare against")
    ap.add_argument("--after", type=Path, required=True, help="the runtime library under test")
    ap.add_argument("--policy", default="callsite", choices=("off", "callsite", "dpa"))
    ap.add_argument("--plan", type=Path, help="a plan file (policy plan)")
    ap.add_argument("--allocator", default="glibc", help="the allocator underneath (a name or a library path)")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--cachegrind", action="store_true", help="one cachegrind run each instead of timing")
    ap.add_argument("--cwd", type=Path)
    ap.add_argument("--stdin", type=Path)
    ap.add_argument("program", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    if args.program[:1] == ["--"]:
        args.program = args.program[1:]
    if not args.program:
        ap.error("no program given (after --)")
    for lib in (args.before, args.after):
        if not lib.is_file():
            ap.error(f"{lib}: no such library")
    configs = {"alone": None, "before": args.before.resolve(), "after": args.after.resolve()}
    envs = {name: config_env(lib, args) for name, lib in configs.items()}

    if args.cachegrind:
        print("| configuration | instructions | D1 misses | LL misses |\n|---|---:|---:|---:|")
        for name, env in envs.items():
            r = run_once([*CACHEGRIND, *args.program], env, args)
            c = counts(r.stderr)
            print(f"| {name} | {c['I']:,} | {c['D1']:,} | {c['LL']:,} |", flush=True)
        return 0

    times: dict[str, dict[int, float]] = {name: {} for name in configs}
    names = list(configs)
    run_once(args.program, envs["alone"], args)  # warm the page cache
    for k in range(args.rounds):
        shift = k % len(names)
        for name in names[shift:] + names[:shift]:
            t0 = time.perf_counter()
            r = run_once(args.program, envs[name], args)
            times[name][k] = time.perf_counter() - t0
            if r.returncode != 0:
                print(f"{name}: exit status {r.returncode}: {r.stderr.strip()[-300:]}", file=sys.stderr)
                return 1
        print(f"round {k + 1}/{args.rounds}: " + ", ".join(f"{n} {times[n][k]:.3f}s" for n in names),
              file=sys.stderr, flush=True)
    print("| configuration | seconds, median [q1-q3] |\n|---|---|")
    for name in names:
        s = spread(list(times[name].values()))
        print(f"| {name} | {s.median:.3f} [{s.q1:.3f}-{s.q3:.3f}] |")
    for a, b in (("after", "before"), ("after", "alone"), ("before", "alone")):
        s = spread(paired_ratios(times[a], times[b]))
        print(f"{a} / {b}: {s.median:.3f} [{s.q1:.3f}-{s.q3:.3f}] over {s.n} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
