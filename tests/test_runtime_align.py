"""Minimum alignment 8 (HALO 5): odd-multiple-of-8 sizes in 8-aligned slots where the
environment or a plan allows it, 24-byte slots only in a plan's packed groups, every other
size 16-aligned; the plan records that ask for it; the planner's choice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import elf
from heaplayout.planning import planner
from heaplayout.plan_format import Plan, PlanError, PlanGroup, PlanModule, parse_plan, plan_text, read_plan

CALLSITE = {"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_MIN_OBJECTS": "1", "HEAPLAYOUT_MAX_SIZE": "4096"}


def align_test(build_dir: Path) -> Path:
    return build_dir / "tests" / "runtime" / "align_test"


def gaps(out: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(gap\d+) (-?\d+)", out)}


@pytest.mark.parametrize("min_align,gap40", [("8", 40), ("16", 48), (None, 48)])
def test_mixed_sizes_keep_their_alignment_and_contents(build_dir, min_align, gap40):
    # sizes 1..300 from one site, realloc shrinking 24 -> 16, memalign(16), sized deletes,
    # and every chunk emptied and walked each round (the debug library asserts inside)
    env = dict(CALLSITE, **({"HEAPLAYOUT_MIN_ALIGN": min_align} if min_align else {}))
    r = run_program([str(align_test(build_dir)), "mixed", "3"], env_extra=env)
    out = r.stdout.decode()
    assert r.returncode == 0 and out.endswith("ok\n"), out + r.stderr.decode()
    # 40-byte objects pack at 40 bytes with 8; 24-byte ones stay at 32 outside packed groups
    assert gaps(out) == {"gap40": gap40, "gap24": 32}


@pytest.mark.parametrize("min_align", ["8", "16"])
def test_a_span_starts_on_a_cache_line(build_dir, min_align):
    # 200-byte slots end 8 bytes into a line; the 512-byte class's spans carved after them
    # must start on a line, so that no 456-byte object's first line is split (it was 3 in 4)
    env = dict(CALLSITE, HEAPLAYOUT_MIN_ALIGN=min_align)
    r = run_program([str(align_test(build_dir)), "lines", "2000"], env_extra=env)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == "off-line 0 of 2000"


def test_a_bad_min_align_runs_unoptimized_with_a_message(build_dir):
    r = run_program([str(align_test(build_dir)), "mixed", "1"], env_extra=dict(CALLSITE, HEAPLAYOUT_MIN_ALIGN="12"))
    assert r.returncode == 0 and r.stdout.decode().endswith("ok\n")
    assert b"HEAPLAYOUT_MIN_ALIGN=12 is out of range" in r.stderr and b"running unoptimized" in r.stderr


def write_pairs_plan(path: Path, binary: Path, min_align: int | None, packed: bool) -> Path:
    ra = elf.call_return_addresses(binary, "alloc24", "malloc")[0]
    lines = ["heaplayout-plan 1", "strategy halo", "chunk_size 1048576", "max_object_size 4096",
             *([f"min_align {min_align}"] if min_align else []),
             f"module 0 {elf.build_id(binary)} {binary}", "skip libc.so.6",
             f"group 1 1 1000{' packed' if packed else ''}", f"select 1 0:{ra:x}", "end"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("min_align,packed,env,gap", [
    (8, True, None, 24),     # HALO's packing: 8 cells in 3 lines
    (8, False, None, 32),    # a group that is not walked keeps line-friendly 32-byte slots
    (None, True, None, 32),  # packed means nothing without min_align 8
    (8, True, "16", 32),     # the environment overrides the plan
])
def test_packed_groups_put_24_byte_objects_24_bytes_apart(build_dir, tmp_path, min_align, packed, env, gap):
    binary = align_test(build_dir)
    plan = write_pairs_plan(tmp_path / "p.plan", binary, min_align, packed)
    extra = {"HEAPLAYOUT_PLAN": str(plan), **({"HEAPLAYOUT_MIN_ALIGN": env} if env else {})}
    r = run_program([str(binary), "pairs", "1000"], env_extra=extra)
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    assert gaps(r.stdout.decode()) == {"gap24": gap}


@pytest.mark.parametrize("flags,gaps_wanted", [
    ("", {"gap32": 96, "gap64": 96}),  # HALO's allocation order: 32 64 32 64 ...
    (" spans", {"gap32": 32, "gap64": 64}),  # one span of fresh space per size class
    (" packed spans", {"gap32": 32, "gap64": 64}),
])
def test_a_group_interleaves_sizes_unless_the_plan_says_spans(build_dir, tmp_path, flags, gaps_wanted):
    binary = align_test(build_dir)
    ra = elf.call_return_addresses(binary, "alloc_sized", "malloc")[0]
    plan = tmp_path / "two.plan"
    plan.write_text("\n".join(["heaplayout-plan 1", "strategy halo", "chunk_size 1048576", "max_object_size 4096",
                               f"module 0 {elf.build_id(binary)} {binary}", "skip libc.so.6",
                               f"group 1 1 1000{flags}", f"select 1 0:{ra:x}", "end"]) + "\n")
    assert [g.spans for g in read_plan(plan).groups] == ["spans" in flags]
    r = run_program([str(binary), "two", "100"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    assert gaps(r.stdout.decode()) == gaps_wanted


@pytest.mark.parametrize("flags,size", [("", 56), (" spans", 56), (" spans", 128), (" packed spans", 64)])
@pytest.mark.parametrize("line", [0, 16, 32, 48])
def test_a_group_s_objects_start_where_its_line_record_says(build_dir, tmp_path, flags, size, line):
    # Olden tsp's 56-byte records ran 0.93x glibc's time 32 bytes into their lines and
    # 1.37x on them (docs/results.md section 21): a plan can ask for the offset, and every
    # object of a 64-byte-multiple class then starts there, interleaved or in spans
    binary = align_test(build_dir)
    ra = elf.call_return_addresses(binary, "alloc_sized", "malloc")[0]
    plan = tmp_path / "line.plan"
    plan.write_text("\n".join(["heaplayout-plan 1", "strategy halo", "chunk_size 1048576", "max_object_size 4096",
                               f"module 0 {elf.build_id(binary)} {binary}", "skip libc.so.6",
                               f"group 1 1 1000{flags}{f' line {line}' if line else ''}",
                               f"select 1 0:{ra:x}", "end"]) + "\n")
    assert [g.line for g in read_plan(plan).groups] == [line]
    n = 40000  # more than one 1 MiB chunk of them
    r = run_program([str(binary), "offsets", str(n), str(size)], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    counts = dict(zip((0, 16, 32, 48), map(int, re.findall(r": (\d+)", r.stdout.decode()))))
    assert counts[line] == n, r.stdout.decode()


def test_span_heads_start_on_different_cache_sets(build_dir, tmp_path):
    # callsite pool of 32- and 64-byte objects from one site: 4000 of each fill 8 and 16
    # spans of 16 KiB; each span carved after another class's starts 9 lines further on
    # (tunables.h HL_SPAN_GAP_LINES), so no two heads share a line position in a page;
    # without the gap every head would sit on one
    r = run_program([str(align_test(build_dir)), "two", "4000"], env_extra=CALLSITE)
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    heads, positions = map(int, re.search(r"heads (\d+) on (\d+) line positions", r.stdout.decode()).groups())
    assert heads >= 8 and positions == heads, r.stdout.decode()


@pytest.mark.parametrize("bad", ["min_align 12", "min_align", "group 1 1 1000 pack"])
def test_plan_records_are_checked_by_both_readers(build_dir, tmp_path, bad):
    binary = align_test(build_dir)
    text = write_pairs_plan(tmp_path / "p.plan", binary, 8, True).read_text()
    key = bad.split(" ")[0]
    lines = [bad if ln.startswith(key + " ") else ln for ln in text.splitlines()]
    plan = tmp_path / "bad.plan"
    plan.write_text("\n".join(lines) + "\n")
    with pytest.raises(PlanError):
        parse_plan(plan.read_text())
    r = run_program([str(binary), "pairs", "100"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 0 and b"running unoptimized" in r.stderr
    assert gaps(r.stdout.decode()) == {"gap24": 32}  # glibc's spacing: nothing was pooled


def test_min_align_and_packed_survive_a_round_trip():
    plan = Plan(strategy="halo", min_align=8, modules=[PlanModule(0, None, "/bin/x")],
                groups=[PlanGroup(1, 2, 30, packed=True), PlanGroup(2, 1, 10)])
    again = parse_plan(plan_text(plan))
    assert again.min_align == 8 and [g.packed for g in again.groups] == [True, False]
    assert "min_align" not in plan_text(Plan(strategy="halo"))  # 16 is the default: not written


def test_planner_asks_for_8_only_when_told(monkeypatch):
    """GCC-built or not, a plan is 16-aligned unless --min-align 8 is given."""
    mods = [PlanModule(0, None, "/prog"), PlanModule(1, None, "/libfoo.so")]
    monkeypatch.setattr(elf, "comments", lambda p: ["GCC: (Debian 12.2.0-14) 12.2.0"])
    assert planner.choose_min_align("auto", mods)[0] == 16
    assert planner.choose_min_align("16", mods)[0] == 16
    align, why = planner.choose_min_align("8", mods)
    assert align == 8 and "must not rely" in why  # asked for: the user takes the risk
    assert planner.choose_min_align("auto", [])[0] == 16
    with pytest.raises(ValueError):
        planner.choose_min_align("4", mods)


def test_real_binaries_report_their_compiler(build_dir):
    assert any(c.startswith("GCC:") for c in elf.comments(align_test(build_dir)))


def test_groups_whose_objects_meet_their_own_kind_are_packed(tmp_path):
    from heaplayout.profile_model import Context, Profile

    p = Profile()
    p.contexts = {1: Context(1, "m", [(0, 1)], loads=100), 2: Context(2, "m", [(0, 2)], loads=100)}
    p.affinity = {(1, 1): 10, (1, 2): 500}
    p.walk = {1: 60}
    assert planner.self_share(p, [1]) == pytest.approx(0.7)
    assert planner.self_share(p, [2]) == 0.0  # met only with context 1: a lone access each
    assert planner.self_share(p, [1, 2]) == pytest.approx(0.35)
    assert planner.self_share(p, [1]) >= planner.PACK_SELF_SHARE > planner.self_share(p, [1, 2])


TAGGED = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
struct node { uintptr_t next_tagged; long k; long pad; }; /* 24 bytes */
__attribute__((noinline)) static struct node *mk(long k) {
  struct node *x = malloc(sizeof *x); x->k = k; x->pad = 0; return x;
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]), reps = atoi(argv[2]);
  uintptr_t head = 0;
  for (int i = 0; i < n; i++) { struct node *x = mk(i); x->next_tagged = head; head = (uintptr_t)x | (uintptr_t)(i % 16); }
  unsigned long s = 0;
  for (int r = 0; r < reps; r++)
    for (uintptr_t t = head; t;) { struct node *x = (struct node *)(t & ~(uintptr_t)15); s += (t & 15) + (unsigned long)x->k; t = x->next_tagged; }
  printf("s=%lu\n", s);
  return 0;
}
"""


def test_a_default_plan_keeps_malloc_s_16_byte_alignment(tmp_path):
    """A GCC-built program keeping a tag in the 4 low bits of pointers to 24-byte nodes (glibc
    documents 16-byte alignment for every malloc result): with the planner's former choice of
    `min_align 8` for GCC-built programs its nodes were 8-aligned and it printed a wrong sum
    on every allocator (docs/results.md section 30). A default plan keeps 16."""
    import subprocess
    import sys
    src = tmp_path / "tagged.c"
    src.write_text(TAGGED)
    exe = tmp_path / "tagged"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(exe), str(src)], check=True)
    cli = [sys.executable, "-m", "heaplayout.cli"]
    prof, plan = tmp_path / "t.prof", tmp_path / "t.plan"
    assert run_program(cli + ["profile", "-o", str(prof), "--", str(exe), "2000", "3"]).returncode == 0
    assert run_program(cli + ["plan", "-o", str(plan), str(prof)]).returncode == 0
    assert read_plan(plan).min_align == 16 and read_plan(plan).groups
    native = run_program([str(exe), "20000", "5"])
    planned = run_program(cli + ["run", "--plan", str(plan), "--", str(exe), "20000", "5"])
    assert planned.returncode == 0 and planned.stdout == native.stdout, planned.stdout
