"""The line-size x prefetcher x layout study (the ccmalloc + prefetch paper's question: how
allocation and prefetching interact across line sizes), on the simulator.

    heaplayout simulate --study [--lines ..] [--prefetchers ..] [--layouts ..] -- PROG ARGS
    python3 -m heaplayout.study [--input small] [--jobs 2] [--full] [--json FILE] [WORKLOAD ...]
        (default: treeadd health llubench perimeter; --full: one row per run)

A layout is an allocator name (glibc, jemalloc, mimalloc, tcmalloc) or POLICY[+ALLOCATOR]
with POLICY one of off, callsite (our runtime over the allocator, default glibc).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from .simulate import SimOptions, run_simulation

STUDY_WORKLOADS = ("treeadd", "health", "llubench", "perimeter")


def layout_options(layout: str, base: SimOptions) -> SimOptions:
    if "+" in layout:
        policy, alloc = layout.split("+", 1)
    elif layout in ("off", "callsite"):
        policy, alloc = layout, "glibc"
    else:
        policy, alloc = "none", layout
    return SimOptions(policy=policy, allocator=alloc, plan=None, runtime_options=dict(base.runtime_options),
                      model=dict(base.model), contexts=False)


def run_study(program: Sequence[str], base: SimOptions, lines: Sequence[int], prefetchers: Sequence[str],
              layouts: Sequence[str], valgrind: str = "valgrind", jobs: int = 2, name: str = "") -> list[dict]:
    jobs_list = []
    for layout in layouts:
        for line in lines:
            for pf in prefetchers:
                o = layout_options(layout, base)
                o.model["line"] = str(line)
                o.model["prefetch"] = pf
                jobs_list.append((layout, line, pf, o))

    def one(job):
        layout, line, pf, o = job
        r = run_simulation(program, o, valgrind=valgrind, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lv = r["levels"]
        return {"workload": name or program[0].rsplit("/", 1)[-1], "layout": layout, "line": line, "prefetcher": pf,
                "L1_misses": lv[0]["misses"], "LL_misses": lv[-1]["misses"],
                "DTLB_misses": r["tlb"][0]["misses"] if r["tlb"] else 0,
                "pf_issued": sum(x["pf_issued"] for x in lv),
                "pf_useful": sum(x["pf_useful"] for x in lv),
                "pf_useless": sum(x["pf_useless"] + x.get("pf_resident", 0) for x in lv),
                "cycles": r["cycles"], "refs": r["refs"]}

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(one, jobs_list))


def format_study(rows: list[dict]) -> str:
    """Markdown table; `vs glibc/none` = cycles relative to the first layout's `none` row at the same line size."""
    out = ["| workload | layout | line | prefetcher | L1 misses | LL misses | DTLB misses | pf useful | pf useless "
           "| cycles | vs first layout, no prefetch |",
           "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    base = {}
    for r in rows:
        key = (r["workload"], r["line"])
        if r["prefetcher"] == "none" and key not in base:
            base[key] = r["cycles"]
    for r in rows:
        b = base.get((r["workload"], r["line"]))
        rel = f"{r['cycles'] / b:.3f}" if b else "-"
        out.append(f"| {r['workload']} | {r['layout']} | {r['line']} | {r['prefetcher']} | {r['L1_misses']:,} | "
                   f"{r['LL_misses']:,} | {r['DTLB_misses']:,} | {r['pf_useful']:,} | {r['pf_useless']:,} | "
                   f"{r['cycles']:,} | {rel} |")
    return "\n".join(out)


def format_pivot(rows: list[dict]) -> str:
    """One row per workload x layout x line size: the time estimate per prefetcher relative to
    the first layout without prefetching at the same line size, and L1 / DTLB misses without."""
    pfs = list(dict.fromkeys(r["prefetcher"] for r in rows))
    base = {}
    for r in rows:
        if r["prefetcher"] == "none":
            base.setdefault((r["workload"], r["line"]), r["cycles"])
    cells: dict[tuple, dict] = {}
    for r in rows:
        cells.setdefault((r["workload"], r["layout"], r["line"]), {})[r["prefetcher"]] = r
    out = ["| workload | layout | line | L1 misses (none) | DTLB misses | " + " | ".join(pfs) + " |",
           "|---|---|---:|---:|---:|" + "---:|" * len(pfs)]
    for (wl, layout, line), by in cells.items():
        b = base.get((wl, line))
        first = next(iter(by.values()))
        none = by.get("none", first)
        vals = [f"{by[p]['cycles'] / b:.3f}" if p in by and b else "-" for p in pfs]
        out.append(f"| {wl} | {layout} | {line} | {none['L1_misses']:,} | {first['DTLB_misses']:,} | "
                   + " | ".join(vals) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from .workloads import load_suite

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list(STUDY_WORKLOADS))
    ap.add_argument("--input", default="small")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--lines", default="32,64,128,256")
    ap.add_argument("--prefetchers", default="none,nextline,stride,cc-all")
    ap.add_argument("--layouts", default="glibc,callsite")
    ap.add_argument("--full", action="store_true", help="one row per run instead of the pivot table")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    suite = {w.name: w for w in load_suite()}
    rows: list[dict] = []
    for name in args.names:
        rows += run_study(suite[name].argv(args.input), SimOptions(), [int(x) for x in args.lines.split(",")],
                          args.prefetchers.split(","), args.layouts.split(","), jobs=args.jobs, name=name)
    print(format_study(rows) if args.full else format_pivot(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
