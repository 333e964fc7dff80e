"""Native CPU time of one program under libhlperturb's allocation order with each object at
offset 0, 16, 32 or 48 of its cache line, against glibc and jemalloc: interleaved rounds,
user+sys time of each run, median and range, ratio to glibc (docs/results.md section 21).

    python3 -m benchmarks.olden.line_offset [--rounds N] -- PROG ARGS
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

from heaplayout.allocators import UnknownAllocator, allocator_library
from heaplayout.simulate import perturb_env


def configs() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {"glibc": {}}
    for off in (0, 16, 32, 48):
        out[f"order, offset {off}"] = {**perturb_env("order"), "HLPERTURB_LINE_OFFSET": str(off)}
    try:  # a pool-like allocator for comparison, where installed
        out["jemalloc"] = {"LD_PRELOAD": str(allocator_library("jemalloc"))}
    except UnknownAllocator:
        pass
    return out


def cpu_seconds(argv: list[str], extra: dict[str, str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLPERTURB") and k != "LD_PRELOAD"}
    env.update(extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.olden.line_offset", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("give the program and its arguments after --")
    cfgs = configs()
    times: dict[str, list[float]] = {k: [] for k in cfgs}
    for r in range(a.rounds):
        for name, extra in cfgs.items():
            times[name].append(cpu_seconds(cmd, extra))
        print(f"round {r + 1}/{a.rounds}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()),
              file=sys.stderr, flush=True)
    base = statistics.median(times["glibc"])
    print("| layout | CPU s, median (min–max) | / glibc |\n|---|---|---|")
    for name, v in times.items():
        m = statistics.median(v)
        print(f"| {name} | {m:.2f} ({min(v):.2f}–{max(v):.2f}) | {m / base:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
