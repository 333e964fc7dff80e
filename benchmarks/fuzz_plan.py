#!/usr/bin/env python3
"""The long fuzz run of the runtime's plan reader and environment settings (fuzz/README.md).

Builds the libFuzzer harnesses (fuzz/build.sh, clang-16 with ASan and UBSan), seeds them
with the suite's plans and the conformance cases (fuzz/make_corpus.py), runs each for a
number of executions on one core per job, and reports executions, new coverage and crashes.
Exit 1 if any input crashed, leaked, timed out or broke a harness promise.

    python3 benchmarks/fuzz_plan.py                       # 1,000,000 plan inputs, 300,000 environments
    python3 benchmarks/fuzz_plan.py --plan-runs 5000000 --jobs 2
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_fuzzer(binary: Path, seeds: Path, dictionary: Path, runs: int, jobs: int, work: Path) -> dict:
    """Split `runs` over `jobs` processes sharing one corpus; totals of their reports."""
    corpus, artifacts = work / "corpus", work / "artifacts"
    corpus.mkdir(parents=True)
    artifacts.mkdir()
    start = time.monotonic()
    procs = [subprocess.Popen([str(binary), f"-runs={runs // jobs}", f"-dict={dictionary}", "-timeout=10",
                               "-print_final_stats=1", f"-artifact_prefix={artifacts}/", str(corpus), str(seeds)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(jobs)]
    logs = [p.communicate()[1] for p in procs]
    seconds = time.monotonic() - start
    executed = sum(int(m.group(1)) for log in logs for m in re.finditer(r"stat::number_of_executed_units: (\d+)", log))
    crashes = sorted(p.name for p in artifacts.iterdir())
    cov = [int(m.group(1)) for log in logs for m in re.finditer(r"#\d+\s+\w+\s+cov: (\d+)", log)]
    return {"executed": executed, "seconds": seconds, "crashes": crashes, "exit_codes": [p.returncode for p in procs],
            "coverage": max(cov) if cov else 0, "corpus": len(list(corpus.iterdir())),
            "log_tail": logs[0][-2000:] if any(p.returncode for p in procs) else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan-runs", type=int, default=1_000_000, help="inputs for the plan reader (default 1,000,000)")
    ap.add_argument("--options-runs", type=int, default=300_000, help="environments for the settings (default 300,000)")
    ap.add_argument("--jobs", type=int, default=1, help="fuzzer processes per harness (default 1)")
    args = ap.parse_args()
    build = ROOT / "build" / "fuzz"
    subprocess.run([str(ROOT / "fuzz" / "build.sh"), str(build)], check=True, stdout=subprocess.DEVNULL)
    failed = False
    with tempfile.TemporaryDirectory(prefix="hl-fuzz-") as tmp:
        seeds = Path(tmp) / "seeds"
        subprocess.run([sys.executable, str(ROOT / "fuzz" / "make_corpus.py"), str(seeds)], check=True,
                       stdout=subprocess.DEVNULL)
        for name, binary, dictionary, runs, kind in [
                ("plan reader (plan_parse.c)", "plan_parse_fuzz", "plan.dict", args.plan_runs, "plan"),
                ("environment settings (options.c)", "options_fuzz", "options.dict", args.options_runs, "options")]:
            r = run_fuzzer(build / binary, seeds / kind, ROOT / "fuzz" / dictionary, runs, args.jobs, Path(tmp) / kind)
            rate = r["executed"] / r["seconds"] if r["seconds"] else 0
            print(f"{name}: {r['executed']:,} executions in {r['seconds']:.0f} s ({rate:,.0f}/s), "
                  f"{len(r['crashes'])} crashes, coverage {r['coverage']} edges, corpus {r['corpus']} inputs")
            for c in r["crashes"]:
                print(f"  crash artifact: {c}")
            if r["crashes"] or any(r["exit_codes"]):
                failed = True
                print(r["log_tail"], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
