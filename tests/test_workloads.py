"""The workload suite: every program's small input runs, prints a checksum, and prints the same
output in both build variants, on a repeat run, under each general-purpose allocator, and under
our runtime (policies off and callsite). Output that changes with the allocator means a
workload depends on addresses, which would make layout experiments meaningless."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import paths, workloads
from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env

SUITE = workloads.load_suite()
BY_NAME = {w.name: w for w in SUITE}
NAMES = [w.name for w in SUITE]
CHECKSUM_LINE = re.compile(rb"^checksum: [0-9]+$", re.MULTILINE)
TIMEOUT = 60

# first fp run of each workload's small input, shared by the comparisons below
_reference_output: dict[str, bytes] = {}


def _run(name: str, variant: str = "fp", env_extra: dict[str, str] | None = None) -> bytes:
    w = BY_NAME[name]
    proc = run_program([str(w.binary(variant)), *w.args("small")], env_extra=env_extra, timeout=TIMEOUT)
    assert proc.returncode == 0, (
        f"{name} ({variant}, env {env_extra}) exited {proc.returncode}; stderr: {proc.stderr.decode(errors='replace')[-2000:]}"
    )
    assert CHECKSUM_LINE.search(proc.stdout), f"{name} printed no 'checksum: N' line: {proc.stdout!r}"
    return proc.stdout


def _reference(name: str) -> bytes:
    if name not in _reference_output:
        _reference_output[name] = _run(name)
    return _reference_output[name]


def test_suite_is_big_enough() -> None:
    assert len(SUITE) >= 14
    assert any(w.threads > 1 for w in SUITE), "the suite needs a multi-threaded workload"
    assert any(w.source.endswith(".cpp") for w in SUITE), "the suite needs a C++ workload"


def test_manifest_matches_cmake_and_sources() -> None:
    cmake = (paths.REPO_ROOT / "workloads" / "CMakeLists.txt").read_text()
    built = set(re.findall(r"^\s+([A-Za-z0-9_]+):[A-Za-z0-9_.]+$", cmake, re.MULTILINE))
    assert built == set(NAMES), f"CMake builds {sorted(built ^ set(NAMES))} differently from the manifest"
    for w in SUITE:
        assert (paths.REPO_ROOT / "workloads" / w.source).is_file(), f"{w.name}: missing source {w.source}"
        assert w.small and w.ref, f"{w.name}: empty argument list"


@pytest.mark.parametrize("name", NAMES)
def test_small_runs_with_checksum(build_dir: Path, name: str) -> None:
    _reference(name)


@pytest.mark.parametrize("name", NAMES)
def test_fp_and_nofp_agree(build_dir: Path, name: str) -> None:
    assert _run(name, "nofp") == _reference(name)


@pytest.mark.parametrize("name", NAMES)
def test_repeat_run_agrees(build_dir: Path, name: str) -> None:
    assert _run(name) == _reference(name)


@pytest.mark.parametrize("allocator", ["jemalloc", "mimalloc", "tcmalloc"])
@pytest.mark.parametrize("name", NAMES)
def test_same_output_under_allocator(build_dir: Path, name: str, allocator: str) -> None:
    assert _run(name, env_extra=allocator_env(allocator)) == _reference(name), f"{name} under {allocator}"


@pytest.mark.parametrize("policy", ["off", "callsite"])
@pytest.mark.parametrize("name", NAMES)
def test_same_output_under_runtime(build_dir: Path, name: str, policy: str) -> None:
    env = runtime_env(RuntimeConfig(policy=policy))
    assert _run(name, env_extra=env) == _reference(name), f"{name} under heaplayout policy={policy}"


def test_workload_api(build_dir: Path) -> None:
    w = SUITE[0]
    assert w.binary() == paths.workload_binary(w.name, "fp")
    assert w.binary("nofp") == paths.workload_binary(w.name, "nofp")
    assert w.args("small") == list(w.small) and w.args("ref") == list(w.ref)
    with pytest.raises(ValueError, match="unknown input"):
        w.args("huge")


GOOD_ENTRY = """
[[workload]]
name = "demo"
source = "src/demo.c"
paper = "Olden demo"
pattern = "a list"
why = "because"
small = ["1"]
ref = ["2"]
threads = 1
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[workload]\nname = 1", "not valid TOML"),
        ("", "at least one"),
        ("title = 'x'\n" + GOOD_ENTRY, "unknown key"),
        (GOOD_ENTRY.replace('why = "because"\n', ""), "missing key"),
        (GOOD_ENTRY.replace('small = ["1"]', "small = [1]"), "small must be a list of argument strings"),
        (GOOD_ENTRY.replace('small = ["1"]', 'small = "1"'), "small must be a list"),
        (GOOD_ENTRY.replace("threads = 1", "threads = 0"), "threads must be an integer"),
        (GOOD_ENTRY.replace("threads = 1", 'threads = "2"'), "threads must be an integer"),
        (GOOD_ENTRY.replace('name = "demo"', 'name = "../demo"'), "name"),
        (GOOD_ENTRY.replace('paper = "Olden demo"', 'paper = ""'), "paper must be a non-empty string"),
        (GOOD_ENTRY.replace("threads = 1", "threads = 1\nspeed = 3"), "unknown key"),
        (GOOD_ENTRY + GOOD_ENTRY, "duplicate name"),
    ],
)
def test_loader_rejects_malformed_manifest(tmp_path: Path, text: str, message: str) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(text)
    with pytest.raises(ValueError, match="malformed workload manifest") as err:
        workloads.load_suite(manifest)
    assert message in str(err.value)
    assert str(manifest) in str(err.value)


def test_loader_accepts_good_manifest_and_missing_file(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(GOOD_ENTRY)
    (w,) = workloads.load_suite(manifest)
    assert (w.name, w.small, w.ref, w.threads) == ("demo", ("1",), ("2",), 1)
    with pytest.raises(ValueError, match="cannot read workload manifest"):
        workloads.load_suite(tmp_path / "absent.toml")
