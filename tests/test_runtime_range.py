"""The pool range is mapped as the pools grow (runtime/src/chunk.c, range_grow), from a hint
address (runtime/src/tunables.h, HL_RANGE_HINT), not all 16 GiB at start: a program's
virtual size stays near what it uses (programs print it: minisat's "Memory used"), and an
address-space limit no longer leaves the program unoptimized. tests/runtime/range_grow_test.c
allocates 2M objects of 64 bytes from one call site (128 MB, past the range's first 16 MiB)
and can put a page in the way first: at the hint (the runtime maps the whole range
elsewhere, as before) or right above the first part (the range cannot grow; the rest goes to
the allocator underneath)."""

from __future__ import annotations

import json
import re
import resource
import subprocess
from pathlib import Path

import pytest

N = 2_000_000


def run(build_dir: Path, runtime_lib: Path | None, mode: str, tmp_path: Path,
        as_limit: int | None = None) -> tuple[str, int, dict | None]:
    prog = build_dir / "tests" / "runtime" / "range_grow_test"
    env = {"PATH": "/usr/bin:/bin"}
    stats = tmp_path / f"stats-{mode}-{as_limit}.json"
    if runtime_lib is not None:
        env.update({"LD_PRELOAD": str(runtime_lib), "HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_STATS_JSON": str(stats)})

    def limit() -> None:
        if as_limit:
            resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))

    r = subprocess.run([str(prog), mode, str(N)], env=env, capture_output=True, text=True, timeout=120,
                       preexec_fn=limit)
    assert r.returncode == 0, r.stderr
    peak = int(re.search(r"vmpeak_kib (\d+)", r.stderr).group(1))
    return r.stdout, peak, json.loads(stats.read_text()) if runtime_lib is not None else None


def pooled(stats: dict) -> int:
    return sum(p["objects"] for p in stats["pools"])


def test_range_grows_with_the_pools(build_dir: Path, runtime_lib: Path, tmp_path: Path) -> None:
    native, native_peak, _ = run(build_dir, None, "none", tmp_path)
    out, peak, stats = run(build_dir, runtime_lib, "none", tmp_path)
    assert out == native
    assert pooled(stats) >= N - 1000  # all but the first 100 (callsite pools a site from then), past the first part of the range
    # mapped as used (the 128 MB of objects, the range doubling past them), not 16 GiB
    assert peak < native_peak + (1 << 20), (peak, native_peak)


def test_address_space_limit_still_pools(build_dir: Path, runtime_lib: Path, tmp_path: Path) -> None:
    """Under a 2 GiB address-space limit the runtime used to print "could not reserve" and
    pool nothing."""
    native, _, _ = run(build_dir, None, "none", tmp_path)
    out, _, stats = run(build_dir, runtime_lib, "none", tmp_path, as_limit=2 << 30)
    assert out == native
    assert pooled(stats) >= N - 1000


def test_hint_taken_maps_the_whole_range_elsewhere(build_dir: Path, runtime_lib: Path, tmp_path: Path) -> None:
    native, _, _ = run(build_dir, None, "none", tmp_path)
    out, peak, stats = run(build_dir, runtime_lib, "hint", tmp_path)
    assert out == native
    assert pooled(stats) >= N - 1000
    assert peak > 16 << 20  # KiB: the 16 GiB range mapped at once, as before


def test_range_that_cannot_grow_forwards_the_rest(build_dir: Path, runtime_lib: Path, tmp_path: Path) -> None:
    native, _, _ = run(build_dir, None, "none", tmp_path)
    out, _, stats = run(build_dir, runtime_lib, "growth", tmp_path)
    assert out == native
    assert 0 < pooled(stats) < N
    assert stats["forwarded"]["objects"] >= N - pooled(stats)
