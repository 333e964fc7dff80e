"""Reporting of `heaplayout bench`: the JSON document, the terminal and markdown tables,
the command line that repeats a measurement, and the suite table."""

from __future__ import annotations

import dataclasses
import shlex
import sys
from dataclasses import dataclass
from typing import Iterable, Sequence

from .bench_config import BenchError, config_text
from .bench_launch import ExitStatus, fmt_seconds
from .bench_run import BenchResult
from .bench_stats import Spread, spread

JSON_SCHEMA = "heaplayout-bench/1"
SUITE_JSON_SCHEMA = "heaplayout-bench-suite/1"


def command_line(bench: BenchResult) -> str:
    """A `heaplayout bench` command that repeats this measurement (for JSON and markdown)."""
    parts = ["heaplayout", "bench", "--runs", str(bench.runs), "--warmup", str(bench.warmup),
             "--config", ",".join(config_text(c.config) for c in bench.configs)]
    if bench.cache_spec is not None:
        parts += ["--cachegrind", f"--LL={bench.cache_spec.LL}", f"--D1={bench.cache_spec.D1}"]
    if bench.stdin is not None:
        parts += ["--stdin", str(bench.stdin)]
    for path in bench.output_files:
        parts += ["--output-file", str(path)]
    if bench.metric.asked != "auto":
        parts += ["--metric", bench.metric.asked]
    return shlex.join([*parts, "--", *bench.program])


def result_to_json(bench: BenchResult) -> dict:
    """The --json document (schema in docs/bench.md)."""
    configs = []
    for c in bench.configs:
        w, t, ratio, rss = bench.wall(c), bench.time(c), bench.ratio(c), bench.rss(c)
        cpu = [r.cpu_s for r in c.timed() if r.cpu_s is not None]
        entry: dict = {
            "label": c.config.label,
            "spec": c.config.spec,
            "allocator": c.config.allocator,
            "policy": c.config.policy,
            "options": dict(c.config.options),
            "env": c.env,
            "baseline": c is bench.baseline,
            "wall_s": {**w.to_json(), "values": [r.wall_s for r in c.timed()]},
            "cpu_s": {**spread(cpu).to_json(), "values": cpu} if cpu else None,
            "time_s": {**t.to_json(), "metric": bench.metric.metric},
            "ratio": {**ratio.to_json(), "values": bench.ratios(c)},
            "peak_rss_kib": {"median": rss.median, "max": rss.max, "values": [r.maxrss_kib for r in c.timed()]},
            "exit": [_status_json(r.status) for r in c.timed()],
            "output_ok": c.output_ok,
            "mismatches": [dataclasses.asdict(m) for m in c.mismatches],
            "cachegrind": None,
            "runtime_stats": c.runtime_stats,
        }
        if c.cache is not None:
            entry["cachegrind"] = {
                **dataclasses.asdict(c.cache),
                "I_refs_ratio": bench.cache_ratio(c, "I_refs"),
                "D1_misses_ratio": bench.cache_ratio(c, "D1_misses"),
                "LL_misses_ratio": bench.cache_ratio(c, "LL_misses"),
                "events": c.cache_events,
            }
        configs.append(entry)
    return {
        "schema": JSON_SCHEMA,
        "command": command_line(bench),
        "program": bench.program,
        "started_utc": bench.started_utc,
        "runs": bench.runs,
        "warmup": bench.warmup,
        "baseline": bench.baseline.config.label,
        "baseline_exit": _status_json(bench.reference_status) if bench.reference_status else None,
        "rss_floor_kib": bench.rss_floor_kib,
        "metric": bench.metric.to_json(),
        "launcher": "c" if bench.launcher != sys.executable else "python",
        "stdin": None if bench.stdin is None else str(bench.stdin),
        "output_files": [str(p) for p in bench.output_files],
        "cachegrind": None if bench.cache_spec is None else {"LL": bench.cache_spec.LL, "D1": bench.cache_spec.D1},
        "ok": bench.ok,
        "configs": configs,
    }


def _status_json(s: ExitStatus) -> dict:
    return {"code": s.code, "signal": s.signal}


def _fmt_mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def _fmt_ratio(s: Spread) -> str:
    return f"{s.median:.3f} [{s.min:.3f}–{s.max:.3f}]"


def _fmt_count(n: int) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f}{unit}"
    return str(n)


def table_rows(bench: BenchResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the per-configuration table (shared by terminal and markdown)."""
    unit = "CPU" if bench.metric.metric == "cpu" else "wall"
    header = ["config", f"median ({unit})", "min–max", "IQR", "ratio [min–max]", "ratio IQR", "peak RSS", "output"]
    if bench.cache_spec is not None:
        header += ["I refs", "D1 miss", "D1 ratio", "LL miss", "LL ratio"]
    rows = []
    for c in bench.configs:
        w, r, rss = bench.time(c), bench.ratio(c), bench.rss(c)
        name = c.config.label + (" (baseline)" if c is bench.baseline else "")
        if c.output_ok:
            output = "same"
        else:
            output = "MISMATCH" if c is not bench.baseline else "UNSTABLE"
        # one round has no spread: "-" rather than an IQR of 0 that looks measured
        row = [name, fmt_seconds(w.median), f"{fmt_seconds(w.min)}–{fmt_seconds(w.max)}",
               fmt_seconds(w.iqr) if w.n > 1 else "-", _fmt_ratio(r), f"{r.iqr:.3f}" if r.n > 1 else "-",
               _fmt_mib(rss.median), output]
        if bench.cache_spec is not None:
            if c.cache is None:
                row += ["-"] * 5
            else:
                d1, ll = bench.cache_ratio(c, "D1_misses"), bench.cache_ratio(c, "LL_misses")
                row += [_fmt_count(c.cache.I_refs), _fmt_count(c.cache.D1_misses),
                        "-" if d1 is None else f"{d1:.3f}", _fmt_count(c.cache.LL_misses),
                        "-" if ll is None else f"{ll:.3f}"]
        rows.append(row)
    return header, rows


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(header)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(widths[i + 1]) for i, cell in enumerate(row[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def format_markdown(header: list[str], rows: list[list[str]]) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def describe_run(bench: BenchResult) -> str:
    """One line saying what was measured (for the terminal and markdown)."""
    cg = ""
    if bench.cache_spec is not None:
        cg = f"; cachegrind --D1={bench.cache_spec.D1} --LL={bench.cache_spec.LL}"
    prog = " ".join(bench.program)
    t = "t = CPU time (user + system)" if bench.metric.metric == "cpu" else "t = wall time"
    return (f"{prog}: {bench.runs} interleaved rounds after {bench.warmup} warm-up; {t}; "
            f"ratio = per-round t/t({bench.baseline.config.label}){cg}")


# --------------------------------------------------------------------------- suite


@dataclass
class SuiteEntry:
    name: str
    paper: str
    pattern: str
    program: list[str]
    result: BenchResult


def suite_rows(entries: Sequence[SuiteEntry]) -> tuple[list[str], list[list[str]]]:
    """Rows: workloads; columns: each non-baseline configuration's time ratio (median
    [min–max]), and with cachegrind its D1 and LL miss ratios."""
    if not entries:
        return ["workload"], []
    first = entries[0].result
    others = [c.config.label for c in first.configs[1:]]
    header = ["workload", f"{first.baseline.config.label} median"]
    for label in others:
        header.append(f"{label} time")
        if first.cache_spec is not None:
            header += [f"{label} D1", f"{label} LL"]
    header.append("output")
    rows = []
    for e in entries:
        b = e.result
        by_label = {c.config.label: c for c in b.configs}
        row = [e.name, fmt_seconds(b.time(b.baseline).median)]
        for label in others:
            c = by_label[label]
            row.append(_fmt_ratio(b.ratio(c)))
            if b.cache_spec is not None:
                for name in ("D1_misses", "LL_misses"):
                    v = b.cache_ratio(c, name)
                    row.append("-" if v is None else f"{v:.3f}")
        bad = [c.config.label for c in b.configs if not c.output_ok]
        row.append("same" if not bad else "MISMATCH: " + ", ".join(bad))
        rows.append(row)
    return header, rows


def suite_to_json(entries: Sequence[SuiteEntry], input_name: str, variant: str) -> dict:
    return {
        "schema": SUITE_JSON_SCHEMA,
        "input": input_name,
        "variant": variant,
        "ok": all(e.result.ok for e in entries),
        "workloads": [
            {"name": e.name, "paper": e.paper, "pattern": e.pattern, "program": e.program,
             "result": result_to_json(e.result)}
            for e in entries
        ],
    }


def select_workloads(suite: Iterable, only: Sequence[str] | None) -> list:
    """The workloads named in `only` (all when None), in suite order; BenchError on unknown names."""
    suite = list(suite)
    if not only:
        return suite
    names = {w.name for w in suite}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise BenchError(f"unknown workload(s) {', '.join(unknown)}; the suite has: {', '.join(sorted(names))}")
    wanted = set(only)
    return [w for w in suite if w.name in wanted]
