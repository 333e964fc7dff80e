"""PreFix's runtime (runtime/src/prefix.c): slots taken at exact offsets, and every refusal
path of docs/prefix.md ("Tests to write"): another build, a request too large, another
site's slot, a busy recycled slot, an invalid or double free inside the region, realloc
growing out of a slot, calloc of a reused slot, the divergence cut-off, threads at one site
(the counter's owner places, the others go to the allocator, frees from any thread);
then the suite's PreFix workloads planned on one input and run on another.

The plans for tests/runtime/prefix_test.c are written here from its disassembly (the return
address of each site's call), through plan_format so that they pass both readers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import elf
from heaplayout.plan_format import Plan, PlanModule, SelectRule, write_plan
from heaplayout.plan_prefix import PrefixCounter, PrefixRecords, PrefixSite, PrefixSlot


@pytest.fixture(scope="module")
def program(build_dir: Path) -> Path:
    return build_dir / "tests" / "runtime" / "prefix_test"


def site_frame(program: Path, fn: str, callee: str) -> int:
    return elf.call_return_addresses(program, fn, callee)[0]


def make_plan(tmp: Path, program: Path, counters: list[PrefixCounter], sites: list[tuple[str, str, int]],
              slots: list[PrefixSlot], region: int = 1 << 16, build_id: str | None = None) -> Path:
    """sites: (function, callee, counter) in site order."""
    pre = PrefixRecords(region_bytes=region, region_align=16, counters=counters,
                        sites=[PrefixSite(i, c) for i, (_, _, c) in enumerate(sites, start=1)],
                        rules=[SelectRule(i, ((0, site_frame(program, fn, callee)),))
                               for i, (fn, callee, _) in enumerate(sites, start=1)],
                        slots=slots)
    plan = Plan(strategy="prefix:hot", modules=[PlanModule(0, build_id or elf.build_id(program), str(program))],
                skips=["libc.so.6"], prefix=pre)
    path = tmp / "prefix.plan"
    write_plan(plan, path)
    return path


def run(program: Path, runtime_lib: Path, tmp: Path, plan: Path | None, *args: str, addresses: bool = False):
    env = {"PREFIX_TEST_ADDR": "1"} if addresses else {}
    if plan is not None:
        env.update({"LD_PRELOAD": str(runtime_lib), "HEAPLAYOUT_POLICY": "plan", "HEAPLAYOUT_PLAN": str(plan),
                    "HEAPLAYOUT_STATS_JSON": str(tmp / "stats.json")})
    return run_program([str(program), *args], env_extra=env, timeout=60)


def prefix_stats(tmp: Path) -> dict:
    return json.loads((tmp / "stats.json").read_text())["prefix"]


def same_as_plain(program: Path, runtime_lib: Path, tmp: Path, plan: Path, *args: str) -> dict:
    plain = run(program, runtime_lib, tmp, None, *args)
    r = run(program, runtime_lib, tmp, plan, *args)
    assert r.returncode == 0 == plain.returncode, r.stderr.decode()
    assert r.stdout == plain.stdout
    return prefix_stats(tmp)


def all_slots(counter: int, site: int, n: int, size: int, reverse: bool = False) -> list[PrefixSlot]:
    return [PrefixSlot(counter, v, site, (n - 1 - v if reverse else v) * size, size) for v in range(n)]


def test_each_value_takes_its_slot_at_its_offset(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 10)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 10, 64, reverse=True))
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "live", "10", "64")
    assert st["taken"] == 10 and st["freed"] == 10 and st["refused_size"] == 0
    r = run(program, runtime_lib, tmp_path, plan, "live", "12", "64", addresses=True)
    addrs = [int(m, 16) for m in re.findall(rb"^\d+ 0x([0-9a-f]+)$", r.stdout, re.M)]
    # value v at offset (9 - v) * 64: one region, in the plan's order, not allocation order
    assert [addrs[0] - a for a in addrs[:10]] == [64 * v for v in range(10)]
    assert all(abs(a - addrs[0]) > 1 << 16 for a in addrs[10:])  # values past the pattern: elsewhere


def test_a_request_larger_than_its_slot_goes_elsewhere(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 10)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 10, 32))
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "seq", "10", "64")
    assert st["taken"] == 0 and st["refused_size"] == 10 and st["counters_cut"] == 0


def test_another_sites_slot_is_refused(program, runtime_lib, tmp_path):
    sites = [("site_a", "malloc", 1), ("site_b", "malloc", 1)]  # one shared counter
    good = [PrefixSlot(1, v, 1 if v % 2 == 0 else 2, 64 * v, 64) for v in range(10)]
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 10)], sites, good)
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "alt", "10")
    assert st["taken"] == 10 and st["refused_site"] == 0
    swapped = [PrefixSlot(1, v, 2 if v % 2 == 0 else 1, 64 * v, 64) for v in range(10)]
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 10)], sites, swapped)
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "alt", "10")
    assert st["taken"] == 0 and st["refused_site"] == 10


def test_a_busy_recycled_slot_is_refused_a_free_one_reused(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "recycle", 2)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 2, 64))
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "live", "5", "64")
    assert st["taken"] == 2 and st["refused_busy"] == 3 and st["counters_cut"] == 0
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "seq", "50", "64")
    assert st["taken"] == 50 and st["refused_busy"] == 0 and st["freed"] == 50


def test_calloc_of_a_reused_slot_is_zero(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "recycle", 1)], [("site_c", "calloc", 1)],
                     all_slots(1, 1, 1, 64))
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "churn", "20")  # exits 3 on a non-zero byte
    assert st["taken"] == 20


def test_realloc_shrinks_in_place_and_grows_out_of_its_slot(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 5)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 5, 32))
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "realloc", "5")  # exits 3 on a lost byte
    assert st["taken"] == 5 and st["moved_by_realloc"] == 5 and st["freed"] == 5


def test_usable_size_of_a_slot(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 1)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 1, 48))
    same_as_plain(program, runtime_lib, tmp_path, plan, "usable")
    r = run(program, runtime_lib, tmp_path, plan, "usable", addresses=True)
    assert b"usable_size 48\n" in r.stdout


@pytest.mark.parametrize("mode,message", [("badfree", "free(): invalid pointer"),
                                          ("doublefree", "free(): double free detected")])
def test_a_bad_free_inside_the_region_aborts_as_glibc_does(program, runtime_lib, tmp_path, mode, message):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 1)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 1, 64))
    plain = run(program, runtime_lib, tmp_path, None, mode)
    r = run(program, runtime_lib, tmp_path, plan, mode)
    assert plain.returncode == r.returncode == -6  # SIGABRT, glibc's answer too
    assert message in r.stderr.decode() and b"not reached" not in r.stdout


def test_another_build_refuses_the_plan(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 10)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 10, 64), build_id="ab" * 20)
    plain = run(program, runtime_lib, tmp_path, None, "seq", "10", "64")
    r = run(program, runtime_lib, tmp_path, plan, "seq", "10", "64")
    assert r.returncode == 0 and r.stdout == plain.stdout
    assert "another build" in r.stderr.decode() and "running unoptimized" in r.stderr.decode()


def test_a_counter_refused_too_often_is_cut_off(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 500)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 500, 16))
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "seq", "500", "64")
    assert st["counters_cut"] == 1 and st["refused_size"] == 64 and st["taken"] == 0


def test_threads_at_one_prefix_site(program, runtime_lib, tmp_path):
    # the counter belongs to the first thread that counts on it: its 2,000 objects take
    # values 0..1999 and their slots, the other threads' go to the allocator underneath
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "all", 4000)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 4000, 48), region=4000 * 48)
    for _ in range(3):  # the program exits 3 if an object was written by another thread
        st = same_as_plain(program, runtime_lib, tmp_path, plan, "threads", "4", "2000")
        assert st["taken"] == 2000 and st["freed"] == 2000 and st["refused_busy"] == 0
        assert st["refused_thread"] == 6000


def test_a_second_thread_at_an_owned_site_goes_to_the_allocator(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "recycle", 8)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 8, 64))
    # main takes the 8 slots; the second thread's 8 are refused (not its counter) and it
    # frees main's 8; main then takes them again (values 8..15, slots freed by the other thread)
    st = same_as_plain(program, runtime_lib, tmp_path, plan, "owner", "8")
    assert st["taken"] == 16 and st["refused_thread"] == 8 and st["refused_busy"] == 0 and st["freed"] == 16
    r = run(program, runtime_lib, tmp_path, plan, "owner", "8", addresses=True)
    addrs = {k: [int(a, 16) for a in re.findall(rb"^" + k + rb" \d+ 0x([0-9a-f]+)$", r.stdout, re.M)]
             for k in (b"first", b"other", b"again")}
    base = min(addrs[b"first"])
    assert sorted(addrs[b"first"]) == sorted(addrs[b"again"]) == [base + 64 * i for i in range(8)]
    assert all(not 0 <= a - base < 8 * 64 for a in addrs[b"other"])


def test_slots_freed_by_another_thread_while_the_owner_takes_them(program, runtime_lib, tmp_path):
    plan = make_plan(tmp_path, program, [PrefixCounter(1, "recycle", 4)], [("site_a", "malloc", 1)],
                     all_slots(1, 1, 4, 64))
    for _ in range(3):  # exits 3 if the consumer saw an object not as the owner wrote it
        st = same_as_plain(program, runtime_lib, tmp_path, plan, "handoff", "20000")
        assert st["taken"] + st["refused_busy"] == 20000 and st["taken"] > 0
        assert st["freed"] == st["taken"] and st["refused_thread"] == 0


# ---- the suite's PreFix workloads: planned on one input, run on another ----

WORKLOADS = {  # train input, other input (docs/prefix.md)
    "prefix_hot": (["20000", "100"], ["12000", "60"]),
    "prefix_recycle": (["40000", "64"], ["24000", "64"]),
    "health": (["5", "20", "1"], ["4", "16", "1"]),
    "cxx_netsim": (["8", "8", "100000"], ["12", "12", "200000"]),  # operator new at PreFix sites
}
TIMING = re.compile(rb"^.*\d\.\d+ s$", re.M)  # the workloads print their own run time


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="the profiler needs valgrind")
@pytest.mark.parametrize("name,rest", [(n, "allocator") for n in ("health", "prefix_hot", "prefix_recycle")]
                         + [("prefix_recycle", "halo"), ("prefix_hot", "halo-site"), ("prefix_recycle", "halo-site"),
                            ("cxx_netsim", "halo-site")])
def test_suite_workload_planned_on_one_input_runs_another_unchanged(name, rest, build_dir, runtime_lib, tmp_path):
    def heaplayout(argv: list[str]) -> int:  # `profile` execs valgrind: never in this process
        cli = "import sys; from heaplayout.cli import main; sys.exit(main(sys.argv[1:]))"
        return subprocess.run([sys.executable, "-c", cli, *argv], capture_output=True, timeout=600).returncode

    binary = build_dir / "workloads" / "fp" / name
    train, other = WORKLOADS[name]
    prof, plan = tmp_path / "train.prof", tmp_path / "prefix.plan"
    assert heaplayout(["profile", "-o", str(prof), "--", str(binary), *train]) == 0
    # halo-site: walk budget 0, PreFix's objects numbered per call site (docs/prefix.md, "By call site")
    opts = ["--prefix-rest", "halo", "--walk-budget", "0"] if rest == "halo-site" else ["--prefix-rest", rest]
    assert heaplayout(["plan", "--strategy", "prefix:hds+hot", *opts, str(prof), "-o", str(plan)]) == 0
    text = plan.read_text()
    if rest != "allocator":  # one file with both record kinds
        assert "\ngroup 1 " in text and "\nprefix_region " in text
    if rest == "halo-site":  # every rule names its call site alone
        rules = [line.split() for line in text.splitlines() if line.startswith(("prefix_select ", "select "))]
        assert rules and all(len(r) == 3 for r in rules), [r for r in rules if len(r) != 3][:3]
    for args in (train, other):
        plain = run(binary, runtime_lib, tmp_path, None, *args)
        r = run(binary, runtime_lib, tmp_path, plan, *args)
        assert r.returncode == 0 == plain.returncode, r.stderr.decode()
        assert TIMING.sub(b"", r.stdout) == TIMING.sub(b"", plain.stdout)
        stats = json.loads((tmp_path / "stats.json").read_text())
        st = stats["prefix"]
        assert st["taken"] > 0 and st["counters_cut"] == 0 and st["freed"] <= st["taken"]
        if rest != "allocator":
            assert sum(p["objects"] for p in stats["pools"]) > 0, "the HALO groups placed nothing"
        if rest == "halo-site":  # walks only where libc itself allocates (a skipped module), then cached
            assert stats["plan_walks"] * 1000 <= st["taken"], (stats["plan_walks"], st["taken"])
