"""Free list sharding (runtime/src/alloc.c): slots freed anywhere in a pool are reused before
fresh space, emptied chunks are released with none of their slots left on a list, and the
resident size stays flat under churn across many chunks. tests/runtime/shard_test runs
under the debug library, whose asserts check every pop against the allocating chunk and
every release against the queues."""

from __future__ import annotations

import pytest

from conftest import run_program

ENV = {"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_MIN_OBJECTS": "0"}


@pytest.mark.parametrize("mode,extra", [
    ("reuse", {}),
    ("release", {"HEAPLAYOUT_SPARE_CHUNKS": "0"}),  # released chunks' pages go back: visible in RSS
    ("churn", {}),
])
def test_shard_invariants(build_dir, mode, extra):
    exe = build_dir / "tests" / "runtime" / "shard_test"
    r = run_program([str(exe), mode], env_extra={**ENV, **extra}, timeout=300)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert r.stdout.decode().endswith("ok\n")
