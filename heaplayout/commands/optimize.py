"""`heaplayout optimize`: the whole profile-guided path in one command.

    heaplayout optimize [--train "ARGS"] [--strategy halo] [--allocator NAME] -- PROG ARGS

1. profile PROG on the training arguments (default: the same arguments) with the hlprof tool;
2. plan the layout from the profile;
3. measure: interleaved runs of PROG ARGS under the allocator alone, our callsite policy on
   it, and the plan on it, with output checks (heaplayout bench);
4. say whether the plan paid off, and how to use it.

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
    profile, plan, result = out / f"{name}.prof", out / f"{name}.{args.strategy}.plan", out / "bench.json"

    _step(f"1. profile {shlex.join([prog[0], *train])}")
    rc = _run(hl + ["profile", "-o", str(profile), "--", prog[0], *train])
    if not profile.exists():
        print(f"{PROG}: profiling failed (exit {rc}); nothing to plan", file=sys.stderr)
        return 1
    _step(f"2. plan ({args.strategy})")
    if _run(hl + ["plan", "--strategy", args.strategy, "-o", str(plan), str(profile)]) != 0:
        return 1
    _run(hl + ["plan", "show", str(plan), "--profile", str(profile)])

    _step(f"3. measure {shlex.join(prog)}")
    alloc = args.allocator
    policy_on = "" if alloc == "glibc" else f"+{alloc}"
    configs = [alloc, f"callsite{policy_on}", f"plan{policy_on}={plan}"]
    bench = hl + ["bench", "--runs", str(args.runs), "--config", ",".join(configs), "--json", str(result)]
    if args.cachegrind:
        bench.append("--cachegrind")
    rc = _run(bench + ["--", *prog])
    if rc != 0 or not result.exists():
        print(f"{PROG}: the measurement failed (exit {rc}); see above", file=sys.stderr)
        return 1

    doc = json.loads(result.read_text())
    planned = next(c for c in doc["configs"] if c["policy"] == "plan")
    r = planned["ratio"]
    _step("4. verdict")
    if r["max"] < 1.0:
        verdict = f"the plan is faster than {alloc} alone in every round (median ratio {r['median']:.3f})"
    elif r["median"] < 0.98:
        verdict = f"the plan is faster than {alloc} alone in the median (ratio {r['median']:.3f}, range {r['min']:.3f}-{r['max']:.3f})"
    else:
        verdict = f"no gain from the plan over {alloc} alone (median ratio {r['median']:.3f}): run without it"
    print(verdict)
    print(f"to use the plan: heaplayout run --plan {shlex.quote(str(plan))} --allocator {alloc} -- {shlex.join(prog)}")
    return 0
