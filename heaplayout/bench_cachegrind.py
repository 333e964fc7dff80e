"""Cachegrind runs for `heaplayout bench --cachegrind`: the cache geometry, one run, and the
parsing of its out file."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .bench_config import BenchError
from .bench_launch import ExitStatus
from .program_input import open_stdin

DEFAULT_LL = "4194304,16,64"  # 4 MiB, 16-way, 64-byte lines (a realistic L3 slice; FACTS.md)
DEFAULT_D1 = "32768,8,64"  # 32 KiB, 8-way, 64-byte lines (fixed, not taken from the host)


@dataclass(frozen=True)
class CacheSpec:
    LL: str = DEFAULT_LL
    D1: str = DEFAULT_D1

    def valgrind_args(self) -> list[str]:
        return ["--tool=cachegrind", "--cache-sim=yes", f"--LL={self.LL}", f"--D1={self.D1}"]


def check_cache_geometry(text: str, what: str) -> str:
    """Validate SIZE,WAYS,LINE (positive integers); returns it normalized."""
    parts = text.split(",")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        nums = []
    if len(nums) != 3 or min(nums) <= 0:
        raise BenchError(f"--{what} wants SIZE,WAYS,LINE in bytes/ways/bytes, e.g. {DEFAULT_LL}; got {text!r}")
    return ",".join(str(n) for n in nums)


class CachegrindParseError(BenchError):
    pass


def parse_cachegrind(text: str) -> dict[str, int]:
    """Event totals from a cachegrind out file: its `events:` names and `summary:` counts."""
    events: list[str] | None = None
    summary: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line[len("events:"):].split()
        elif line.startswith("summary:"):
            summary = line[len("summary:"):].split()
    if events is None or summary is None:
        raise CachegrindParseError("cachegrind output has no events:/summary: line")
    if len(summary) != len(events):
        raise CachegrindParseError(f"cachegrind summary has {len(summary)} counts for {len(events)} events")
    try:
        return {name: int(count) for name, count in zip(events, summary)}
    except ValueError:
        raise CachegrindParseError("cachegrind summary has a non-integer count") from None


@dataclass(frozen=True)
class CacheCounts:
    I_refs: int
    D_refs: int
    D1_misses: int
    LL_misses: int  # data misses in LL (DLmr + DLmw)

    @classmethod
    def from_events(cls, ev: dict[str, int]) -> "CacheCounts":
        need = ("Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw")
        missing = [n for n in need if n not in ev]
        if missing:
            raise CachegrindParseError(f"cachegrind events lack {', '.join(missing)} (was --cache-sim=yes given?)")
        return cls(I_refs=ev["Ir"], D_refs=ev["Dr"] + ev["Dw"], D1_misses=ev["D1mr"] + ev["D1mw"],
                   LL_misses=ev["DLmr"] + ev["DLmw"])


def run_cachegrind(program: Sequence[str], env: dict[str, str], workdir: Path, tag: str, cache: CacheSpec,
                   valgrind: str = "valgrind", stdin: Path | None = None) -> tuple[CacheCounts, dict[str, int], ExitStatus, Path, Path]:
    """One run under cachegrind. LD_PRELOAD stays in valgrind's own environment, which
    valgrind passes to the client (an `env LD_PRELOAD=..` client would measure `env`)."""
    out_path, err_path, cg_path = workdir / f"{tag}.out", workdir / f"{tag}.err", workdir / f"{tag}.cg"
    argv = [valgrind, *cache.valgrind_args(), f"--cachegrind-out-file={cg_path}", *program]
    with open(out_path, "wb") as out, open(err_path, "wb") as err, open_stdin(stdin) as inp:
        rc = subprocess.run(argv, stdin=inp, stdout=out, stderr=err, env=env).returncode
    if not cg_path.exists():
        raise BenchError(f"cachegrind wrote no output for {tag} (valgrind exit {rc}); see {err_path}")
    events = parse_cachegrind(cg_path.read_text())
    return CacheCounts.from_events(events), events, ExitStatus.from_returncode(rc), out_path, err_path
