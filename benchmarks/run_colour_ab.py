#!/usr/bin/env python3
"""Chunk colouring on and off, interleaved, on every workload of the suite (reference
inputs): glibc, mimalloc, callsite and the suite's halo plan, each of ours with colouring
(the default) and without (`chunk_colors=1`). Needs the plans written by
benchmarks/run_plan_suite.py (default directory build/plan-suite).

    python3 benchmarks/run_colour_ab.py [--plans build/plan-suite] [--runs 5] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from heaplayout.workloads import load_suite  # noqa: E402

LABELS = ("mimalloc", "callsite", "callsite_nc", "halo", "halo_nc")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--plans", type=Path, default=REPO / "build" / "plan-suite")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"command: python3 benchmarks/run_colour_ab.py --runs {args.runs}" + "".join(f" {n}" for n in args.names))
    print("wall time, reference input, median paired ratio to glibc; _nc = the same without chunk colouring\n")
    print("| workload | " + " | ".join(LABELS) + " | halo_nc / halo | output |")
    print("|---|" + "---|" * (len(LABELS) + 2))
    for w in load_suite():
        if args.names and w.name not in args.names:
            continue
        plan = args.plans / f"{w.name}.halo.plan"
        if not plan.exists():
            print(f"  skipping {w.name}: no plan {plan}", file=sys.stderr)
            continue
        configs = ["glibc", "mimalloc", "callsite", "callsite_nc=callsite:chunk_colors=1",
                   f"halo=plan={plan}", f"halo_nc=plan={plan}:chunk_colors=1"]
        with tempfile.NamedTemporaryFile(suffix=".json") as js:
            cmd = [sys.executable, "-m", "heaplayout.cli", "bench", "--runs", str(args.runs), "--warmup", "1",
                   "--json", js.name, "--config", ",".join(configs), "--", *w.argv("ref")]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"  {w.name}: bench failed: {r.stderr.strip()[-300:]}", file=sys.stderr)
                continue
            data = json.load(open(js.name))
        ratio = {c["label"]: c["ratio"]["median"] for c in data["configs"]}
        same = data.get("ok")
        print(f"| {w.name} | " + " | ".join(f"{ratio[l]:.3f}" for l in LABELS)
              + f" | {ratio['halo_nc'] / ratio['halo']:.3f} | {'same' if same else 'DIFFERS'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
