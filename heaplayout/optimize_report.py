"""The evidence `heaplayout optimize` leaves: the candidate table (terminal and markdown),
the JSON document (schema in docs/optimize.md), the environment file and the commands that
use or re-measure the recommendation."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .bench_config import config_env, parse_config
from .bench_launch import fmt_seconds
from .bench_report import format_markdown, format_table
from .bench_stats import Spread, paired_ratios, spread
from .optimize_search import Candidate, SearchResult, SearchSettings
from .runtime_env import for_program
from .timing_metric import MetricChoice

SCHEMA = "heaplayout-optimize/1"


@dataclass
class OptimizeRun:
    """Everything one `heaplayout optimize` did, for the report."""

    command: str
    program: list[str]
    train: list[str]
    stdin: Path | None
    train_stdin: Path | None
    budget_s: float
    settings: SearchSettings
    started_utc: str
    search: SearchResult
    elapsed_s: float = 0.0
    stage_s: dict[str, float] = field(default_factory=dict)
    profile: Path | None = None
    plans: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    peak_rss_kib: dict[str, list[int]] = field(default_factory=dict)
    runtime_stats: object = None
    runs: int = 0
    load: dict | None = None  # the machine's load average over the runs (machine_load.summary)
    ignore: list[str] = field(default_factory=list)  # --ignore patterns of the output check
    output_files: list[Path] = field(default_factory=list)  # --output-file: checked like stdout
    group_layout: str = "choose"  # --group-layout
    # plan variant -> how its groups' layouts were chosen (commands/optimize.py, _choose_layouts)
    group_layouts: dict[str, dict] = field(default_factory=dict)
    # the executable of the command's process tree that was optimized, when not the command
    # itself (a script's interpreter, a driver's child: heaplayout/target.py)
    target: str | None = None
    # what the races compared (timing_metric.py) and every timed run's wall and CPU seconds:
    # label -> (phase, round, wall s, CPU s)
    metric: MetricChoice = MetricChoice("wall", "wall time", None)
    clock: dict[str, list[tuple[str, int, float, float]]] = field(default_factory=dict)

    def candidate(self, label: str | None) -> Candidate | None:
        return self.search.by_label().get(label) if label else None

    @property
    def recommended(self) -> Candidate | None:
        d = self.search.decision
        return self.candidate(d.recommended if d else None)


def _redirect(stdin: Path | None) -> list[str]:
    return [] if stdin is None else ["<", str(stdin)]


def _join(words: list[str]) -> str:
    """Shell words, with a trailing '< FILE' redirection left unquoted."""
    if len(words) >= 2 and words[-2] == "<":
        return shlex.join(words[:-2]) + " < " + shlex.quote(words[-1])
    return shlex.join(words)


def _target_opt(target: str | None) -> list[str]:
    return [] if target is None else ["--program", target]


def use_command(cand: Candidate, program: list[str], stdin: Path | None, target: str | None = None) -> str:
    """A shell command that runs the program as recommended."""
    if cand.alone:
        env = config_env(parse_config(cand.spec))
        prefix = ["env", f"LD_PRELOAD={env['LD_PRELOAD']}"] if env.get("LD_PRELOAD") else []
        return _join([*prefix, *program, *_redirect(stdin)])
    c = parse_config(cand.spec)
    opts = dict(c.options)
    how = ["--plan", opts["plan"]] if c.policy == "plan" else ["--policy", c.policy or "off"]
    alloc = [] if c.allocator == "glibc" else ["--allocator", c.allocator]
    stdin_opt = [] if stdin is None else ["--stdin", str(stdin)]
    return shlex.join(["heaplayout", "run", *how, *alloc, *stdin_opt, *_target_opt(target), "--", *program])


def bench_command(best: Candidate, cand: Candidate, program: list[str], stdin: Path | None,
                  ignore: Sequence[str] = (), target: str | None = None, output_files: Sequence[Path] = ()) -> str:
    """`heaplayout bench` re-measuring the recommendation against the best allocator alone."""
    configs = best.spec if cand.label == best.label else f"{best.spec},{cand.spec}"
    stdin_opt = [] if stdin is None else ["--stdin", str(stdin)]
    ignore_opt = [w for pat in ignore for w in ("--ignore", pat)]
    files_opt = [w for f in output_files for w in ("--output-file", str(f))]
    return shlex.join(["heaplayout", "bench", "--runs", "9", "--config", configs, *stdin_opt, *ignore_opt, *files_opt,
                       *_target_opt(target), "--", *program])


def recommendation_env(cand: Candidate, program: list[str], target: str | None = None) -> dict[str, str]:
    """The variables that make a run use the recommendation (for an environment file)."""
    return for_program(config_env(parse_config(cand.spec)), program[0], target)


def env_file_text(env: dict[str, str]) -> str:
    """NAME=value lines, a value shell-quoted where it needs it (a path with a space), so
    that `set -a; . ./recommended.env; set +a` sets them as they are."""
    lines = ["# heaplayout optimize: the recommended configuration's environment (NAME=value lines, shell-quoted);",
             "# use: (set -a; . ./recommended.env; exec PROG ARGS)"]
    lines += [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    if not env:
        lines.append("# nothing to set: the program is best run as it is (glibc)")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the table


def _ratio_spread(a: dict[int, float], b: dict[int, float]) -> Spread | None:
    r = paired_ratios(a, b)
    return spread(r) if r else None


def _fmt(s: Spread | None) -> str:
    return "-" if s is None else f"{s.median:.3f} [{s.q1:.3f}–{s.q3:.3f}]"


def status_of(run: OptimizeRun, label: str) -> str:
    d = run.search.decision
    e = run.search.eliminated.get(label)
    if d and label == d.recommended:
        return "RECOMMENDED" + (" (best allocator alone)" if label == d.best_allocator else "")
    if e is not None:
        return f"out after {e.phase} {e.round}: {e.reason.split(':')[0]}"
    if d and label == d.best_allocator:
        return "best allocator alone"
    if d and (label == d.finalist or label in d.finalists):
        return "finalist, not resolved"
    return "survived"


def candidate_rows(run: OptimizeRun) -> tuple[list[str], list[list[str]]]:
    res, d = run.search, run.search.decision
    best = d.best_allocator if d else None
    unit = "CPU" if run.metric.metric == "cpu" else "wall"
    header = ["candidate", "rounds", f"median ({unit})", f"ratio to {best or 'best alone'} [q1–q3]", "confirmation", "status"]
    rows = []
    for c in res.candidates:
        times = res.race.get(c.label, {})
        ratio = _ratio_spread(times, res.race.get(best, {})) if best else None
        conf = None
        if best and res.confirm.get(c.label) and res.confirm.get(best):
            conf = _ratio_spread(res.confirm[c.label], res.confirm[best])
        med = fmt_seconds(spread(list(times.values())).median) if times else "-"
        rows.append([c.label, str(len(times)), med, _fmt(ratio), _fmt(conf), status_of(run, c.label)])
    return header, rows


def verdict_lines(run: OptimizeRun) -> list[str]:
    d = run.search.decision
    rec = run.recommended
    if d is None or rec is None:
        return [f"no recommendation: {d.reason if d else 'nothing was measured'}"]
    best = run.candidate(d.best_allocator)
    lines = []
    if d.resolved:
        s = d.summary
        lines.append(f"RECOMMENDED: {rec.label} — {s.median:.3f}x the time of {d.best_allocator} alone "
                     f"(paired confirmation rounds: upper quartile {s.q3:.3f})")
    else:
        lines.append(f"RECOMMENDED: {rec.label} alone — no strategy beat the best allocator alone by a margin the "
                     "rounds resolve, so the allocator alone is recommended")
    lines.append(f"  why: {d.reason}")
    if d.resolved and rec.huge_pages:
        lines.append("  huge pages: " + ("the gain is the allocator's own setting for transparent huge pages, "
                                         "which it has without heaplayout (docs/optimize.md)" if rec.strategy == "alone"
                                         else "our pools, and the allocator underneath where it has the setting, "
                                         "on transparent huge pages"))
    mem = peak_rss_ratio(run, rec.label, d.best_allocator)
    if d.resolved and mem is not None:
        lines.append(f"  memory: peak RSS {mem:.2f}x that of {d.best_allocator} alone (median over its runs)")
    lines.append(f"  config (heaplayout bench --config): {rec.spec}")
    lines.append(f"  run it: {use_command(rec, run.program, run.stdin, run.target)}")
    if best is not None:
        lines.append(f"  re-measure: {bench_command(best, rec, run.program, run.stdin, run.ignore, run.target, run.output_files)}")
    stats = stats_line(run.runtime_stats)
    if stats:
        lines.append(f"  runtime, one more run: {stats}")
    return lines


def peak_rss_ratio(run: OptimizeRun, label: str, reference: str | None) -> float | None:
    """Median peak RSS of `label` over `reference`'s, over every timed run (None if unknown)."""
    mine, ref = run.peak_rss_kib.get(label), run.peak_rss_kib.get(reference or "")
    if not mine or not ref:
        return None
    return spread(mine).median / max(1.0, spread(ref).median)


def stats_line(stats: object) -> str:
    """Pooled allocations and stack walks from the runtime's statistics JSON ('' if none)."""
    if not isinstance(stats, dict) or not isinstance(stats.get("pools"), list):
        return ""
    pooled = sum(int(p.get("objects", 0)) for p in stats["pools"] if isinstance(p, dict))
    forwarded = int((stats.get("forwarded") or {}).get("objects", 0))
    total = pooled + forwarded
    share = f" ({100.0 * pooled / total:.1f}%)" if total else ""
    text = f"{pooled:,} of {total:,} allocations{share} in {len(stats['pools'])} pools"
    if "plan_walks" in stats:
        text += f", {stats['plan_walks']:,} full stack walks, {stats.get('plan_replays', 0):,} replayed"
    return text


# --------------------------------------------------------------------------- JSON and markdown


def _times_json(times: dict[int, float]) -> dict | None:
    if not times:
        return None
    return {**spread(list(times.values())).to_json(), "values": [times[k] for k in sorted(times)]}


def _ratio_json(a: dict[int, float], b: dict[int, float]) -> dict | None:
    r = paired_ratios(a, b)
    return {**spread(r).to_json(), "values": r} if r else None


def to_json(run: OptimizeRun) -> dict:
    res, d = run.search, run.search.decision
    best = d.best_allocator if d else None
    cands = []
    for c in res.candidates:
        e = res.eliminated.get(c.label)
        race, conf = res.race.get(c.label, {}), res.confirm.get(c.label, {})
        rss = run.peak_rss_kib.get(c.label, [])
        cands.append({
            "label": c.label, "config": c.spec, "allocator": c.allocator, "strategy": c.strategy,
            "huge_pages": c.huge_pages, "status": status_of(run, c.label),
            "eliminated": None if e is None else dataclasses.asdict(e),
            "race": {"time_s": _times_json(race),
                     "ratio_to_best_allocator": _ratio_json(race, res.race.get(best, {})) if best else None},
            "confirmation": None if not conf else {
                "time_s": _times_json(conf),
                "ratio_to_best_allocator": _ratio_json(conf, res.confirm.get(best, {}))},
            "peak_rss_kib": {"median": spread(rss).median, "max": max(rss)} if rss else None,
            "runs": [{"phase": ph, "round": r, "wall_s": w, "cpu_s": cpu} for ph, r, w, cpu in run.clock.get(c.label, [])],
        })
    rec = run.recommended
    recommendation = None
    if rec is not None and d is not None:
        env = recommendation_env(rec, run.program, run.target)
        bestc = run.candidate(best)
        recommendation = {
            "config": rec.spec, "label": rec.label, "allocator": rec.allocator, "strategy": rec.strategy,
            "huge_pages": rec.huge_pages,
            "kind": "allocator alone" if rec.alone else ("allocator on huge pages" if rec.strategy == "alone"
                                                         else "strategy"),
            "resolved": d.resolved, "reason": d.reason, "best_allocator": best,
            "peak_rss_ratio": peak_rss_ratio(run, rec.label, best),
            "ratio_to_best_allocator": None if not d.resolved else {**d.summary.to_json(), "values": list(d.ratios)},
            "command": use_command(rec, run.program, run.stdin, run.target), "env": env,
            "bench_command": bench_command(bestc, rec, run.program, run.stdin, run.ignore, run.target, run.output_files) if bestc else None,
            "runtime_stats": run.runtime_stats,
        }
    s = d.summary if d else None
    return {
        "schema": SCHEMA, "command": run.command, "program": run.program, "train": run.train,
        "stdin": None if run.stdin is None else str(run.stdin),
        "train_stdin": None if run.train_stdin is None else str(run.train_stdin),
        "ignore": run.ignore, "output_files": [str(f) for f in run.output_files], "target": run.target, "metric": run.metric.to_json(),
        "started_utc": run.started_utc, "budget_s": run.budget_s, "elapsed_s": round(run.elapsed_s, 3),
        "stage_s": {k: round(v, 3) for k, v in run.stage_s.items()}, "runs": run.runs,
        "profile": None if run.profile is None else str(run.profile),
        "plans": {k: str(v) for k, v in run.plans.items()}, "notes": run.notes, "load": run.load,
        "group_layout": run.group_layout, "group_layouts": run.group_layouts,
        "settings": dataclasses.asdict(run.settings),
        "race_rounds": res.race_rounds, "stop_reason": res.stop_reason,
        "candidates": cands,
        "decision": None if d is None else {
            "best_allocator": d.best_allocator, "finalist": d.finalist, "finalists": list(d.finalists),
            "resolved": d.resolved, "reason": d.reason,
            "confirmation_ratios": list(d.ratios), "median": s.median if s else None, "q3": s.q3 if s else None,
            "confirmation_ratios_by_allocator": {a: list(r) for a, r in d.ratios_by_allocator.items()},
            "rule": f"recommend a finalist only if, over at least {run.settings.min_confirm_rounds} confirmation "
                    f"rounds, the upper quartile of its paired ratios to each allocator alone left is below 1.0 and "
                    f"their median at most {1 - run.settings.min_gain:.3f}",
        },
        "recommendation": recommendation,
    }


def to_markdown(run: OptimizeRun) -> str:
    header, rows = candidate_rows(run)
    full = [row[:-1] + [to_json_reason(run, row[0])] for row in rows]
    d = run.search.decision
    parts = [f"# heaplayout optimize: {shlex.join(run.program)}", "",
             f"Command: `{run.command}`", "",
             f"Measured on the measuring input{' (stdin ' + str(run.stdin) + ')' if run.stdin else ''}; "
             f"profiled on `{shlex.join(run.train)}`"
             f"{' (stdin ' + str(run.train_stdin) + ')' if run.train_stdin else ''}. Budget {run.budget_s:.0f} s, "
             f"used {run.elapsed_s:.0f} s ({', '.join(f'{k} {v:.0f} s' for k, v in run.stage_s.items())}); "
             f"{run.search.race_rounds} race rounds ({run.search.stop_reason}).", "",
             "Ratios are paired per-round times t / t(best allocator alone), median [lower–upper quartile]; the "
             "confirmation column is from the fresh rounds of the finalist against the best allocator alone.", "",
             format_markdown(header, full), "", *verdict_lines(run)]
    chosen = {v: g for v, g in run.group_layouts.items() if g.get("chosen")}
    if chosen:
        parts += ["", "Group layouts, chosen by simulating the training input (cycles the run's misses add over L1 "
                  "hits with every group in spans / interleaved):"]
        parts += [f"- {v}: {len(g['interleaved'])} of {g['groups']} groups interleaved"
                  f"{' (' + ', '.join(map(str, g['interleaved'])) + ')' if g['interleaved'] else ''}, the rest in "
                  f"spans; {g['simulated_cost']['spans']:,} / {g['simulated_cost']['interleave']:,}"
                  for v, g in chosen.items()]
    if run.notes:
        parts += ["", "Notes:", *[f"- {n}" for n in run.notes]]
    if d is not None and d.ratios:
        parts += ["", "Confirmation ratios, round by round: " + ", ".join(f"{r:.3f}" for r in d.ratios)]
    return "\n".join(parts) + "\n"


def to_json_reason(run: OptimizeRun, label: str) -> str:
    """The full status of a candidate, with the whole elimination reason (markdown)."""
    e = run.search.eliminated.get(label)
    if e is None:
        return status_of(run, label)
    return f"out after {e.phase} {e.round}: {e.reason}"


def terminal_table(run: OptimizeRun) -> str:
    header, rows = candidate_rows(run)
    return format_table(header, rows)
