"""`heaplayout optimize`: the whole profile-guided path in one command.

    heaplayout optimize [--train "ARGS"] [--strategy halo] [--allocator NAME] -- PROG ARGS

1. profile PROG on the training arguments (default: the same arguments) with the hlprof tool;
2. plan the layout from the profile, twice: ungrouped objects left to the allocator (as
   HALO), and ungrouped objects in per-site pools (`--rest callsite`);
3. measure: interleaved runs of PROG ARGS under the allocator alone, our callsite policy on
   it, and both plans on it, with output checks (heaplayout bench);
4. say whether a plan paid off, which one, and how to use it.

Everything is written into one directory (default ./heaplayout-out/PROG): the profile, the
plan, and the benchmark's JSON.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

from .. import allocators, planner

PROG = "heaplayout optimize"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "optimize",
        help="profile, plan and measure a program in one go",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--train", metavar="ARGS", help="arguments for the profiling run (default: the same as the measured run)")
    p.add_argument("--strategy", choices=planner.STRATEGIES, default="halo", help="planning strategy (default halo)")
    p.add_argument("--allocator", choices=list(allocators.ALLOCATORS), default="glibc",
                   help="allocator underneath, and the baseline (default glibc)")
    p.add_argument("--runs", type=int, default=5, help="timed rounds of the measurement (default 5)")
    p.add_argument("--cachegrind", action="store_true", help="also count simulated D1/LL misses")
    p.add_argument("-o", "--output", metavar="DIR", help="where the profile, plan and results go")
    p.set_defaults(func=optimize_command)


def _step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def _run(cmd: list[str]) -> int:
    print("$ " + shlex.join(cmd), flush=True)
    return subprocess.run(cmd).returncode


def optimize_command(args: argparse.Namespace) -> int:
    if not args.program:
        print(f"{PROG}: no program given; usage: heaplayout optimize [options] -- PROG [ARGS...]", file=sys.stderr)
        return 2
    prog = args.program
    name = Path(prog[0]).name
    out = Path(args.output or Path("heaplayout-out") / name)
    out.mkdir(parents=True, exist_ok=True)
    train = shlex.split(args.train) if args.train is not None else prog[1:]
    hl = [sys.executable, "-m", "heaplayout.cli"]
    profile, result = out / f"{name}.prof", out / "bench.json"
    # bench labels (not "plan", which bench would read as a configuration)
    plans = {"planned": out / f"{name}.{args.strategy}.plan", "planned_rest": out / f"{name}.{args.strategy}-rest.plan"}

    _step(f"1. profile {shlex.join([prog[0], *train])}")
    rc = _run(hl + ["profile", "-o", str(profile), "--", prog[0], *train])
    if not profile.exists():
        print(f"{PROG}: profiling failed (exit {rc}); nothing to plan", file=sys.stderr)
        return 1
    _step(f"2. plan ({args.strategy}; ungrouped objects to the allocator, and to per-site pools)")
    for label, rest in (("planned", "allocator"), ("planned_rest", "callsite")):
        if _run(hl + ["plan", "--strategy", args.strategy, "--rest", rest, "-o", str(plans[label]), str(profile)]) != 0:
            return 1
    _run(hl + ["plan", "show", str(plans["planned"]), "--profile", str(profile)])

    _step(f"3. measure {shlex.join(prog)}")
    alloc = args.allocator
    policy_on = "" if alloc == "glibc" else f"+{alloc}"
    configs = [alloc, f"callsite{policy_on}", *(f"{label}=plan{policy_on}={p}" for label, p in plans.items())]
    bench = hl + ["bench", "--runs", str(args.runs), "--config", ",".join(configs), "--json", str(result)]
    if args.cachegrind:
        bench.append("--cachegrind")
    rc = _run(bench + ["--", *prog])
    if rc != 0 or not result.exists():
        print(f"{PROG}: the measurement failed (exit {rc}); see above", file=sys.stderr)
        return 1

    doc = json.loads(result.read_text())
    ratios = {c["label"]: c["ratio"] for c in doc["configs"] if c["policy"] == "plan"}
    best = min(ratios, key=lambda label: ratios[label]["median"])
    r, plan = ratios[best], plans[best]
    which = "the plan" if best == "planned" else "the plan with per-site pools for the rest"
    _step("4. verdict")
    for label, rr in ratios.items():
        print(f"  {label}: median ratio to {alloc} {rr['median']:.3f} (range {rr['min']:.3f}-{rr['max']:.3f})")
    if r["max"] < 1.0:
        verdict = f"{which} is faster than {alloc} alone in every round (median ratio {r['median']:.3f})"
    elif r["median"] < 0.98:
        verdict = f"{which} is faster than {alloc} alone in the median (ratio {r['median']:.3f}, range {r['min']:.3f}-{r['max']:.3f})"
    else:
        verdict = f"no gain from a plan over {alloc} alone (best median ratio {r['median']:.3f}): run without it"
    print(verdict)
    if len(ratios) > 1:
        print("(the better of two plans, chosen on these rounds: confirm with more rounds, heaplayout bench)")
    print(f"to use the plan: heaplayout run --plan {shlex.quote(str(plan))} --allocator {alloc} -- {shlex.join(prog)}")
    return 0
