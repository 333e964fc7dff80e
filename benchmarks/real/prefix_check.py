"""PreFix on programs nobody here wrote: is it safe, and what does it place? For each program
with a training profile (OUT/<program>/train.prof, from the plans stage), plan the PreFix
variants (prefix:hot, prefix:hds, prefix:hds+hot, and prefix:hds+hot with HALO for the
rest), run the training and the measuring input once under each plan (glibc underneath, the
runtime's statistics on) and once natively, and report per plan and input: the output check
(normalized stdout and exit status against the native run), the region's size, the slots,
the objects that took a slot, the refusals, the counters cut off, and the planning time.

    python3 -m benchmarks.real.prefix_check --out build/real [--programs a,b]

The measuring input is another input than the plan was made from, as a user's next run is
(issue 22: a different input must never change output or crash). Counts, not times: one
run per input and plan. Writes OUT/prefix.json and OUT/prefix.md; exit status 1 when any
output differs or a run fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.real import corpus  # noqa: E402
from benchmarks.real.check import base_environment, run_program  # noqa: E402
from benchmarks.real.measure import HL  # noqa: E402
from benchmarks.real.profiled import arguments, profiled_programs  # noqa: E402
from benchmarks.real.outputs import first_difference, normalizer  # noqa: E402
from heaplayout.runtime_env import RuntimeConfig, for_program, runtime_env  # noqa: E402

VARIANTS = {
    "prefix:hot": ["--strategy", "prefix:hot"],
    "prefix:hds": ["--strategy", "prefix:hds"],
    "prefix:hds+hot": ["--strategy", "prefix:hds+hot"],
    "prefix:hds+hot, rest halo": ["--strategy", "prefix:hds+hot", "--prefix-rest", "halo"],
    # walk budget 0: objects numbered per call site (the paper's context), HALO's groups by
    # call site alone; the runtime never walks the stack (docs/prefix.md, "By call site")
    "prefix:hds+hot by site, rest halo-site": ["--strategy", "prefix:hds+hot", "--prefix-rest", "halo",
                                                "--walk-budget", "0"],
}
PREFIX_KEYS = ("region_bytes", "slots", "taken", "refused_site", "refused_size", "refused_busy", "refused_thread",
               "counters_cut")


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_plan(prof: Path, path: Path, opts: list[str]) -> tuple[Path | None, float, str]:
    t0 = time.monotonic()
    r = subprocess.run([*HL, "plan", *opts, "-o", str(path), str(prof)], capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if r.returncode != 0 or not path.exists():
        return None, seconds, (r.stderr.strip().splitlines() or ["no message"])[-1][:300]
    return path, seconds, ""


def plan_run(p: corpus.Program, input_dir: Path, plan: Path, reference: tuple[int, bytes]) -> dict:
    """One run under the plan: its output check and the runtime's PreFix statistics."""
    normalize = normalizer(p.normalize)
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        extra = runtime_env(RuntimeConfig(policy="plan", allocator="glibc", plan=str(plan), stats_json=str(stats)))
        env = {**base_environment(p), **for_program(extra, p.exe)}
        try:
            seconds, code, out, err = run_program(p, input_dir, env, p.timeout * 10)
        except subprocess.TimeoutExpired:
            return {"ok": False, "problem": f"timed out after {p.timeout * 10:.0f} s"}
        problems = []
        if code != reference[0]:
            problems.append(f"exit status {code}, native {reference[0]}")
        diff = first_difference(reference[1], normalize(out))
        if diff is not None:
            problems.append(f"stdout differs: {diff}")
        try:
            doc = json.loads(stats.read_text())
            prefix, walks = doc.get("prefix", {}), doc.get("plan_walks", 0)
        except (OSError, ValueError):
            prefix, walks = {}, 0
            problems.append("no statistics (" + err.decode(errors="replace").strip()[-200:] + ")")
        messages = [line for line in err.decode(errors="replace").splitlines() if line.startswith("heaplayout:")]
    return {"ok": not problems, "problem": "; ".join(problems), "seconds": round(seconds, 3),
            **{k: int(prefix.get(k, 0)) for k in PREFIX_KEYS}, "walks": int(walks), "messages": messages[:3]}


def markdown(rows: list[dict], command: str) -> str:
    out = [f"Command: `{command}`", "",
           "| program | plan | planning s | region | slots | input | output | took a slot | refused (site / size / busy / thread) "
           "| counters cut | stack walks |", "|---|---|---:|---:|---:|---|---|---:|---|---:|---:|"]
    for r in rows:
        if r.get("plan_problem"):
            out.append(f"| {r['program']} | {r['plan']} | {r['planning_s']:.1f} | — | — | — | plan failed: "
                       f"{r['plan_problem']} | — | — | — | — |")
            continue
        for which in corpus.INPUTS:
            x = r[which]
            region = f"{x['region_bytes'] / 1048576:.1f} MiB" if x.get("region_bytes") else "none"
            verdict = "same" if x["ok"] else f"**{x['problem']}**"
            out.append(f"| {r['program']} | {r['plan']} | {r['planning_s']:.1f} | {region} | {x.get('slots', 0):,} | "
                       f"{which} | {verdict} | {x.get('taken', 0):,} | {x.get('refused_site', 0):,} / "
                       f"{x.get('refused_size', 0):,} / {x.get('refused_busy', 0):,} / {x.get('refused_thread', 0):,} | "
                       f"{x.get('counters_cut', 0)} | "
                       f"{x.get('walks', 0):,} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = arguments("python3 -m benchmarks.real.prefix_check", __doc__, argv,
                     lambda ap: ap.add_argument("--variants", metavar="A;B",
                                                help="only these plans, by their names in VARIANTS, ';'-separated"))
    variants = VARIANTS
    if args.variants:
        names = [v.strip() for v in args.variants.split(";") if v.strip()]
        unknown = [v for v in names if v not in VARIANTS]
        if unknown:
            say(f"[prefix] unknown variants {unknown}; known: {'; '.join(VARIANTS)}")
            return 2
        variants = {v: VARIANTS[v] for v in names}
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows, bad = [], 0
    for item in profiled_programs(args, say, "prefix"):
        p, dest, prof, dirs = item.program, item.dest, item.profile, item.inputs
        normalize = normalizer(p.normalize)
        native = {}
        for which in corpus.INPUTS:
            _, code, stdout, _ = run_program(p, dirs[which], base_environment(p), p.timeout * 4)
            native[which] = (code, normalize(stdout))
        for name, opts in variants.items():
            path = dest / f"prefix.{name.replace(', rest ', '-').replace(':', '-').replace(' ', '-')}.plan"
            plan, seconds, problem = make_plan(prof, path, opts)
            row = {"program": p.name, "plan": name, "planning_s": round(seconds, 1), "plan_problem": problem}
            if plan is not None:
                for which in corpus.INPUTS:
                    row[which] = plan_run(p, dirs[which], plan, native[which])
                    bad += not row[which]["ok"]
            else:
                bad += 1
            rows.append(row)
            say(f"[prefix] {p.name} {name}: planned in {seconds:.0f}s; "
                + ("; ".join(f"{w} {'same' if row[w]['ok'] else row[w]['problem']}, {row[w]['taken']} in slots"
                             for w in corpus.INPUTS) if plan else f"plan failed: {problem}"))
    command = "python3 -m benchmarks.real.prefix_check " + " ".join(argv if argv is not None else sys.argv[1:])
    (out / "prefix.json").write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    text = markdown(rows, command)
    (out / "prefix.md").write_text(text)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
