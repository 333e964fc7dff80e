#!/usr/bin/env python3
"""Issue 21's second target on the workload suite: every plan and `callsite`, on glibc,
jemalloc and mimalloc, paired against the allocator underneath alone.

For each workload and each allocator X, one `heaplayout bench` with X first (the baseline,
so the ratios are paired to it) and then `callsite+X`, the halo plan on X and the halo plan
with `rest callsite` on X. Two phases, each optional:

  count  `--cachegrind --runs 1 --warmup 0` on the small input: instructions (exact) and
         D1/LL misses, ours over the allocator alone;
  time   `--runs N` on the reference input: the median [q1-q3] of the per-round ratios.

Plans come from --plans DIR: NAME.halo.plan and NAME.halo-rest.plan (`heaplayout plan
PROFILE` and `heaplayout plan PROFILE --rest callsite`, profiled on the small input with
the same build's binaries: a plan names its modules by build-id). A missing plan is left
out of that workload's rows.

    python3 benchmarks/suite_against_underneath.py --plans DIR --out DIR
        [--phases count,time] [--runs 5] [--only a,b] [--allocators glibc,jemalloc,mimalloc]
    python3 benchmarks/suite_against_underneath.py --out DIR --report
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from heaplayout.workloads import load_suite  # noqa: E402

HL = [sys.executable, "-m", "heaplayout.cli"]
ALLOCATORS = ["glibc", "jemalloc", "mimalloc"]
KINDS = ["callsite", "halo", "halo_rest"]  # our configurations, by label prefix
LIMIT = 1.02  # issue 21: no median above this


def configs(alloc: str, plans: Path, name: str, kinds: list[str]) -> list[str]:
    out = [alloc]
    if "callsite" in kinds:
        out.append(f"callsite_{alloc}=callsite+{alloc}")
    for kind, suffix in (("halo", "halo"), ("halo_rest", "halo-rest")):
        plan = plans / f"{name}.{suffix}.plan"
        if kind in kinds and plan.exists():
            out.append(f"{kind}_{alloc}=plan+{alloc}={plan}")
    return out


def bench(phase: str, argv: list[str], cfgs: list[str], runs: int, dest: Path) -> int:
    extra = ["--cachegrind", "--runs", "1", "--warmup", "0"] if phase == "count" else ["--runs", str(runs), "--warmup", "1"]
    cmd = [*HL, "bench", *extra, "--config", ",".join(cfgs), "--json", str(dest), "--", *argv]
    print("$ " + shlex.join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode


def spread(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return statistics.median(values), q1, q3


def row_cells(doc: dict, phase: str) -> dict[str, str]:
    base = doc["configs"][0]
    cells: dict[str, str] = {}
    for c in doc["configs"][1:]:
        kind = c["label"].rsplit("_", 1)[0]
        ok = "" if c["output_ok"] else " (output differs!)"
        if phase == "count":
            cg, bcg = c["cachegrind"], base["cachegrind"]
            if not cg or not bcg:
                cells[kind] = "-"
                continue
            ir, d1 = cg["I_refs"] / bcg["I_refs"], cg["D1_misses"] / max(bcg["D1_misses"], 1)
            cells[kind] = f"{ir:.3f} / {d1:.2f}{ok}"
        else:
            m, q1, q3 = spread(c["ratio"]["values"])
            mark = "**" if m > LIMIT else ""
            cells[kind] = f"{mark}{m:.3f}{mark} [{q1:.2f}-{q3:.2f}]{ok}"
    return cells


def report(out: Path, phase: str, names: list[str], allocators: list[str]) -> str:
    what = ("instructions / D1 misses (cachegrind, small input), ours over the allocator alone" if phase == "count"
            else f"wall time (reference input), median [q1-q3] of the per-round ratios to the allocator alone; above {LIMIT} in bold")
    head = ["workload"] + [f"{k} / {a}" for a in allocators for k in KINDS]
    lines = [f"{what}:", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        cells = [name]
        for a in allocators:
            path = out / f"{name}.{a}.{phase}.json"
            got = row_cells(json.loads(path.read_text()), phase) if path.exists() else {}
            cells += [got.get(k, "-") for k in KINDS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plans", type=Path, help="directory of NAME.halo.plan and NAME.halo-rest.plan")
    ap.add_argument("--out", type=Path, required=True, help="directory for the bench JSON files")
    ap.add_argument("--phases", default="count,time")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", help="comma-separated workloads")
    ap.add_argument("--allocators", default=",".join(ALLOCATORS))
    ap.add_argument("--kinds", default=",".join(KINDS), help="our configurations: callsite, halo, halo_rest")
    ap.add_argument("--report", action="store_true", help="only print the tables from --out's JSON")
    args = ap.parse_args(argv)
    suite = load_suite()
    if args.only:
        wanted = set(args.only.split(","))
        if wanted - {w.name for w in suite}:
            ap.error(f"unknown workloads: {', '.join(sorted(wanted - {w.name for w in suite}))}")
        suite = [w for w in suite if w.name in wanted]
    phases = [p for p in args.phases.split(",") if p]
    if set(phases) - {"count", "time"}:
        ap.error("--phases takes count and/or time")
    allocators = args.allocators.split(",")
    kinds = args.kinds.split(",")
    if set(kinds) - set(KINDS):
        ap.error(f"--kinds takes {', '.join(KINDS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report:
        if args.plans is None:
            ap.error("--plans is needed unless --report")
        for phase in phases:
            for w in suite:
                argv_w = w.argv("small" if phase == "count" else "ref", "fp")
                for a in allocators:
                    rc = bench(phase, argv_w, configs(a, args.plans, w.name, kinds), args.runs,
                               args.out / f"{w.name}.{a}.{phase}.json")
                    if rc != 0:
                        print(f"{w.name} on {a} ({phase}): bench exited {rc}", file=sys.stderr)
    for phase in phases:
        print(report(args.out, phase, [w.name for w in suite], allocators))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
