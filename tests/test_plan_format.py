"""The plan file: round trip, refusal of malformed plans, and `heaplayout plan` end to end on a
hand-made profile (no Valgrind needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heaplayout import cli
from heaplayout.plan_format import Plan, PlanError, PlanGroup, PlanModule, SelectRule, parse_plan, read_plan, write_plan
from heaplayout.planning import planner
from heaplayout.profile_model import Context, Module, Object, Profile, Symbol
from heaplayout.profile_writer import write_profile


def sample_plan() -> Plan:
    return Plan(
        strategy="halo",
        chunk_size=1 << 20,
        max_object_size=4096,
        modules=[PlanModule(0, "9a1c0ef3", "/work/build/prog"), PlanModule(1, None, "/opt/my lib/libx.so")],
        skips=["libc.so", "libstdc++.so"],
        groups=[PlanGroup(1, 3, 812345), PlanGroup(2, 2, 40211)],
        rules=[
            SelectRule(1, ((0, 0x1A2B),)),
            SelectRule(1, ((0, 0x1A40), (0, 0x1C07))),
            SelectRule(2, ((0, 0x1A40), (1, 0x1C31))),
            SelectRule(0, ((0, 0x1A40), (0, 0x1C07), (0, 0x99))),
        ],
        comments=["made by a test"],
    )


GOOD = """heaplayout-plan 1
strategy halo
chunk_size 1048576
max_object_size 4096
module 0 9a1c0ef3 /work/main/build/workloads/fp/halo_tokens
skip libc.so.6
group 1 3 812345
group 2 2 40211
select 1 0:0x1a2b
select 1 0:0x1a40 0:0x1c07
select 2 0:0x1a40 0:0x1c31
end
"""


def test_round_trip(tmp_path: Path) -> None:
    plan = sample_plan()
    write_plan(plan, tmp_path / "p.plan")
    text = (tmp_path / "p.plan").read_text()
    assert text.startswith("heaplayout-plan 1\n# made by a test\nstrategy halo\n") and text.endswith("end\n")
    assert "select 2 0:0x1a40 1:0x1c31\n" in text
    assert "module 1 - /opt/my lib/libx.so\n" in text  # no build-id; the path keeps its space
    assert read_plan(tmp_path / "p.plan") == plan


def test_the_documented_example_parses() -> None:
    plan = parse_plan(GOOD)
    assert plan.rules[1] == SelectRule(1, ((0, 0x1A40), (0, 0x1C07)))
    assert plan.skips == ["libc.so.6"] and plan.modules[0].build_id == "9a1c0ef3"


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("end\n", ""), "truncated (no 'end' record)"),
    (GOOD[:-1], "truncated (the last line has no newline)"),
    (GOOD[: GOOD.index("select 2")], "truncated (no 'end' record)"),
    (GOOD.replace("heaplayout-plan 1", "heaplayout-plan 2"), "plan version 2"),
    (GOOD.replace("heaplayout-plan 1", "hlprof 1"), "not a plan"),
    ("", "not a plan"),
    (GOOD.replace("select 1 0:0x1a2b", "select 1 0:0xzz"), "frame offset: '0xzz' is not hex"),
    (GOOD.replace("select 1 0:0x1a2b", "select 1 0:"), "expected module:0xOFFSET"),
    (GOOD.replace("select 1 0:0x1a2b", "select 1 x:0x1a2b"), "frame module: 'x' is not a number"),
    (GOOD.replace("select 1 0:0x1a2b", "select 1"), "select needs a group and at least one frame"),
    (GOOD.replace("select 1 0:0x1a2b", "select 3 0:0x1a2b"), "no such group"),
    (GOOD.replace("select 1 0:0x1a2b", "select 1 1:0x1a2b"), "no module 1"),
    (GOOD.replace("select 1 0:0x1a2b", "select 2 0:0x1a40 0:0x1c07"), "chain given twice"),
    (GOOD.replace("group 2 2 40211", "group 3 2 40211"), "group ids must be 1, 2, 3"),
    (GOOD.replace("group 1 3 812345", "group 1 3"), "group takes 3 fields"),
    (GOOD.replace("skip libc.so.6\n", "skip libc.so.6\nfrobnicate 1\n"), "unknown record 'frobnicate'"),
    (GOOD.replace("strategy halo\n", ""), "record 'strategy' missing"),
    (GOOD.replace("skip libc.so.6\n", "") .replace("group 1", "skip libc.so.6\ngroup 1")
     .replace("group 2 2 40211\n", "group 2 2 40211\nmodule 1 - /x\n"), "out of order"),
    (GOOD.replace("chunk_size 1048576", "chunk_size 1000000"), "power of two"),
    (GOOD.replace("max_object_size 4096", "max_object_size 65536"), "max_object_size 65536"),
    (GOOD.replace("strategy halo", "strategy magic"), "strategy 'magic'"),
    (GOOD.replace("module 0 9a1c0ef3", "module 0 9A1C0EF3"), "not lowercase hex"),
    (GOOD.replace("module 0 9a1c0ef3", "module 1 9a1c0ef3"), "module indexes must be 0, 1, 2"),
    (GOOD + "select 1 0:0x5\n", "text after 'end'"),
    (GOOD.replace("select 1 0:0x1a2b", "select  1 0:0x1a2b"), "single spaces"),
    (GOOD.replace("select 1 0:0x1a2b", "select 1" + " 0:0x1a2b" * 17), "at most 16"),
    (GOOD.replace("max_object_size 4096\n", "max_object_size 4096\nrest pools\n"), "rest is 'allocator' or"),
    (GOOD.replace("max_object_size 4096\n", "max_object_size 4096\nrest callsite\n"), "rest is 'allocator' or"),
    (GOOD.replace("max_object_size 4096\n", "max_object_size 4096\nrest callsite 0\n"), "size limit must be"),
    (GOOD.replace("max_object_size 4096\n", "max_object_size 4096\nrest allocator\nrest allocator\n"),
     "out of order"),
    (GOOD.replace("max_object_size 4096\n", "").replace("module 0", "rest allocator\nmax_object_size 4096\nmodule 0"),
     "'max_object_size' missing before 'rest'"),
])
def test_malformed_plans_are_refused(text: str, message: str) -> None:
    with pytest.raises(PlanError) as err:
        parse_plan(text, "x.plan")
    assert message in str(err.value)
    assert str(err.value).startswith("x.plan")


def test_rest_record_round_trip(tmp_path: Path) -> None:
    plan = sample_plan()
    assert plan.rest == "allocator" and "rest" not in (write_plan(plan, tmp_path / "a.plan") or
                                                        (tmp_path / "a.plan").read_text())
    plan.rest, plan.rest_max_size = "callsite", 128
    write_plan(plan, tmp_path / "p.plan")
    assert "\nmax_object_size 4096\nrest callsite 128\nmodule 0" in (tmp_path / "p.plan").read_text()
    assert read_plan(tmp_path / "p.plan") == plan
    assert parse_plan(GOOD.replace("max_object_size 4096\n", "max_object_size 4096\nrest allocator\n")).rest == "allocator"


def test_read_plan_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="cannot read"):
        read_plan(tmp_path / "nope.plan")


def test_offsets_are_hex_with_or_without_0x() -> None:
    # the runtime reads 0:1a2b as 0:0x1a2b (the runtime's own tests write plans that way)
    assert parse_plan(GOOD.replace("0:0x1a2b", "0:1a2b")).rules[0] == SelectRule(1, ((0, 0x1A2B),))


def test_comments_and_blank_lines_are_ignored() -> None:
    text = GOOD.replace("strategy halo\n", "# a note\n\nstrategy halo\n")
    assert parse_plan(text).comments == ["a note"]


# --- end to end ------------------------------------------------------------------------------

def sample_profile() -> Profile:
    """A program with a malloc wrapper W (offset 0x500) called from A (0x600) and B (0x700),
    and a direct site C (0x800). A's and B's objects are used together; C's are cold."""
    p = Profile()
    p.header = {"exe": "/work/build/prog", "trim": "vgpreload_,libc.so", "max_object_size": "4096"}
    p.modules = {1: Module(1, "ABCDEF01", 0x400000, False, "/work/build/prog"),
                 2: Module(2, None, 0x7F0000, True, "/lib/libc.so.6")}
    p.symbols = {(1, 0x500): Symbol("xmalloc", "prog.c", 10), (1, 0x600): Symbol("make_node", "prog.c", 20),
                 (1, 0x700): Symbol("make_leaf", "prog.c", 30), (1, 0x800): Symbol("make_cold", "prog.c", 40)}
    w, a, b, c, main = (1, 0x500), (1, 0x600), (1, 0x700), (1, 0x800), (1, 0x900)
    p.contexts = {
        0: Context(0, "m", [w, a, main], objects=100, bytes=3200, loads=5000, stores=1000),
        1: Context(1, "m", [w, b, main], objects=100, bytes=1600, loads=3000, stores=500),
        2: Context(2, "m", [w, c, main], objects=10, bytes=320, loads=400, stores=100),
        3: Context(3, "m", [(2, 0x1234)], objects=1, bytes=100, loads=10),  # only libc frames
    }
    p.affinity = {(0, 1): 4000, (0, 0): 900, (1, 2): 50}
    p.summary = {"heap_accesses": 10010}
    p.has_totals = True
    p.complete = True
    # objects 1..20: A and B alternate, walked 10 times; object 21 from C now and then
    for i in range(1, 21):
        p.objects.append(Object(i, 0 if i % 2 else 1, i // 2, 32, i, None, 1, 10, 2, 80, 16))
    p.objects.append(Object(21, 2, 0, 32, 30, None, 1, 1, 0, 8, 0))
    for k in range(10):
        p.stream += list(range(1, 21)) + ([21] if k % 3 == 0 else [])
    return p


def test_plan_command_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = tmp_path / "x.prof"
    write_profile(sample_profile(), prof)
    out = tmp_path / "x.plan"
    # exact rules (--dominance 1): C's share of W's allocations would otherwise be small
    # enough to place it with A and B
    assert cli.main(["plan", str(prof), "-o", str(out), "--json", str(tmp_path / "r.json"), "--dominance", "1"]) == 0
    plan = read_plan(out)
    # grouping: the strongest edge (0,1) seeds with context 0; s({0}) = 900 (loop),
    # s({0,1}) = 4900/2 = 2450 -> merge; context 2: s = 4950/4 < 0.95*2450 -> stays out.
    # Context 2 is below the 90% popularity line anyway (6000 + 3500 = 9500 >= 9009).
    assert plan.groups == [PlanGroup(1, 2, 4900, spans=True)]  # a span per size class by default
    # identification: W is shared with the ungrouped C; most of W's allocations are
    # group 1's, so W itself gives group 1 (an unseen caller of W joins it: the nearest
    # profiled label) and one more frame sends C back to ungrouped; frames become return
    # addresses (+1); only the program module is named.
    assert plan.modules == [PlanModule(0, "abcdef01", "/work/build/prog")]
    assert set(plan.rules) == {SelectRule(1, ((0, 0x501),)), SelectRule(0, ((0, 0x501), (0, 0x801)))}
    # exact file names (the runtime compares them with ==): the known libraries the trim
    # list "vgpreload_,libc.so" covers, and the profile's system module /lib/libc.so.6
    assert plan.skips == ["libc.so.6"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["identification"]["apcc"]["rules"] == 2
    assert report["identification"]["apcc"]["frames"] == 3
    assert report["identification"]["halo_selectors"]["terms"] >= 2
    assert report["usable_contexts"] == 3
    assert [m["context"] for m in report["groups"][0]["members"]] == [0, 1]

    capsys.readouterr()
    assert cli.main(["plan", "show", str(out), "--profile", str(prof)]) == 0
    shown = capsys.readouterr().out
    assert "group 1: 2 contexts, weight 4900" in shown
    assert "xmalloc (prog.c:10) [prog+0x500] <- make_node (prog.c:20) [prog+0x600]" in shown
    assert "captures 2 profiled contexts, 9500 accesses" in shown
    assert "2 rules, 3 frames, longest 2" in shown
    assert "HALO selectors would need" in shown
    assert "build-id abcdef01" in shown


@pytest.mark.parametrize("strategy", ["hds", "callsite"])
def test_site_strategies_end_to_end(tmp_path: Path, strategy: str) -> None:
    prof = tmp_path / "x.prof"
    write_profile(sample_profile(), prof)
    out = tmp_path / "x.plan"
    assert cli.main(["plan", "--strategy", strategy, str(prof), "-o", str(out)]) == 0
    plan = read_plan(out)
    assert plan.strategy == strategy
    # every context's immediate site is the wrapper W: one group, one one-frame rule
    assert plan.rules == [SelectRule(1, ((0, 0x501),))]
    assert plan.groups[0].contexts == 3


def test_plan_frame_adds_one() -> None:
    assert planner.plan_frame(0x1156) == 0x1157
    assert planner.profile_frame(planner.plan_frame(0x42)) == 0x42


def test_bad_options_and_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", str(tmp_path / "missing.prof"), "-o", str(tmp_path / "x.plan")]) == 1
    assert cli.main(["plan", "x.prof"]) == 2  # no -o
    prof = tmp_path / "x.prof"
    write_profile(sample_profile(), prof)
    assert cli.main(["plan", str(prof), "-o", str(tmp_path / "x.plan"), "--coverage", "1.5"]) == 1
    assert "coverage" in capsys.readouterr().err


# --- against a real binary (needs valgrind and the built profiler) ---------------------------

def test_plan_frames_are_the_binary_return_addresses(tmp_path: Path) -> None:
    """Profile halo_tokens, plan it, and compare the rules' first frames with the return
    addresses of xmalloc's call to malloc in the binary. Fails if the profile's frame
    convention (Valgrind's return address - 1) and planner.plan_frame stop agreeing."""
    import shutil
    import subprocess
    import sys

    from heaplayout import elf, paths

    binary = paths.build_dir() / "workloads" / "fp" / "halo_tokens"
    tool = paths.build_dir() / "profiler" / "lib" / "hlprof-amd64-linux"
    if shutil.which("valgrind") is None or not binary.exists() or not tool.exists():
        pytest.skip("needs valgrind, the built profiler and build/workloads/fp/halo_tokens")
    prof, out = tmp_path / "t.prof", tmp_path / "t.plan"
    # `heaplayout profile` execs valgrind, so it runs in a child process
    run = subprocess.run([sys.executable, "-m", "heaplayout.cli", "profile", "-o", str(prof), "--", str(binary),
                          "5000", "2"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert cli.main(["plan", str(prof), "-o", str(out)]) == 0
    plan = read_plan(out)
    assert plan.rules, "halo_tokens should give at least one group"
    assert plan.modules[0].build_id == elf.build_id(binary)
    (ret,) = elf.call_return_addresses(binary, "xmalloc", "malloc")
    # every allocation goes through xmalloc: each rule starts at its return address
    assert {r.frames[0] for r in plan.rules} == {(0, ret)}


def test_group_layout_option_and_hds_plans_keep_allocation_order(tmp_path: Path) -> None:
    prof = tmp_path / "x.prof"
    write_profile(sample_profile(), prof)
    for layout, spans in (("interleave", False), ("spans", True)):
        out = tmp_path / f"{layout}.plan"
        assert cli.main(["plan", str(prof), "-o", str(out), "--dominance", "1", "--group-layout", layout]) == 0
        assert [g.spans for g in read_plan(out).groups] == [spans]
        assert ("spans" in out.read_text().split("group 1 ")[1].splitlines()[0]) == spans
    plan = planner.make_plan(sample_profile(), "hds").plan  # hot data streams are laid out in order
    assert plan.groups and all(not g.spans for g in plan.groups)
    with pytest.raises(ValueError):
        planner.make_plan(sample_profile(), "halo", group_layout="tight")
