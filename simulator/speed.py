#!/usr/bin/env python3
"""Slowdown of hlsim over native on the workload suite: native wall time (best of 3) against
`heaplayout simulate` in four set-ups: the model only (the default), with objects and call
sites tracked (--contexts), and with the first-touch oracle (--oracle first-touch), run in its
helper process (the default) and in the tool's own process (--oracle-in-process). The first
column is valgrind with no tool (--tool=none): the floor any Valgrind tool starts from, which
on inputs of a few tens of milliseconds is mostly valgrind's start-up. Prints a markdown table.

    python3 simulator/speed.py [--input small] [--setups none,model,contexts,oracle,inproc,hw] [NAME ...]

`hw` is the model with issue 26's native-time parts (`--hw yes`); it is not in the default set.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heaplayout.simulate import SimOptions, run_simulation  # noqa: E402
from heaplayout.workloads import load_suite  # noqa: E402


CPU = False  # --cpu: user + sys time of the children instead of wall time


def wall(fn, reps: int) -> float:
    """Best of `reps` runs: wall seconds, or with --cpu the children's user + sys seconds
    (on a loaded machine CPU time is the steadier measure of a slowdown)."""
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        fn()
        if CPU:
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            best = min(best, after.ru_utime + after.ru_stime - ru.ru_utime - ru.ru_stime)
        else:
            best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--input", default="small")
    ap.add_argument("--reps", type=int, default=1, help="simulated runs per set-up (best is kept)")
    ap.add_argument("--cpu", action="store_true", help="user + sys CPU time instead of wall time")
    ap.add_argument("--setups", default="none,model,contexts,oracle,inproc",
                    help="columns: none (valgrind, no tool), model, contexts, oracle, inproc, hw")
    args = ap.parse_args()
    setups = args.setups.split(",")
    global CPU
    CPU = args.cpu
    suite = [w for w in load_suite() if not args.names or w.name in args.names]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    names = {"none": "valgrind, no tool", "model": "model only (default)",
             "contexts": "+ objects, call sites (--contexts)", "oracle": "+ oracle (helper)",
             "inproc": "+ oracle (in-process)", "hw": "model --hw yes"}
    options = {"model": SimOptions(contexts=False), "contexts": SimOptions(contexts=True),
               "oracle": SimOptions(oracle=True), "inproc": SimOptions(oracle=True, oracle_helper=False),
               "hw": SimOptions(contexts=False, model={"hw": "yes"})}
    print("| workload | native s | " + " | ".join(names[k] for k in setups) + " |")
    print("|---|---:|" + "---:|" * len(setups))
    ratios: dict[str, list[float]] = {k: [] for k in setups}
    for w in suite:
        argv = w.argv(args.input)
        nat = wall(lambda: subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), 3)
        row = []
        for key in setups:
            if key == "none":
                t = wall(lambda: subprocess.run(["valgrind", "-q", "--tool=none", *argv], env=env,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), args.reps)
            else:
                opts = options[key]
                t = wall(lambda: run_simulation(argv, opts, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                         args.reps)
            ratios[key].append(t / nat)
            row.append(f"{t:.2f} s ({t / nat:.0f}x)")
        print(f"| {w.name} | {nat:.3f} | " + " | ".join(row) + " |", flush=True)
    for key in setups:
        r = sorted(ratios[key])
        if r:
            print(f"\n{names[key]}: median {r[len(r) // 2]:.0f}x, max {r[-1]:.0f}x", end="")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
