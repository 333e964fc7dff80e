#!/usr/bin/env python3
"""The oracle bound per workload and the share of the possible gain each layout obtains.

For each workload of the suite it simulates (default model) glibc, jemalloc, mimalloc, our
runtime with policy callsite, and a HALO plan (profiled and planned on the same input), each
with the first-touch oracle; glibc also with the hot-first oracle. The bound is the better of
the two oracles of the glibc run. A layout's share of the possible gain is

    share = (glibc - layout) / (glibc - oracle)

in data-access latency (cache and TLB; instructions and page faults left out: the oracle
moves objects, it does not change the code, and its packing does not bound the footprint)
and in L1 misses. 100% = the layout reached the bound;
negative = worse than glibc.

The bound comes from the glibc run with tracking (both oracles); the layouts themselves are
simulated without tracking, which is faster and gives the same counts (tracking does not touch
the client: simulator/hs_hooks.c). The table shows the tracked glibc run's own cycles too.

    python3 simulator/oracle_share.py [--input small] [--json out.json] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from heaplayout.simulate import SimOptions, gain_share, run_simulation, run_with_oracles  # noqa: E402
from heaplayout.workloads import load_suite  # noqa: E402
from predict import config_options, make_plans  # noqa: E402

CONFIGS = ("glibc", "jemalloc", "mimalloc", "callsite", "halo")


def memory_cycles(r: dict) -> int:
    """Data-access latency of a run or of its oracle: the cache and TLB part of the time
    estimate before the `exposed` factor (which cancels in a share), without page faults
    (footprint, which the oracle's slot reuse does not bound)."""
    return r["cycles"] - r.get("fault_cycles", 0)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--input", default="small")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args()
    configs = args.configs.split(",")
    if configs[0] != "glibc":
        ap.error("the first configuration must be glibc (the baseline)")
    suite = [w for w in load_suite() if not args.names or w.name in args.names]
    raw: dict = {}
    print(f"input: {args.input}; share = (glibc - layout) / (glibc - oracle), in data-access latency "
          "(cache + TLB cycles; L1 misses in brackets)\n")
    print("| workload | glibc cycles | glibc, tracked | oracle cycles (kind) | oracle / glibc | "
          + " | ".join(configs[1:]) + " |")
    print("|---|---:|---:|---:|---:|" + "---:|" * (len(configs) - 1))
    for w in suite:
        argv = w.argv(args.input)
        print(f"{w.name}: simulating ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="hloracle.") as tmpd:
            plans: dict = {}
            if "halo" in configs:
                plans["halo"], plans["random4"] = make_plans(argv, Path(tmpd), 1)
            runs = {}
            for c in configs:
                o = config_options(c, plans)
                if o is None:
                    continue
                runs[c] = run_simulation(argv, o, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            tracked = run_with_oracles(argv, SimOptions(allocator="glibc"), hot_first=True,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        g = runs["glibc"]
        oracles = [(round(memory_cycles(tracked["oracle"])), tracked["oracle"]["levels"][0]["misses"], "first-touch")]
        if tracked.get("oracle_hot"):
            oracles.append((round(memory_cycles(tracked["oracle_hot"])), tracked["oracle_hot"]["levels"][0]["misses"],
                            "hot-first"))
        o_cyc, o_l1, kind = min(oracles)
        g_cyc, g_l1 = round(memory_cycles(g)), g["levels"][0]["misses"]
        cells = []
        for c in configs[1:]:
            if c not in runs:
                cells.append("n/a")
                continue
            r = runs[c]
            cells.append(f"{pct(gain_share(g_cyc, memory_cycles(r), o_cyc))} "
                         f"({pct(gain_share(g_l1, r['levels'][0]['misses'], o_l1))})")
        print(f"| {w.name} | {g_cyc:,} | {round(memory_cycles(tracked)):,} | {o_cyc:,} ({kind}) | {o_cyc / g_cyc:.2f} | "
              + " | ".join(cells) + " |", flush=True)
        raw[w.name] = {"layouts": {c: {"memory_cycles": memory_cycles(r), "L1": r["levels"][0]["misses"]}
                                   for c, r in runs.items()},
                       "glibc_tracked": {"memory_cycles": memory_cycles(tracked), "L1": tracked["levels"][0]["misses"]},
                       "oracle": {"cycles": o_cyc, "L1": o_l1, "kind": kind}}
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
