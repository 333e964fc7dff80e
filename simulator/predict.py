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

TOOL_EXPOSED = 0.045  # hlsim's --exposed default (45 per mille), fitted with calibrate_exposed
STATS = ("wall-min", "wall-median", "cpu-min", "cpu-median")
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


def timed_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time (from just before the fork to the reaping) and user+sys CPU time of one run."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = 0  # reaped here; keep Popen from waiting again
    return wall, ru.ru_utime + ru.ru_stime


def measured(row: dict, stat: str) -> float:
    """The row's measured time: 'min' or 'median' of its wall ('wall') or CPU ('cpu') times."""
    kind, how = stat.split("-")
    xs = row["walls"] if kind == "wall" else row["cpus"]
    return min(xs) if how == "min" else statistics.median(xs)


def estimate(r: dict, instr_cost: int, exposed: float = 1.0) -> float:
    """The tool's time estimate recomputed (it is linear in its parts): data-access latency,
    of which the share `exposed` is not hidden by out-of-order execution, plus page faults,
    plus instructions x instr_cost/100."""
    faults = r.get("fault_cycles", 0)
    return (r["cycles"] - faults) * exposed + faults + r["instructions"] * instr_cost / 100


def calibrate_exposed(data: dict, instr_cost: int, clock_hz: float) -> float:
    """Least-squares share of data-access latency that shows in run time, from the glibc run
    of each workload (absolute times, one configuration per program: the pairs being
    predicted are not used): minimise sum (T*clock - faults - instr*cost - a*D)^2."""
    num = den = 0.0
    for rows in data["workloads"].values():
        g = rows.get("glibc")
        if not g:
            continue
        d = g["cycles"] - g.get("fault_cycles", 0)
        rest = measured(g, "wall-min") * clock_hz - g.get("fault_cycles", 0) - g["instructions"] * instr_cost / 100
        num += d * rest
        den += d * d
    return max(0.0, num / den) if den else 1.0


def agreement(rows: dict[str, dict], instr_cost: int, min_diff: float,
              stat: str = "wall-min", exposed: float = 1.0) -> tuple[int, int, list[str]]:
    """Concordant pairs, counted pairs, and the discordant ones (as text) of one workload."""
    names = list(rows)
    ok = total = 0
    wrong = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            a, b = names[i], names[j]
            wa, wb = measured(rows[a], stat), measured(rows[b], stat)
            if abs(wa - wb) / max(wa, wb) <= min_diff:
                continue
            total += 1
            ea, eb = estimate(rows[a], instr_cost, exposed), estimate(rows[b], instr_cost, exposed)
            if (wa < wb) == (ea < eb):
                ok += 1
            else:
                fast, slow = (a, b) if wa < wb else (b, a)
                wrong.append(f"{fast} < {slow} measured ({min(wa, wb) / max(wa, wb):.2f}x), estimate "
                             f"{estimate(rows[fast], instr_cost, exposed) / estimate(rows[slow], instr_cost, exposed):.2f}x")
    return ok, total, wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--input", default="small", help="input simulated, profiled for the plans, and timed")
    ap.add_argument("--wall-input", default=None, help="time another input natively instead (e.g. ref)")
    ap.add_argument("--runs", type=int, default=21, help="interleaved native runs per configuration (default 21)")
    ap.add_argument("--stat", default="wall-min", choices=STATS,
                    help="measured time of a configuration (default wall-min: the fastest of the runs, the usual "
                    "estimator for short deterministic programs on a shared machine, where noise only adds)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--min-diff", type=float, default=0.05,
                    help="pairs whose wall times differ by no more than this are ties (default 0.05)")
    ap.add_argument("--instr-costs", default="25,0,50,100",
                    help="instruction costs (1/100 cycle) to report the agreement for; the first of the tool's "
                    "estimate is 25 by default")
    ap.add_argument("--exposed", default=str(TOOL_EXPOSED),
                    help=f"share of the data-access latency that shows in run time (default {TOOL_EXPOSED}, the "
                    "tool's --exposed default; 'fit' = least squares to these glibc runs' absolute times; "
                    "1 = the plain latency sum)")
    ap.add_argument("--clock-ghz", type=float, default=2.6, help="clock for the fit (default 2.6, these VMs)")
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
    exposed = None if args.exposed == "fit" else float(args.exposed)
    report(data, costs, args.min_diff, args.stat, exposed, args.clock_ghz * 1e9)
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
                           "page_faults": r.get("page_faults", 0), "fault_cycles": r.get("fault_cycles", 0),
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
                    wall, cpu = timed_run(wall_argv, env)
                    rows[c]["walls"].append(wall)
                    rows[c].setdefault("cpus", []).append(cpu)
        data["workloads"][w.name] = rows
    return data


def report(data: dict, costs: list[int], min_diff: float, stat: str, exposed: float | None,
           clock_hz: float) -> None:
    """Per-workload tables and wrong pairs for the main estimate, then the agreement of each
    estimate variant under each way of reading the measured times."""
    main_cost = costs[0]
    fitted = calibrate_exposed(data, main_cost, clock_hz)
    main_exposed = fitted if exposed is None else exposed
    print(f"simulated input: {data['input']}; timed input: {data['wall_input']}; measured time = {stat} of "
          f"{data['runs']} interleaved runs; ties: measured times within {100 * min_diff:.0f}%")
    print(f"estimate = data-access cycles x exposed + page-fault cycles + instructions x cost; exposed "
          f"{'fitted' if exposed is None else 'given'}: {main_exposed:.3f} (least squares on the glibc runs' "
          f"wall-min at {clock_hz / 1e9:.2f} GHz: {fitted:.3f}); instruction cost {main_cost / 100:.2f}")
    variants = [(f"exposed {main_exposed:.3f}, cost {main_cost / 100:.2f}", main_cost, main_exposed)]
    variants += [(f"exposed 1 (latency sum), cost {c / 100:.2f}", c, 1.0) for c in costs]
    variants += [(f"exposed {main_exposed:.3f}, cost {c / 100:.2f}", c, main_exposed) for c in costs[1:]]
    totals = {(v[0], st): [0, 0] for v in variants for st in STATS}
    for name, rows in data["workloads"].items():
        print(f"\n### {name}\n")
        print("| config | wall s (min) | wall s (median) | instructions | data-access cycles | page faults | estimate |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for c, r in rows.items():
            print(f"| {c} | {measured(r, 'wall-min'):.4f} | {measured(r, 'wall-median'):.4f} | "
                  f"{r['instructions']:,} | {r['cycles'] - r.get('fault_cycles', 0):,} | {r.get('page_faults', 0):,} | "
                  f"{estimate(r, main_cost, main_exposed):,.0f} |")
        for label, cost, exp in variants:
            for st in STATS:
                if st.startswith("cpu") and "cpus" not in next(iter(rows.values())):
                    continue
                ok, total, wrong = agreement(rows, cost, min_diff, st, exp)
                totals[(label, st)][0] += ok
                totals[(label, st)][1] += total
                if label == variants[0][0] and st == stat:
                    print(f"\n{ok}/{total} pairs ordered as {stat}")
                    for line in wrong:
                        print(f"- wrong: {line}")
    print("\n| estimate | " + " | ".join(STATS) + " |\n|---|" + "---:|" * len(STATS))
    for label, _, _ in variants:
        cells = []
        for st in STATS:
            ok, total = totals[(label, st)]
            cell = f"{ok}/{total} ({100 * ok / max(1, total):.0f}%)" if total else "-"
            cells.append(f"**{cell}**" if (label, st) == (variants[0][0], stat) else cell)
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
