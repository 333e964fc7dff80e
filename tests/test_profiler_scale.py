"""Profiling at scale (issue 24): the sampling mode's estimates, the context cache and the
caps on graphs and object records. The sampling checks use a property of the stratified
window choice: with period R, the phases 0..R-1 of one seed profile every window exactly
once between them, so on a deterministic run their sampled counts add up to the full
profile's counts exactly; the estimates (sampled count x R) therefore average to the full
count over the phases. Each phase alone profiles every window with probability 1/R, which
is what makes a single sampled profile's estimate unbiased."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout import paths
from heaplayout.profile_merge import merge_profiles
from heaplayout.profile_reader import read_profile

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

PERIOD = 3
WINDOW = 20000  # superblocks: health's small input runs ~400 windows, ~130 profiled per phase


def profile(tmp_path: Path, argv: list[str], *opts: str, name: str) -> Path:
    out = tmp_path / name
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "heaplayout.cli", "profile", "-o", str(out), *opts, "--", *argv]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return out


@pytest.fixture(scope="module")
def health(build_dir: Path) -> list[str]:
    exe = build_dir / "workloads" / "fp" / "health"
    if not (build_dir / "profiler" / "lib" / "hlprof-amd64-linux").exists() or not exe.exists():
        pytest.fail(f"profiler or the health workload not built in {build_dir}: run scripts/build.sh")
    return [str(exe), "7", "40", "1"]  # the suite's small input


@pytest.fixture(scope="module")
def full_and_phases(health: list[str], tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("sample")
    full = read_profile(profile(tmp, health, name="full.prof"), with_stream=False, with_objects=False)
    phases = [read_profile(profile(tmp, health, "--sample", "--sample-period", str(PERIOD), "--sample-window",
                                   str(WINDOW), "--sample-seed", "7", "--sample-phase", str(j), name=f"s{j}.prof"),
                          with_stream=False, with_objects=False)
              for j in range(PERIOD)]
    return full, phases


def by_frames(p) -> dict:
    return {p.context_key(c): c for c in p.contexts.values()}


def test_phases_add_up_to_the_full_profile(full_and_phases) -> None:
    full, phases = full_and_phases
    assert full.header_int("sample_period") == 1
    fctx = by_frames(full)
    for p in phases:
        assert p.header_int("sample_period") == PERIOD and p.header_int("sample_window") == WINDOW
        assert p.header_int("sample_seed") == 7
        assert set(by_frames(p)) == set(fctx)  # every allocation is recorded in every window
        assert 0 < p.summary["sampled_heap_accesses"] < full.summary["heap_accesses"]
        assert p.summary["heap_accesses"] == PERIOD * p.summary["sampled_heap_accesses"]
    # the phases partition the windows: estimates average to the full count, context by context
    assert sum(p.summary["heap_accesses"] for p in phases) == PERIOD * full.summary["heap_accesses"]
    for key, c in fctx.items():
        ests = [by_frames(p)[key] for p in phases]
        assert sum(e.loads for e in ests) == PERIOD * c.loads, key
        assert sum(e.stores for e in ests) == PERIOD * c.stores, key
        assert sum(e.load_bytes + e.store_bytes for e in ests) == PERIOD * (c.load_bytes + c.store_bytes), key
        assert all(e.objects == c.objects and e.bytes == c.bytes for e in ests), key  # allocations: exact


def test_pointer_edges_are_exact_in_every_phase(full_and_phases) -> None:
    """Pointer stores are recorded in every window, not sampled: the planner's structure
    detection asks whether any store through a field linked two objects of one structure,
    and a sample of the stores says no too often (lua5.4: 14 such fields of 61)."""
    full, phases = full_and_phases
    def keyed(p, counts):
        ids = {c.id: p.context_key(c) for c in p.contexts.values()}
        return {(ids[a], off, ids[b]): n for (a, off, b), n in counts.items()}
    fk = keyed(full, full.pointer_edges)
    assert fk and sum(fk.values()) > 1000   # health links its lists: there is something to compare
    for p in phases:
        assert keyed(p, p.pointer_edges) == fk
        assert keyed(p, p.adjacent_links) == keyed(full, full.adjacent_links)


def test_sampled_pointer_edges_without_every_window(full_and_phases, health: list[str], build_dir: Path,
                                                    tmp_path: Path) -> None:
    """--sample-edges=no: pointer stores are profiled in the sampled windows only and written
    times R, so the phases' estimates add up to R times the full counts."""
    full, _ = full_and_phases
    fids = {c.id: full.context_key(c) for c in full.contexts.values()}
    fk = {(fids[a], off, fids[b]): n for (a, off, b), n in full.pointer_edges.items()}
    env = dict(os.environ, VALGRIND_LIB=str(build_dir / "profiler" / "lib"))
    env.pop("LD_PRELOAD", None)
    total: dict = {}
    for j in range(PERIOD):
        out = tmp_path / f"e{j}.prof"
        r = subprocess.run(["valgrind", "-q", "--tool=hlprof", f"--out-file={out}", "--sample=yes", "--sample-edges=no",
                            f"--sample-period={PERIOD}", f"--sample-window={WINDOW}", "--sample-seed=7",
                            f"--sample-phase={j}", *health], env=env, capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        p = read_profile(out, with_stream=False, with_objects=False)
        assert p.header["sample_edges"] == "0"
        ids = {c.id: p.context_key(c) for c in p.contexts.values()}
        phase = {}
        for (a, off, b), n in p.pointer_edges.items():
            assert n % PERIOD == 0
            key = (ids[a], off, ids[b])
            phase[key] = n
            total[key] = total.get(key, 0) + n
        assert phase != fk   # a sample, not the exact counts
    assert total == {k: PERIOD * n for k, n in fk.items()}


def test_each_phase_estimates_within_bounds(full_and_phases) -> None:
    full, phases = full_and_phases
    total = full.summary["heap_accesses"]
    for p in phases:
        assert abs(p.summary["heap_accesses"] - total) < 0.25 * total
        # the profiled share of the run is about 1/R (one window in every R)
        share = p.summary["sample_on_blocks"] / p.summary["sample_blocks"]
        assert abs(share - 1 / PERIOD) < 0.1


def test_affinity_estimate_loses_only_window_starts(full_and_phases) -> None:
    """Queues are emptied when a window opens: the mean estimate can only be lower than the
    full weight, by at most the pairs of the first A bytes of each window."""
    full, phases = full_and_phases
    w_full = sum(full.affinity.values())
    mean = sum(sum(p.affinity.values()) for p in phases) / PERIOD
    assert w_full * 0.99 <= mean <= w_full
    # the strongest edge of the full profile is the strongest of the mean of the phases too
    def keyed(p):
        ids = {c.id: p.context_key(c) for c in p.contexts.values()}
        return {frozenset((ids[x], ids[y])): w for (x, y), w in p.affinity.items()}
    fk = keyed(full)
    mean_k: dict = {}
    for p in phases:
        for k, w in keyed(p).items():
            mean_k[k] = mean_k.get(k, 0) + w / PERIOD
    assert max(fk, key=fk.get) == max(mean_k, key=mean_k.get)


def test_merge_of_phases_keeps_estimates(full_and_phases) -> None:
    full, phases = full_and_phases
    merged = merge_profiles(phases)
    assert merged.summary["heap_accesses"] == PERIOD * full.summary["heap_accesses"]
    assert merged.header.get("sample_period") == str(PERIOD)
    mixed = merge_profiles([full, phases[0]])
    assert mixed.header.get("sample_period") == "mixed"


def test_caps_are_reported_and_respected(build_dir: Path, tmp_path: Path) -> None:
    exe = build_dir / "tests" / "profiler" / "hp_exact"  # 1000 objects from two contexts
    if not exe.exists():
        pytest.fail(f"tests/profiler not built in {build_dir}: run scripts/build.sh")
    p = read_profile(profile(tmp_path, [str(exe)], "--graph-max", "1", "--objects-max", "50", name="cap.prof"),
                     with_stream=False)
    assert p.header["graph_max"] == "1" and p.header["objects_max"] == "50" and "stream_max" in p.header
    assert len(p.affinity) <= 1 and len(p.neighbours) <= 1 and len(p.pointer_edges) <= 1
    assert len(p.objects) == 50
    assert p.summary["objects_dropped"] == p.summary["objects"] - 50 > 0
    assert p.summary["neighbours_dropped_adds"] > 0  # a->b and b->a: two keys, one kept
    # contexts' totals do not depend on the caps
    assert sum(c.objects for c in p.contexts.values()) == p.summary["objects"]
    full = read_profile(profile(tmp_path, [str(exe)], name="full.prof"), with_stream=False)
    assert full.header["graph_max"] == "4194304" and len(full.neighbours) == 2
    assert not any(k.endswith("_dropped_adds") for k in full.summary)


def test_context_cache_gives_the_unwound_contexts(build_dir: Path, tmp_path: Path) -> None:
    """cxx_dom (C++, operator new through libstdc++): with the cache every allocation lands
    at the context a full unwind gives, and the checks it made found no disagreement."""
    exe = build_dir / "workloads" / "fp" / "cxx_dom"
    if not exe.exists():
        pytest.fail(f"the cxx_dom workload is not built in {build_dir}: run scripts/build.sh")
    argv = [str(exe), "10000", "12"]  # the suite's small input
    plain = read_profile(profile(tmp_path, argv, "--no-affinity", name="u.prof"), with_stream=False,
                         with_objects=False)
    cached = read_profile(profile(tmp_path, argv, "--no-affinity", "--context-cache", name="c.prof"),
                          with_stream=False, with_objects=False)
    assert plain.header["context_cache"] == "0" and cached.header["context_cache"] == "1"
    assert "context_cache_hits" not in plain.summary
    s = cached.summary
    assert s["context_cache_hits"] > 10 * s["context_cache_misses"] > 0  # the cache is used
    assert s["context_cache_checks"] > 0 and s["context_cache_mismatches"] == 0
    pk = {plain.context_key(c): (c.objects, c.bytes, c.loads, c.stores) for c in plain.contexts.values()}
    ck = {cached.context_key(c): (c.objects, c.bytes, c.loads, c.stores) for c in cached.contexts.values()}
    assert pk == ck


def test_retranslated_windows_count_what_instrumented_ones_do(health: list[str], tmp_path: Path) -> None:
    """--sample-retranslate runs unprofiled windows on uninstrumented translations, thrown
    away at every switch: the same windows are profiled, up to where a switch lands (a
    retranslation returns to the scheduler, whose hook decides windows, at other blocks)."""
    opts = ["--sample", "--sample-period", "3", "--sample-window", "300000", "--sample-seed", "7"]
    a = read_profile(profile(tmp_path, health, *opts, name="a.prof"), with_stream=False, with_objects=False)
    b = read_profile(profile(tmp_path, health, *opts, "--sample-retranslate", name="b.prof"), with_stream=False,
                     with_objects=False)
    assert b.header["sample_retranslate"] == "1" and a.header["sample_retranslate"] == "0"
    assert b.summary["sample_retranslations"] >= 2 * b.summary["sample_windows_on"] - 1 > 0
    assert a.summary["objects"] == b.summary["objects"]
    for k in ("heap_accesses", "affinity_pairs", "sample_on_blocks"):
        assert abs(a.summary[k] - b.summary[k]) <= 0.005 * a.summary[k], k
    ka = {a.context_key(c): c.accesses for c in a.contexts.values()}
    kb = {b.context_key(c): c.accesses for c in b.contexts.values()}
    assert ka.keys() == kb.keys()
    assert sum(abs(ka[k] - kb[k]) for k in ka) <= 0.01 * sum(ka.values())
