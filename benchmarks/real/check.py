"""The check stage: is each program's output stable, and the same under our runtime?

For every input the program runs natively twice and once under the runtime's `callsite`
policy (on glibc, with the statistics JSON written), each with its stdin file fed anew.
The normalized stdout and the exit status of all three must agree; the callsite run's
statistics give the allocation count (objects pooled + forwarded) and bytes requested.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from heaplayout.runtime_env import RuntimeConfig, for_program, runtime_env

from .corpus import Program
from .outputs import first_difference, normalizer


@dataclass
class Run:
    what: str  # "native 1", "native 2", "callsite"
    seconds: float
    exit_code: int  # negative: killed by that signal
    stdout_bytes: int
    stderr_tail: str


@dataclass
class InputCheck:
    program: str
    input: str
    runs: list[Run] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    allocations: int | None = None  # objects pooled + forwarded in the callsite run
    bytes_requested: int | None = None
    pooled: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def native_seconds(self) -> float:
        return min(r.seconds for r in self.runs if r.what.startswith("native"))


def base_environment(program: Program) -> dict[str, str]:
    """The user's environment without any preload, plus the program's own variables."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HEAPLAYOUT_")}
    env.update(program.env)
    return env


def run_program(program: Program, input_dir: Path, env: dict[str, str], timeout: float) -> tuple[float, int, bytes, bytes]:
    """One run: (seconds, exit code, stdout, stderr); the stdin file is opened anew each time."""
    stdin_path = program.stdin_path(input_dir)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            (open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb")) as stdin:
        t0 = time.monotonic()
        proc = subprocess.run(program.argv(input_dir), stdin=stdin, stdout=out, stderr=err, env=env,
                              timeout=timeout, cwd=input_dir)
        seconds = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return seconds, proc.returncode, out.read(), err.read()


def callsite_environment(program: Program, stats_json: Path) -> dict[str, str]:
    extra = runtime_env(RuntimeConfig(policy="callsite", allocator="glibc", stats_json=str(stats_json)))
    return {**base_environment(program), **for_program(extra, program.exe)}


def allocation_counts(stats_json: Path) -> tuple[int, int, int] | None:
    """(allocations, bytes requested, objects pooled) from the runtime's statistics JSON."""
    try:
        data = json.loads(stats_json.read_text())
    except (OSError, ValueError):
        return None
    pooled = sum(int(p["objects"]) for p in data.get("pools", []))
    forwarded = data.get("forwarded", {})
    nbytes = sum(int(p["bytes_requested"]) for p in data.get("pools", [])) + int(forwarded.get("bytes_requested", 0))
    return pooled + int(forwarded.get("objects", 0)), nbytes, pooled


def check_input(program: Program, which: str, input_dir: Path, say: Callable[[str], None]) -> InputCheck:
    result = InputCheck(program=program.name, input=which)
    normalize = normalizer(program.normalize)
    timeout = program.timeout * (10 if which == "measure" else 2)  # the runtime may be slower: never cut a run
    reference: tuple[int, bytes] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        plans = [("native 1", base_environment(program)), ("native 2", base_environment(program)),
                 ("callsite", callsite_environment(program, stats))]
        for what, env in plans:
            try:
                seconds, code, out, err = run_program(program, input_dir, env, timeout)
            except subprocess.TimeoutExpired:
                result.problems.append(f"{what}: timed out after {timeout:.0f} s")
                continue
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] 
            result.runs.append(Run(what, seconds, code, len(out), tail[0][:200] if tail else ""))
            say(f"[real] check {program.name} {which} {what}: {seconds:.3f}s exit {code}")
            norm = normalize(out)
            if reference is None:
                reference = (code, norm)
                continue
            if code != reference[0]:
                result.problems.append(f"{what}: exit status {code}, native 1 gave {reference[0]}")
            diff = first_difference(reference[1], norm)
            if diff is not None:
                result.problems.append(f"{what}: normalized stdout differs from native 1: {diff}")
        counts = allocation_counts(stats)
        if counts is None:
            result.problems.append("callsite: the runtime wrote no statistics (was it loaded into the program?)")
        else:
            result.allocations, result.bytes_requested, result.pooled = counts
    return result


def to_json(checks: list[InputCheck]) -> list[dict]:
    return [{**asdict(c), "ok": c.ok} for c in checks]
