"""How noisy are wall time and CPU time as the race's measure? Runs corpus programs under
several allocators with `heaplayout bench`'s interleaved rounds (one launcher run gives both
clocks), then pairs the ratios to the first allocator once by wall time and once by CPU time.

    python3 -m benchmarks.real.metric_noise --out build/real --input measure --runs 9 \
        --programs lua5.4,jq,sqlite3 --configs glibc,jemalloc,mimalloc,tcmalloc

Per program and configuration: the median paired ratio and its interquartile range under
each clock, the metric `--metric auto` chose, and the largest gap wall − CPU of any run (the
time a run was not running). docs/results.md section 27 has its output."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from heaplayout import bench
from heaplayout.bench_check import ignoring_digest, normalizer
from heaplayout.bench_stats import paired_ratios, spread

from . import corpus


def _ratio_cells(res: bench.BenchResult, c: bench.ConfigResult, metric: str) -> tuple[float, float, float, float]:
    s = spread(paired_ratios(c.times_by_round(metric), res.baseline.times_by_round(metric)))
    return s.median, s.q1, s.q3, s.iqr


def measure(program: corpus.Program, input_dir: Path, configs: list[str], runs: int, workdir: Path) -> list[dict]:
    argv = program.argv(input_dir)
    pats = list(program.normalize)
    res = bench.run_bench(argv, bench.parse_configs(configs), workdir, runs=runs, warmup=1,
                          stdin=program.stdin_path(input_dir), digest=ignoring_digest(pats) if pats else None,
                          normalize=normalizer(pats), base_env={**os.environ, **program.env})
    gap = max(r.wall_s - (r.cpu_s or 0.0) for c in res.configs for r in c.timed())
    rows = []
    for c in res.configs[1:]:
        w, cpu = _ratio_cells(res, c, "wall"), _ratio_cells(res, c, "cpu")
        rows.append({"program": program.name, "chosen": res.metric.metric, "cpu_per_wall": res.metric.cpu_per_wall,
                     "config": c.config.label, "baseline": res.baseline.config.label, "wall": w, "cpu": cpu,
                     "gap": gap, "ok": res.ok})
    return rows


def table(rows: list[dict]) -> str:
    head = ("| program | auto chose (CPU/wall) | configuration / first | wall: median [q1–q3] | wall IQR "
            "| CPU: median [q1–q3] | CPU IQR | largest wall − CPU | output |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        w, c = r["wall"], r["cpu"]
        lines.append(f"| {r['program']} | {r['chosen']} ({r['cpu_per_wall']:.2f}) | {r['config']} / {r['baseline']} "
                     f"| {w[0]:.3f} [{w[1]:.3f}–{w[2]:.3f}] | {w[3]:.3f} | {c[0]:.3f} [{c[1]:.3f}–{c[2]:.3f}] "
                     f"| {c[3]:.3f} | {r['gap']:.3f} s | {'same' if r['ok'] else 'DIFFERS'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("build/real"), help="where the corpus inputs are written")
    ap.add_argument("--input", choices=corpus.INPUTS, default="measure")
    ap.add_argument("--programs", help="comma-separated corpus names (default: all)")
    ap.add_argument("--configs", default="glibc,jemalloc,mimalloc,tcmalloc",
                    help="bench configurations, the first is the baseline")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args(argv)
    programs = corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None)
    configs = [c for c in args.configs.split(",") if c]
    rows: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="metric-noise-"))
    try:
        for p in programs:
            d = corpus.write_input(p, args.input, args.out / "inputs")
            print(f"[metric_noise] {p.name}: {args.runs} rounds of {', '.join(configs)}", file=sys.stderr, flush=True)
            rows += measure(p, d, configs, args.runs, tmp / p.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
