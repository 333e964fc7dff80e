#!/usr/bin/env python3
"""Does hlsim's time estimate see what makes one heap layout faster than another natively?
(issue 26)

For each program (the workload suite, and with --corpus the real-program corpus on its
training inputs) and each layout — the allocators (glibc, jemalloc, mimalloc, tcmalloc),
libhlperturb's placements (order, random over 4 arenas, shuffled within pages, per size
class) and, with --halo, a HALO plan from a profile of the same run — it measures the native
CPU time (user + sys, median of --rounds interleaved rounds; `uptime` load noted) and
simulates the same run under each model variant (one hlsim run per layout and variant).
Over every pair of layouts of a program whose native times differ by at least --min-diff
(5%), it counts how often the estimate orders the pair as the native time does, and the error
of the estimate's log ratio against the native log ratio.

    python3 simulator/wallcheck.py [--rounds 7] [--variants sum,hw] [--corpus] [--json raw.json] [NAME ..]
    python3 simulator/wallcheck.py --from-json raw.json     # the report again, nothing run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from heaplayout.simulate import SimOptions, perturb_env, run_simulation, valgrind_env  # noqa: E402
from heaplayout.workloads import load_suite  # noqa: E402

ALLOCATORS = ("glibc", "jemalloc", "mimalloc", "tcmalloc")
PERTURBATIONS = {"order": "order", "random4": "random", "shuffle": "shuffle", "sizeclass": "sizeclass"}
# model variants: name -> tool model options (SimOptions.model)
VARIANTS: dict[str, dict[str, str]] = {
    "sum": {},  # the estimate before issue 26: exposed latency sum + instructions
    "hw": {"hw": "yes"},  # every native-time part: core timing, L2 prefetchers, DRAM rows, cached walks, IP-stride
    "hw-nodeps": {"hw": "yes", "deps": "none"},  # the same with every miss independent (MLP only)
    "hw-serial": {"hw": "yes", "deps": "all"},  # the same with every load miss serialized
    "mlp-only": {"timing": "mlp"},  # the core timing alone, no prefetcher, no DRAM rows, fixed walks
}


class Target:
    """One program run: its command line, stdin, extra environment, and whether perturbations
    reuse freed blocks."""

    def __init__(self, name: str, argv: list[str], stdin: Path | None = None, reuse: bool = False,
                 env: dict[str, str] | None = None):
        self.name, self.argv, self.stdin, self.reuse = name, argv, stdin, reuse
        self.env = dict(env or {})


def layout_env(layout: str, reuse: bool, plan: Path | None) -> tuple[SimOptions, dict[str, str]]:
    """The simulator options and the extra client environment of a layout."""
    if layout in ALLOCATORS:
        return SimOptions(allocator=layout), {}
    if layout in PERTURBATIONS:
        env = perturb_env(PERTURBATIONS[layout], arenas=4, reuse=reuse)
        return SimOptions(allocator=env.pop("LD_PRELOAD")), env
    if layout == "halo" and plan:
        return SimOptions(policy="plan", plan=str(plan)), {}
    raise ValueError(f"no layout {layout}")


def native_env(opts: SimOptions, extra: dict[str, str], argv: list[str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HLPERTURB")}
    env, _ = valgrind_env(opts.client_env(), argv, base)
    env.update(extra)
    return env


def cpu_run(argv: list[str], env: dict[str, str], stdin: Path | None) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one run."""
    inp = open(stdin, "rb") if stdin else subprocess.DEVNULL
    try:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = 0
        wall = time.perf_counter() - t
    finally:
        if stdin:
            inp.close()
    if status != 0:
        raise RuntimeError(f"{argv[0]} failed natively (status {status})")
    return wall, ru.ru_utime + ru.ru_stime


def load() -> float:
    return os.getloadavg()[0]


def collect_target(t: Target, layouts: list[str], variants: list[str], rounds: int, seed: int,
                   prior: dict | None = None) -> dict:
    """Simulate `variants` and time `rounds` interleaved native rounds; with `prior` (this
    target's entry of an earlier run) keep its native times and its other variants."""
    out: dict = {"argv": t.argv, "layouts": {}}
    with tempfile.TemporaryDirectory(prefix="hlwall.") as tmpd:
        plan = None
        if "halo" in layouts:
            from predict import make_plans
            plan, _ = make_plans(t.argv, Path(tmpd), seed)
        setups = {}
        for lay in layouts:
            try:
                opts, extra = layout_env(lay, t.reuse, plan)
            except ValueError:
                continue
            setups[lay] = (opts, {**t.env, **extra})
        if prior:
            setups = {lay: st for lay, st in setups.items() if lay in prior["layouts"]}
        for lay, (opts, extra) in setups.items():
            row = out["layouts"].setdefault(lay, {"cpu": [], "wall": [], "sim": {}})
            if prior:
                old = prior["layouts"][lay]
                row.update(cpu=list(old["cpu"]), wall=list(old["wall"]), sim=dict(old["sim"]))
            for v in variants:
                saved = {k: os.environ.get(k) for k in extra}
                os.environ.update(extra)  # run_simulation passes our environment to the client
                try:
                    r = run_simulation(t.argv, replace(opts, model=dict(VARIANTS[v])),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=t.stdin)
                finally:
                    for k, val in saved.items():
                        if val is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = val
                row["sim"][v] = {"estimate": r["estimate"], "instructions": r["instructions"],
                                 "misses": [lv["misses"] for lv in r["levels"]],
                                 "dtlb": r["tlb"][0]["misses"] if r["tlb"] else 0, "timing": r.get("timing")}
        if prior:
            out["load_before"], out["load_after"] = prior["load_before"], prior["load_after"]
            return out
        out["load_before"] = load()
        for _ in range(rounds):
            for lay, (opts, extra) in setups.items():
                wall, cpu = cpu_run(t.argv, native_env(opts, extra, t.argv), t.stdin)
                out["layouts"][lay]["wall"].append(wall)
                out["layouts"][lay]["cpu"].append(cpu)
        out["load_after"] = load()
    return out


def pairs(rows: dict, variant: str, min_diff: float) -> tuple[int, int, list[float], list[str]]:
    """Concordant and resolved pairs, the log-ratio errors, and the discordant pairs as text."""
    names = [n for n in rows if variant in rows[n]["sim"] and rows[n]["cpu"]]
    ok = total = 0
    errs: list[float] = []
    wrong: list[str] = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            na, nb = statistics.median(rows[a]["cpu"]), statistics.median(rows[b]["cpu"])
            ea, eb = rows[a]["sim"][variant]["estimate"], rows[b]["sim"][variant]["estimate"]
            if min(na, nb) <= 0 or min(ea, eb) <= 0:
                continue
            errs.append(abs(math.log(ea / eb) - math.log(na / nb)))
            if abs(na - nb) / min(na, nb) < min_diff:
                continue
            total += 1
            if (na < nb) == (ea < eb):
                ok += 1
            else:
                fast, slow = (a, b) if na < nb else (b, a)
                wrong.append(f"{fast} < {slow} ({min(na, nb) / max(na, nb):.2f}x) est "
                             f"{rows[fast]['sim'][variant]['estimate'] / rows[slow]['sim'][variant]['estimate']:.2f}x")
    return ok, total, errs, wrong


def report(data: dict, min_diff: float) -> None:
    variants = data["variants"]
    print(f"native: median CPU time (user+sys) of {data['rounds']} interleaved rounds; pairs resolved when the "
          f"medians differ by >= {100 * min_diff:.0f}%; log error = |ln(est ratio) - ln(native ratio)| over all pairs")
    totals = {v: [0, 0, []] for v in variants}
    for name, t in data["targets"].items():
        rows = t["layouts"]
        print(f"\n### {name} (load {t['load_before']:.1f} -> {t['load_after']:.1f})\n")
        print("| layout | CPU s (median) | " + " | ".join(f"{v} estimate" for v in variants) + " |")
        print("|---|---:|" + "---:|" * len(variants))
        base = rows.get("order") or next(iter(rows.values()))
        for lay, r in rows.items():
            cells = []
            for v in variants:
                e, e0 = r["sim"][v]["estimate"], base["sim"][v]["estimate"]
                cells.append(f"{e:,} ({e / e0:.2f}x)")
            print(f"| {lay} | {statistics.median(r['cpu']):.4f} ({statistics.median(r['cpu']) / statistics.median(base['cpu']):.2f}x) | "
                  + " | ".join(cells) + " |")
        for v in variants:
            ok, total, errs, wrong = pairs(rows, v, min_diff)
            totals[v][0] += ok
            totals[v][1] += total
            totals[v][2] += errs
            print(f"\n{v}: {ok}/{total} resolved pairs ordered as native; median log error "
                  f"{statistics.median(errs) if errs else float('nan'):.3f}" + "".join(f"\n- wrong: {w}" for w in wrong))
    print("\n| variant | resolved pairs ordered as native | median log-ratio error | mean |")
    print("|---|---:|---:|---:|")
    for v in variants:
        ok, total, errs = totals[v]
        print(f"| {v} | {ok}/{total} ({100 * ok / max(1, total):.0f}%) | "
              f"{statistics.median(errs) if errs else float('nan'):.3f} | {statistics.mean(errs) if errs else float('nan'):.3f} |")


def targets(args: argparse.Namespace) -> list[Target]:
    out = [Target(w.name, w.argv(args.input)) for w in load_suite() if not args.names or w.name in args.names]
    if args.corpus:
        from benchmarks.real.corpus import load_corpus, write_input
        root = Path(tempfile.mkdtemp(prefix="hlwall-corpus."))
        for p in load_corpus():
            if args.names and p.name not in args.names:
                continue
            if p.threads > 1:
                continue  # one execution of several under Valgrind; not comparable run to run
            d = write_input(p, "train", root)
            out.append(Target(p.name, p.argv(d), p.stdin_path(d), reuse=True, env=p.env))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--input", default="small")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--variants", default="sum,hw")
    ap.add_argument("--layouts", default=",".join([*ALLOCATORS, *PERTURBATIONS]))
    ap.add_argument("--halo", action="store_true", help="add a HALO plan (profile + plan of the same run)")
    ap.add_argument("--corpus", action="store_true", help="add the real-program corpus (training inputs)")
    ap.add_argument("--min-diff", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--native-from", metavar="JSON",
                    help="keep the native times (and other variants) of an earlier --json run; simulate only "
                    "--variants (for a changed model against the same measurements)")
    ap.add_argument("--from-json")
    args = ap.parse_args()
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
    else:
        variants = args.variants.split(",")
        layouts = args.layouts.split(",") + (["halo"] if args.halo else [])
        data = {"rounds": args.rounds, "variants": variants, "targets": {}}
        prior = json.loads(Path(args.native_from).read_text()) if args.native_from else None
        if prior:
            data["rounds"] = prior["rounds"]
            data["variants"] = list(dict.fromkeys(prior["variants"] + variants))
        for t in targets(args):
            if prior and t.name not in prior["targets"]:
                continue
            print(f"{t.name} ...", file=sys.stderr, flush=True)
            try:
                data["targets"][t.name] = collect_target(t, layouts, variants, args.rounds, args.seed,
                                                         prior["targets"][t.name] if prior else None)
            except (RuntimeError, OSError) as err:
                print(f"{t.name}: skipped: {err}", file=sys.stderr)
            if args.json:
                Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    report(data, args.min_diff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
