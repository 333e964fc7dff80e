"""The corpus's `optimize` stage: `heaplayout optimize` on each program as a user would run
it (profiled on the training input, measured on the measuring input), and the table of
what it recommended against the best allocator alone.

The evidence is optimize's own JSON (docs/optimize.md); this module only runs it with the
program's environment, standard input and output normalization, and summarizes it.
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import time
from pathlib import Path
from typing import Callable

from .corpus import Program
from .measure import HL, base_environment

Say = Callable[[str], None]
STRATEGIES = ("callsite", "halo", "halo-site", "halo-rest")  # optimize's defaults, in its order
SHORT = {"glibc": "glibc", "jemalloc": "jemalloc", "mimalloc": "mimalloc", "tcmalloc": "tcmalloc"}


def optimize_command(p: Program, dirs: dict[str, Path], out: Path, budget: float) -> list[str]:
    train = p.argv(dirs["train"])
    cmd = [*HL, "optimize", "--train", shlex.join(train[1:]), "--budget", f"{budget:g}", "-o", str(out),
           "--json", str(out / "optimize.json")]
    stdin, train_stdin = p.stdin_path(dirs["measure"]), p.stdin_path(dirs["train"])
    if stdin is not None:
        cmd += ["--stdin", str(stdin), "--train-stdin", str(train_stdin)]
    for pattern in p.normalize:
        cmd += ["--ignore", pattern]
    return [*cmd, "--", *p.argv(dirs["measure"])]


def stage_optimize(p: Program, dirs: dict[str, Path], dest: Path, budget: float, force: bool, say: Say,
                   failures: list[str]) -> dict | None:
    """optimize.json of the program (reused unless `force`), or None when optimize failed."""
    out = dest / "optimize"
    path = out / "optimize.json"
    if path.exists() and not force:
        return json.loads(path.read_text())
    cmd = optimize_command(p, dirs, out, budget)
    log = dest / "optimize.log"
    dest.mkdir(parents=True, exist_ok=True)
    say(f"[real] {p.name}: heaplayout optimize, budget {budget:g} s (progress in {log})")
    t0 = time.monotonic()
    with open(log, "wb") as lf:
        lf.write(("$ " + shlex.join(cmd) + "\n").encode())
        lf.flush()
        rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, env=base_environment(p)).returncode
    if rc != 0 or not path.exists():
        failures.append(f"heaplayout optimize failed (exit {rc}); see {log}")
        return None
    doc = json.loads(path.read_text())
    rec = doc.get("recommendation") or {}
    say(f"[real] {p.name}: optimize recommends {rec.get('label')} ({rec.get('kind')}) in {time.monotonic() - t0:.0f}s")
    return doc


def _spread_text(s: dict | None) -> str:
    if not s or not s.get("n"):
        return "—"
    return f"{s['median']:.3f} [{s['q1']:.2f}–{s['q3']:.2f}]"


def _candidate_text(c: dict | None) -> str:
    """A candidate's ratio to the best allocator alone: confirmation rounds if it had them,
    else its race rounds; with where it was dropped."""
    if c is None:
        return "—"
    conf = (c.get("confirmation") or {}).get("ratio_to_best_allocator")
    race = (c.get("race") or {}).get("ratio_to_best_allocator")
    text = _spread_text(conf if conf and conf.get("n") else race)
    el = c.get("eliminated")
    if el:
        text += f" (out: {el['phase']} {el['round']})" if el.get("round") else f" (out: {el['phase']})"
    return text


def summary_row(name: str, doc: dict | None) -> dict:
    """One program's row: the best allocator alone, each default strategy on it, the
    recommendation and its ratio to the best allocator alone."""
    if doc is None:
        return {"program": name, "ok": False}
    dec = doc.get("decision") or {}
    best = dec.get("best_allocator")
    by_label = {c["label"]: c for c in doc["candidates"]}
    best_c = next((c for c in doc["candidates"] if c["label"] == best), None)
    best_alloc = best_c["allocator"] if best_c else None
    alone = {c["allocator"]: c for c in doc["candidates"] if c["strategy"] == "alone"}
    on_best = {c["strategy"]: c for c in doc["candidates"] if c["allocator"] == best_alloc and c["strategy"] != "alone"}
    rec = doc.get("recommendation") or {}
    ratios = dec.get("confirmation_ratios") or []
    finalist = dec.get("finalist")
    conf = ((by_label.get(finalist) or {}).get("confirmation") or {}).get("ratio_to_best_allocator")
    return {
        "program": name, "ok": True, "best_allocator": best, "best_alloc_name": best_alloc,
        "alone": {a: _candidate_text(c) for a, c in alone.items()},
        "strategies_on_best": {s: _candidate_text(on_best.get(s)) for s in STRATEGIES},
        "finalist": finalist, "finalist_confirmation": conf, "confirmation_rounds": len(ratios),
        "recommendation": rec.get("label"), "kind": rec.get("kind"), "resolved": rec.get("resolved"),
        "ratio": rec.get("ratio_to_best_allocator"), "elapsed_s": doc.get("elapsed_s"), "runs": doc.get("runs"),
        "reason": rec.get("reason"), "peak_rss_ratio": rec.get("peak_rss_ratio"),
    }


def _won(row: dict) -> bool:
    """Whether the recommendation is not an allocator as it ships: a strategy, or an
    allocator with its own huge-page setting, whose advantage the rounds resolved."""
    return bool(row.get("resolved") and row.get("ratio") and row.get("kind") != "allocator alone")


def markdown(rows: list[dict]) -> str:
    out = ["`heaplayout optimize` on each program (default budget unless the command says otherwise): the best "
           "allocator alone it found, each default strategy on that allocator as a ratio to it (median [q1–q3] "
           "over the confirmation rounds where the candidate had them, else over its race rounds; `out`: where "
           "it was eliminated), and the recommendation with its ratio to the best allocator alone (1 by "
           "definition when the recommendation is that allocator):", "",
           "| program | best alone | " + " | ".join(f"{s} on it" for s in STRATEGIES)
           + " | finalist / best alone (confirmation) | recommendation | recommendation / best alone | its peak RSS "
           "/ best alone's | time |",
           "|---|---|" + "---|" * len(STRATEGIES) + "---|---|---|---:|---:|"]
    for r in rows:
        if not r["ok"]:
            out.append(f"| {r['program']} | optimize failed |" + " |" * (len(STRATEGIES) + 5))
            continue
        won = _won(r)
        rec_ratio = _spread_text(r["ratio"]) if won else "1 (the allocator alone)"
        rss = f"{r['peak_rss_ratio']:.2f}" if won and r.get("peak_rss_ratio") else "—"
        fin = f"{r['finalist']}: {_spread_text(r['finalist_confirmation'])}" if r["finalist"] else "—"
        out.append(f"| {r['program']} | {r['best_allocator']} | "
                   + " | ".join(r["strategies_on_best"][s] for s in STRATEGIES)
                   + f" | {fin} | {r['recommendation']} | {rec_ratio} | {rss} | {r['elapsed_s'] or 0:.0f} s |")
    wins = [r for r in rows if r["ok"] and _won(r)]
    own = [r for r in wins if r["kind"] == "allocator on huge pages"]
    if rows:
        logs = [math.log(r["ratio"]["median"]) if r in wins else 0.0 for r in rows if r["ok"]]
        geo = math.exp(sum(logs) / len(logs)) if logs else float("nan")
        out += ["", f"Recommendation / best allocator alone: geometric mean {geo:.3f} over {len(logs)} programs; "
                f"something other than an allocator as it ships recommended on {len(wins)} (of which the "
                f"allocator's own huge-page setting on {len(own)}), at least 10% faster on "
                f"{sum(1 for r in wins if r['ratio']['median'] <= 0.90)}."]
    return "\n".join(out) + "\n"
