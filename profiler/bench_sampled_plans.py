#!/usr/bin/env python3
"""Do plans made from sampled profiles perform like plans made from full ones? (issue 24)

    python3 profiler/bench_sampled_plans.py --corpus lua5.4,sqlite3,jq,xsltproc --rounds 7 --dir DIR

Per corpus program: `heaplayout profile` of the training input in full and with --sample,
`heaplayout plan --strategy halo` from each, the plans' agreement (compare_plans.py), then the
measuring input run in interleaved rounds (allocator alone, full plan, sampled plan, then
again). Every run's stdout (normalized as the corpus does) must equal the allocator's, or the
program is reported as failed. Reported per configuration: the median [min-max] over rounds
of the paired ratio of CPU time (user+sys of the program, from wait4) or of wall time, to the
allocator alone, and the sampled plan against the full plan. CPU time is what to read when
the machine is loaded (a waiting process accrues wall time, not CPU time).

`--sample-opt` passes extra `heaplayout profile` options to the sampled profile only
(e.g. --sample-opt=--sample-window=10000).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from compare_plans import compare  # noqa: E402
from benchmarks.real import corpus  # noqa: E402
from benchmarks.real.outputs import file_digest  # noqa: E402

HL = [sys.executable, "-m", "heaplayout.cli"]


def base_env(p: corpus.Program) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HEAPLAYOUT_")}
    if "HEAPLAYOUT_BUILD_DIR" in os.environ:
        env["HEAPLAYOUT_BUILD_DIR"] = os.environ["HEAPLAYOUT_BUILD_DIR"]
    env.update(p.env)
    return env


def profile(p: corpus.Program, d: Path, out: Path, opts: list[str]) -> None:
    stdin = p.stdin_path(d)
    cmd = [*HL, "profile", "-o", str(out), "--force", *opts, "--", *p.argv(d)]
    with open(stdin or os.devnull, "rb") as sin:
        r = subprocess.run(cmd, stdin=sin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=base_env(p), cwd=d)
    if not out.exists():
        raise SystemExit(f"{p.name}: profile failed ({r.returncode}): {r.stderr[-500:].decode(errors='replace')}")


def plan(prof: Path, out: Path) -> None:
    r = subprocess.run([*HL, "plan", "--strategy", "halo", "-o", str(out), str(prof)], capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        raise SystemExit(f"plan failed on {prof}: {r.stderr[-500:]}")


def plan_env(p: corpus.Program, plan_path: Path | None) -> dict[str, str]:
    """The environment `heaplayout run --plan` would give the program (none: allocator alone)."""
    env = base_env(p)
    if plan_path is None:
        return env
    r = subprocess.run([*HL, "run", "--plan", str(plan_path), "--print-env", "--", p.exe],
                       capture_output=True, text=True, env=env, check=True)
    for line in r.stdout.splitlines():
        k, _, v = line.partition("=")
        env[k] = v
    return env


def timed_run(p: corpus.Program, d: Path, env: dict[str, str], out: Path) -> tuple[float, float, int]:
    """(cpu s, wall s, exit code) of one run; stdout to `out`."""
    stdin = p.stdin_path(d)
    with open(stdin or os.devnull, "rb") as sin, open(out, "wb") as so:
        t0 = time.perf_counter()
        proc = subprocess.Popen(p.argv(d), stdin=sin, stdout=so, stderr=subprocess.DEVNULL, env=env, cwd=d)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    return ru.ru_utime + ru.ru_stime, wall, os.waitstatus_to_exitcode(status)


def summary(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} [{min(xs):.3f}-{max(xs):.3f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="corpus programs, comma-separated")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--dir", required=True, help="inputs, profiles, plans and outputs go here")
    ap.add_argument("--sample-opt", action="append", default=[], help="extra option for the sampled profile")
    ap.add_argument("--reuse", action="store_true", help="keep profiles and plans already in DIR")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    results = []
    load = os.getloadavg()
    print(f"# load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    for p in corpus.select(corpus.load_corpus(), args.corpus.split(",")):
        train = corpus.write_input(p, "train", root / "inputs")
        measure = corpus.write_input(p, "measure", root / "inputs")
        w = root / p.name
        w.mkdir(exist_ok=True)
        plans: dict[str, Path | None] = {"alone": None}
        for label, opts in (("full", []), ("sampled", ["--sample", *args.sample_opt])):
            prof, pl = w / f"{label}.prof", w / f"{label}.plan"
            if not (args.reuse and pl.exists()):
                profile(p, train, prof, opts)
                plan(prof, pl)
            plans[label] = pl
        agreement = compare(str(w / "full.prof"), str(w / "sampled.prof"))
        envs = {label: plan_env(p, pl) for label, pl in plans.items()}
        digest = file_digest(p.normalize)
        cpu: dict[str, list[float]] = {k: [] for k in plans}
        wall: dict[str, list[float]] = {k: [] for k in plans}
        failed = []
        ref = None
        for rnd in range(args.rounds + 1):   # round 0 warms the page cache, untimed
            for label in plans:
                out = w / f"out.{label}"
                c, t, rc = timed_run(p, measure, envs[label], out)
                h = (rc, digest(out))
                if ref is None:
                    ref = h
                elif h != ref:
                    failed.append(f"{label} round {rnd}: exit {rc}, output differs" if rc == ref[0] else f"{label}: exit {rc}")
                if rnd:
                    cpu[label].append(c)
                    wall[label].append(t)
        row = {"program": p.name, "agreement": agreement, "failed": failed,
               "cpu": cpu, "wall": wall, "load_end": os.getloadavg()[0]}
        results.append(row)
        rc = {k: [a / b for a, b in zip(cpu[k], cpu["alone"])] for k in ("full", "sampled")}
        rw = {k: [a / b for a, b in zip(wall[k], wall["alone"])] for k in ("full", "sampled")}
        sf_c = [a / b for a, b in zip(cpu["sampled"], cpu["full"])]
        sf_w = [a / b for a, b in zip(wall["sampled"], wall["full"])]
        print(f"{p.name}: alone cpu {summary(cpu['alone'])} s, wall {summary(wall['alone'])} s; "
              f"Jaccard {agreement['group_jaccard']:.3f}, pairs {agreement['pair_agreement']:.3f}, "
              f"groups {agreement['groups_full']}/{agreement['groups_sampled']}", flush=True)
        print(f"  cpu  full/alone {summary(rc['full'])}  sampled/alone {summary(rc['sampled'])}  "
              f"sampled/full {summary(sf_c)}", flush=True)
        print(f"  wall full/alone {summary(rw['full'])}  sampled/alone {summary(rw['sampled'])}  "
              f"sampled/full {summary(sf_w)}", flush=True)
        if failed:
            print(f"  OUTPUT CHECK FAILED: {failed[:3]}", flush=True)
    load = os.getloadavg()
    print(f"# load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
