#!/usr/bin/env python3
"""Slowdown of hlsim over native on the workload suite: native wall time (best of 3) against
`heaplayout simulate` in four set-ups: the model only (the default), with objects and call
sites tracked (--contexts), and with the first-touch oracle (--oracle first-touch), run in its
helper process (the default) and in the tool's own process (--oracle-in-process). The first
column is valgrind with no tool (--tool=none): the floor any Valgrind tool starts from, which
on inputs of a few tens of milliseconds is mostly valgrind's start-up. Prints a markdown table.

    python3 simulator/speed.py [--input small] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heaplayout.simulate import SimOptions, run_simulation  # noqa: E402
from heaplayout.workloads import load_suite  # noqa: E402


def wall(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--input", default="small")
    ap.add_argument("--reps", type=int, default=1, help="simulated runs per set-up (best is kept)")
    args = ap.parse_args()
    suite = [w for w in load_suite() if not args.names or w.name in args.names]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    print("| workload | native s | valgrind, no tool | model only (default) | + objects, call sites (--contexts) "
          "| + oracle (helper) | + oracle (in-process) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ratios = {"n": [], "m": [], "d": [], "o": [], "i": []}
    for w in suite:
        argv = w.argv(args.input)
        nat = wall(lambda: subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), 3)
        t = wall(lambda: subprocess.run(["valgrind", "-q", "--tool=none", *argv], env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL), args.reps)
        ratios["n"].append(t / nat)
        row = [f"{t:.2f} s ({t / nat:.0f}x)"]
        for key, opts in (("m", SimOptions(contexts=False)), ("d", SimOptions(contexts=True)),
                          ("o", SimOptions(oracle=True)), ("i", SimOptions(oracle=True, oracle_helper=False))):
            t = wall(lambda: run_simulation(argv, opts, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                     args.reps)
            ratios[key].append(t / nat)
            row.append(f"{t:.2f} s ({t / nat:.0f}x)")
        print(f"| {w.name} | {nat:.3f} | " + " | ".join(row) + " |", flush=True)
    for key, name in (("n", "valgrind, no tool"), ("m", "model only"), ("d", "contexts"), ("o", "oracle (helper)"),
                      ("i", "oracle (in-process)")):
        r = sorted(ratios[key])
        if r:
            print(f"\n{name}: median {r[len(r) // 2]:.0f}x, max {r[-1]:.0f}x", end="")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
