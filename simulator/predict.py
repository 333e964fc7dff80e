#!/usr/bin/env python3
"""Prediction agreement: does hlsim's time estimate order pairs of layouts the way measured
wall time does?

For each workload of the suite and each configuration — glibc, jemalloc, mimalloc, our
runtime with policy callsite, a HALO plan (profile + plan), and a random 4-group plan (the
HALO plan's rules with each rule sent to one of 4 groups at random, a proxy for "objects
spread over four arenas") — it takes the simulated time estimate (default model, one run)
and the native wall time (median of --runs interleaved runs), then counts, over all pairs
of configurations of a workload whose wall times differ by more than --min-diff, how often
the estimate orders the pair the same way (concordant pairs). Prints per-workload tables,
the pairs it gets wrong, and the overall agreement for several instruction costs (the
estimate is data-access cycles + instructions x cost, so it is recomputed, not re-run).

    python3 simulator/predict.py [--input small] [--runs 7] [--json raw.json] [NAME ...]
    python3 simulator/predict.py --from-json raw.json --instr-costs 25,0,50
"""

from __future__ import annotations

import argparse
import json
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


def estimate(r: dict, instr_cost: int) -> float:
    """The tool's time estimate recomputed for another instruction cost (it is linear)."""
    return r["cycles"] + r["instructions"] * instr_cost / 100


def agreement(rows: dict[str, dict], instr_cost: int, min_diff: float) -> tuple[int, int, list[str]]:
    """Concordant pairs, counted pairs, and the discordant ones (as text) of one workload."""
    names = list(rows)
    ok = total = 0
    wrong = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            a, b = names[i], names[j]
            wa, wb = rows[a]["wall"], rows[b]["wall"]
            if abs(wa - wb) / max(wa, wb) <= min_diff:
                continue
            total += 1
            ea, eb = estimate(rows[a], instr_cost), estimate(rows[b], instr_cost)
            if (wa < wb) == (ea < eb):
                ok += 1
            else:
                fast, slow = (a, b) if wa < wb else (b, a)
                wrong.append(f"{fast} < {slow} by wall ({min(wa, wb) / max(wa, wb):.2f}x), estimate "
                             f"{estimate(rows[fast], instr_cost) / estimate(rows[slow], instr_cost):.2f}x")
    return ok, total, wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--input", default="small", help="input simulated, profiled for the plans, and timed")
    ap.add_argument("--wall-input", default=None, help="time another input natively instead (e.g. ref)")
    ap.add_argument("--runs", type=int, default=7, help="interleaved native runs per configuration (default 7)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--min-diff", type=float, default=0.05,
                    help="pairs whose wall times differ by no more than this are ties (default 0.05)")
    ap.add_argument("--instr-costs", default="0,25,50,100",
                    help="instruction costs (1/100 cycle) to report the agreement for; the first of the tool's "
                    "estimate is 25 by default")
    ap.add_argument("--json", help="write the raw measurements here (to recompute without re-running)")
    ap.add_argument("--from-json", help="recompute the report from an earlier --json file; runs nothing")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    costs = [int(c) for c in args.instr_costs.split(",")]
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
    else:
        data = collect(args)
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    report(data, costs, args.min_diff)
    return 0


def collect(args: argparse.Namespace) -> dict:
    configs = args.configs.split(",")
    suite = [w for w in load_suite() if not args.names or w.name in args.names]
    data: dict = {"input": args.input, "wall_input": args.wall_input or args.input, "runs": args.runs,
                  "workloads": {}}
    for w in suite:
        argv = w.argv(args.input)
        print(f"{w.name}: simulating {len(configs)} configurations ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="hlpredict.") as tmpd:
            tmp = Path(tmpd)
            plans: dict[str, Path | None] = {}
            if "halo" in configs or "random4" in configs:
                plans["halo"], plans["random4"] = make_plans(argv, tmp, args.seed)
            opts = {c: config_options(c, plans) for c in configs}
            opts = {c: o for c, o in opts.items() if o is not None}
            rows: dict[str, dict] = {}
            for c, o in opts.items():
                r = run_simulation(argv, replace(o, contexts=False), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                rows[c] = {"cycles": r["cycles"], "instructions": r["instructions"],
                           "L1": r["levels"][0]["misses"], "LL": r["levels"][-1]["misses"],
                           "DTLB": r["tlb"][0]["misses"] if r["tlb"] else 0, "walls": []}
            print(f"{w.name}: timing {args.runs} interleaved runs ...", file=sys.stderr, flush=True)
            base = dict(os.environ)
            base.pop("LD_PRELOAD", None)
            wall_argv = w.argv(args.wall_input) if args.wall_input else argv
            for _ in range(args.runs):
                for c, o in opts.items():
                    env = dict(base)
                    env.update(o.client_env())
                    t = time.perf_counter()
                    subprocess.run(wall_argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    rows[c]["walls"].append(time.perf_counter() - t)
            for row in rows.values():
                row["wall"] = statistics.median(row["walls"])
        data["workloads"][w.name] = rows
    return data


def report(data: dict, costs: list[int], min_diff: float) -> None:
    print(f"simulated input: {data['input']}; timed input: {data['wall_input']}; wall = median of "
          f"{data['runs']} interleaved runs; ties: wall times within {100 * min_diff:.0f}%")
    totals = {c: [0, 0] for c in costs}
    main_cost = costs[0]
    for name, rows in data["workloads"].items():
        print(f"\n### {name}\n")
        print("| config | wall s (median) | spread | instructions | data-access cycles | estimate |")
        print("|---|---:|---:|---:|---:|---:|")
        for c, r in rows.items():
            spread = (max(r["walls"]) - min(r["walls"])) / r["wall"] if r["wall"] else 0
            print(f"| {c} | {r['wall']:.4f} | {100 * spread:.0f}% | {r['instructions']:,} | {r['cycles']:,} | "
                  f"{estimate(r, main_cost):,.0f} |")
        for cost in costs:
            ok, total, wrong = agreement(rows, cost, min_diff)
            totals[cost][0] += ok
            totals[cost][1] += total
            if cost == main_cost:
                print(f"\n{ok}/{total} pairs ordered as wall time (instruction cost {cost / 100:.2f})")
                for line in wrong:
                    print(f"- wrong: {line}")
    print()
    for cost in costs:
        ok, total = totals[cost]
        print(f"**instruction cost {cost / 100:.2f} cycles: {ok}/{total} pairs "
              f"({100 * ok / max(1, total):.0f}%) ordered as wall time**")


if __name__ == "__main__":
    sys.exit(main())
