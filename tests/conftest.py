"""Shared fixtures. The suite expects the C parts built (scripts/test.sh builds them first)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from heaplayout import paths


@pytest.fixture(scope="session")
def build_dir() -> Path:
    d = paths.build_dir()
    if not (d / "build.ninja").exists() and not (d / "Makefile").exists():
        pytest.fail(f"no build in {d}: run scripts/build.sh first")
    return d


@pytest.fixture(scope="session")
def runtime_lib(build_dir: Path) -> Path:
    return paths.runtime_library()


def run_program(argv: list[str], env_extra: dict[str, str] | None = None, timeout: float = 120,
                stdin: bytes | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run argv with extra environment variables; capture bytes of stdout and stderr."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra or {})
    return subprocess.run(argv, env=env, input=stdin, capture_output=True, timeout=timeout, cwd=cwd)
