"""Where the built artifacts live.

The C parts are built by CMake into one build directory (default: <repo>/build). A user can
point elsewhere with HEAPLAYOUT_BUILD_DIR. Nothing here builds anything: a missing artifact
is reported with the command that makes it.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


class MissingArtifact(RuntimeError):
    """A built file the command needs is not there."""


def build_dir() -> Path:
    override = os.environ.get("HEAPLAYOUT_BUILD_DIR")
    return Path(override).resolve() if override else REPO_ROOT / "build"


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise MissingArtifact(
            f"{what} not found at {path}; build it with: scripts/build.sh "
            f"(or set HEAPLAYOUT_BUILD_DIR to your CMake build directory)"
        )
    return path


def runtime_library() -> Path:
    """libheaplayout.so, the LD_PRELOAD runtime."""
    return _require(build_dir() / "runtime" / "libheaplayout.so", "the runtime library libheaplayout.so")


def workload_binary(name: str, variant: str = "fp") -> Path:
    """A workload executable; variant 'fp' keeps frame pointers, 'nofp' omits them."""
    return _require(build_dir() / "workloads" / variant / name, f"workload {name!r} ({variant})")


def check_output_file(path: str | os.PathLike, option: str) -> None:
    """Refuse an output file that cannot be written (ValueError naming `option` and why)
    before any work is done: a missing or read-only directory, or a directory given as the
    file, would otherwise surface as a Python traceback after the work (a simulation, a merge
    of large profiles), or as an error about a hidden temporary file."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{option} {path} is a directory; give the file's name")
    where = p.parent if str(p.parent) else Path(".")
    if not where.is_dir():
        raise ValueError(f"{option} {path}: cannot write it: no such directory {where}")
    if not os.access(where, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ValueError(f"{option} {path}: cannot write it: permission denied")
