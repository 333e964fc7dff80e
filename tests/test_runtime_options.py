"""Settings the runtime reads from the environment, and what the CLI says before a run
(issue 19, findings 4, 6 and 10): a plan the policy does not use, HEAPLAYOUT_PROGRAM naming
nothing, size suffixes up to T, the defaults shown by --help, and plan files the runtime
would refuse, named by the CLI before anything runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import paths
from heaplayout.runtime_env import OPTION_DEFAULTS
from test_runtime_plan import standard_selects, write_plan

CLI = [sys.executable, "-m", "heaplayout.cli"]


@pytest.fixture
def program(build_dir: Path) -> Path:
    return build_dir / "tests" / "runtime" / "plan_test_nofp"


def messages(r: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in r.stderr.decode().splitlines() if ln.startswith("heaplayout")]


def test_a_plan_under_policy_callsite_is_named_as_ignored(program, tmp_path):
    plan = write_plan(tmp_path / "p.plan", program, standard_selects(program))
    stats = tmp_path / "s.json"
    plain = run_program([str(program), "300"])
    r = run_program([str(program), "300"], env_extra={"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_PLAN": str(plan),
                                                      "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert r.returncode == 0 and r.stdout == plain.stdout
    msgs = messages(r)
    assert len(msgs) == 1 and "HEAPLAYOUT_PLAN is ignored: HEAPLAYOUT_POLICY=callsite" in msgs[0], msgs
    assert json.loads(stats.read_text())["policy"] == "callsite"  # the policy asked for still runs


def test_a_missing_program_optimizes_no_process(program, tmp_path):
    stats = tmp_path / "s.json"
    plain = run_program([str(program), "300"])
    r = run_program([str(program), "300"], env_extra={"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_STATS_JSON": str(stats),
                                                      "HEAPLAYOUT_PROGRAM": str(tmp_path / "gone")})
    assert r.returncode == 0 and r.stdout == plain.stdout
    msgs = messages(r)
    assert len(msgs) == 1 and "does not exist, so no process is that program" in msgs[0], msgs
    assert not stats.exists()  # unoptimized: no policy, no statistics


def test_the_named_program_is_still_optimized(program, tmp_path):
    stats = tmp_path / "s.json"
    r = run_program([str(program), "300"], env_extra={"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_STATS_JSON": str(stats),
                                                      "HEAPLAYOUT_PROGRAM": str(program)})
    assert r.returncode == 0 and r.stderr == b"" and json.loads(stats.read_text())["policy"] == "callsite"


@pytest.mark.parametrize("value, accepted", [
    ("1T", True), ("1t", True), ("1TiB", True), ("1024G", True), ("16GB", True), ("64M", True),
    ("2T", False), ("1P", False), ("99999999999999999999T", False), ("16777216T", False), ("16Gi", False),
    ("1GBB", False), ("1GiBB", False), ("", False),
])
def test_range_sizes(program, tmp_path, value, accepted):
    stats = tmp_path / "s.json"
    r = run_program([str(program), "100"], env_extra={"HEAPLAYOUT_POLICY": "callsite", "HEAPLAYOUT_RANGE": value,
                                                      "HEAPLAYOUT_STATS_JSON": str(stats)})
    assert r.returncode == 0
    policy = json.loads(stats.read_text())["policy"]
    if accepted:
        assert r.stderr == b"" and policy == "callsite", r.stderr.decode()
    else:
        msgs = messages(r)
        assert len(msgs) == 1 and "HEAPLAYOUT_RANGE" in msgs[0] and "running unoptimized" in msgs[0], msgs
        assert policy == "off"


def tunables() -> dict[str, int]:
    text = (paths.REPO_ROOT / "runtime" / "src" / "tunables.h").read_text()
    found = {}
    for name, expr in re.findall(r"^#define (HL_\w+) (.+?)\s*(?:/\*.*)?$", text, re.M):
        expr = re.sub(r"(\d+)u?l?l?\b", r"\1", expr.replace("ull", "").replace("u", ""))
        try:
            found[name] = eval(expr, {"__builtins__": {}})  # integer arithmetic only: digits, <<, ()
        except Exception:
            pass
    return found


def size_value(text: str) -> int:
    units = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
    assert m, text
    return int(m.group(1)) << units[m.group(2)]


def test_help_shows_the_runtimes_defaults():
    macros = {"min_objects": "HL_DEFAULT_MIN_OBJECTS", "max_size": "HL_DEFAULT_MAX_SIZE",
              "chunk_size": "HL_DEFAULT_CHUNK_SIZE", "range": "HL_DEFAULT_RANGE", "cc_block": "HL_DEFAULT_CC_BLOCK",
              "chunk_colors": "HL_CHUNK_COLORS", "spare_chunks": "HL_SPARE_CHUNKS",
              "span_bytes": "HL_SPAN_BYTES", "huge_pages": "HL_DEFAULT_HUGE_PAGES"}
    values = tunables()
    assert {name: size_value(text) for name, text in OPTION_DEFAULTS.items()} == \
        {name: values[macro] for name, macro in macros.items()}
    r = run_program(CLI + ["run", "--help"])
    help_text = " ".join(r.stdout.decode().split())
    assert f"(default {OPTION_DEFAULTS['range']};" in help_text and "64G" not in help_text


# ---- the CLI names a plan file the runtime would refuse, before running anything ----

def test_run_names_a_fifo_a_directory_and_a_missing_file(program, tmp_path):
    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)
    for plan, expect in [(fifo, "is a pipe or FIFO"), (tmp_path, "is a directory"),
                         (tmp_path / "none.plan", "plan file not found")]:
        r = run_program(CLI + ["run", "--plan", str(plan), "--", str(program), "10"], timeout=20)
        assert r.returncode == 2 and expect in r.stderr.decode() and r.stdout == b"", (plan, r.stderr)


def test_run_refuses_process_substitution_with_a_reason(program, tmp_path):
    plan = write_plan(tmp_path / "p.plan", program, standard_selects(program))
    cmd = " ".join(CLI) + f' run --plan <(cat "{plan}") -- "{program}" 10'
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=30)
    assert r.returncode == 2 and b"process substitution" in r.stderr and r.stdout == b"", r.stderr


def test_run_and_bench_say_what_the_runtime_would(program, tmp_path):
    plan = write_plan(tmp_path / "p.plan", program, standard_selects(program) + ["select 1 0:0xffff00000000150f"])
    under_runtime = run_program([str(program), "10"], env_extra={"HEAPLAYOUT_PLAN": str(plan)})
    runtime_says = under_runtime.stderr.decode().strip()
    assert runtime_says.startswith("heaplayout: plan ") and runtime_says.endswith("; running unoptimized")
    core = runtime_says.removeprefix("heaplayout: ").removesuffix("; running unoptimized")
    r = run_program(CLI + ["run", "--plan", str(plan), "--", str(program), "10"])
    assert r.returncode == 2 and r.stdout == b"" and r.stderr.decode() == f"heaplayout run: {core}\n"
    b = run_program(CLI + ["bench", "--runs", "1", "--warmup", "0", "--config", f"glibc,p=plan={plan}", "--",
                           str(program), "10"])
    assert b.returncode == 2 and core in b.stderr.decode() and b.stdout == b"", b.stderr.decode()


def test_plan_show_refuses_what_the_runtime_refuses(program, tmp_path):
    """`heaplayout plan show` accepted the issue's crashing plan (finding 1)."""
    plan = write_plan(tmp_path / "p.plan", program, standard_selects(program) + ["select 1 0:0xffff00000000150f"])
    r = run_program(CLI + ["plan", "show", str(plan)])
    assert r.returncode == 1 and "frame offset 0xffff00000000150f: out of range" in r.stderr.decode()


def test_the_cli_s_option_ranges_are_the_runtime_s(runtime_lib):
    """runtime_env.OPTION_RANGES against the runtime's own check: each bound is accepted by
    the runtime (no message) and one past it refused, so the CLI refuses exactly what the
    runtime would have run unoptimized."""
    from heaplayout.runtime_env import OPTION_RANGES, OPTION_VARIABLES, option_problem

    def runtime_says(name: str, value: int) -> str:
        env = {"LD_PRELOAD": str(runtime_lib), "HEAPLAYOUT_POLICY": "callsite", OPTION_VARIABLES[name]: str(value)}
        if name == "chunk_size":
            env["HEAPLAYOUT_RANGE"] = str(1 << 40)  # the range must hold 16 chunks
        r = run_program(["/bin/sh", "-c", "echo ok"], env_extra=env)
        assert r.returncode == 0 and r.stdout == b"ok\n"
        return r.stderr.decode()

    for name, (lo, hi, pow2) in OPTION_RANGES.items():
        for good in (lo, hi):
            assert "out of range" not in runtime_says(name, good), (name, good)
            assert option_problem(name, str(good)) is None, (name, good)
        for bad in ([lo - 1] if lo > 0 else []) + [hi * 2 if pow2 else hi + 1]:
            assert "out of range" in runtime_says(name, bad), (name, bad)
            assert "out of range" in option_problem(name, str(bad)), (name, bad)
    r = run_program(CLI + ["run", "--chunk-size", "64K", "--", "true"])
    assert r.returncode == 2 and b"--chunk-size 64K is out of range: 256K to 64M, a power of two" in r.stderr
