"""The randomized stress program (tests/stress/stress.cpp) under the runtime.

The program checks every byte of every object, alignment, calloc zeroing, malloc_usable_size,
realloc's preserved prefix, cross-thread frees and a fork() in the middle, and prints a summary
that depends only on its seed. Under libheaplayout.so (policies off and callsite, on glibc,
jemalloc, mimalloc and tcmalloc) it must exit 0 with exactly the stdout of a plain glibc run.
Callsite runs must really have pooled objects (stats JSON), so pooling that silently does
nothing fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import allocators
from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env

THREADS, OPS, SEED = "4", "100000", "1"
SMALL_THRESHOLDS = {"min_objects": "10", "max_size": "512"}


@pytest.fixture(scope="module")
def stress_bin(build_dir: Path) -> Path:
    b = build_dir / "tests" / "stress" / "stress"
    if not b.exists():
        pytest.fail(f"{b} not built: run scripts/build.sh")
    return b


@pytest.fixture(scope="module")
def reference(stress_bin: Path) -> dict[tuple[str, str, str], bytes]:
    """stdout of plain glibc runs, per (threads, ops, seed), computed once."""
    return {}


def plain_stdout(reference: dict, stress_bin: Path, args: tuple[str, str, str]) -> bytes:
    if args not in reference:
        res = run_program([str(stress_bin), *args])
        assert res.returncode == 0, f"plain glibc run failed: {res.stderr.decode(errors='replace')}"
        assert b"result: OK" in res.stdout
        reference[args] = res.stdout
    return reference[args]


def extra_env(allocator: str) -> dict[str, str]:
    # Debian's mimalloc 2.0.9 returns misaligned 256-byte-aligned blocks in this mix on its own
    # (without our runtime); the stress program then caps the alignments it asks for.
    return {"STRESS_MAX_ALIGN": "128"} if allocator == "mimalloc" else {}


def foreign_stderr(stderr: bytes) -> list[str]:
    """stderr lines not written by the stress program itself (the runtime must stay quiet)."""
    return [l for l in stderr.decode(errors="replace").splitlines() if l and not l.startswith("stress: ")]


def pooled_objects(stats: dict) -> int:
    return sum(int(p["objects"]) for p in stats["pools"])


def run_stress(stress_bin: Path, env: dict[str, str], args=(THREADS, OPS, SEED)):
    return run_program([str(stress_bin), *args], env_extra=env, timeout=180)


def describe(res) -> str:
    return f"exit {res.returncode}\n--- stderr ---\n{res.stderr.decode(errors='replace')[-3000:]}"


# ------------------------------------------------------------------ plain allocators (sanity)


@pytest.mark.parametrize("allocator", allocators.available_allocators())
def test_plain_allocators_agree(stress_bin, reference, allocator):
    """Without our runtime every allocator gives the glibc summary (the reference is sound)."""
    ref = plain_stdout(reference, stress_bin, (THREADS, OPS, SEED))
    res = run_stress(stress_bin, {**allocator_env(allocator), **extra_env(allocator)})
    assert res.returncode == 0, describe(res)
    assert res.stdout == ref


def test_summary_is_deterministic_and_seeded(stress_bin, reference):
    a = plain_stdout(reference, stress_bin, ("2", "20000", "5"))
    b = run_stress(stress_bin, {}, ("2", "20000", "5"))
    c = plain_stdout(reference, stress_bin, ("2", "20000", "6"))
    assert b.returncode == 0 and b.stdout == a
    assert c != a


def test_objects_cross_threads(stress_bin):
    res = run_stress(stress_bin, {})
    m = re.search(rb"cross-thread frees (\d+) of (\d+)", res.stderr)
    assert m, res.stderr
    crossed, total = int(m.group(1)), int(m.group(2))
    assert crossed >= 0.05 * total, f"only {crossed} of {total} objects freed by another thread"


# ------------------------------------------------------------------ under the runtime

CASES = []
for _alloc in allocators.ALLOCATORS:
    CASES.append(pytest.param(_alloc, "off", {}, id=f"{_alloc}-off"))
    CASES.append(pytest.param(_alloc, "callsite", {}, id=f"{_alloc}-callsite"))
    CASES.append(pytest.param(_alloc, "callsite", SMALL_THRESHOLDS, id=f"{_alloc}-callsite-min10-max512"))


@pytest.mark.parametrize("allocator, policy, options", CASES)
def test_stress_under_runtime(stress_bin, runtime_lib, reference, tmp_path, allocator, policy, options):
    if allocator not in allocators.available_allocators():
        pytest.skip(f"{allocator} is not installed (scripts/setup.sh installs it)")
    ref = plain_stdout(reference, stress_bin, (THREADS, OPS, SEED))
    stats_path = tmp_path / "stats.json"
    env = runtime_env(RuntimeConfig(policy=policy, allocator=allocator, options=options, stats_json=str(stats_path)))
    env.update(extra_env(allocator))
    res = run_stress(stress_bin, env)
    assert res.returncode == 0, describe(res)
    assert res.stdout == ref, "stdout differs from the plain glibc run\n" + describe(res)
    assert foreign_stderr(res.stderr) == [], "the runtime wrote to stderr"
    assert stats_path.exists(), "HEAPLAYOUT_STATS_JSON was set but no stats file was written"
    stats = json.loads(stats_path.read_text())
    assert stats["version"] == 1
    assert stats["policy"] == policy
    pooled = pooled_objects(stats)
    if policy == "callsite":
        # the stress program makes hundreds of thousands of small objects from a few call sites
        assert pooled > 1000, f"callsite policy pooled only {pooled} objects: {json.dumps(stats)[:2000]}"
        assert stats["forwarded"]["objects"] > 0, "large objects should have been forwarded"
    else:
        assert pooled == 0, "policy off must not pool anything"


@pytest.mark.parametrize("args", [("1", "60000", "11"), ("8", "15000", "12"), ("2", "40000", "13")])
def test_stress_other_shapes_callsite(stress_bin, runtime_lib, reference, tmp_path, args):
    """Other thread counts and seeds, small thresholds so that most sizes get pooled."""
    ref = plain_stdout(reference, stress_bin, args)
    stats_path = tmp_path / "stats.json"
    env = runtime_env(RuntimeConfig(policy="callsite", options={"min_objects": "1", "max_size": "4096"},
                                    stats_json=str(stats_path)))
    res = run_stress(stress_bin, env, args)
    assert res.returncode == 0, describe(res)
    assert res.stdout == ref
    assert pooled_objects(json.loads(stats_path.read_text())) > 0


def test_stats_on_stderr_do_not_change_stdout(stress_bin, runtime_lib, reference):
    ref = plain_stdout(reference, stress_bin, (THREADS, OPS, SEED))
    env = runtime_env(RuntimeConfig(policy="callsite", stats=True))
    res = run_stress(stress_bin, env)
    assert res.returncode == 0, describe(res)
    assert res.stdout == ref
    assert foreign_stderr(res.stderr), "HEAPLAYOUT_STATS=1 printed no table on stderr"


@pytest.mark.parametrize("variable, value", [("HEAPLAYOUT_MIN_OBJECTS", "many"), ("HEAPLAYOUT_MAX_SIZE", "-5"),
                                             ("HEAPLAYOUT_POLICY", "bogus")])
def test_bad_option_runs_unoptimized(stress_bin, runtime_lib, reference, tmp_path, variable, value):
    """A bad value: one message on stderr, then the program runs as usual (nothing pooled)."""
    ref = plain_stdout(reference, stress_bin, (THREADS, OPS, SEED))
    stats_path = tmp_path / "stats.json"
    env = runtime_env(RuntimeConfig(policy="callsite", stats_json=str(stats_path)))
    env[variable] = value
    res = run_stress(stress_bin, env)
    assert res.returncode == 0, describe(res)
    assert res.stdout == ref
    assert len(foreign_stderr(res.stderr)) == 1, f"expected one message, got: {foreign_stderr(res.stderr)}"
    if stats_path.exists():
        assert pooled_objects(json.loads(stats_path.read_text())) == 0


@pytest.mark.parametrize("allocator", ["glibc", "jemalloc"])
def test_stress_pool_range_exhausted(stress_bin, runtime_lib, reference, tmp_path, allocator):
    """The smallest range with the largest chunks the runtime accepts for it (16 chunks):
    pools run out of chunks in the middle of the run and must forward from then on."""
    if allocator not in allocators.available_allocators():
        pytest.skip(f"{allocator} is not installed")
    args = ("4", "50000", "3")
    ref = plain_stdout(reference, stress_bin, args)
    stats_path = tmp_path / "stats.json"
    env = runtime_env(RuntimeConfig(policy="callsite", allocator=allocator, stats_json=str(stats_path),
                                    options={"range": str(64 << 20), "chunk_size": str(4 << 20),
                                             "min_objects": "1", "max_size": "32768"}))
    res = run_stress(stress_bin, env, args)
    assert res.returncode == 0, describe(res)
    assert res.stdout == ref
    assert foreign_stderr(res.stderr) == [], "the options are valid: no message expected"
    stats = json.loads(stats_path.read_text())
    assert pooled_objects(stats) > 0
    assert stats["forwarded"]["objects"] > 0
