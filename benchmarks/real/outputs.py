"""Output checks of the corpus: stdout compared after normalization.

A program's manifest entry lists regular expressions for the only parts of its stdout that
may differ between two identical runs (a solver's "Time used", a memory figure that depends
on the allocator). Each match is replaced by one fixed marker; everything else must be
byte-identical. The same normalization serves the check stage (our own runs) and bench
(as its stdout digest), so both judge a run the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from heaplayout.bench_check import IGNORED_MARK as MARK, ignoring_digest, normalizer  # noqa: F401  (one normalizer for bench, optimize and the corpus)


def file_digest(patterns: Sequence[str]) -> Callable[[Path], str]:
    """sha256 of a file's normalized content (bench's `digest` hook)."""
    return ignoring_digest(patterns)


def first_difference(expected: bytes, actual: bytes, limit: int = 160) -> str | None:
    """None when equal, else the first differing line (1-based) of the two texts."""
    if expected == actual:
        return None
    a, b = expected.split(b"\n"), actual.split(b"\n")
    for i, (x, y) in enumerate(zip(a, b), start=1):
        if x != y:
            return f"line {i}: expected {x[:limit]!r}, got {y[:limit]!r}"
    i = min(len(a), len(b)) + 1
    return f"line {i}: one output ends, the other has {len(b) - len(a):+d} lines"
