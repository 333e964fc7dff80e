"""Output checks: a run's exit status and stdout against the reference run's."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .bench_launch import ExitStatus

IGNORED_MARK = b"<~>"


def normalizer(patterns: Sequence[str]) -> Callable[[bytes], bytes]:
    """A function that replaces every match of `patterns` (regular expressions, applied in
    order) by one fixed marker: the parts of stdout that may differ between identical runs
    (a solver's "Time used"), everything else must stay byte-identical."""
    compiled = [re.compile(p.encode()) for p in patterns]

    def normalize(data: bytes) -> bytes:
        for rx in compiled:
            data = rx.sub(IGNORED_MARK, data)
        return data

    return normalize


def ignoring_digest(patterns: Sequence[str]) -> Callable[[Path], str]:
    """sha256 of a stdout file after `normalizer(patterns)`: bench's and optimize's digest."""
    normalize = normalizer(patterns)

    def digest(path: Path) -> str:
        return hashlib.sha256(normalize(path.read_bytes())).hexdigest()

    return digest


def check_patterns(patterns: Sequence[str]) -> list[str]:
    """The --ignore patterns, each compiled once to fail early with the pattern named."""
    for pat in patterns:
        try:
            re.compile(pat.encode())
        except re.error as err:
            raise ValueError(f"--ignore {pat!r} is not a regular expression: {err}") from None
    return list(patterns)


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
    what: str  # "exit", "stdout", "file", or several joined by "+"
    detail: str
    run_kind: str = "timed"  # "timed", "warmup" or "cachegrind"

    def message(self, baseline: str) -> str:
        where = "cachegrind run" if self.run_kind == "cachegrind" else f"{self.run_kind} round {self.round}"
        return f"OUTPUT MISMATCH: configuration {self.label!r} ({where}) differs from baseline {baseline!r}: {self.detail}"


NOT_WRITTEN = "not written by this run"


def files_snapshot(paths: Sequence[Path]) -> tuple[tuple[int, ...] | None, ...]:
    """Each output file's identity and times before a run (None: absent), so that a file a
    run did not write is not taken for its result: the one an earlier run left would match."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


def files_state(paths: Sequence[Path], before: tuple[tuple[int, ...] | None, ...] | None = None) -> tuple[str, ...]:
    """What a run left in the files it writes (`--output-file`): each one's sha256,
    "missing", or NOT_WRITTEN when it is as it was before the run (`before`, from
    files_snapshot). Compared with the reference run's like stdout, for programs whose
    result is a file (a compressor, a compiler, `xsltproc -o`), where stdout alone checks
    nothing."""
    now = files_snapshot(paths)
    out = []
    for i, path in enumerate(paths):
        if now[i] is None:
            out.append("missing")
            continue
        if before is not None and before[i] == now[i]:
            out.append(NOT_WRITTEN)
            continue
        try:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out.append(h.hexdigest())
        except OSError as err:
            out.append(f"unreadable ({err.strerror})")
    return tuple(out)


def files_unwritten(paths: Sequence[Path], state: tuple[str, ...]) -> list[Path]:
    """The files a run (whose state this is) did not write."""
    return [p for p, st in zip(paths, state) if st in ("missing", NOT_WRITTEN)]


def files_difference(paths: Sequence[Path], ref: tuple[str, ...], now: tuple[str, ...]) -> str | None:
    """The first output file whose content differs from the reference run's, in words."""
    for path, a, b in zip(paths, ref, now):
        if a != b:
            if b in ("missing", NOT_WRITTEN):
                return f"output file {path}: {'missing after this run' if b == 'missing' else b}"
            if a in ("missing", NOT_WRITTEN):
                return f"output file {path}: written by this run, not by the baseline's"
            return f"output file {path} differs from the baseline run's (sha256 {a[:12]}..., got {b[:12]}...)"
    return None


def compare_run(ref_status: ExitStatus, ref_stdout: Path, ref_sha: str, status: ExitStatus, stdout: Path,
                sha: str, files: Sequence[Path] = (), ref_files: tuple[str, ...] = (),
                files_now: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(what, detail) when a run's exit status, stdout or output files (`files`, their
    states from files_state) differ from the reference."""
    parts, what = [], []
    if status != ref_status:
        what.append("exit")
        parts.append(f"baseline {ref_status.describe()}, got {status.describe()}")
    if sha != ref_sha:
        what.append("stdout")
        parts.append(first_difference(ref_stdout, stdout) or "stdout differs")
    changed = files_difference(files, ref_files, files_now) if files else None
    if changed:
        what.append("file")
        parts.append(changed)
    if not parts:
        return None
    return "+".join(what), "; ".join(parts)
