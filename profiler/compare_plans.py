#!/usr/bin/env python3
"""Do a sampled profile and a full one give the same plan? (issue 24)

    python3 profiler/compare_plans.py FULL.prof SAMPLED.prof [--strategy halo] [--hot 0.9]
    python3 profiler/compare_plans.py --dir DIR --full full --sampled sample100k
        (every DIR/<program>.full.prof against DIR/<program>.sample100k.prof, as bench_scale.py --keep writes them)

Plans both profiles with `heaplayout plan` (its --json output), matches contexts by their
frames, and compares the groups on the hot contexts: the full plan's grouped contexts,
hottest first by the full profile's accesses, until they hold --hot of its grouped accesses.
Reported:
  group Jaccard:    per hot context, |F & S| / |F | S| of its group's hot members in the full
                    (F) and the sampled (S) plan, weighted by accesses (1 when both leave it
                    ungrouped, 0 when only one does); 1.0 = the same groups;
  pair agreement:   over all pairs of hot contexts, the access-weighted share on which the
                    plans agree (together or apart), a weighted Rand index;
  grouped share:    the full profile's accesses that each plan groups.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from itertools import combinations
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def plan_groups(profile: str, strategy: str, extra: list[str]) -> tuple[dict[tuple, int], dict]:
    """context frames -> group id, and the plan's JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "plan.json"
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run([sys.executable, "-m", "heaplayout.cli", "plan", profile, "--strategy", strategy,
                            "-o", str(Path(tmp) / "p.plan"), "--json", str(js), *extra],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise SystemExit(f"plan failed on {profile}: {r.stderr[-800:]}")
        doc = json.loads(js.read_text())
    member = {}
    for g in doc.get("groups", []):
        for m in g["members"]:
            member[tuple(m["frames"])] = g["id"]
    return member, doc


def context_accesses(doc: dict) -> dict[tuple, int]:
    return {tuple(m["frames"]): m["accesses"] for g in doc.get("groups", []) for m in g["members"]}


def compare(full: str, sampled: str, strategy: str = "halo", hot: float = 0.9, extra: list[str] | None = None) -> dict:
    gf, df = plan_groups(full, strategy, extra or [])
    gs, ds = plan_groups(sampled, strategy, extra or [])
    acc = context_accesses(df)
    total = sum(acc.values())
    ranked = sorted(acc, key=acc.get, reverse=True)
    hot_set, run = [], 0
    for k in ranked:
        if total and run >= hot * total:
            break
        hot_set.append(k)
        run += acc[k]
    def partners(groups: dict[tuple, int], k: tuple) -> frozenset:
        g = groups.get(k)
        return frozenset(o for o in hot_set if o != k and g is not None and groups.get(o) == g)
    def jaccard(k: tuple) -> float:
        if (k in gf) != (k in gs):
            return 0.0
        if k not in gf:
            return 1.0
        f, s_ = partners(gf, k) | {k}, partners(gs, k) | {k}
        return len(f & s_) / len(f | s_)
    same = sum(acc[k] * jaccard(k) for k in hot_set)
    agree = weight = 0.0
    for a, b in combinations(hot_set, 2):
        w = acc[a] + acc[b]
        tf = a in gf and gf.get(a) == gf.get(b)
        ts = a in gs and gs.get(a) == gs.get(b)
        weight += w
        agree += w * (tf == ts)
    heap_full = df.get("heap_accesses") or 1
    sampled_grouped = sum(m["accesses"] for g in ds.get("groups", []) for m in g["members"])
    return {
        "hot_contexts": len(hot_set),
        "groups_full": len(df.get("groups", [])),
        "groups_sampled": len(ds.get("groups", [])),
        "group_jaccard": same / run if run else 1.0,
        "pair_agreement": agree / weight if weight else 1.0,
        "grouped_share_full": total / heap_full,
        "grouped_share_sampled": sampled_grouped / (ds.get("heap_accesses") or 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("full", nargs="?")
    ap.add_argument("sampled", nargs="?")
    ap.add_argument("--dir", help="compare every pair of profiles in DIR (names <program>.<config>.prof)")
    ap.add_argument("--full-config", default="full")
    ap.add_argument("--sampled-config", default="sample")
    ap.add_argument("--strategy", default="halo")
    ap.add_argument("--hot", type=float, default=0.9, help="share of the full plan's grouped accesses (default 0.9)")
    ap.add_argument("--plan-opt", action="append", default=[],
                    help="extra `heaplayout plan` option for both plans, e.g. --plan-opt=--shape-merge=0")
    args = ap.parse_args()
    pairs = [(args.full, args.full, args.sampled)] if not args.dir else [
        (f.name[:-len(f".{args.full_config}.prof")], str(f),
         str(f).replace(f".{args.full_config}.prof", f".{args.sampled_config}.prof"))
        for f in sorted(Path(args.dir).glob(f"*.{args.full_config}.prof"))]
    if args.dir:
        print("| program | hot contexts | groups full / sampled | group Jaccard | pair agreement | grouped share full / sampled |")
        print("|---|---:|---:|---:|---:|---:|")
    for name, full, sampled in pairs:
        if not Path(sampled).exists():
            continue
        try:
            r = compare(full, sampled, args.strategy, args.hot, args.plan_opt)
        except SystemExit as err:
            if not args.dir:
                raise
            print(f"| {name} | {err} |")
            continue
        if not args.dir:
            print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
        else:
            print(f"| {name} | {r['hot_contexts']} | {r['groups_full']} / {r['groups_sampled']} | "
                  f"{r['group_jaccard']:.3f} | {r['pair_agreement']:.3f} | "
                  f"{r['grouped_share_full']:.3f} / {r['grouped_share_sampled']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
