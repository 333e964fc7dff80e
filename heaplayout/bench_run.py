"""The whole benchmark: every configuration `warmup` + `runs` times, interleaved, output
checks against the baseline's first run, then optionally one cachegrind run each.
Nothing here prints; progress goes through a callback."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .bench_cachegrind import CacheCounts, CacheSpec, run_cachegrind
from .bench_check import Mismatch, compare_run, files_snapshot, files_state, stderr_tail
from .output_stability import unstable_patterns
from .bench_config import BenchError, Config, config_env, program_env
from .bench_launch import ExitStatus, RunResult, build_launcher, fmt_seconds, launcher_rss_floor, run_once, sha256_file
from .bench_stats import Spread, paired_ratios, spread
from .runtime_env import for_program
from .timing_metric import MetricChoice, choose_metric, run_seconds


def schedule(labels: Sequence[str], runs: int, warmup: int) -> list[tuple[bool, int, str]]:
    """Interleaved order: every configuration once per round, in the given order, first the
    warm-up rounds then the timed ones. Items are (warmup, round (1-based), label)."""
    order: list[tuple[bool, int, str]] = []
    for is_warmup, count in ((True, warmup), (False, runs)):
        for r in range(1, count + 1):
            order.extend((is_warmup, r, label) for label in labels)
    return order



@dataclass
class ConfigResult:
    config: Config
    env: dict[str, str]
    runs: list[RunResult] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    cache: CacheCounts | None = None
    cache_events: dict[str, int] | None = None
    runtime_stats: object = None  # HEAPLAYOUT_STATS_JSON of the last warm-up run (our policies only)

    def timed(self) -> list[RunResult]:
        return [r for r in self.runs if not r.warmup]

    def times_by_round(self, metric: str = "wall") -> dict[int, float]:
        return {r.round: run_seconds(metric, r.wall_s, r.cpu_s) for r in self.timed()}

    @property
    def output_ok(self) -> bool:
        return not self.mismatches


@dataclass
class BenchResult:
    program: list[str]
    runs: int
    warmup: int
    configs: list[ConfigResult]
    cache_spec: CacheSpec | None
    rss_floor_kib: int | None
    reference_status: ExitStatus | None = None
    started_utc: str = ""
    baseline_unstable: bool = False
    # when the baseline's runs differed token for token within lines: --ignore patterns that
    # mask the difference (output_stability), to suggest; None otherwise
    baseline_masks: list[str] | None = None
    launcher: str = ""
    stdin: Path | None = None  # the file every run reads on stdin (--stdin), else /dev/null
    # what times and ratios compare (timing_metric.py); decided from the runs under "auto"
    metric: MetricChoice = MetricChoice("wall", "wall time", None)
    output_files: list[Path] = field(default_factory=list)  # checked like stdout (--output-file)
    reference_files: tuple[str, ...] = ()  # their states after the baseline's first run (bench_check.files_state)

    @property
    def baseline(self) -> ConfigResult:
        return self.configs[0]

    @property
    def ok(self) -> bool:
        return all(c.output_ok for c in self.configs)

    def mismatches(self) -> list[Mismatch]:
        return [m for c in self.configs for m in c.mismatches]

    def wall(self, c: ConfigResult) -> Spread:
        return spread([r.wall_s for r in c.timed()])

    def time(self, c: ConfigResult) -> Spread:
        """c's times by the metric the comparison uses."""
        return spread(list(c.times_by_round(self.metric.metric).values()))

    def ratios(self, c: ConfigResult) -> list[float]:
        m = self.metric.metric
        return paired_ratios(c.times_by_round(m), self.baseline.times_by_round(m))

    def ratio(self, c: ConfigResult) -> Spread:
        return spread(self.ratios(c))

    def rss(self, c: ConfigResult) -> Spread:
        return spread([r.maxrss_kib for r in c.timed()])

    def cache_ratio(self, c: ConfigResult, name: str) -> float | None:
        base = self.baseline.cache
        if c.cache is None or base is None:
            return None
        b = getattr(base, name)
        return getattr(c.cache, name) / b if b else None


def read_runtime_stats(path: Path) -> object:
    """The runtime's statistics JSON, None when it wrote none, {"error": ...} when unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError as err:
        return {"error": f"unreadable statistics JSON from the runtime: {err}"}


Progress = Callable[[str], None]


def run_bench(program: Sequence[str], configs: Sequence[Config], workdir: Path, runs: int = 5, warmup: int = 1,
              cache: CacheSpec | None = None, progress: Progress | None = None,
              base_env: dict[str, str] | None = None,
              digest: Callable[[Path], str] | None = None, stdin: Path | None = None,
              normalize: Callable[[bytes], bytes] | None = None, target: str | None = None,
              metric: str = "auto", output_files: Sequence[Path] = ()) -> BenchResult:
    """Run every configuration `warmup` + `runs` times, interleaved, then (with `cache`) once
    each under cachegrind. Every run's exit status and stdout are compared with the
    baseline's first run. Temporary files go to `workdir` (which the caller cleans up).
    `digest` reduces a stdout file to what must match (default: the sha256 of its bytes):
    a program that prints its own timings passes one that normalizes them away. Every run
    reads the file `stdin` from its start (None: /dev/null). `target`: the executable of the
    command's process tree the runtime works in (runtime_env.for_program). `metric`: what
    times and ratios compare, "wall", "cpu" or "auto" (timing_metric.choose_metric, from all
    the runs). `output_files`: files the program writes, checked after every run like stdout."""
    if runs < 1:
        raise BenchError("--runs must be at least 1")
    if warmup < 0:
        raise BenchError("--warmup cannot be negative")
    try:
        choose_metric(metric, [])
    except ValueError as err:
        raise BenchError(str(err)) from None
    say = progress or (lambda _msg: None)
    base_env = dict(os.environ) if base_env is None else base_env
    digest = digest or sha256_file
    program = list(program)
    workdir.mkdir(parents=True, exist_ok=True)
    results = {c.label: ConfigResult(config=c, env=config_env(c)) for c in configs}
    launcher = build_launcher(workdir)
    envs = {label: program_env(base_env, for_program(cr.env, program[0], target)) for label, cr in results.items()}
    baseline = configs[0].label
    bench = BenchResult(program=program, runs=runs, warmup=warmup, configs=list(results.values()), cache_spec=cache,
                        rss_floor_kib=launcher_rss_floor(workdir, launcher), launcher=launcher[0],
                        started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), stdin=stdin,
                        output_files=list(output_files))
    ref: tuple[ExitStatus, Path, str, tuple[str, ...]] | None = None
    kept: set[str] = set()  # labels whose first mismatching stdout is kept for the message
    output_files = list(output_files)

    before: tuple = ()  # the output files as they were before the run being checked

    def check(label: str, rnd: int, is_warmup: bool, kind: str, status: ExitStatus, out: Path, err: Path,
              sha: str) -> None:
        nonlocal ref
        files_now = files_state(output_files, before)
        if ref is None:
            ref = (status, out, sha, files_now)
            bench.reference_status = status
            bench.reference_files = files_now
            return
        diff = compare_run(ref[0], ref[1], ref[2], status, out, sha, output_files, ref[3], files_now)
        if diff is None:
            if out != ref[1]:
                out.unlink(missing_ok=True)
            return
        detail = diff[1]
        if "exit" in diff[0]:
            tail = stderr_tail(err)
            if tail:
                detail += f"; its stderr ends: {tail}"
        results[label].mismatches.append(Mismatch(label, rnd, is_warmup, diff[0], detail, kind))
        if label == baseline:
            if not bench.baseline_unstable and diff[0] == "stdout":
                same = normalize or (lambda data: data)
                bench.baseline_masks = unstable_patterns(same(ref[1].read_bytes()), same(out.read_bytes()))
            bench.baseline_unstable = True
        if label in kept:
            out.unlink(missing_ok=True)
        kept.add(label)

    # file names: the configuration's index keeps them unique, the label keeps them readable
    safe = {c.label: f"c{i}-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", c.label) for i, c in enumerate(configs)}
    order = schedule([c.label for c in configs], runs, warmup)
    for is_warmup, rnd, label in order:
        kind = "warmup" if is_warmup else "timed"
        tag = f"{kind}{rnd}-{safe[label]}"
        env = envs[label]
        stats_path = None
        if is_warmup and rnd == warmup and results[label].config.uses_runtime:
            # the last warm-up run of our configurations also writes the runtime's pool statistics
            stats_path = workdir / f"stats-{safe[label]}.json"
            env = {**env, "HEAPLAYOUT_STATS_JSON": str(stats_path)}
        before = files_snapshot(output_files)
        run = run_once(program, env, workdir, tag, launcher, stdin=stdin)
        wall, status, rss, out, err = run.wall_s, run.status, run.maxrss_kib, run.stdout, run.stderr
        if stats_path is not None:
            results[label].runtime_stats = read_runtime_stats(stats_path)
        total = warmup if is_warmup else runs
        note = "" if status.ok else f" ({status.describe()})"
        say(f"[bench] {'warmup' if is_warmup else 'round'} {rnd}/{total} {label} {fmt_seconds(wall)} "
            f"(CPU {fmt_seconds(run.cpu_s)}){note}")
        sha = digest(out)
        results[label].runs.append(RunResult(label, rnd, is_warmup, wall, status, rss, out, err, sha, run.cpu_s,
                                             run.ready_s))
        check(label, rnd, is_warmup, kind, status, out, err, sha)

    bench.metric = choose_metric(metric, [(r.wall_s, r.cpu_s, r.ready_s) for cr in results.values() for r in cr.runs])
    say(f"[bench] compared by {bench.metric.reason}")
    if cache is not None:
        for c in configs:
            say(f"[bench] cachegrind {c.label} ...")
            tag = f"cachegrind-{safe[c.label]}"
            before = files_snapshot(output_files)
            counts, events, status, out, err = run_cachegrind(program, envs[c.label], workdir, tag, cache,
                                                            stdin=stdin)
            results[c.label].cache, results[c.label].cache_events = counts, events
            say(f"[bench] cachegrind {c.label}: I refs {counts.I_refs:,}, D1 misses {counts.D1_misses:,}, "
                f"LL misses {counts.LL_misses:,}")
            check(c.label, 1, False, "cachegrind", status, out, err, digest(out))
    return bench
