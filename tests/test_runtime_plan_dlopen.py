"""Plans that name a library the program loads later with dlopen (a plugin, a Python
extension): the module is pending at start and its rules take effect when it appears
(docs/plan-format.md, "Modules loaded later"). The test program and library are
tests/runtime/dlopen_test.c and dlopen_plugin.c; the plans are written by hand from their
disassembly, as in test_runtime_plan.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import elf


@pytest.fixture
def programs(build_dir: Path) -> tuple[Path, Path]:
    d = build_dir / "tests" / "runtime"
    return d / "dlopen_test", d / "libhl_dlopen_plugin.so"


def write_plan(path: Path, program: Path, plugin: Path, plugin_build_id: str | None = None) -> Path:
    cell = elf.call_return_addresses(plugin, "plugin_cell", "malloc")[0]
    via_host = elf.call_return_addresses(plugin, "plugin_cell_via_host", "host_alloc")[0]
    host = elf.call_return_addresses(program, "host_alloc", "malloc")[0]
    lines = [
        "heaplayout-plan 1", "strategy halo", "chunk_size 1048576", "max_object_size 4096",
        f"module 0 {elf.build_id(program)} {program}",
        f"module 1 {plugin_build_id or elf.build_id(plugin)} {plugin}",
        "skip libc.so.6",
        "group 1 1 100", "group 2 1 100",
        f"select 1 1:{cell:#x}",                    # first frame in the plugin
        f"select 2 0:{host:#x} 1:{via_host:#x}",    # first frame in the program, second in the plugin
        "end",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def group_objects(stats: Path) -> dict[int, int]:
    s = json.loads(stats.read_text())
    return {p["group"]: p["objects"] for p in s["pools"] if p["kind"] == "group"}


@pytest.mark.parametrize("threads", [1, 4])
def test_rules_of_a_library_loaded_later_take_effect(programs, tmp_path, threads):
    program, plugin = programs
    plan = write_plan(tmp_path / "p.plan", program, plugin)
    stats = tmp_path / "stats.json"
    argv = [str(program), "3000", str(threads), str(plugin)]
    plain = run_program(argv)
    planned = run_program(argv, env_extra={"HEAPLAYOUT_PLAN": str(plan), "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert plain.returncode == planned.returncode == 0, planned.stderr.decode()
    assert planned.stdout == plain.stdout and planned.stderr == b""
    # every cell the plugin made went to group 1, every cell it made through the program's
    # host_alloc to group 2; the program's own host_alloc calls before dlopen are not group 2's
    assert group_objects(stats) == {1: 3000 * threads, 2: 3000 * threads}


def test_another_build_of_the_library_is_refused_once(programs, tmp_path):
    program, plugin = programs
    plan = write_plan(tmp_path / "p.plan", program, plugin, plugin_build_id="ab" * 20)
    stats = tmp_path / "stats.json"
    argv = [str(program), "2000", "4", str(plugin)]
    plain = run_program(argv)
    planned = run_program(argv, env_extra={"HEAPLAYOUT_PLAN": str(plan), "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert planned.returncode == 0 and planned.stdout == plain.stdout
    msgs = [ln for ln in planned.stderr.decode().splitlines() if ln.startswith("heaplayout:")]
    assert len(msgs) == 1 and "libhl_dlopen_plugin.so was loaded but is another build" in msgs[0], msgs
    assert group_objects(stats).get(1, 0) == 0 and group_objects(stats).get(2, 0) == 0
