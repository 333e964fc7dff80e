#!/usr/bin/env python3
"""The profile-guided path on the whole workload suite: profile, plan, measure.

For each workload: `heaplayout profile` on its small input, `heaplayout plan` with the
halo and hds strategies, then `heaplayout bench` on the reference input (interleaved
rounds; wall time, paired ratios to glibc, output checks) and `heaplayout bench
--cachegrind` on the small input (D1 and LL misses). Writes per-workload JSON into the
output directory and prints one markdown table, with the commands, at the end.

    python3 benchmarks/run_plan_suite.py [--out DIR] [--runs 3] [--only health,cxx_dom]
    python3 benchmarks/run_plan_suite.py --report      # the tables from DIR's JSON, no runs

After the two tables it prints three derived ones: each workload against the best of the
four allocators alone, each of our configurations against the allocator underneath it
(ratio of the two medians), and issue 5's targets on the workloads built for HALO's patterns.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from heaplayout.workloads import load_suite  # noqa: E402

HL = [sys.executable, "-m", "heaplayout.cli"]


PLANS = {  # label -> `heaplayout plan` options
    "halo": ["--strategy", "halo"],
    "hds": ["--strategy", "hds"],
    "halo_rest": ["--strategy", "halo", "--rest", "callsite"],
}


def configs(out: Path, name: str) -> list[str]:
    plan = {label: out / f"{name}.{label}.plan" for label in PLANS}
    return ["glibc", "jemalloc", "mimalloc", "tcmalloc", "callsite", f"hds=plan={plan['hds']}",
            f"halo=plan={plan['halo']}", f"halo_rest=plan={plan['halo_rest']}",
            f"halo_je=plan+jemalloc={plan['halo']}", f"halo_rest_mi=plan+mimalloc={plan['halo_rest']}"]


def run(cmd: list[str], log) -> int:
    log.write("$ " + shlex.join(cmd) + "\n")
    log.flush()
    return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode


def ratio(doc: dict, label: str, key: str) -> float | None:
    for c in doc["configs"]:
        if c["label"] == label:
            if key == "wall":
                return c["ratio"]["median"]
            cg = c.get("cachegrind") or {}
            return cg.get(f"{key}_ratio" if key == "I_refs" else f"{key}_misses_ratio")
    return None


ALLOCATORS = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]
OURS = ["callsite", "hds", "halo", "halo_rest", "halo_je", "halo_rest_mi"]
UNDERNEATH = {"halo": "glibc", "halo_rest": "glibc", "halo_je": "jemalloc", "halo_rest_mi": "mimalloc"}
HALO_PATTERNS = ["halo_tokens", "health", "cxx_dom", "cxx_netsim"]  # issue 5's target workloads


def wall(doc: dict | None, label: str) -> float | None:
    if doc is None:
        return None
    return 1.0 if label == "glibc" else ratio(doc, label, "wall")


def paired_to(doc: dict | None, label: str, base: str) -> list[float] | None:
    """Per-round t(label) / t(base): both are interleaved in every round, so dividing their
    per-round ratios to glibc pairs them round by round (no ratio of two noisy medians)."""
    if doc is None:
        return None
    values = {c["label"]: c["ratio"].get("values") for c in doc["configs"]}
    mine = values.get(label)
    if not mine:
        return None
    if base == "glibc":
        return list(mine)
    theirs = values.get(base)
    if not theirs or len(theirs) != len(mine):
        return None
    return [a / b for a, b in zip(mine, theirs)]


def print_derived(rows: list) -> None:
    """The best-of-four, allocator-underneath and target tables from the measured rows."""
    print("\nAgainst the best of the four allocators alone (wall time):\n")
    print("| workload | best allocator alone | best of ours | ours / best alone | halo / best alone | halo_rest / best alone |")
    print("|---|---|---|---|---|---|")
    table = []
    for name, t, _c, _ok in rows:
        alone = [(wall(t, a), a) for a in ALLOCATORS if wall(t, a) is not None]
        ours = [(wall(t, o), o) for o in OURS if wall(t, o) is not None]
        if not alone or not ours:
            continue
        best_a, best_o = min(alone), min(ours)
        table.append((best_o[0] / best_a[0], name, best_a, best_o, t))
    for share, name, (va, a), (vo, o), t in sorted(table):
        rel = [f"{wall(t, lab) / va:.2f}" if wall(t, lab) is not None else "—" for lab in ("halo", "halo_rest")]
        print(f"| {name} | {a} {va:.3f} | {o} {vo:.3f} | **{share:.2f}** | " + " | ".join(rel) + " |")

    print("\nOurs against the allocator underneath: median [min-max] over the rounds of t(ours) / t(underneath),")
    print("both measured in the same round; a median above 1.02 in bold, and * where every round is above 1.02:\n")
    print("| workload | " + " | ".join(f"{o} / {u}" for o, u in UNDERNEATH.items()) + " |")
    print("|---|" + "---|" * len(UNDERNEATH))
    for name, t, _c, _ok in rows:
        cells = []
        for o, u in UNDERNEATH.items():
            r = paired_to(t, o, u)
            if r is None:
                cells.append("—")
                continue
            med, lo, hi = statistics.median(r), min(r), max(r)
            text = f"{med:.3f} [{lo:.2f}-{hi:.2f}]"
            cells.append((f"**{text}**" if med > 1.02 else text) + ("*" if lo > 1.02 else ""))
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nInstructions executed, small input (cachegrind, exactly repeatable), ours / the allocator underneath:\n")
    print("| workload | " + " | ".join(f"{o} / {u}" for o, u in UNDERNEATH.items()) + " |")
    print("|---|" + "---|" * len(UNDERNEATH))
    for name, _t, c, _ok in rows:
        if c is None:
            continue
        cells = []
        for o, u in UNDERNEATH.items():
            io, iu = ratio(c, o, "I_refs"), ratio(c, u, "I_refs") if u != "glibc" else 1.0
            cells.append(f"{io / iu:.3f}" if io is not None and iu else "—")
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nIssue 5 targets (better of glibc and jemalloc; target: D1 -20%, wall -10%; best plan: the best of the\n"
          "four configurations with a HALO plan, on any allocator):\n")
    print("| workload | D1, halo / better | D1, halo_rest / better | D1, best plan / better | "
          "wall, halo / better | wall, halo_rest / better | wall, best plan / better |")
    print("|---|---|---|---|---|---|---|")
    for name, t, c, _ok in rows:
        if name not in HALO_PATTERNS or t is None or c is None:
            continue
        d1_base = min(1.0, ratio(c, "jemalloc", "D1") or 1.0)
        w_base = min(1.0, wall(t, "jemalloc") or 1.0)
        cells = []
        for base, get in ((d1_base, lambda lab: ratio(c, lab, "D1")), (w_base, lambda lab: wall(t, lab))):
            cells += [f"{(get(lab) or float('nan')) / base:.3f}" for lab in ("halo", "halo_rest")]
            measured = [(get(lab), lab) for lab in UNDERNEATH if get(lab) is not None]
            v, lab = min(measured) if measured else (float("nan"), "—")
            cells.append(f"{v / base:.3f} ({lab})")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/plan-suite")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only")
    ap.add_argument("--report", action="store_true", help="print the tables from the JSON already in --out; run nothing")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    suite = load_suite()
    if args.only:
        wanted = set(args.only.split(","))
        suite = [w for w in suite if w.name in wanted]
    log = open(out / "log.txt", "a")
    rows = []
    for w in suite:
        if args.report:
            t, c = (out / f"{w.name}.time.json", out / f"{w.name}.cg.json")
            docs = [json.loads(f.read_text()) if f.exists() else None for f in (t, c)]
            rows.append((w.name, docs[0], docs[1], all(d is not None and d.get("ok") for d in docs)))
            continue
        t0 = time.time()
        exe = str(w.binary("fp"))
        prof = out / f"{w.name}.prof"
        if not prof.exists():
            run(HL + ["profile", "-o", str(prof), "--", exe, *w.args("small")], log)
        for label, opts in PLANS.items():
            run(HL + ["plan", *opts, "-o", str(out / f"{w.name}.{label}.plan"), str(prof)], log)
        cfg = ",".join(configs(out, w.name))
        timing, cache = out / f"{w.name}.time.json", out / f"{w.name}.cg.json"
        rc1 = rc2 = 0
        if not timing.exists():  # a re-run continues where an interrupted one stopped
            rc1 = run(HL + ["bench", "--runs", str(args.runs), "--config", cfg, "--json", str(timing), "--",
                            exe, *w.args("ref")], log)
        if not cache.exists():
            rc2 = run(HL + ["bench", "--runs", "1", "--warmup", "0", "--cachegrind", "--config", cfg, "--json",
                            str(cache), "--", exe, *w.args("small")], log)
        t = json.loads(timing.read_text()) if timing.exists() else None
        c = json.loads(cache.read_text()) if cache.exists() else None
        ok = all(d is not None and d.get("ok") for d in (t, c))
        rows.append((w.name, t, c, ok and rc1 == 0 and rc2 == 0))
        print(f"[plan-suite] {w.name}: {time.time() - t0:.0f}s", file=sys.stderr, flush=True)

    labels = ["jemalloc", "mimalloc", "tcmalloc", "callsite", "hds", "halo", "halo_rest", "halo_je", "halo_rest_mi"]
    runs = next((t["runs"] for _n, t, _c, _ok in rows if t is not None), args.runs)
    print(f"command: python3 benchmarks/run_plan_suite.py --out {args.out} --runs {runs}"
          + (f" --only {args.only}" if args.only else "") + (" (tables printed by --report)" if args.report else ""))
    print("Wall time: median paired ratio to glibc over the interleaved rounds (lower is faster).")

    def cell(doc, label, key):
        v = ratio(doc, label, key) if doc else None
        return f"{v:.3f}" if v is not None else "—"

    for key, title in (("wall", "wall time, reference input"), ("D1", "cachegrind D1 misses, small input")):
        print(f"\n{title}, ratio to glibc:\n")
        print("| workload | " + " | ".join(labels) + (" | output |" if key == "wall" else " |"))
        print("|---|" + "---|" * (len(labels) + (1 if key == "wall" else 0)))
        for name, t, c, ok in rows:
            doc = t if key == "wall" else c
            verdict = "not measured" if t is None else ("same" if ok else "MISMATCH")
            tail = f" | {verdict} |" if key == "wall" else " |"
            print(f"| {name} | " + " | ".join(cell(doc, lab, key) for lab in labels) + tail)
    print_derived([r for r in rows if r[1] is not None])
    return 0


if __name__ == "__main__":
    sys.exit(main())
