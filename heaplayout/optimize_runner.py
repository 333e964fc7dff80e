"""Running the candidates of `heaplayout optimize`: one timed run of one candidate, with the
output check of `heaplayout bench` (exit status and stdout equal to the reference run's, the
first run made). Built on bench's launcher, so times and peak RSS are measured the same way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from .bench_check import compare_run, files_snapshot, files_state, stderr_tail
from .bench_config import config_env, parse_config, program_env
from .bench_launch import ExitStatus, build_launcher, run_once, sha256_file
from .bench_run import read_runtime_stats
from .optimize_search import Candidate, Measurement
from .output_stability import unstable_patterns
from .runtime_env import for_program
from . import machine_load
from .timing_metric import run_seconds


class NondeterministicOutput(Exception):
    """The reference configuration's own runs differ: outputs cannot be checked."""


class CandidateRunner:
    """Runs candidates of one program; a `Runner` for optimize_search.run_search."""

    def __init__(self, program: Sequence[str], candidates: Sequence[Candidate], workdir: Path,
                 stdin: Path | None = None, base_env: dict[str, str] | None = None,
                 digest: Callable[[Path], str] | None = None, normalize: Callable[[bytes], bytes] | None = None,
                 target: str | None = None, metric: str = "wall", output_files: Sequence[Path] = ()):
        self.program = list(program)
        self.output_files = list(output_files)  # files the program writes, checked like stdout
        self.metric = metric  # what a Measurement's seconds are: "wall" or "cpu" (timing_metric.py)
        # label -> every timed run as (phase, round, wall s, CPU s), for the evidence
        self.clock: dict[str, list[tuple[str, int, float, float]]] = {c.label: [] for c in candidates}
        self.digest = digest or sha256_file  # what of stdout must match (optimize --ignore)
        self.normalize = normalize or (lambda data: data)  # the same, as a function of the bytes
        # per candidate whose stdout differed from the reference's: the --ignore patterns that
        # would have masked the difference (output_stability), None when no token mask does
        self.unstable: dict[str, list[str] | None] = {}
        self.workdir = workdir
        self.stdin = stdin
        workdir.mkdir(parents=True, exist_ok=True)
        base = dict(os.environ) if base_env is None else base_env
        self.config_envs = {c.label: config_env(parse_config(c.spec)) for c in candidates}
        self.envs = {label: program_env(base, for_program(env, self.program[0], target))
                     for label, env in self.config_envs.items()}
        self.index = {c.label: i for i, c in enumerate(candidates)}
        self.launcher = build_launcher(workdir)
        # label, status, stdout, sha, output files' states
        self.reference: tuple[str, ExitStatus, Path, str, tuple[str, ...]] | None = None
        self.peak_rss_kib: dict[str, list[int]] = {c.label: [] for c in candidates}
        self.loads: list[float] = []  # the load average after each timed run (machine_load.py)
        self.runs = 0

    def __call__(self, cand: Candidate, phase: str, rnd: int) -> Measurement:
        self.runs += 1
        tag = f"{phase}{rnd}-c{self.index[cand.label]}"
        before = files_snapshot(self.output_files)
        run = run_once(self.program, self.envs[cand.label], self.workdir, tag, self.launcher, stdin=self.stdin)
        status, out, err = run.status, run.stdout, run.stderr
        wall = run_seconds(self.metric, run.wall_s, run.cpu_s)
        load = machine_load.sample()
        if load is not None:
            self.loads.append(load)
        clock = run.wall_s if self.metric == "cpu" else None  # the decision checks wall time too
        self.peak_rss_kib.setdefault(cand.label, []).append(run.maxrss_kib)
        self.clock.setdefault(cand.label, []).append((phase, rnd, run.wall_s, run.cpu_s))
        sha = self.digest(out)
        files_now = files_state(self.output_files, before)
        if self.reference is None:
            self.reference = (cand.label, status, out, sha, files_now)
            return Measurement(wall, wall_s=clock, peak_rss_kib=run.maxrss_kib)
        ref_label, ref_status, ref_out, ref_sha, ref_files = self.reference
        diff = compare_run(ref_status, ref_out, ref_sha, status, out, sha, self.output_files, ref_files, files_now)
        if diff is None:
            out.unlink(missing_ok=True)
            err.unlink(missing_ok=True)
            return Measurement(wall, wall_s=clock, peak_rss_kib=run.maxrss_kib)
        detail = diff[1]
        if diff[0] == "stdout":
            self.unstable[cand.label] = unstable_patterns(self.normalize(ref_out.read_bytes()),
                                                          self.normalize(out.read_bytes()))
        tail = stderr_tail(err) if "exit" in diff[0] else ""
        if tail:
            detail += f"; its stderr ends: {tail}"
        if cand.label == ref_label:
            raise NondeterministicOutput(
                f"two runs under {ref_label} alone gave different outputs ({detail}): the program is not "
                "deterministic, so optimize cannot check that a configuration leaves its output unchanged")
        return Measurement(None, f"output differs from the reference run ({ref_label}): {detail}")

    @property
    def reference_status(self) -> ExitStatus | None:
        return self.reference[1] if self.reference else None

    def runtime_stats(self, cand: Candidate) -> object:
        """The runtime's statistics JSON from one more (untimed) run of `cand`; None for an
        allocator alone or when the runtime wrote none."""
        if "HEAPLAYOUT_POLICY" not in self.config_envs[cand.label]:
            return None
        path = self.workdir / f"stats-c{self.index[cand.label]}.json"
        env = {**self.envs[cand.label], "HEAPLAYOUT_STATS_JSON": str(path)}
        run_once(self.program, env, self.workdir, f"stats-c{self.index[cand.label]}", self.launcher,
                 stdin=self.stdin)
        return read_runtime_stats(path)
