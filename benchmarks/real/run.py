"""Run the real-program corpus: install, generate inputs, check outputs, measure.

    python3 -m benchmarks.real.run --out build/real [--programs a,b] [--runs N]
                                   [--stage check,allocators,plans,optimize] [--force]

Stages (default: all four, in this order; inputs are always generated first):
  check       each input natively twice and under `callsite`: same normalized output and
              exit status; allocation counts from the runtime's statistics
  allocators  the measuring input under glibc, jemalloc, mimalloc, tcmalloc alone and
              `callsite` on each, in interleaved rounds (heaplayout's bench engine)
  plans       `heaplayout profile` on the training input, `heaplayout plan --strategy halo`
              (and `--rest callsite`), then the plans on glibc and on the best allocator
              alone, interleaved with both
  optimize    `heaplayout optimize` as a user runs it (its own profile, plans, race and
              decision; --optimize-budget), the recommendation against the best allocator alone
Writes OUT/<program>/{check,allocators,plans}.json, OUT/<program>/optimize/, OUT/real.json
and OUT/real.md (the tables), OUT/check.md, OUT/optimize.md. A stage whose JSON exists is reused unless --force, so an
interrupted run continues where it stopped. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.real import check, corpus, measure, optimize_stage, report  # noqa: E402

STAGES = ("check", "allocators", "plans", "optimize")


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.real.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/real", help="output directory (default build/real)")
    ap.add_argument("--programs", metavar="A,B", help="only these programs (default: the whole corpus)")
    ap.add_argument("--stage", default=",".join(STAGES), metavar="S,...",
                    help=f"comma-separated stages out of {', '.join(STAGES)} (default: all)")
    ap.add_argument("--runs", type=int, default=5, metavar="N", help="timed interleaved rounds (default 5)")
    ap.add_argument("--warmup", type=int, default=1, metavar="K", help="warm-up rounds (default 1)")
    ap.add_argument("--check-inputs", default="train,measure", metavar="I,...",
                    help="inputs the check stage runs (default train,measure)")
    ap.add_argument("--optimize-budget", type=float, default=900.0, metavar="SECONDS",
                    help="optimize stage: `heaplayout optimize --budget` per program (default 900, optimize's own)")
    ap.add_argument("--force", action="store_true", help="redo stages whose JSON already exists")
    ap.add_argument("--no-install", action="store_true", help="do not run install.sh for missing packages")
    args = ap.parse_args(argv)
    args.stages = [s for s in args.stage.split(",") if s]
    bad = [s for s in args.stages if s not in STAGES]
    if bad:
        ap.error(f"unknown stage(s) {', '.join(bad)}; choose from {', '.join(STAGES)}")
    args.inputs = [i for i in args.check_inputs.split(",") if i]
    if any(i not in corpus.INPUTS for i in args.inputs):
        ap.error(f"--check-inputs takes {', '.join(corpus.INPUTS)}")
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be >= 1 and --warmup >= 0")
    return args


def load_json(path: Path) -> dict | list | None:
    return json.loads(path.read_text()) if path.exists() else None


def stage_check(p: corpus.Program, dirs: dict[str, Path], dest: Path, inputs: list[str], force: bool) -> list[dict]:
    path = dest / "check.json"
    old = load_json(path) if not force else None
    have = {c["input"]: c for c in old or []}
    for which in inputs:
        if which not in have:
            have[which] = check.to_json([check.check_input(p, which, dirs[which], say)])[0]
            measure.write_json(path, [have[i] for i in corpus.INPUTS if i in have])  # type: ignore[arg-type]
        c = have[which]
        state = "ok" if c["ok"] else "FAILED: " + "; ".join(c["problems"])
        say(f"[real] check {p.name} {which}: {state}; allocations {c['allocations']}")
    return [have[i] for i in corpus.INPUTS if i in have]


def stage_allocators(p: corpus.Program, dirs: dict[str, Path], dest: Path, args: argparse.Namespace) -> dict | None:
    path = dest / "allocators.json"
    if path.exists() and not args.force:
        return load_json(path)  # type: ignore[return-value]
    say(f"[real] {p.name}: allocators and callsite, {args.runs} rounds")
    doc = measure.run_configs(p, dirs["measure"], measure.allocator_configs(), dest / "tmp", args.runs,
                              args.warmup, say)
    measure.write_json(path, doc)
    return doc


def stage_plans(p: corpus.Program, dirs: dict[str, Path], dest: Path, best: str, args: argparse.Namespace,
                failures: list[str]) -> dict | None:
    path = dest / "plans.json"
    if path.exists() and not args.force and load_json(path).get("best_allocator") == best:  # type: ignore[union-attr]
        return load_json(path)  # type: ignore[return-value]
    prof, log = dest / "train.prof", dest / "profile-plan.log"
    if not prof.exists() or args.force:
        prof.unlink(missing_ok=True)
        t0 = time.monotonic()
        problem = measure.profile(p, dirs["train"], prof, log, say)
        if problem:
            failures.append(problem)
            return None
        say(f"[real] {p.name}: profiled in {time.monotonic() - t0:.0f}s")
    plans, plan_failures = measure.make_plans(p, prof, dest, log, say)
    failures += plan_failures
    if not plans:
        return None
    say(f"[real] {p.name}: plans on glibc and {best}, {args.runs} rounds")
    doc = measure.run_configs(p, dirs["measure"], measure.plan_configs(best, plans), dest / "tmp", args.runs,
                              args.warmup, say)
    doc["best_allocator"] = best
    measure.write_json(path, doc)
    return doc


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out).resolve()
    try:
        programs = corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None)
    except ValueError as err:  # a malformed manifest or an unknown program name
        say(f"[real] {err}")
        return 2
    if not args.no_install:
        subprocess.run([str(Path(__file__).with_name("install.sh"))], check=True)
    command = "python3 -m benchmarks.real.run " + shlex.join(argv if argv is not None else sys.argv[1:])
    rows, checks, bad = [], [], 0
    opt_rows: list[dict] = []
    benches: list[dict | None] = []  # every bench document shown, for the rounds they used
    for p in programs:
        t0 = time.monotonic()
        dest = out / p.name
        dirs = {which: corpus.write_input(p, which, out / "inputs") for which in corpus.INPUTS}
        failures: list[str] = []
        checked = stage_check(p, dirs, dest, args.inputs, args.force) if "check" in args.stages \
            else load_json(dest / "check.json") or []
        checks += checked
        alloc_doc = stage_allocators(p, dirs, dest, args) if "allocators" in args.stages \
            else load_json(dest / "allocators.json")
        best = measure.best_allocator(alloc_doc) if alloc_doc else None  # type: ignore[arg-type]
        plan_doc = None
        if "plans" in args.stages:
            if best is None:
                failures.append("plans need the allocators stage first (to know the best allocator)")
            else:
                plan_doc = stage_plans(p, dirs, dest, best, args, failures)
        else:
            plan_doc = load_json(dest / "plans.json")  # type: ignore[assignment]
        if "optimize" in args.stages:
            opt_doc = optimize_stage.stage_optimize(p, dirs, dest, args.optimize_budget, args.force, say, failures)
        else:
            opt_doc = load_json(dest / "optimize" / "optimize.json")  # type: ignore[assignment]
        if opt_doc is not None or "optimize" in args.stages:
            opt_rows.append(optimize_stage.summary_row(p.name, opt_doc))  # type: ignore[arg-type]
        benches += [alloc_doc, plan_doc]  # type: ignore[list-item]
        row = report.program_summary(p.name, checked, alloc_doc, plan_doc, best, failures)  # type: ignore[arg-type]
        rows.append(row)
        if failures or row["check_ok"] is False or "MISMATCH" in row.get("allocators_output", "") \
                or "MISMATCH" in row.get("plans_output", ""):
            bad += 1
        say(f"[real] {p.name}: done in {time.monotonic() - t0:.0f}s")
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    rounds = sorted({(d["runs"], d["warmup"]) for d in benches if d})
    measured = ", ".join(f"{r} interleaved rounds after {w} warm-up" for r, w in rounds) or "nothing timed"
    note = f"Benches: {measured}; load average at the end {' '.join(load)} (a shared 2-core machine)."
    measure.write_json(out / "real.json", {"schema": "heaplayout-real-corpus/1", "command": command,
                                           "runs": args.runs, "warmup": args.warmup, "programs": rows})
    (out / "real.md").write_text(report.markdown(rows, command, note))
    (out / "check.md").write_text(report.check_markdown(checks))
    print(report.markdown(rows, command, note))
    if checks:
        print(report.check_markdown(checks))
    if opt_rows:
        text = f"Command: `{command}`\n\n" + optimize_stage.markdown(opt_rows)
        (out / "optimize.md").write_text(text)
        print(text)
    say(f"[real] wrote {out / 'real.md'}, {out / 'real.json'}, {out / 'check.md'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
