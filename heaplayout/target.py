"""Which executable of a command's process tree does the work: the one to optimize.

A command is often not the program that allocates: a shell script that `exec`s an
interpreter, a compiler driver (`g++`) that runs `cc1plus`, `make` running compilers. The
runtime's settings name one executable (HEAPLAYOUT_PROGRAM) and a profile follows one
process, so `optimize` and `profile` first take a *census*: the command runs once natively
with the runtime preloaded under policy `off` (which only forwards to the allocator), and
every process writes its executable and CPU time at exit into the runtime's JSON statistics
(`exe`, `cpu_s`; `%p` in the path keeps them apart). The executable with the most CPU time,
summed over its processes, is the target.

    >>> c = Census([Process(1, "/bin/dash", 0.01), Process(2, "/usr/bin/lua5.4", 3.2)], "/tmp/run.sh")
    >>> c.target(), c.delegated()
    ('/usr/bin/lua5.4', True)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from . import paths


@dataclass(frozen=True)
class Process:
    pid: int
    exe: str  # /proc/self/exe as the process saw it (symlinks resolved)
    cpu_s: float  # user + system time of the process (its pre-exec part included)


@dataclass(frozen=True)
class Census:
    processes: list[Process]
    command: str | None  # the command's own file (argv[0] resolved), None when not found

    def cpu_by_exe(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in self.processes:
            out[p.exe] = out.get(p.exe, 0.0) + p.cpu_s
        return out

    def target(self) -> str | None:
        """The executable with the most CPU time; None when no process reported."""
        by_exe = self.cpu_by_exe()
        if not by_exe:
            return None
        return max(sorted(by_exe), key=lambda e: by_exe[e])

    def share(self, exe: str) -> float:
        total = sum(p.cpu_s for p in self.processes)
        return self.cpu_by_exe().get(exe, 0.0) / total if total > 0 else 1.0

    def delegated(self) -> bool:
        """The work is done by another executable than the command's own file (a script's
        interpreter or a child process)."""
        t = self.target()
        return t is not None and not same_file(t, self.command)

    def describe(self) -> str:
        """'cc1plus 94%, as 3%, g++-12 1%': the executables by CPU share (the first five)."""
        by_exe = self.cpu_by_exe()
        total = sum(by_exe.values()) or 1.0
        ranked = sorted(by_exe.items(), key=lambda kv: -kv[1])[:5]
        return ", ".join(f"{Path(e).name} {100 * c / total:.0f}%" for e, c in ranked)


def unprofiled_processes(census: Census, exe: str, profiled_runs: int) -> str | None:
    """What to tell the user when more processes ran `exe` natively than its profile holds
    (forked workers are profiled when `profile` follows the processes, which it does when
    the census saw more than one; a process killed by a signal leaves no complete profile).
    None when the profile holds every one."""
    procs = [p for p in census.processes if same_file(p.exe, exe)]
    if len(procs) <= profiled_runs:
        return None
    total = sum(p.cpu_s for p in procs)
    top = max(p.cpu_s for p in procs)
    return (f"{len(procs)} processes ran {Path(exe).name} in the native run and the profile holds {profiled_runs}: "
            "the others left no complete profile, so the plans come from part of the work "
            f"(the busiest process took {100 * top / total if total > 0 else 100:.0f}% of their CPU time)")


def same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def command_file(argv0: str) -> str | None:
    """The file the command names (PATH searched for a bare name)."""
    path = argv0 if os.sep in argv0 else shutil.which(argv0)
    return os.path.abspath(path) if path else None


def resolve_program_option(name: str) -> str:
    """--program EXE as an absolute path (a bare name searched in PATH); ValueError if none."""
    path = name if os.sep in name else shutil.which(name)
    if not path or not os.path.isfile(path):
        where = "no such file" if os.sep in name else "not found in PATH"
        raise ValueError(f"--program {name}: {where}; give the executable's path (a driver's child such as cc1plus "
                         "is not in PATH: `heaplayout profile --program auto -- COMMAND` prints which executable "
                         "does the work, with its path)")
    return os.path.abspath(path)


def read_census(directory: Path, command: str | None) -> Census:
    """The processes whose statistics files are in `directory` (unreadable ones skipped:
    a process killed while writing leaves only its temporary file)."""
    procs = []
    for f in sorted(directory.glob("*.json")):
        try:
            d = json.loads(f.read_text())
            procs.append(Process(int(d["pid"]), str(d["exe"]), float(d["cpu_s"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return Census([p for p in procs if p.exe], command)


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def take_census(argv: Sequence[str], *, stdin: Path | None = None, env: dict[str, str] | None = None,
                timeout: float | None = None) -> Census:
    """Run `argv` once with the runtime under policy `off` in every process (no
    HEAPLAYOUT_PROGRAM: children included) and read who did the work. The program's output
    is discarded; a failing run still reports the processes that exited."""
    lib = paths.runtime_library()
    base = {k: v for k, v in (os.environ if env is None else env).items()
            if k != "LD_PRELOAD" and not k.startswith("HEAPLAYOUT_")}
    with tempfile.TemporaryDirectory(prefix="heaplayout-census-") as tmp:
        run_env = {**base, "LD_PRELOAD": str(lib), "HEAPLAYOUT_POLICY": "off",
                   "HEAPLAYOUT_STATS_JSON": os.path.join(tmp, "%p.json")}
        stdin_f = open(stdin, "rb") if stdin is not None else subprocess.DEVNULL
        try:
            # a session of its own: on a timeout the whole tree is killed, not only the
            # command (a launcher's child would otherwise run on beside the measurements)
            proc = subprocess.Popen(list(argv), env=run_env, stdin=stdin_f, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_tree(proc)
            except BaseException:
                # interrupted (Ctrl-C reaches our process group only, not its session): the
                # tree must not run on, orphaned, beside whatever the user does next
                _kill_tree(proc)
                raise
        finally:
            if stdin is not None:
                stdin_f.close()
        return read_census(Path(tmp), command_file(argv[0]))
