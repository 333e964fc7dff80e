"""The runtime's plan policy: identification by return address, by two frames, through
skipped libc frames, with and without frame pointers; refusal of stale and broken plans.

Plans are written by hand here from the test program's disassembly (the return address
of each call is the address of the instruction after it), so these tests do not depend on
the profiler or the planner."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import elf


def build_id(binary: Path) -> str:
    bid = elf.build_id(binary)
    assert bid, "test binary has no build-id"
    return bid


return_addresses = elf.call_return_addresses


def write_plan(path: Path, binary: Path, selects: list[str], bid: str | None = None, end: bool = True,
               rest: str | None = None) -> Path:
    lines = [
        "heaplayout-plan 1",
        "# written by the test",
        "strategy halo",
        "chunk_size 1048576",
        "max_object_size 4096",
        *([f"rest {rest}"] if rest else []),
        f"module 0 {bid or build_id(binary)} {binary}",
        "skip libc.so.6",
        "group 1 3 1000",
        *selects,
    ]
    if end:
        lines.append("end")
    path.write_text("\n".join(lines) + "\n")
    return path


def standard_selects(binary: Path) -> list[str]:
    token = return_addresses(binary, "alloc_token", "malloc")[0]
    node = return_addresses(binary, "alloc_node", "malloc")[0]
    via_x = return_addresses(binary, "via_x", "alloc_node")[0]
    name = return_addresses(binary, "dup_name", "strdup")[0]
    return [
        f"select 1 0:{token:x}",
        f"select 1 0:{node:x} 0:{via_x:x}",  # node only when allocated through via_x
        f"select 1 0:{name:x}",  # strdup's malloc happens in libc: skipped frames
    ]


@pytest.fixture(params=["fp", "nofp"])
def plan_binary(request, build_dir) -> Path:
    return build_dir / "tests" / "runtime" / f"plan_test_{request.param}"


def test_plan_groups_exactly_the_planned_contexts(plan_binary, tmp_path):
    plan = write_plan(tmp_path / "p.plan", plan_binary, standard_selects(plan_binary))
    stats = tmp_path / "stats.json"
    r = run_program([str(plan_binary), "2000", "--expect-groups"],
                    env_extra={"HEAPLAYOUT_PLAN": str(plan), "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    out = r.stdout.decode()
    assert "grouped 2000 of 2000" in out
    # members lie one after another in allocation order, except at chunk boundaries
    adjacent = int(re.search(r"adjacent (\d+)", out).group(1))
    assert adjacent >= 1990
    import json

    s = json.loads(stats.read_text())
    assert s["policy"] == "plan"
    groups = [p for p in s["pools"] if p["kind"] == "group"]
    assert len(groups) == 1 and groups[0]["objects"] == 3 * 2000


def test_output_identical_with_and_without_plan(plan_binary, tmp_path):
    plan = write_plan(tmp_path / "p.plan", plan_binary, standard_selects(plan_binary))
    plain = run_program([str(plan_binary), "3000"])
    planned = run_program([str(plan_binary), "3000"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert plain.returncode == planned.returncode == 0
    assert plain.stdout == planned.stdout and planned.stderr == b""


def test_without_the_second_frame_every_node_is_grouped(build_dir, tmp_path):
    binary = build_dir / "tests" / "runtime" / "plan_test_nofp"
    node = return_addresses(binary, "alloc_node", "malloc")[0]
    plan = write_plan(tmp_path / "p.plan", binary, [f"select 1 0:{node:x}"])
    r = run_program([str(binary), "100", "--expect-groups"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    # node-via-y is now grouped too, and token/name are not: the checker must fail
    assert r.returncode == 1 and "grouped 0 of 100" in r.stdout.decode()


def chain_selects(binary: Path, third: bool = True) -> list[str]:
    leaf = return_addresses(binary, "alloc_leaf", "malloc")[0]
    mid = return_addresses(binary, "mid", "alloc_leaf")[0]
    via_p = return_addresses(binary, "via_p", "mid")[0]
    rec = return_addresses(binary, "rec", "mid")[0]
    if not third:
        return [f"select 1 0:{leaf:x} 0:{mid:x}"]
    return [f"select 1 0:{leaf:x} 0:{mid:x} 0:{via_p:x}", f"select 1 0:{leaf:x} 0:{mid:x} 0:{rec:x}"]


def test_third_frame_decides_between_interleaved_chains(plan_binary, tmp_path):
    # alloc_leaf <- mid <- via_p / via_q / rec(depth 0..6): the first two frames are the
    # same for all three, so a decision cached for one chain must not answer for another;
    # rec's recursion is reduced, so every depth matches its 3-frame rule
    plan = write_plan(tmp_path / "p.plan", plan_binary, chain_selects(plan_binary))
    stats = tmp_path / "stats.json"
    r = run_program([str(plan_binary), "3000", "--expect-chains"],
                    env_extra={"HEAPLAYOUT_PLAN": str(plan), "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert "chains wrong 0 of 3000" in r.stdout.decode()
    # the three chains share their first two frames and alternate: each must keep its own
    # recorded walk (one entry per key walked the stack for 9000 of the 9000 allocations),
    # and once decided, each chain is answered by the chain cache of the fast path, not by
    # replaying its walk (without that cache about 9000 decisions replay)
    import json

    s = json.loads(stats.read_text())
    assert 3 <= s["plan_walks"] <= 30, s["plan_walks"]
    assert s["plan_replays"] <= 60, s["plan_replays"]


def test_a_long_walk_is_replayed_not_repeated(plan_binary, tmp_path):
    # rec recursing 30 deep, under a rule that needs the frame beyond the recursion (rec's
    # caller): each walk takes 30-odd steps. A walk that ends within the unwinder's own
    # step limit must be recorded and replayed; with room for 12 steps each of the 3000
    # allocations walked in full (sqlite3's halo plan: 11% of its allocations).
    leaf = return_addresses(plan_binary, "alloc_leaf", "malloc")[0]
    mid = return_addresses(plan_binary, "mid", "alloc_leaf")[0]
    via_p = return_addresses(plan_binary, "via_p", "mid")[0]
    rec_mid = return_addresses(plan_binary, "rec", "mid")[0]
    rec_rec = return_addresses(plan_binary, "rec", "rec")[0]
    try:
        outer = return_addresses(plan_binary, "check_chains", "rec")[0]
    except ValueError:  # check_chains inlined into main
        outer = return_addresses(plan_binary, "main", "rec")[0]
    selects = [f"select 1 0:{leaf:x} 0:{mid:x} 0:{via_p:x}",
               f"select 1 0:{leaf:x} 0:{mid:x} 0:{rec_mid:x} 0:{rec_rec:x} 0:{outer:x}"]
    plan = write_plan(tmp_path / "p.plan", plan_binary, selects)
    stats = tmp_path / "stats.json"
    r = run_program([str(plan_binary), "3000", "--expect-chains", "30"],
                    env_extra={"HEAPLAYOUT_PLAN": str(plan), "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert "chains wrong 0 of 3000" in r.stdout.decode()
    import json

    s = json.loads(stats.read_text())
    assert s["plan_walks"] <= 30, s["plan_walks"]


def test_a_six_frame_chain_is_answered_by_the_chain_cache(plan_binary, tmp_path):
    # deep_a and deep_b share five frames and alternate; the sixth decides. The fast path's
    # chain cache must answer both after their first walks: with room for 4 frames each of
    # the 6000 allocations replayed a recorded walk (about 300 instructions each).
    leaf = return_addresses(plan_binary, "alloc_leaf", "malloc")[0]
    frames = [leaf] + [return_addresses(plan_binary, caller, callee)[0]
                       for caller, callee in (("mid", "alloc_leaf"), ("lvl3", "mid"), ("lvl2", "lvl3"),
                                              ("lvl1", "lvl2"), ("deep_a", "lvl1"))]
    plan = write_plan(tmp_path / "p.plan", plan_binary, ["select 1 " + " ".join(f"0:{f:x}" for f in frames)])
    stats = tmp_path / "stats.json"
    r = run_program([str(plan_binary), "3000", "--expect-deep"],
                    env_extra={"HEAPLAYOUT_PLAN": str(plan), "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert "deep wrong 0 of 3000" in r.stdout.decode()
    import json

    s = json.loads(stats.read_text())
    assert s["plan_walks"] + s["plan_replays"] + s["plan_speculated"] <= 60, s


def test_two_frames_cannot_tell_the_chains_apart(plan_binary, tmp_path):
    plan = write_plan(tmp_path / "p.plan", plan_binary, chain_selects(plan_binary, third=False))
    r = run_program([str(plan_binary), "100", "--expect-chains"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 1 and "chains wrong 100 of 100" in r.stdout.decode()


@pytest.mark.parametrize("grouped", [True, False])
def test_a_skipped_library_allocating_for_the_program_is_answered_from_the_chain_cache(
        plan_binary, tmp_path, grouped):
    # strdup allocates inside libc (a skipped module) for dup_name: its frame decides, one or
    # two steps out. Once decided, the chain cache must answer; before, each of the 2000
    # strdups replayed its walk or took the walk's stable answer (about 300 instructions).
    # Grouped or not, the answer is a function of the return addresses.
    selects = standard_selects(plan_binary)
    if not grouped:
        selects = selects[:2]
    plan = write_plan(tmp_path / "p.plan", plan_binary, selects)
    stats = tmp_path / "stats.json"
    args = [str(plan_binary), "2000"] + (["--expect-groups"] if grouped else [])
    r = run_program(args, env_extra={"HEAPLAYOUT_PLAN": str(plan), "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    import json

    s = json.loads(stats.read_text())
    group = [p for p in s["pools"] if p["kind"] == "group"][0]
    assert group["objects"] == (3 if grouped else 2) * 2000
    assert s["plan_replays"] + s["plan_speculated"] <= 60, s


def test_rest_callsite_pools_the_ungrouped_by_site(plan_binary, tmp_path):
    # node-via-y is ungrouped by its second frame: with `rest callsite 128` it goes to the
    # pool of alloc_node's call site once that site made 100 ungrouped objects; 400-byte
    # objects are above the rest's limit and stay with the allocator underneath
    plan = write_plan(tmp_path / "p.plan", plan_binary, standard_selects(plan_binary), rest="callsite 128")
    r = run_program([str(plan_binary), "1000", "--expect-rest"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert "rest wrong 0 of 1000, node-y forwarded 100" in r.stdout.decode()


def test_without_rest_the_ungrouped_stay_with_the_allocator(plan_binary, tmp_path):
    plan = write_plan(tmp_path / "p.plan", plan_binary, standard_selects(plan_binary))
    r = run_program([str(plan_binary), "300", "--expect-rest"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 1 and "node-y forwarded 300" in r.stdout.decode()


@pytest.mark.parametrize("rest", ["callsite", "callsite 0", "callsite 40000", "pools 128", "allocator 5"])
def test_bad_rest_records_are_refused(build_dir, tmp_path, rest):
    binary = build_dir / "tests" / "runtime" / "plan_test_nofp"
    plan = write_plan(tmp_path / "p.plan", binary, standard_selects(binary), rest=rest)
    r = refused(tmp_path, binary, plan)
    assert "malformed" in r.stderr.decode() or "line" in r.stderr.decode()


def refused(tmp_path: Path, binary: Path, plan: Path) -> subprocess.CompletedProcess:
    r = run_program([str(binary), "500"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    plain = run_program([str(binary), "500"])
    assert r.returncode == 0 and r.stdout == plain.stdout  # still runs correctly
    msgs = [ln for ln in r.stderr.decode().splitlines() if ln.startswith("heaplayout:")]
    assert len(msgs) == 1 and "running unoptimized" in msgs[0], msgs
    return r


def test_plan_for_a_rebuilt_binary_is_refused(build_dir, tmp_path):
    binary = build_dir / "tests" / "runtime" / "plan_test_nofp"
    plan = write_plan(tmp_path / "p.plan", binary, standard_selects(binary), bid="00" * 20)
    r = refused(tmp_path, binary, plan)
    assert b"another build" in r.stderr


def test_plan_for_another_program_is_refused(build_dir, tmp_path):
    """None of the plan's modules is loaded: they could still come (dlopen), so the plan
    waits silently; at exit, with none of them ever loaded, one message says so."""
    binary = build_dir / "tests" / "runtime" / "plan_test_nofp"
    other = build_dir / "tests" / "runtime" / "engine_test"
    plan = write_plan(tmp_path / "p.plan", other, ["select 1 0:1000"])
    r = run_program([str(binary), "500"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    plain = run_program([str(binary), "500"])
    assert r.returncode == 0 and r.stdout == plain.stdout
    msgs = [ln for ln in r.stderr.decode().splitlines() if ln.startswith("heaplayout:")]
    assert len(msgs) == 1 and "none of its modules was loaded" in msgs[0], msgs
    assert f"{other}, is not loaded in this program" in msgs[0] and "ran unoptimized" in msgs[0]


def test_copied_binary_keeps_its_plan(build_dir, tmp_path):
    """Identity is the build-id, not the path: a copy of the binary still matches."""
    binary = build_dir / "tests" / "runtime" / "plan_test_nofp"
    copy = tmp_path / "renamed_program"
    shutil.copy(binary, copy)
    plan = write_plan(tmp_path / "p.plan", binary, standard_selects(binary))
    r = run_program([str(copy), "300", "--expect-groups"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 0, r.stderr.decode()


@pytest.mark.parametrize(
    "mangle,expect",
    [
        (lambda t: t.replace("heaplayout-plan 1", "heaplayout-plan 9"), b"version 1"),
        (lambda t: t.replace("\nend\n", "\n"), b"truncated"),
        (lambda t: t[: len(t) // 2], b"line"),  # cut in the middle of a record or before end
        (lambda t: t.replace("select 1 0:", "select 1 0:zz"), b"is not hex"),
        (lambda t: t.replace("select 1", "select 7", 1), b"no such group"),
        (lambda t: t.replace("strategy halo", "stratagem halo"), b"unknown record"),
        (lambda t: t.replace("chunk_size 1048576", "chunk_size 1000"), b"power of two"),
        (lambda t: "", b"empty"),
    ],
)
def test_broken_plans_are_refused(build_dir, tmp_path, mangle, expect):
    binary = build_dir / "tests" / "runtime" / "plan_test_nofp"
    good = write_plan(tmp_path / "good.plan", binary, standard_selects(binary)).read_text()
    bad = tmp_path / "bad.plan"
    bad.write_text(mangle(good))
    r = refused(tmp_path, binary, bad)
    if expect != b"line":
        assert expect in r.stderr, r.stderr


def test_missing_plan_file_is_refused(build_dir, tmp_path):
    binary = build_dir / "tests" / "runtime" / "plan_test_nofp"
    r = refused(tmp_path, binary, tmp_path / "nothing-here.plan")
    assert b"cannot open" in r.stderr


def test_only_the_named_program_is_optimized(build_dir, tmp_path):
    """A shell between us and the program inherits the preload and the plan. Without
    HEAPLAYOUT_PROGRAM the shell (not the program the plan is for) holds the plan with its
    module pending (it could dlopen it) and, since it execs the program, says nothing; with
    it the shell runs unoptimized while the program still gets its groups."""
    from heaplayout import paths
    from heaplayout.runtime_env import for_program

    binary = build_dir / "tests" / "runtime" / "plan_test_fp"
    plan = write_plan(tmp_path / "p.plan", binary, standard_selects(binary))
    stats = tmp_path / "stats-%p.json"
    env = {"LD_PRELOAD": str(paths.runtime_library()), "HEAPLAYOUT_PLAN": str(plan),
           "HEAPLAYOUT_STATS_JSON": str(stats)}
    # the shell allocates (command substitution), so it initialises the runtime
    script = f'x=$(echo hi); "{binary}" 500 --expect-groups'
    loud = run_program(["/bin/sh", "-c", script], env_extra=env)
    assert loud.returncode == 0, loud.stderr.decode()
    assert "grouped 500 of 500" in loud.stdout.decode()

    for f in tmp_path.glob("stats-*.json"):
        f.unlink()
    quiet_env = for_program(env | {"HEAPLAYOUT_POLICY": "plan"}, str(binary))
    assert quiet_env["HEAPLAYOUT_PROGRAM"] == str(binary)
    quiet = run_program(["/bin/sh", "-c", script], env_extra=quiet_env)
    assert quiet.returncode == 0, quiet.stdout.decode() + quiet.stderr.decode()
    assert quiet.stderr == b"" and "grouped 500 of 500" in quiet.stdout.decode()
    # statistics only from the program itself, not from the shell
    assert len(list(tmp_path.glob("stats-*.json"))) == 1


def test_scripts_are_not_named_as_the_program(tmp_path):
    from heaplayout.runtime_env import for_program

    script = tmp_path / "wrapper.sh"
    script.write_text("#!/bin/sh\nexec true\n")
    script.chmod(0o755)
    env = {"HEAPLAYOUT_POLICY": "plan"}
    assert "HEAPLAYOUT_PROGRAM" not in for_program(env, str(script))
    assert for_program(env, "true")["HEAPLAYOUT_PROGRAM"] == shutil.which("true")
    assert "HEAPLAYOUT_PROGRAM" not in for_program({}, "true")  # no runtime, nothing to limit
