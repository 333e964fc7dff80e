"""What a measured or profiled program reads on standard input (`--stdin FILE`).

Without `--stdin` the program reads /dev/null, so a program that waits for input cannot
hang a measurement. With it, every run opens the file afresh: each run (each round of
each configuration, the profiling run, each simulation) reads the whole file from its
first byte, as it would from a shell redirection `< FILE`.
"""

from __future__ import annotations

import os
from pathlib import Path


def check_stdin_file(path: str | os.PathLike | None, option: str = "--stdin") -> Path | None:
    """The absolute path of a --stdin file after checking that it can be read (ValueError
    with the reason, naming `option`, otherwise); None when no file was given."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.exists():
        raise ValueError(f"{option} file not found: {path}")
    if p.is_dir():
        raise ValueError(f"{option} {path} is a directory, not a file")
    if not os.access(p, os.R_OK):
        raise ValueError(f"{option} file {path} is not readable")
    return Path(os.path.abspath(p))


def open_stdin(path: Path | None):
    """A file object for a child's stdin: the file from its start, or /dev/null."""
    return open(path if path is not None else os.devnull, "rb")


def redirect_stdin(path: Path) -> None:
    """Make `path` this process's standard input, before it execs the program."""
    fd = os.open(path, os.O_RDONLY)
    if fd != 0:
        os.dup2(fd, 0)
        os.close(fd)
