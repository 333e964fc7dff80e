"""A plan's groups with their sizes interleaved (HALO's layout) or in a span per size class
(`heaplayout plan --group-layout`), compared on the corpus and on the suite.

    python3 -m benchmarks.real.group_layout --out build/real --programs lua5.4,sqlite3 --cachegrind
    python3 -m benchmarks.real.group_layout --out build/real --programs lua5.4 --rounds 7 --allocator mimalloc
    python3 -m benchmarks.real.group_layout --suite --cachegrind
    python3 -m benchmarks.real.group_layout --out build/real --choose          # corpus; --suite too

Corpus: plans `halo` and `halo-site` (walk budget 0) from OUT/<program>/train.prof (the
plans stage's profile), once with each layout, written beside it as
`<plan>.<layout>.plan`. `--cachegrind`: the training input once under each plan (glibc
underneath), D1 and LL data misses, exactly repeatable. `--rounds N`: the measuring input
in N interleaved rounds of the allocator alone and each plan on it (CPU time of the child,
user + system, which a loaded machine disturbs less than wall time); ratios to the
allocator alone, paired by round, median [min-max]. `--suite`: every workload profiled on
its small input (into --suite-out), both plans, cachegrind on the small input.
`--choose`: each group's layout chosen by simulating the training (suite: small) input
(heaplayout/planning/group_layout.py), written as `<plan>.chosen.plan`; the simulator's
miss cost of the three plans (all interleaved, all spans, chosen) and cachegrind's D1 and
LL data misses of each on the same input.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from heaplayout import paths
from heaplayout.allocators import allocator_library
from heaplayout.plan_format import read_plan, write_plan
from heaplayout.planning.group_layout import choose_by_simulation
from heaplayout.workloads import load_suite

from . import corpus
from .check import base_environment

HL = [sys.executable, "-m", "heaplayout.cli"]
LAYOUTS = ("interleave", "spans")
PLANS = {"halo": [], "halo-site": ["--walk-budget", "0"]}
CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--D1=32768,8,64", "--LL=4194304,16,64",
              "--cachegrind-out-file=/dev/null"]


def runtime_lib() -> Path:
    return paths.REPO_ROOT / "build" / "runtime" / "libheaplayout.so"


def make_plans(prof: Path, dest: Path) -> dict[tuple[str, str], Path]:
    """(plan, layout) -> plan file, made from the profile unless it exists."""
    made = {}
    for label, opts in PLANS.items():
        for layout in LAYOUTS:
            path = dest / f"{label}.{layout}.plan"
            if not path.exists():
                subprocess.run([*HL, "plan", *opts, "--group-layout", layout, "-o", str(path), str(prof)],
                               check=True, capture_output=True)
            made[(label, layout)] = path
    return made


def cachegrind(argv: list[str], env: dict[str, str], cwd: Path | None, stdin: Path | None) -> dict[str, int]:
    with open(stdin or os.devnull, "rb") as sin:
        r = subprocess.run([*CACHEGRIND, *argv], stdin=sin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env=env, cwd=cwd, text=True)

    def count(key: str) -> int:
        m = re.search(key + r"\s+([\d,]+)", r.stderr)
        if not m:
            raise RuntimeError(f"cachegrind printed no {key!r} for {argv[0]}: {r.stderr[-400:]}")
        return int(m.group(1).replace(",", ""))
    return {"I": count(r"I\s+refs:"), "D1": count("D1  misses:"), "LLd": count("LLd misses:")}


def plan_env(base: dict[str, str], plan: Path, allocator: str | None = None) -> dict[str, str]:
    env = dict(base)
    preload = [str(runtime_lib())] + ([allocator] if allocator else [])
    env.update(LD_PRELOAD=" ".join(preload), HEAPLAYOUT_POLICY="plan", HEAPLAYOUT_PLAN=str(plan))
    return env


def cpu_seconds(argv: list[str], env: dict[str, str], cwd: Path, stdin: Path | None) -> float:
    with open(stdin or os.devnull, "rb") as sin:
        proc = subprocess.Popen(argv, stdin=sin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{argv[0]} exited with status {status} under {env.get('HEAPLAYOUT_PLAN', 'no plan')}")
    return usage.ru_utime + usage.ru_stime


def summary(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]"


CHOOSE_HEADER = ("| program | plan | groups interleaved | sim. cost interleaved | spans | chosen | D1 interleaved | "
                 "spans | chosen | LLd interleaved | spans | chosen |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def choose_row(name: str, label: str, plans: dict[str, Path], argv: list[str], env: dict[str, str],
               cwd: Path | None, stdin: Path | None) -> None:
    """Choose each group's layout by simulation; cachegrind on all three plans."""
    choice = choose_by_simulation(read_plan(plans["spans"]), argv, stdin=stdin, check=True, cwd=cwd, env_base=env)
    chosen = plans["spans"].with_name(plans["spans"].name.replace(".spans.", ".chosen."))
    write_plan(choice.plan, chosen)
    flipped = sum(1 for c in choice.costs if c.choice == "interleave")
    cg = {lay: cachegrind(argv, plan_env(env, path), cwd, stdin)
          for lay, path in (("interleave", plans["interleave"]), ("spans", plans["spans"]), ("chosen", chosen))}
    t = choice.totals
    print(f"| {name} | {label} | {flipped} of {len(choice.costs)} | {t['interleave']:,} | {t['spans'] / t['interleave']:.3f} | "
          f"{t['chosen'] / t['interleave']:.3f} | {cg['interleave']['D1']:,} | "
          f"{cg['spans']['D1'] / cg['interleave']['D1']:.3f} | {cg['chosen']['D1'] / cg['interleave']['D1']:.3f} | "
          f"{cg['interleave']['LLd']:,} | {cg['spans']['LLd'] / max(1, cg['interleave']['LLd']):.3f} | "
          f"{cg['chosen']['LLd'] / max(1, cg['interleave']['LLd']):.3f} |", flush=True)


def corpus_rows(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()
    for p in corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None):
        prof = out / p.name / "train.prof"
        if not prof.exists():
            print(f"{p.name}: no {prof} (run the plans stage first); skipped", file=sys.stderr)
            continue
        plans = make_plans(prof, out / p.name)
        if args.choose:
            d = corpus.write_input(p, "train", out / "inputs")
            for label in PLANS:
                choose_row(p.name, label, {lay: plans[(label, lay)] for lay in LAYOUTS}, p.argv(d),
                           base_environment(p), d, p.stdin_path(d))
        if args.cachegrind:
            d = corpus.write_input(p, "train", out / "inputs")
            for label in PLANS:
                res = {lay: cachegrind(p.argv(d), plan_env(base_environment(p), plans[(label, lay)]), d, p.stdin_path(d))
                       for lay in LAYOUTS}
                a, b = res["interleave"], res["spans"]
                print(f"| {p.name} | {label} | {a['D1']:,} | {b['D1']:,} | {b['D1'] / a['D1']:.3f} | {a['LLd']:,} | "
                      f"{b['LLd']:,} | {b['LLd'] / max(1, a['LLd']):.3f} |", flush=True)
        if args.rounds:
            d = corpus.write_input(p, "measure", out / "inputs")
            found = allocator_library(args.allocator)
            lib = str(found) if found else None
            alone = base_environment(p)
            if lib:
                alone["LD_PRELOAD"] = lib
            configs = {args.allocator: alone}
            configs.update({f"{label} {lay}": plan_env(base_environment(p), plans[(label, lay)], lib)
                            for label in PLANS for lay in LAYOUTS})
            cpu_seconds(p.argv(d), alone, d, p.stdin_path(d))  # warm-up
            times = {c: [] for c in configs}
            for _ in range(args.rounds):
                for c, env in configs.items():
                    times[c].append(cpu_seconds(p.argv(d), env, d, p.stdin_path(d)))
            base = times[args.allocator]
            cells = [summary([t / b for t, b in zip(times[c], base)]) for c in configs if c != args.allocator]
            print(f"| {p.name} | {args.allocator} | {statistics.median(base):.2f} s | " + " | ".join(cells) + " |", flush=True)


def suite_rows(args: argparse.Namespace) -> None:
    dest = Path(args.suite_out)
    dest.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("HEAPLAYOUT_") and k != "LD_PRELOAD"}
    for w in load_suite():
        if args.programs and w.name not in args.programs.split(","):
            continue
        prof = dest / f"{w.name}.prof"
        if not prof.exists():
            subprocess.run([*HL, "profile", "-o", str(prof), "--", *w.argv("small")], check=True, capture_output=True)
        plans = {lay: dest / f"{w.name}.{lay}.plan" for lay in LAYOUTS}
        for lay, path in plans.items():
            subprocess.run([*HL, "plan", "--group-layout", lay, "-o", str(path), str(prof)], check=True, capture_output=True)
        if args.choose:
            choose_row(w.name, "halo", plans, w.argv("small"), base, None, None)
            continue
        res = {lay: cachegrind(w.argv("small"), plan_env(base, plans[lay]), None, None) for lay in LAYOUTS}
        a, b = res["interleave"], res["spans"]
        print(f"| {w.name} | {a['D1']:,} | {b['D1']:,} | {b['D1'] / a['D1']:.3f} | {a['LLd']:,} | {b['LLd']:,} | "
              f"{b['LLd'] / max(1, a['LLd']):.3f} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.real.group_layout", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/real", help="the corpus output directory (default build/real)")
    ap.add_argument("--programs", metavar="A,B", help="only these programs (or workloads with --suite)")
    ap.add_argument("--cachegrind", action="store_true", help="D1/LL misses on the training (suite: small) input")
    ap.add_argument("--rounds", type=int, default=0, help="interleaved CPU-time rounds on the measuring input")
    ap.add_argument("--allocator", default="glibc", help="allocator alone and underneath the plans (--rounds)")
    ap.add_argument("--choose", action="store_true",
                    help="each group's layout chosen by simulation; simulator cost and cachegrind of the three plans")
    ap.add_argument("--suite", action="store_true", help="the workload suite instead of the corpus")
    ap.add_argument("--suite-out", default="build/group-layout-suite", help="profiles and plans of --suite")
    args = ap.parse_args(argv)
    if args.choose:
        print(CHOOSE_HEADER)
    if args.suite:
        if not args.choose:
            print("| workload | D1 interleaved | D1 spans | ratio | LLd interleaved | LLd spans | ratio |\n|---|---:|---:|---:|---:|---:|---:|")
        suite_rows(args)
        return 0
    if args.cachegrind and not args.choose:
        print("| program | plan | D1 interleaved | D1 spans | ratio | LLd interleaved | LLd spans | ratio |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|")
    corpus_rows(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
