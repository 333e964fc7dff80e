"""`--stdin FILE` (profile, run, bench, simulate) and `--allocator PATH` (run, bench,
simulate): the program reads the file in every run, a library given by path is preloaded and
used, and a bad path or file gets one clear message (optimize too; its runs with --stdin and a
library allocator are in test_optimize.py)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import allocators, bench
from heaplayout.profile_reader import read_profile
from heaplayout.shared_object import malloc_library_problem

CLI = [sys.executable, "-m", "heaplayout.cli"]
LIBM = Path("/usr/lib/x86_64-linux-gnu/libm.so.6")


@pytest.fixture(scope="module")
def worker(build_dir) -> Path:
    return build_dir / "tests" / "commands" / "stdin_worker"


@pytest.fixture(scope="module")
def wrap_lib(build_dir) -> Path:
    """A malloc library given by path: forwards to glibc, logs 'wrap PID CALLS' to HL_WRAP_LOG."""
    return build_dir / "tests" / "commands" / "libhl_wrap_malloc.so"


@pytest.fixture()
def numbers(tmp_path) -> Path:
    f = tmp_path / "numbers.txt"
    f.write_text("\n".join(str(i) for i in range(1, 501)) + "\n")
    return f


EXPECTED = b"count 500 sum 125250\n"


def wrap_calls(log: Path) -> list[int]:
    """Calls counted by each process that loaded the wrapper library."""
    if not log.exists():
        return []
    return [int(line.split()[2]) for line in log.read_text().splitlines()]


def test_run_reads_stdin_on_a_library_allocator(runtime_lib, worker, wrap_lib, numbers, tmp_path):
    log = tmp_path / "wrap.log"
    r = run_program(CLI + ["run", "--policy", "callsite", "--allocator", str(wrap_lib), "--stdin", str(numbers),
                           "--", str(worker), "list"], env_extra={"HL_WRAP_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    assert r.stdout == EXPECTED
    # under the runtime, what callsite does not pool (the first 100 cells of the site, stdio)
    # reaches the library underneath
    assert wrap_calls(log) and wrap_calls(log)[0] >= 100


def test_print_env_names_the_library(runtime_lib, wrap_lib):
    r = run_program(CLI + ["run", "--print-env", "--allocator", str(wrap_lib)])
    env = dict(line.split("=", 1) for line in r.stdout.decode().splitlines())
    assert env["LD_PRELOAD"].split(":") == [str(runtime_lib), str(wrap_lib)]


def test_profile_reads_stdin(build_dir, worker, numbers, tmp_path):
    prof = tmp_path / "w.prof"
    r = run_program(CLI + ["profile", "-o", str(prof), "--stdin", str(numbers), "--", str(worker), "list"],
                    timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == EXPECTED
    p = read_profile(str(prof))
    assert any(c.objects == 500 for c in p.contexts.values()), [c.objects for c in p.contexts.values()]


def test_bench_feeds_stdin_to_every_run(runtime_lib, worker, wrap_lib, numbers, tmp_path):
    """Every run of every configuration reads the whole file: a run that read it after
    another, or read /dev/null, would exit 3 ('no input') and fail the output check."""
    log, js = tmp_path / "wrap.log", tmp_path / "b.json"
    configs = f"glibc,{wrap_lib},mine=callsite+{wrap_lib}"
    r = run_program(CLI + ["bench", "--runs", "2", "--warmup", "1", "--stdin", str(numbers), "--config", configs,
                           "--json", str(js), "--", str(worker), "list"], env_extra={"HL_WRAP_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert doc["stdin"] == str(numbers) and f"--stdin {numbers}" in doc["command"]
    assert doc["baseline_exit"] == {"code": 0, "signal": None}
    assert all(e["code"] == 0 for c in doc["configs"] for e in c["exit"])
    assert doc["configs"][1]["allocator"] == str(wrap_lib) and doc["configs"][2]["policy"] == "callsite"
    assert doc["configs"][1]["env"]["LD_PRELOAD"] == str(wrap_lib)
    # 3 runs of each of the two configurations on the library, each counted by the library
    calls = wrap_calls(log)
    assert len(calls) == 6 and min(calls) > 0
    # the contrast: without --stdin the program reads /dev/null
    r = run_program(CLI + ["bench", "--runs", "1", "--warmup", "0", "--config", "glibc", "--", str(worker), "list"])
    assert b"did not exit 0: exit 3" in r.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_simulate_reads_stdin_on_a_library_allocator(build_dir, worker, wrap_lib, numbers, tmp_path):
    log, js = tmp_path / "wrap.log", tmp_path / "s.json"
    r = run_program(CLI + ["simulate", "--allocator", str(wrap_lib), "--stdin", str(numbers), "--json", str(js),
                           "--", str(worker), "list"], env_extra={"HL_WRAP_LOG": str(log)}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(EXPECTED) and f"layout {wrap_lib};".encode() in r.stdout
    assert json.loads(js.read_text())["layout"]["allocator"] == str(wrap_lib)
    assert wrap_calls(log) and wrap_calls(log)[0] >= 500


def _bad_libraries(tmp_path: Path) -> list[tuple[str, str]]:
    text = tmp_path / "libnotes.so"
    text.write_text("not a library\n")
    return [(str(tmp_path / "missing" / "libx.so"), "allocator library not found"),
            (str(text), "is not an ELF shared library"),
            (str(LIBM), "does not define malloc")]


@pytest.mark.parametrize("command", ["run", "bench", "simulate", "optimize"])
def test_bad_allocator_path_is_one_clear_message(command, worker, tmp_path, runtime_lib):
    for lib, message in _bad_libraries(tmp_path):
        if command == "bench":
            argv = ["bench", "--config", f"glibc,plan+{lib}={tmp_path / 'none.plan'}"]
        else:
            argv = [command, "--allocator", lib]
        r = run_program(CLI + argv + ["--", str(worker), "list"])
        err = r.stderr.decode()
        assert r.returncode == 2, (command, lib, err)
        assert err.startswith(f"heaplayout {command}: ") and message in err, err
        assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("command", ["run", "bench", "simulate", "profile", "optimize"])
def test_missing_stdin_file_is_one_clear_message(command, worker, tmp_path, build_dir):
    r = run_program(CLI + [command, "--stdin", str(tmp_path / "nope.txt"), "--", str(worker), "list"])
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith(f"heaplayout {command}: ")
    assert "--stdin file not found" in err and len(err.strip().splitlines()) == 1


def test_library_checks(wrap_lib, tmp_path):
    assert malloc_library_problem(wrap_lib) is None
    data = bytearray(wrap_lib.read_bytes())
    wrong_class = tmp_path / "lib32.so"
    wrong_class.write_bytes(bytes(data[:4]) + b"\x01" + bytes(data[5:]))
    assert "64-bit" in malloc_library_problem(wrong_class)
    wrong_machine = tmp_path / "libarm.so"
    wrong_machine.write_bytes(bytes(data[:0x12]) + (40).to_bytes(2, "little") + bytes(data[0x14:]))
    assert "another machine" in malloc_library_problem(wrong_machine)
    assert "does not define malloc" in malloc_library_problem(LIBM)
    assert allocators.allocator_library(str(wrap_lib)) == wrap_lib
    with pytest.raises(allocators.UnknownAllocator, match="library path|shared library"):
        allocators.allocator_library("nosuch")


def test_bench_grammar_takes_library_paths():
    c = bench.parse_config("/opt/lib/libc++alloc.so")  # a '+' inside a path is not POLICY+ALLOCATOR
    assert (c.policy, c.allocator) == (None, "/opt/lib/libc++alloc.so")
    c = bench.parse_config("plan+/opt/lib/libfoo.so=/tmp/p.plan:min_align=16")
    assert (c.policy, c.allocator, dict(c.options)) == ("plan", "/opt/lib/libfoo.so",
                                                        {"plan": "/tmp/p.plan", "min_align": "16"})
    c = bench.parse_config("mine=callsite+./libfoo.so")
    assert (c.label, c.policy, c.allocator) == ("mine", "callsite", "./libfoo.so")
    with pytest.raises(bench.ConfigError, match="plain allocator"):
        bench.parse_config("/opt/lib/libfoo.so:max_size=8")
