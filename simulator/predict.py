#!/usr/bin/env python3
"""Prediction agreement: does hlsim's time estimate order pairs of layouts the way measured
wall time does?

For each workload of the suite and each configuration — glibc, jemalloc, mimalloc, our
runtime with policy callsite, a HALO plan (profile + plan), and a random 4-group plan (the
HALO plan's rules with each rule sent to one of 4 groups at random, a proxy for "objects
spread over four arenas") — it takes the simulated time estimate (default model, one run)
and the native wall time (median of --runs interleaved runs), then counts, over all pairs
of configurations of a workload whose wall times differ by more than --min-diff, how often
the estimate orders the pair the same way (concordant pairs). Prints per-workload tables
and the overall agreement.

    python3 simulator/predict.py [--input small] [--wall-input ref] [--runs 5] [--configs ...] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heaplayout.plan_format import Plan, PlanGroup, SelectRule, read_plan, write_plan  # noqa: E402
from heaplayout.simulate import SimOptions, run_simulation  # noqa: E402
from heaplayout.workloads import load_suite  # noqa: E402

CONFIGS = ("glibc", "jemalloc", "mimalloc", "callsite", "halo", "random4")


def make_plans(argv: list[str], tmp: Path, seed: int) -> tuple[Path | None, Path | None]:
    """HALO plan from a profile of this run, and its random 4-group variant."""
    prof, plan = tmp / "p.prof", tmp / "halo.plan"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    py = [sys.executable, "-m", "heaplayout.cli"]
    r = subprocess.run(py + ["profile", "-o", str(prof), "--progress", "0", "--", *argv], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0 or not prof.exists():
        return None, None
    r = subprocess.run(py + ["plan", str(prof), "-o", str(plan)], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if r.returncode != 0 or not plan.exists():
        return None, None
    halo = read_plan(plan)
    rng = random.Random(seed)
    rand = Plan(strategy=halo.strategy, chunk_size=halo.chunk_size, max_object_size=halo.max_object_size,
                modules=list(halo.modules), skips=list(halo.skips),
                groups=[PlanGroup(i, 0, 0) for i in range(1, 5)],
                rules=[SelectRule(rng.randint(1, 4), rule.frames) for rule in halo.rules],
                comments=["random 4-group variant of a HALO plan (simulator/predict.py)"])
    rand_path = tmp / "random4.plan"
    write_plan(rand, rand_path)
    return plan, rand_path


def config_options(name: str, plans: dict[str, Path | None]) -> SimOptions | None:
    if name in ("glibc", "jemalloc", "mimalloc", "tcmalloc"):
        return SimOptions(policy="none", allocator=name)
    if name == "callsite":
        return SimOptions(policy="callsite")
    if name in ("halo", "random4"):
        return SimOptions(policy="plan", plan=str(plans[name])) if plans.get(name) else None
    raise ValueError(f"unknown configuration {name}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--input", default="small", help="input simulated (and timed, unless --wall-input)")
    ap.add_argument("--wall-input", default=None,
                    help="input timed natively (e.g. ref: the small inputs run for 10-100 ms, where start-up "
                    "dominates); plans are profiled on --input")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--min-diff", type=float, default=0.03, help="pairs closer than this in wall time are ties")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    configs = args.configs.split(",")
    suite = [w for w in load_suite() if not args.names or w.name in args.names]
    agree = total = 0
    for w in suite:
        argv = w.argv(args.input)
        with tempfile.TemporaryDirectory(prefix="hlpredict.") as tmpd:
            tmp = Path(tmpd)
            plans: dict[str, Path | None] = {}
            if "halo" in configs or "random4" in configs:
                plans["halo"], plans["random4"] = make_plans(argv, tmp, args.seed)
            opts = {c: config_options(c, plans) for c in configs}
            opts = {c: o for c, o in opts.items() if o is not None}
            est = {c: run_simulation(argv, replace(o, contexts=False), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)["cycles"] for c, o in opts.items()}
            walls: dict[str, list[float]] = {c: [] for c in opts}
            base = dict(os.environ)
            base.pop("LD_PRELOAD", None)
            wall_argv = w.argv(args.wall_input) if args.wall_input else argv
            for _ in range(args.runs):  # interleaved
                for c, o in opts.items():
                    env = dict(base)
                    env.update(o.client_env())
                    t = time.perf_counter()
                    subprocess.run(wall_argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    walls[c].append(time.perf_counter() - t)
        wall = {c: statistics.median(v) for c, v in walls.items()}
        print(f"\n### {w.name}\n\n| config | wall s (median) | estimate (cycles) |\n|---|---:|---:|")
        for c in opts:
            print(f"| {c} | {wall[c]:.4f} | {est[c]:,} |")
        names = list(opts)
        wa = wt = 0
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                a, b = names[i], names[j]
                if abs(wall[a] - wall[b]) / max(wall[a], wall[b]) < args.min_diff:
                    continue
                wt += 1
                wa += (wall[a] < wall[b]) == (est[a] < est[b])
        print(f"\n{wa}/{wt} pairs ordered as wall time")
        agree += wa
        total += wt
        sys.stdout.flush()
    print(f"\n**overall: {agree}/{total} pairs ({100 * agree / max(1, total):.0f}%) ordered as wall time**")
    return 0


if __name__ == "__main__":
    sys.exit(main())
