#!/usr/bin/env python3
"""Merged short runs against one long run (issue 24): do k profiles merged with
`heaplayout profile merge` plan like one profile of an input k times longer?

    python3 profiler/bench_merge.py --program lua5.4 --scale rounds --k 4 --dir DIR [--rounds 7]

The short input is the program's training input; the long one is the same generator, seed
and parameters with the parameters named by --scale multiplied by k (a generator whose work
grows with them: lua's `rounds`; sqlite3's `rounds,orders`, k times the rounds of the same
size, on a table that grows k times). The short input is profiled k times (separate
runs), the k profiles merged, and the long input profiled once; both are planned with
`heaplayout plan --strategy halo` and compared with compare_plans.py (the long run's plan
in the role of the full one). With --rounds N > 0 both plans and the allocator alone are
then run on the measuring input in N interleaved rounds (CPU and wall time ratios, outputs
checked), as bench_sampled_plans.py does.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_sampled_plans import HL, base_env, plan, plan_env, profile, summary, timed_run  # noqa: E402
from compare_plans import compare  # noqa: E402
from benchmarks.real import corpus, generators  # noqa: E402
from benchmarks.real.outputs import file_digest  # noqa: E402


def write_scaled(p: corpus.Program, scale: str, k: int, dest: Path) -> Path:
    params = dict(p.train.params)
    for name in scale.split(","):
        if name not in params:
            raise SystemExit(f"{p.name}: the training input has no parameter {name!r} ({', '.join(params)})")
        params[name] = params[name] * k
    dest.mkdir(parents=True, exist_ok=True)
    for name, content in generators.load(p.generator)(params, random.Random(p.train.seed)).items():
        (dest / name).write_bytes(content)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--program", required=True)
    ap.add_argument("--scale", required=True, help="the generator parameters (comma-separated) that set the run's length")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rounds", type=int, default=0, help="timed rounds on the measuring input (0: none)")
    ap.add_argument("--floor", action="store_true", help="profile the long input twice (the noise floor)")
    ap.add_argument("--profile-opt", action="append", default=[], help="extra `heaplayout profile` option")
    args = ap.parse_args()
    root = Path(args.dir)
    (p,) = corpus.select(corpus.load_corpus(), [args.program])
    short = corpus.write_input(p, "train", root / "inputs")
    long_ = write_scaled(p, args.scale, args.k, root / "inputs" / p.name / f"train_x{args.k}")
    w = root / p.name
    w.mkdir(parents=True, exist_ok=True)
    shorts = []
    for i in range(args.k):
        prof = w / f"short{i}.prof"
        profile(p, short, prof, args.profile_opt)
        shorts.append(str(prof))
    merged = w / "merged.prof"
    subprocess.run([*HL, "profile", "merge", *shorts, "-o", str(merged)], check=True, stdout=subprocess.DEVNULL)
    longp = w / "long.prof"
    profile(p, long_, longp, args.profile_opt)
    if args.floor:   # a second long run: how much two profiles of one input differ
        profile(p, long_, w / "long2.prof", args.profile_opt)
    for name in ("merged", "long", "short0"):
        plan(w / f"{name}.prof", w / f"{name}.plan")
    print(f"# load average: {os.getloadavg()[0]:.2f}", flush=True)
    for name in ("merged", "short0", *(("long2",) if args.floor else ())):
        r = compare(str(longp), str(w / f"{name}.prof"))
        print(f"{p.name}: long (x{args.k}) against {name}: Jaccard {r['group_jaccard']:.3f}, pairs "
              f"{r['pair_agreement']:.3f}, groups {r['groups_full']}/{r['groups_sampled']}, hot contexts "
              f"{r['hot_contexts']}", flush=True)
    if args.rounds <= 0:
        return 0
    measure = corpus.write_input(p, "measure", root / "inputs")
    plans = {"alone": None, "long": w / "long.plan", "merged": w / "merged.plan"}
    envs = {k: plan_env(p, v) for k, v in plans.items()}
    digest = file_digest(p.normalize)
    cpu = {k: [] for k in plans}
    wall = {k: [] for k in plans}
    ref, failed = None, []
    for rnd in range(args.rounds + 1):
        for label in plans:
            out = w / f"out.{label}"
            c, t, rc = timed_run(p, measure, envs[label], out)
            h = (rc, digest(out))
            ref = ref or h
            if h != ref:
                failed.append(f"{label} round {rnd}")
            if rnd:
                cpu[label].append(c)
                wall[label].append(t)
    for kind, d in (("cpu", cpu), ("wall", wall)):
        ratios = {k: [a / b for a, b in zip(d[k], d["alone"])] for k in ("long", "merged")}
        mf = [a / b for a, b in zip(d["merged"], d["long"])]
        print(f"  {kind:4} alone {summary(d['alone'])} s; long/alone {summary(ratios['long'])}  "
              f"merged/alone {summary(ratios['merged'])}  merged/long {summary(mf)}", flush=True)
    print(f"# load average at end: {os.getloadavg()[0]:.2f}; outputs {'DIFFER: ' + str(failed) if failed else 'identical'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
