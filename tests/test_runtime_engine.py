"""Unit tests of the runtime's chunk/pool engine (tests/runtime/engine_test.c), each case
run in the environment it needs; the C side checks addresses, contents and residency."""

from __future__ import annotations

import json
import os
import resource
import subprocess

import pytest

from conftest import run_program

CALLSITE_EVERY = {"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_MIN_OBJECTS": "0"}

CASES = {
    "pooling_threshold": {"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_MIN_OBJECTS": "10"},
    "alignment": CALLSITE_EVERY,
    "reuse": CALLSITE_EVERY,
    "chunk_return": {**CALLSITE_EVERY, "HEAPLAYOUT_SPARE_CHUNKS": "1"},  # HALO's one spare
    "realloc_in_place": {**CALLSITE_EVERY, "HEAPLAYOUT_MAX_SIZE": "1024"},
    "cross_thread_free": CALLSITE_EVERY,
    "foreign_pointers": CALLSITE_EVERY,
    "ccmalloc": {"HEAPLAYOUT_CC_BLOCK": "256"},
    "pool_api": {},
    "pool_align8": {"HEAPLAYOUT_MIN_ALIGN": "16"},  # a pool's align 8 is its own, not the environment's
    "fork": CALLSITE_EVERY,
    "adopt": CALLSITE_EVERY,
    "emptied_chunks": {**CALLSITE_EVERY, "HEAPLAYOUT_SPARE_CHUNKS": "0"},
    "sized_delete": CALLSITE_EVERY,
    "spans": {**CALLSITE_EVERY, "HEAPLAYOUT_CHUNK_SIZE": "256K"},
}


@pytest.fixture(scope="module")
def engine_test(build_dir):
    path = build_dir / "tests" / "runtime" / "engine_test"
    assert path.exists(), f"{path} not built"
    return str(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_case(engine_test, case):
    r = run_program([engine_test, case], env_extra=CASES[case])
    assert r.returncode == 0, r.stderr.decode()
    assert b"check failed" not in r.stderr


def test_a_mismatched_sized_delete_stops_the_debug_library(engine_test):
    """A sized delete takes the slot's class from the size; the debug library checks it
    against the size map, so a wrong size (undefined behaviour) stops at the check."""
    r = run_program([engine_test, "sized_delete_mismatch"], env_extra=CALLSITE_EVERY)
    assert r.returncode != 0
    assert b"internal assertion failed: cls == hl_class_at(c, p)" in r.stderr, r.stderr.decode()
    assert b"not reached" not in r.stdout


def test_an_unknown_case_fails(engine_test):
    """The driver itself can fail: a case that does not exist is an error."""
    r = run_program([engine_test, "no_such_case"])
    assert r.returncode == 2


@pytest.mark.parametrize(
    "variable,value",
    [
        ("HEAPLAYOUT_POLICY", "bogus"),
        ("HEAPLAYOUT_MIN_OBJECTS", "many"),
        ("HEAPLAYOUT_MAX_SIZE", "0"),
        ("HEAPLAYOUT_CHUNK_SIZE", "3M"),
        ("HEAPLAYOUT_RANGE", "1K"),
        ("HEAPLAYOUT_CC_BLOCK", "100"),
        ("HEAPLAYOUT_SPARE_CHUNKS", "5000"),
        ("HEAPLAYOUT_SPAN_BYTES", "100"),
    ],
)
def test_bad_setting_gives_one_message_and_runs_unoptimized(engine_test, variable, value):
    env = {"HEAPLAYOUT_POLICY": "callsite", variable: value}
    r = run_program([engine_test, "policy_name"], env_extra=env)
    assert r.returncode == 0
    messages = [line for line in r.stderr.decode().splitlines() if line.startswith("heaplayout:")]
    assert len(messages) == 1, messages
    assert variable in messages[0] and "unoptimized" in messages[0]
    assert r.stdout.decode().strip() == "policy off"


def test_good_settings_are_accepted(engine_test):
    env = {"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_MIN_OBJECTS": "5", "HEAPLAYOUT_MAX_SIZE": "4K",
           "HEAPLAYOUT_CHUNK_SIZE": "4M", "HEAPLAYOUT_RANGE": "8G", "HEAPLAYOUT_CC_BLOCK": "512"}
    r = run_program([engine_test, "policy_name"], env_extra=env)
    assert r.returncode == 0 and r.stderr == b""
    assert r.stdout.decode().strip() == "policy callsite"


def test_unknown_variable_is_named(engine_test):
    r = run_program([engine_test, "policy_name"], env_extra={"HEAPLAYOUT_POLCY": "callsite"})
    assert r.returncode == 0
    assert "HEAPLAYOUT_POLCY" in r.stderr.decode()


def test_stats_json_and_table(engine_test, tmp_path):
    out = tmp_path / "stats.json"
    env = {**CASES["pooling_threshold"], "HEAPLAYOUT_STATS": "1", "HEAPLAYOUT_STATS_JSON": str(out)}
    r = run_program([engine_test, "pooling_threshold"], env_extra=env)
    assert r.returncode == 0
    stats = json.loads(out.read_text())
    assert stats["version"] == 1 and stats["policy"] == "callsite"
    pools = [p for p in stats["pools"] if p["kind"] == "site"]
    # two sites pooled after 10 objects each: 10 pooled objects per site
    assert sorted(p["objects"] for p in pools) == [10, 10]
    assert all(p["bytes_requested"] == 480 and p["live_objects"] == 0 for p in pools)
    assert all(p["bytes_resident"] > 0 and p["peak_resident"] >= p["bytes_resident"] for p in pools)
    assert {p["symbol"] for p in pools} <= {"site_a", "site_b", ""}
    assert stats["forwarded"]["objects"] >= 21  # 10 + 10 before the threshold, and the 4 KiB one
    table = r.stderr.decode()
    assert "policy callsite, 2 pools" in table and "objects" in table


def test_stats_json_pid_substitution(engine_test, tmp_path):
    env = {"HEAPLAYOUT_STATS_JSON": str(tmp_path / "s.%p.json")}
    r = run_program([engine_test, "policy_name"], env_extra=env)
    assert r.returncode == 0
    files = list(tmp_path.glob("s.*.json"))
    assert len(files) == 1 and files[0].name != "s.%p.json"
    assert json.loads(files[0].read_text())["policy"] == "off"


def test_setuid_program_ignores_the_environment(engine_test, tmp_path):
    """A set-uid binary run by another user must not take settings from the environment."""
    import os
    import shutil

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to make and run a set-uid binary")
    suid = tmp_path / "suid_engine_test"
    shutil.copy(engine_test, suid)
    os.chmod(tmp_path, 0o755)
    os.chmod(suid, 0o4755)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = {"HEAPLAYOUT_POLICY": "callsite"}
    plain = run_program(as_nobody + [engine_test, "policy_name"], env_extra=env)
    secure = run_program(as_nobody + [str(suid), "policy_name"], env_extra=env)
    assert plain.stdout.decode().strip() == "policy callsite"
    assert secure.returncode == 0 and secure.stdout.decode().strip() == "policy off"


REALLOC_ZERO_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static void *site(void) { return malloc(24); }
int main(void) {
  void *keep[200];
  for (int i = 0; i < 200; i++) keep[i] = site();  /* the site is pooled by now */
  void *r = realloc(keep[199], 0);
  printf("realloc(p, 0) %s\n", r ? "returns an object" : "returns NULL");
  free(r);
  for (int i = 0; i < 199; i++) free(keep[i]);
  return 0;
}
"""


@pytest.mark.parametrize("allocator", ["glibc", "jemalloc", "mimalloc", "tcmalloc"])
def test_realloc_to_zero_behaves_like_the_allocator_underneath(runtime_lib, tmp_path, allocator):
    from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env

    src = tmp_path / "rz.c"
    src.write_text(REALLOC_ZERO_C)
    exe = tmp_path / "rz"
    subprocess.run(["gcc", "-O1", "-fno-builtin", str(src), "-o", str(exe)], check=True)
    plain = run_program([str(exe)], env_extra=allocator_env(allocator))
    ours = run_program([str(exe)], env_extra=runtime_env(RuntimeConfig(policy="callsite", allocator=allocator)))
    assert plain.returncode == ours.returncode == 0
    assert ours.stdout == plain.stdout, (plain.stdout, ours.stdout)


def test_chunks_are_coloured(runtime_lib, build_dir):
    """Packed 64-byte objects repeat their line positions in every page; each new chunk
    starts one line further (tunables.h HL_CHUNK_COLORS), so every 16th object of a pool
    spread over 16+ chunks reaches all 64 line positions of a page (jemalloc: 4)."""
    exe = build_dir / "benchmarks" / "line_positions"
    assert exe.exists(), f"{exe} not built"
    env = {**CALLSITE_EVERY, "HEAPLAYOUT_CHUNK_SIZE": str(256 << 10), "LD_PRELOAD": str(runtime_lib)}
    r = run_program([str(exe), "200000", "64", "16"], env_extra=env)   # 12.8 MB: about 50 chunks
    assert r.returncode == 0, r.stderr.decode()
    used = int(r.stdout.decode().split(" on ")[1].split(" of 64")[0])
    assert used == 64, r.stdout.decode()
    # within one chunk, or with colouring off, the pattern is plain packing: 4 positions (one
    # size's spans follow each other without a gap: tunables.h HL_SPAN_GAP_LINES)
    for argv, extra in ((["2000", "64", "16"], {}), (["200000", "64", "16"], {"HEAPLAYOUT_CHUNK_COLORS": "1"})):
        r = run_program([str(exe), *argv], env_extra={**env, **extra})
        assert r.returncode == 0 and not r.stderr, r.stderr.decode()
        used = int(r.stdout.decode().split(" on ")[1].split(" of 64")[0])
        assert used == 4, r.stdout.decode()


def _minor_faults(argv: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    r = subprocess.run(argv, env={**os.environ, **env}, capture_output=True, check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before, r.stdout


def test_spare_chunks_keep_a_rebuilt_structure_resident(engine_test):
    """A structure built and freed whole every round empties its pool each round: all its
    chunks are released at once. Chunks kept as spares are reused resident; the others'
    pages go back to the OS and fault in again on reuse (6 rounds of 6.4 MB)."""
    env = {**CALLSITE_EVERY, "LD_PRELOAD": ""}
    none, _ = _minor_faults([engine_test, "rebuild_rounds"], {**env, "HEAPLAYOUT_SPARE_CHUNKS": "0"})
    many, _ = _minor_faults([engine_test, "rebuild_rounds"], {**env, "HEAPLAYOUT_SPARE_CHUNKS": "64"})
    # measured: 10400 faults with no spare, 2200 with 64 (5 rounds of ~1600 re-faulted pages)
    assert none - many > 5000, (none, many)


NEW_SEMANTICS_CC = r"""
#include <cstdio>
#include <cstdlib>
#include <new>
static int handler_calls;
static void *reserve;
static void release_reserve() {  // frees its reserve once, then gives up
  handler_calls++;
  if (reserve) { std::free(reserve); reserve = nullptr; return; }
  std::set_new_handler(nullptr);
}
__attribute__((noinline)) static int *site(int i) { return new int[4]{i, i, i, i}; }
int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // every line out before a possible abort
  int *keep[300];
  long sum = 0;
  for (int i = 0; i < 300; i++) keep[i] = site(i);  // pooled under callsite by now
  for (int i = 0; i < 300; i++) { sum += keep[i][3]; delete[] keep[i]; }
  std::printf("sum %ld\n", sum);
  void *p = ::operator new(((size_t)1 << 62), std::nothrow);
  std::printf("nothrow huge: %s\n", p ? "object" : "NULL");
  reserve = std::malloc(64);
  std::set_new_handler(release_reserve);
  try {
    void *q = ::operator new((size_t)1 << 62);
    std::printf("huge: object %p\n", q);
  } catch (const std::bad_alloc &) {
    std::printf("huge: bad_alloc after %d handler calls\n", handler_calls);
  }
  std::fflush(stdout);
  return 0;
}
"""


@pytest.mark.parametrize("policy", ["off", "callsite"])
@pytest.mark.parametrize("allocator", ["glibc", "jemalloc", "mimalloc", "tcmalloc"])
def test_operator_new_behaves_like_the_allocator_underneath(runtime_lib, tmp_path, allocator, policy):
    """A new our runtime forwards goes to the allocator's own operator new when it has one,
    so the new_handler loop, bad_alloc, nothrow NULL (or an abort: Debian's mimalloc, a C
    build, aborts where it would throw) are exactly the allocator alone's."""
    from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env

    src = tmp_path / "nw.cc"
    src.write_text(NEW_SEMANTICS_CC)
    exe = tmp_path / "nw"
    subprocess.run(["g++", "-O1", "-g", "-fno-omit-frame-pointer", str(src), "-o", str(exe)], check=True)
    plain = run_program([str(exe)], env_extra=allocator_env(allocator))
    ours = run_program([str(exe)], env_extra={**runtime_env(RuntimeConfig(policy=policy, allocator=allocator)),
                                              "HEAPLAYOUT_MIN_OBJECTS": "0"})
    assert b"sum 44850" in plain.stdout, plain
    assert (ours.returncode, ours.stdout) == (plain.returncode, plain.stdout), (plain, ours)
