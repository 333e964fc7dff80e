"""Do the corpus's plans generalize? For each program with a training profile
(OUT/<program>/train.prof, from the plans stage), plan it now (exact HALO rules and the
walk-free `--walk-budget 0` variant), run the training and the measuring input once under
each plan with the runtime's statistics, and report the share of allocations the plan's
groups placed on each input and the stack walks per allocation (issue 20: the measuring
input should keep >= 90% of the training input's placed share, with full walks under 1%).

    python3 -m benchmarks.real.coverage --out build/real [--programs a,b]

Writes OUT/coverage.json and OUT/coverage.md. One run per input and plan: these are
counts, not times, and are the same on every run of a deterministic program (up to the
runtime's per-thread caches in multi-threaded ones).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.real import corpus  # noqa: E402
from benchmarks.real.measure import HL, base_environment  # noqa: E402
from benchmarks.real.profiled import arguments, profiled_programs  # noqa: E402
from heaplayout.planning.placement import Placement, read_placement  # noqa: E402

PLANS = {"halo": [], "halo-site": ["--walk-budget", "0"]}


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def plan(prof: Path, dest: Path, name: str, opts: list[str]) -> Path | None:
    path = dest / f"coverage.{name}.plan"
    r = subprocess.run([*HL, "plan", *opts, "-o", str(path), str(prof)], capture_output=True, text=True)
    if r.returncode != 0:
        say(f"  plan {name} failed: {r.stderr.strip()[-300:]}")
        return None
    return path


def run_with_stats(p: corpus.Program, input_dir: Path, plan_path: Path, stats: Path) -> Placement | None:
    stdin = p.stdin_path(input_dir)
    cmd = [*HL, "run", "--plan", str(plan_path), "--stats-json", str(stats), "--", *p.argv(input_dir)]
    stats.unlink(missing_ok=True)
    with open(stdin or "/dev/null", "rb") as sin:
        r = subprocess.run(cmd, stdin=sin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env=base_environment(p), timeout=max(300.0, 3 * p.timeout))
    if not stats.exists():
        say(f"  no statistics (exit {r.returncode}): {r.stderr.decode(errors='replace').strip()[-300:]}")
        return None
    return read_placement(stats)


def row(name: str, plan_name: str, train: Placement | None, measure: Placement | None) -> dict:
    def part(pl: Placement | None) -> dict | None:
        if pl is None:
            return None
        return {"allocations": pl.allocations, "grouped_share": pl.grouped_share, "walk_share": pl.walk_share,
                "replay_share": pl.replays / pl.allocations if pl.allocations else 0.0}
    kept = (measure.grouped_share / train.grouped_share) if train and measure and train.grouped_share else None
    return {"program": name, "plan": plan_name, "train": part(train), "measure": part(measure),
            "kept": kept}


def markdown(rows: list[dict], command: str) -> str:
    out = [f"Command: `{command}`", "",
           "| program | plan | placed in groups, training input | placed, measuring input | kept | "
           "full walks / allocation (measuring) | replays / allocation (measuring) |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        t, m = r["train"], r["measure"]
        def pct(x: dict | None, key: str) -> str:
            return f"{100 * x[key]:.1f}%" if x else "—"
        kept = f"{100 * r['kept']:.0f}%" if r["kept"] is not None else "—"
        out.append(f"| {r['program']} | {r['plan']} | {pct(t, 'grouped_share')} | {pct(m, 'grouped_share')} | {kept} | "
                   f"{pct(m, 'walk_share')} | {pct(m, 'replay_share')} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = arguments("python3 -m benchmarks.real.coverage", __doc__, argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for item in profiled_programs(args, say, "coverage"):
        p, dest, prof, dirs = item.program, item.dest, item.profile, item.inputs
        for name, opts in PLANS.items():
            plan_path = plan(prof, dest, name, opts)
            if plan_path is None:
                continue
            placed = {which: run_with_stats(p, dirs[which], plan_path, dest / f"coverage.{name}.{which}.json")
                      for which in corpus.INPUTS}
            rows.append(row(p.name, name, placed["train"], placed["measure"]))
            r = rows[-1]
            say(f"[coverage] {p.name} {name}: kept {r['kept'] if r['kept'] is None else round(r['kept'], 3)}")
    command = "python3 -m benchmarks.real.coverage " + " ".join(argv if argv is not None else sys.argv[1:])
    (out / "coverage.json").write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    text = markdown(rows, command)
    (out / "coverage.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
