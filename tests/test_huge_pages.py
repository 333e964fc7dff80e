"""Transparent huge pages (HEAPLAYOUT_HUGE_PAGES, the `huge_pages` option): our range is
madvised, the allocator underneath gets its own setting, and the user's settings stay."""

from __future__ import annotations

import re

import pytest

from heaplayout import allocators, bench
from heaplayout.runtime_env import RuntimeConfig, runtime_env

from conftest import run_program

CLI = ["python3", "-m", "heaplayout.cli"]


def huge_page_mappings(smaps: str) -> list[str]:
    """Start addresses of the mappings whose VmFlags carry 'hg' (madvised MADV_HUGEPAGE)."""
    out, start = [], None
    for line in smaps.splitlines():
        m = re.match(r"^([0-9a-f]+)-[0-9a-f]+ ", line)
        if m:
            start = m.group(1)
        elif line.startswith("VmFlags:") and " hg" in f" {line.split(':', 1)[1]}":
            out.append(start)
    return out


def test_the_range_is_madvised_only_when_asked(runtime_lib):
    """cat of its own smaps under the runtime: with huge_pages=1 the range's first part (mapped
    at start) carries the madvise flag; by default no mapping does."""
    env = {"LD_PRELOAD": str(runtime_lib), "HEAPLAYOUT_POLICY": "callsite"}
    on = run_program(["cat", "/proc/self/smaps"], env_extra={**env, "HEAPLAYOUT_HUGE_PAGES": "1"})
    off = run_program(["cat", "/proc/self/smaps"], env_extra=env)
    assert on.returncode == 0 and off.returncode == 0 and on.stderr == b"" and off.stderr == b""
    assert huge_page_mappings(off.stdout.decode()) == []
    marked = huge_page_mappings(on.stdout.decode())
    assert len(marked) == 1, marked
    lib = run_program(["cat", "/proc/self/smaps"],
                      env_extra={**env, "HEAPLAYOUT_HUGE_PAGES": "2"})
    assert b"HEAPLAYOUT_HUGE_PAGES" in lib.stderr and huge_page_mappings(lib.stdout.decode()) == []


def test_plain_allocators_take_their_own_setting():
    env = bench.config_env(bench.parse_config("jemalloc:huge_pages=1"))
    assert env["MALLOC_CONF"] == "thp:always" and env["LD_PRELOAD"].endswith("libjemalloc.so.2")
    assert bench.config_env(bench.parse_config("glibc:huge_pages=1")) == {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    assert bench.config_env(bench.parse_config("mimalloc:huge_pages=0")) == bench.config_env(bench.parse_config("mimalloc"))
    with pytest.raises(bench.ConfigError, match="tcmalloc.*no setting for transparent huge pages"):
        bench.parse_config("tcmalloc:huge_pages=1")
    with pytest.raises(bench.ConfigError, match="out of range"):
        bench.parse_config("jemalloc:huge_pages=2")
    with pytest.raises(bench.ConfigError, match="plain allocator"):
        bench.parse_config("jemalloc:huge_pages=1,max_size=64")


def test_our_runtime_sets_the_allocator_underneath_too():
    env = runtime_env(RuntimeConfig(policy="callsite", allocator="mimalloc", options={"huge_pages": "1"}))
    assert env["HEAPLAYOUT_HUGE_PAGES"] == "1" and env["MIMALLOC_LARGE_OS_PAGES"] == "1"
    env = runtime_env(RuntimeConfig(policy="callsite", allocator="tcmalloc", options={"huge_pages": "1"}))
    assert env["HEAPLAYOUT_HUGE_PAGES"] == "1" and not set(env) & {"MALLOC_CONF", "GLIBC_TUNABLES"}
    assert "GLIBC_TUNABLES" not in runtime_env(RuntimeConfig(policy="callsite", options={"huge_pages": "0"}))


def test_the_users_settings_stay_beside_ours():
    base = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2", "MALLOC_CONF": "narenas:1", "LD_PRELOAD": "/x.so"}
    env = bench.program_env(base, bench.config_env(bench.parse_config("glibc:huge_pages=1")))
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    assert env["MALLOC_CONF"] == "narenas:1" and "LD_PRELOAD" not in env
    assert allocators.merge_settings({}, {"MALLOC_CONF": "thp:always"}) == {"MALLOC_CONF": "thp:always"}
    r = run_program(CLI + ["run", "--huge-pages", "1", "--", "sh", "-c", "echo $GLIBC_TUNABLES"],
                    env_extra={"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert r.returncode == 0 and r.stdout == b"glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1\n", r.stderr
