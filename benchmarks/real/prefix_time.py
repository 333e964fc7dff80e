"""PreFix's wall time on programs nobody here wrote: for each corpus program that `optimize`
has profiled (OUT/<program>/optimize/, the optimize stage of benchmarks/real/run.py), plan
the three PreFix variants of the paper from that profile and time them, with optimize's
halo plan, on the best allocator alone that optimize found, against that allocator alone:
interleaved rounds on the measuring input (heaplayout's bench engine, its output check and
its metric: CPU time for a program that keeps one CPU busy).

    python3 -m benchmarks.real.prefix_time --out build/real --runs 7 [--programs a,b]

Writes OUT/prefix_time.md and prints it. docs/results.md section 29 has its output."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from heaplayout import bench
from heaplayout.bench_check import ignoring_digest, normalizer

from . import corpus
from .measure import HL

VARIANTS = ("prefix:hot", "prefix:hds", "prefix:hds+hot")


def label(strategy: str) -> str:
    """A bench label for a strategy name (':' and '+' belong to the configuration grammar)."""
    return strategy.replace(":", "-").replace("+", "-")


def say(msg: str) -> None:
    print(f"[prefix_time] {msg}", file=sys.stderr, flush=True)


def _plan(prof: Path, strategy: str, dest: Path) -> Path | None:
    r = subprocess.run([*HL, "plan", "--strategy", strategy, "-o", str(dest), str(prof)], capture_output=True,
                       text=True)
    if r.returncode != 0 or not dest.exists():
        say(f"  {strategy}: planning failed: {(r.stderr.strip().splitlines() or ['no message'])[-1][:200]}")
        return None
    return dest


def measure(p: corpus.Program, out: Path, runs: int) -> dict | None:
    opt = out / p.name / "optimize"
    try:
        doc = json.loads((opt / "optimize.json").read_text())
    except (OSError, ValueError):
        say(f"{p.name}: no optimize.json in {opt}; skipped")
        return None
    best = (doc.get("decision") or {}).get("best_allocator")
    prof = Path(doc["profile"]) if doc.get("profile") else None
    if not best or prof is None or not prof.exists():
        say(f"{p.name}: optimize found no best allocator or kept no profile; skipped")
        return None
    plans_dir = out / p.name / "prefix-time"
    plans_dir.mkdir(parents=True, exist_ok=True)
    plans = {"halo": Path(doc["plans"]["halo"])} if "halo" in doc.get("plans", {}) else {}
    for v in VARIANTS:
        path = _plan(prof, v, (plans_dir / f"{label(v)}.plan").resolve())
        if path is not None:
            plans[v] = path
    on = "" if best == "glibc" else f"+{best}"
    configs = [best] + [f"{label(name)}=plan{on}={path}" for name, path in plans.items()]
    input_dir = corpus.write_input(p, "measure", out / "inputs")
    pats = list(p.normalize)
    say(f"{p.name}: {runs} rounds of {best} alone, " + ", ".join(plans) + f" on {best}")
    with tempfile.TemporaryDirectory(prefix="prefix-time-") as tmp:
        res = bench.run_bench(p.argv(input_dir), bench.parse_configs(configs), Path(tmp), runs=runs, warmup=1,
                              stdin=p.stdin_path(input_dir), digest=ignoring_digest(pats) if pats else None,
                              normalize=normalizer(pats), base_env={**os.environ, **p.env}, target=p.exe)
    row = {"program": p.name, "best": best, "metric": res.metric.metric, "cells": {}}
    for c in res.configs[1:]:
        r = res.ratio(c)
        row["cells"][c.config.label] = (f"{r.median:.3f} [{r.q1:.3f}–{r.q3:.3f}]"
                                        + ("" if c.output_ok else " OUTPUT DIFFERS"))
    return row


def table(rows: list[dict]) -> str:
    cols = ["halo", *VARIANTS]
    lines = ["| program | best alone (metric) | " + " | ".join(f"{c} / alone" for c in cols) + " |",
             "|" + "---|" * (2 + len(cols))]
    for r in rows:
        lines.append(f"| {r['program']} | {r['best']} ({r['metric']}) | "
                     + " | ".join(r["cells"].get(label(c), "—") for c in cols) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("build/real"))
    ap.add_argument("--programs", help="comma-separated corpus names (default: every one optimize profiled)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    programs = corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None)
    rows = [r for p in programs if (r := measure(p, args.out, args.runs)) is not None]
    text = table(rows)
    (args.out / "prefix_time.md").write_text(text + "\n")
    print(text)
    return 0 if all("DIFFERS" not in cell for r in rows for cell in r["cells"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
