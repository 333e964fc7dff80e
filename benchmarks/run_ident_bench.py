#!/usr/bin/env python3
"""Identification cost of the plan policy, with and without frame pointers.

For build/benchmarks/ident_cost_{fp,nofp} it writes two plans from the binary's own
disassembly (heaplayout.elf): one rule for `site_direct` (decided by its return address)
and one 4-frame rule for `deep1 <- deep2 <- deep3 <- deep4`. Then it runs, in interleaved
rounds, N malloc/free pairs from each site under policies off (nothing placed), callsite
(the site pooled, no identification beyond the return address) and plan, and prints the
median ns per pair with min-max. The identification cost of a 4-frame rule is
plan(deep) - callsite(deep): both place the object in a pool; only plan walks the stack.

    python3 benchmarks/run_ident_bench.py [--rounds 7] [--pairs 10000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from heaplayout import elf, paths  # noqa: E402


def write_plan(binary: Path, out: Path) -> Path:
    direct = elf.call_return_addresses(binary, "site_direct", "malloc")[0]
    chain = [
        elf.call_return_addresses(binary, "deep1", "malloc")[0],
        elf.call_return_addresses(binary, "deep2", "deep1")[0],
        elf.call_return_addresses(binary, "deep3", "deep2")[0],
        elf.call_return_addresses(binary, "deep4", "deep3")[0],
    ]
    out.write_text("\n".join([
        "heaplayout-plan 1", "strategy halo", "chunk_size 1048576", "max_object_size 4096",
        f"module 0 {elf.build_id(binary)} {binary}", "skip libc.so.6", "group 1 2 1",
        f"select 1 0:{direct:x}", "select 1 " + " ".join(f"0:{a:x}" for a in chain), "end",
    ]) + "\n")
    return out


def run(binary: Path, mode: str, pairs: int, env: dict[str, str]) -> float:
    full = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    full.update(env)
    out = subprocess.run([str(binary), mode, str(pairs)], env=full, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=10_000_000)
    args = ap.parse_args()
    lib = str(paths.runtime_library())
    tmp = Path(tempfile.mkdtemp(prefix="hl-ident-"))
    print(f"command: python3 benchmarks/run_ident_bench.py --rounds {args.rounds} --pairs {args.pairs}")
    print()
    print("| binary | site | off ns/pair | callsite ns/pair | plan ns/pair | plan - callsite |")
    print("|---|---|---|---|---|---|")
    for variant in ("fp", "nofp"):
        binary = paths.build_dir() / "benchmarks" / f"ident_cost_{variant}"
        plan = write_plan(binary, tmp / f"{variant}.plan")
        configs = {
            "off": {"LD_PRELOAD": lib, "HEAPLAYOUT_POLICY": "off"},
            "callsite": {"LD_PRELOAD": lib, "HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_MIN_OBJECTS": "0"},
            "plan": {"LD_PRELOAD": lib, "HEAPLAYOUT_PLAN": str(plan)},
        }
        for mode in ("direct", "deep"):
            times: dict[str, list[float]] = {name: [] for name in configs}
            for _ in range(args.rounds):
                for name, env in configs.items():
                    times[name].append(run(binary, mode, args.pairs, env))
            med = {n: statistics.median(t) for n, t in times.items()}
            cells = [f"{med[n]:.1f} ({min(times[n]):.1f}-{max(times[n]):.1f})" for n in configs]
            diffs = [p - c for p, c in zip(times["plan"], times["callsite"])]  # paired by round
            site = "return address decides" if mode == "direct" else "4-frame rule"
            print(f"| {variant} | {site} | " + " | ".join(cells) + f" | {statistics.median(diffs):+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
