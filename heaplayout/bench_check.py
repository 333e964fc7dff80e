"""Output checks: a run's exit status and stdout against the reference run's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .bench_launch import ExitStatus


def first_difference(expected: Path, actual: Path, limit: int = 160) -> str | None:
    """None when the files are identical, else where they first differ (1-based line)."""
    with open(expected, "rb") as fe, open(actual, "rb") as fa:
        line = 0
        while True:
            le, la = fe.readline(), fa.readline()
            line += 1
            if le == la:
                if not le:
                    return None
                continue
            def show(b: bytes) -> str:
                return repr(b.decode("utf-8", "replace").rstrip("\n")[:limit]) if b else "<end of output>"
            return f"stdout line {line}: baseline {show(le)}, got {show(la)}"


def stderr_tail(path: Path, limit: int = 200) -> str:
    """The last non-empty line of a stderr file, shortened (for failure messages)."""
    try:
        lines = [ln for ln in path.read_bytes().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return repr(lines[-1][:limit]) if lines else ""


@dataclass
class Mismatch:
    label: str
    round: int
    warmup: bool
    what: str  # "exit", "stdout" or "exit+stdout"
    detail: str
    run_kind: str = "timed"  # "timed", "warmup" or "cachegrind"

    def message(self, baseline: str) -> str:
        where = "cachegrind run" if self.run_kind == "cachegrind" else f"{self.run_kind} round {self.round}"
        return f"OUTPUT MISMATCH: configuration {self.label!r} ({where}) differs from baseline {baseline!r}: {self.detail}"


def compare_run(ref_status: ExitStatus, ref_stdout: Path, ref_sha: str, status: ExitStatus, stdout: Path,
                sha: str) -> tuple[str, str] | None:
    """(what, detail) when a run's exit status or stdout differs from the reference."""
    parts, what = [], []
    if status != ref_status:
        what.append("exit")
        parts.append(f"baseline {ref_status.describe()}, got {status.describe()}")
    if sha != ref_sha:
        what.append("stdout")
        parts.append(first_difference(ref_stdout, stdout) or "stdout differs")
    if not parts:
        return None
    return "+".join(what), "; ".join(parts)
