"""Plans the runtime must refuse without harm (issue 19, findings 1, 2, 4 and 6): each
runs the plan policy's test program with a bad plan and checks that the program runs as
without a plan, and that one message says why. Before the fix, findings 1 and 2 crashed
the program at its first malloc, finding 4's plans were accepted with wrapped numbers, and
a FIFO blocked the program for ever in open()."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import run_program
from test_runtime_plan import standard_selects, write_plan


@pytest.fixture
def program(build_dir: Path) -> Path:
    return build_dir / "tests" / "runtime" / "plan_test_nofp"


def refused_once(program: Path, plan: str | Path, expect: str, timeout: float = 20) -> None:
    plain = run_program([str(program), "500"])
    r = run_program([str(program), "500"], env_extra={"HEAPLAYOUT_PLAN": str(plan)}, timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stderr.decode())
    assert r.stdout == plain.stdout
    msgs = r.stderr.decode().splitlines()
    assert len(msgs) == 1 and expect in msgs[0] and msgs[0].endswith("running unoptimized"), msgs


def good_plan(tmp_path: Path, program: Path, extra: list[str] | None = None) -> Path:
    return write_plan(tmp_path / "p.plan", program, standard_selects(program) + (extra or []))


def test_offset_past_2_48_is_refused_not_a_crash(program, tmp_path):
    plan = good_plan(tmp_path, program, ["select 1 0:0xffff00000000150f"])  # the example
    refused_once(program, plan, "frame offset 0xffff00000000150f: out of range")


def test_hex_overflow_is_refused_not_a_crash(program, tmp_path):
    plan = good_plan(tmp_path, program, ["select 1 0:0x1ffffffffffffffff1a2b"])
    refused_once(program, plan, "out of range")


@pytest.mark.parametrize("lines", [9, 3])
def test_select_lines_with_a_leading_space_are_refused(program, tmp_path, lines):
    # 9 overflowed the rule array (crash); 3 dropped rules silently
    plan = good_plan(tmp_path, program, [" select 1 0:0x%x" % (0x100 + i) for i in range(lines)])
    refused_once(program, plan, "fields must be separated by single spaces")


@pytest.mark.parametrize("change, expect", [
    (("chunk_size 1048576", "chunk_size 18446744073710600192"), "must be a power of two"),
    (("group 1 3 1000", "group 18446744073709551617 3 1000"), "group ids must be 1, 2, 3"),
    (("select 1 0:", "select 18446744073709551617 0:"), "no such group"),
    (("select 1 0:", "select 1 18446744073709551616:"), "no module 18446744073709551616"),
    (("select 1 0:", "select 1 0:1\0"), "control character 0x00"),
])
def test_numbers_that_wrapped_are_refused(program, tmp_path, change, expect):
    plan = good_plan(tmp_path, program)
    plan.write_text(plan.read_text().replace(*change, 1))
    refused_once(program, plan, expect)


def test_the_group_limit_is_the_pool_ids(program, tmp_path):
    plan = good_plan(tmp_path, program)
    text = plan.read_text()
    groups = "".join(f"group {g} 1 1\n" for g in range(2, 4095))  # 4094 groups in all
    plan.write_text(text.replace("group 1 3 1000\n", "group 1 3 1000\n" + groups))
    refused_once(program, plan, "too many groups (the runtime takes at most 4093)")
    plan.write_text(text.replace("group 1 3 1000\n", "group 1 3 1000\n" + groups[: groups.index("group 4094")]))
    r = run_program([str(program), "500", "--expect-groups"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()  # 4093 groups: every one gets a pool


def test_a_fifo_does_not_block_the_program(program, tmp_path):
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    refused_once(program, fifo, "is a pipe or FIFO, not a regular file", timeout=10)


def test_a_directory_is_named_as_such(program, tmp_path):
    refused_once(program, tmp_path, "is a directory")


def test_a_missing_file_is_named_as_such(program, tmp_path):
    refused_once(program, tmp_path / "nothing.plan", "cannot open it: No such file or directory")


def test_process_substitution_is_a_pipe(program, tmp_path):
    plan = good_plan(tmp_path, program)
    plain = run_program([str(program), "500"])
    r = subprocess.run(["bash", "-c", f'HEAPLAYOUT_PLAN=<(cat "{plan}") exec "{program}" 500'],
                       capture_output=True, timeout=10, env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
    assert r.returncode == 0 and r.stdout == plain.stdout
    assert b"is a pipe or FIFO" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
