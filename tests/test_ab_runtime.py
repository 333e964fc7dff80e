"""benchmarks/ab_runtime.py: two runtime builds on one program."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "ab_runtime.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_interleaved_rounds_give_every_configuration_and_the_paired_ratios(build_dir, runtime_lib):
    exe = build_dir / "benchmarks" / "malloc_shapes"
    r = run("--before", str(runtime_lib), "--after", str(runtime_lib), "--rounds", "3", "--", str(exe), "ring", "20000")
    assert r.returncode == 0, r.stderr
    for name in ("alone", "before", "after"):
        assert f"| {name} | " in r.stdout
    assert "after / before: " in r.stdout and "over 3 rounds" in r.stdout
    assert r.stderr.count("round ") == 3


def test_cachegrind_counts_show_the_runtime_at_work(build_dir, runtime_lib):
    exe = build_dir / "benchmarks" / "malloc_shapes"
    r = run("--before", str(runtime_lib), "--after", str(runtime_lib), "--cachegrind", "--", str(exe), "sites", "20000")
    assert r.returncode == 0, r.stderr
    rows = {line.split("|")[1].strip(): [int(x.strip().replace(",", "")) for x in line.split("|")[2:5]]
            for line in r.stdout.splitlines() if line.startswith("| ") and "configuration" not in line}
    assert set(rows) == {"alone", "before", "after"}
    # the same library: the counts agree (to a few instructions: the process's random bytes,
    # AT_RANDOM, and its addresses differ from run to run)
    b, a = rows["before"], rows["after"]
    assert abs(b[0] - a[0]) < 1000 and all(abs(x - y) <= 0.01 * x for x, y in zip(b[1:], a[1:])), (b, a)
    assert rows["alone"][0] != rows["after"][0]  # the runtime was loaded: other instructions


def test_a_missing_library_is_an_error(runtime_lib, tmp_path):
    r = run("--before", str(tmp_path / "none.so"), "--after", str(runtime_lib), "--", "/bin/true")
    assert r.returncode == 2 and "no such library" in r.stderr
