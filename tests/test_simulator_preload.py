"""`heaplayout simulate` keeps the user's LD_PRELOAD and takes --allocator PATH (issue 26):
the layout simulated is the one the program gets with that library, shown by where
libhlperturb's random mode puts the objects (four arenas gigabytes apart) against glibc's
heap (a few kilobytes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout.simulate import SimOptions, perturb_library, run_simulation


@pytest.fixture(scope="module")
def probe(build_dir: Path) -> Path:
    exe = build_dir / "tests" / "simulator" / "perturb_probe"
    if not exe.exists():
        pytest.fail(f"{exe} not built: run scripts/build.sh")
    return exe


def spread(stdout: str) -> int:
    addrs = [int(ln.split()[1], 16) for ln in stdout.splitlines() if ln.startswith("A ")]
    assert len(addrs) == 64 and "ok" in stdout.splitlines(), stdout[-300:]
    return max(addrs) - min(addrs)


def test_user_ld_preload_is_kept(probe, monkeypatch):
    monkeypatch.setenv("HLPERTURB_MODE", "random")
    plain = run_simulation([str(probe), "64", "24"], SimOptions(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert spread(plain["program_stdout"]) < 1 << 20  # glibc: one heap
    assert plain["layout"]["user_preload"] == ""
    monkeypatch.setenv("LD_PRELOAD", str(perturb_library()))
    r = run_simulation([str(probe), "64", "24"], SimOptions(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert spread(r["program_stdout"]) > 1 << 30  # four arenas
    assert r["layout"]["user_preload"] == str(perturb_library())


def test_allocator_path_on_the_command_line(probe, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["HLPERTURB_MODE"] = "random"
    cli = [sys.executable, "-m", "heaplayout.cli", "simulate"]
    r = subprocess.run(cli + ["--allocator", str(perturb_library()), "--json", str(tmp_path / "r.json"), "--",
                              str(probe), "64", "24"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert spread(r.stdout) > 1 << 30
    assert f"layout {perturb_library()};" in r.stdout
    bad = subprocess.run(cli + ["--allocator", str(tmp_path / "missing.so"), "--", str(probe), "4", "24"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "allocator library not found" in bad.stderr
