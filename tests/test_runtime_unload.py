"""Code unloaded by dlclose, and another library loaded at its addresses (docs/runtime.md,
"Libraries unloaded with dlclose"). tests/runtime/unload_wrapper.c is built twice, with a
64 KiB frame and an 8-byte one, so both libraries call malloc from the same return address
with different unwind rules; tests/runtime/unload_test.c loads, uses and closes them in
turns. Rules, DPA verdicts or thread caches kept from the first library step the second's
frames off the stack: before unload.c, dpa crashed on the order big-then-small."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import elf
from heaplayout.runtime_env import RuntimeConfig, runtime_env

ORDERS = [("big", "small"), ("small", "big")]


@pytest.fixture
def unload(build_dir: Path) -> tuple[Path, dict[str, Path]]:
    d = build_dir / "tests" / "runtime"
    return d / "unload_test", {k: d / f"libhl_unload_{k}.so" for k in ("big", "small")}


def indirect_call_return(binary: Path, function: str) -> int:
    """The return address of the first indirect call in `function` (use() calls the wrapper
    through a pointer from dlsym)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    body = re.search(rf"^[0-9a-f]+ <{function}(?:\.[a-z]+\.\d+)*>:\n(.*?)\n\n", out, re.S | re.M)
    assert body is not None, f"no {function} in {binary}"
    lines = [ln for ln in body.group(1).splitlines() if re.match(r"\s+[0-9a-f]+:", ln)]
    for i, ln in enumerate(lines[:-1]):
        if re.search(r"call\s+\*", ln):
            return int(lines[i + 1].split(":")[0], 16)
    raise AssertionError(f"no indirect call in {function}")


def walk_plan(path: Path, program: Path, big: Path) -> Path:
    """A plan whose rule needs two frames at the wrapper's call to malloc: the wrapper's
    return address becomes a walk site, cached with its unwind rule."""
    ra = elf.call_return_addresses(big, "unload_wrap", "malloc")[0]
    caller = indirect_call_return(program, "use")
    path.write_text("\n".join([
        "heaplayout-plan 1", "strategy halo", "chunk_size 1048576", "max_object_size 4096",
        f"module 0 {elf.build_id(program)} {program}",
        f"module 1 {elf.build_id(big)} {big}",
        "skip libc.so.6",
        "group 1 1 100",
        f"select 1 1:{ra:#x} 0:{caller:#x}",
        "end"]) + "\n")
    return path


def run_turns(program: Path, libs: dict[str, Path], order: tuple[str, str], env: dict[str, str] | None):
    argv = [str(program), str(libs[order[0]]), str(libs[order[1]]), "3", "400"]
    return run_program(argv, env_extra=env, timeout=60)


def same_address_or_skip(proc: subprocess.CompletedProcess) -> None:
    where = set(re.findall(r"^wrap (0x[0-9a-f]+)$", proc.stderr.decode(), re.M))
    if len(where) != 1:
        pytest.skip(f"the loader put the two libraries at different addresses ({sorted(where)})")


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
@pytest.mark.parametrize("policy", ["dpa", "plan"])
def test_a_library_loaded_where_another_was_unloaded_is_walked_by_its_own_rules(unload, tmp_path, policy, order):
    program, libs = unload
    plain = run_turns(program, libs, order, None)
    assert plain.returncode == 0, plain.stderr.decode()
    same_address_or_skip(plain)
    stats = tmp_path / "stats.json"
    plan = walk_plan(tmp_path / "w.plan", program, libs["big"]) if policy == "plan" else None
    env = runtime_env(RuntimeConfig(policy=policy, plan=str(plan) if plan else None, stats_json=str(stats),
                                    options={"min_objects": "10"} if policy == "dpa" else {}))
    res = run_turns(program, libs, order, env)
    assert res.returncode == 0, f"exit {res.returncode}: {res.stderr.decode()[-1500:]}"
    assert res.stdout == plain.stdout
    same_address_or_skip(res)
    data = json.loads(stats.read_text())
    assert data["code_unloads"] == 6  # every dlclose unmapped its library
    if policy == "plan":
        # the rule's module is the big library: its 3 x 400 objects are placed, wherever it
        # is loaded again, and none of the small one's, though they come from the same address
        assert data["plan_walks"] > 0
        assert sum(p["objects"] for p in data["pools"] if p["kind"] == "group") == 1200
    else:
        assert any(v["verdict"] == "wrapper" for v in data["dpa"]["verdicts"])


def test_a_dlclose_that_unloads_nothing_forgets_nothing(unload, tmp_path):
    """A library that is also preloaded: the program's dlclose only drops a reference."""
    program, libs = unload
    stats = tmp_path / "stats.json"
    env = runtime_env(RuntimeConfig(policy="dpa", stats_json=str(stats)))
    env["LD_PRELOAD"] += f" {libs['big']}"
    res = run_program([str(program), str(libs["big"]), str(libs["big"]), "2", "10"], env_extra=env, timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    assert json.loads(stats.read_text())["code_unloads"] == 0
