"""Running a program once for `heaplayout bench`: the launcher process that times it and
reads its peak RSS, its exit status, and where its stdout and stderr went."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

from .bench_config import BenchError, program_env
from .program_input import open_stdin



@dataclass(frozen=True)
class ExitStatus:
    code: int | None  # exit code, or None when killed by a signal
    signal: int | None = None

    @classmethod
    def from_wait_status(cls, status: int) -> "ExitStatus":
        if os.WIFSIGNALED(status):
            return cls(code=None, signal=os.WTERMSIG(status))
        return cls(code=os.WEXITSTATUS(status))

    @classmethod
    def from_returncode(cls, rc: int) -> "ExitStatus":
        return cls(code=None, signal=-rc) if rc < 0 else cls(code=rc)

    def describe(self) -> str:
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = "signal"
            return f"killed by {name} ({self.signal})"
        return f"exit {self.code}"

    @property
    def ok(self) -> bool:
        return self.code == 0


@dataclass
class RunResult:
    label: str
    round: int  # 1-based; warm-up rounds are numbered separately
    warmup: bool
    wall_s: float
    status: ExitStatus
    maxrss_kib: int
    stdout_path: Path
    stderr_path: Path
    stdout_sha256: str
    cpu_s: float | None = None  # user + system time (None: not measured)
    ready_s: float | None = None  # runnable but waiting for a CPU (Launch.ready_s)


class Launch(NamedTuple):
    """One run of a program by the launcher."""
    wall_s: float
    status: ExitStatus
    maxrss_kib: int
    stdout: Path
    stderr: Path
    cpu_s: float  # user + system time of the program and the children it waited for
    # time the program's main thread was ready to run but waited for a CPU (the kernel's
    # schedstat run_delay, read before the program is reaped; None where unreadable)
    ready_s: float | None = None


# The process that starts the program. The child's peak RSS (ru_maxrss) includes the
# resident size of the process it was forked from at exec time (Linux carries the old mm's
# high-water mark over exec), and Python's subprocess uses vfork, which shares all of our
# memory: a direct Popen would report at least this Python process's peak RSS for every
# program. So a small launcher forks the program, times it around fork and wait4, and
# writes "wall_s wait_status maxrss_kib cpu_s ready_s" to a result file (cpu_s: user + system
# time of the program and the children it waited for, from wait4; ready_s: how long its main
# thread was runnable but not running, from /proc/PID/schedstat of the exited program, read
# between waitid(WNOWAIT) and the wait4 that reaps it; -1 when unreadable). The C launcher (compiled per
# bench invocation into its temporary directory, ~0.1 s) gives a floor of ~1.5 MB; without
# a C compiler a minimal Python launcher (-I -S) is used, floor ~6 MB. The floor is measured
# (`launcher_rss_floor`) and reported.
_LAUNCHER_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* usage: launcher RESULT_FILE PRELOAD PROGRAM [ARGS...]; PRELOAD "" leaves LD_PRELOAD unset */
int main(int argc, char **argv) {
    struct timespec t0, t1;
    struct rusage ru;
    int status;
    if (argc < 4) return 125;
    void (*inherited)(int) = signal(SIGINT, SIG_IGN); /* Ctrl-C ends the program, not us */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) return 125;
    if (pid == 0) {
        signal(SIGINT, inherited == SIG_IGN ? SIG_IGN : SIG_DFL);
        if (argv[2][0]) setenv("LD_PRELOAD", argv[2], 1);
        execv(argv[3], argv + 3);
        dprintf(2, "heaplayout bench: cannot run %s: %s\n", argv[3], strerror(errno));
        _exit(127);
    }
    siginfo_t info;
    while (waitid(P_PID, pid, &info, WEXITED | WNOWAIT) < 0)
        if (errno != EINTR) return 125;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ready = -1;
    char path[64];
    unsigned long long run_ns, delay_ns;
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *s = fopen(path, "r");
    if (s) {
        if (fscanf(s, "%llu %llu", &run_ns, &delay_ns) == 2) ready = (double)delay_ns * 1e-9;
        fclose(s);
    }
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return 125;
    FILE *f = fopen(argv[1], "w");
    if (!f) return 125;
    fprintf(f, "%.9f %d %ld %.6f %.6f\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
            status, ru.ru_maxrss,
            (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6,
            ready);
    return fclose(f) ? 125 : 0;
}
"""

_LAUNCHER_PY = r"""
import os, signal, sys, time
result, preload, prog = sys.argv[1], sys.argv[2], sys.argv[3:]
env = dict(os.environ)
if preload:
    env["LD_PRELOAD"] = preload
inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_IGN if inherited == signal.SIG_IGN else signal.SIG_DFL)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; an ignored one stays so across exec
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execve(prog[0], prog, env)
    except OSError as e:
        os.write(2, ("heaplayout bench: cannot run %s: %s\n" % (prog[0], e.strerror)).encode())
    os._exit(127)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
t1 = time.perf_counter()
try:
    with open("/proc/%d/schedstat" % pid) as s:
        ready = int(s.read().split()[1]) * 1e-9
except (OSError, ValueError, IndexError):
    ready = -1.0
_, status, ru = os.wait4(pid, 0)
with open(result, "w") as f:
    f.write("%r %d %d %r %r\n" % (t1 - t0, status, ru.ru_maxrss, ru.ru_utime + ru.ru_stime, ready))
"""

PYTHON_LAUNCHER = (sys.executable, "-I", "-S", "-c", _LAUNCHER_PY)


def build_launcher(workdir: Path, compiler: str | None = None) -> tuple[str, ...]:
    """The launcher command prefix: the C launcher compiled into `workdir`, or the Python
    one when no C compiler works."""
    cc = compiler or shutil.which("cc") or shutil.which("gcc")
    if cc:
        src, exe = workdir / "launcher.c", workdir / "launcher"
        src.write_text(_LAUNCHER_C)
        proc = subprocess.run([cc, "-O2", "-o", str(exe), str(src)], capture_output=True)
        if proc.returncode == 0 and exe.exists():
            return (str(exe),)
    return PYTHON_LAUNCHER


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_once(program: Sequence[str], env: dict[str, str], workdir: Path, tag: str,
             launcher: Sequence[str] = PYTHON_LAUNCHER,
             stdin: Path | None = None) -> Launch:
    """Run `program` once with exactly `env` (LD_PRELOAD applied only to the program, not to
    the launcher); `program[0]` must be a path (see resolve_program). stdin is the file
    `stdin` read from its start (program_input.py), or /dev/null.
    Returns its wall and CPU seconds, exit status, peak RSS, and where stdout and stderr went."""
    out_path, err_path, res_path = workdir / f"{tag}.out", workdir / f"{tag}.err", workdir / f"{tag}.res"
    launcher_env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    argv = [*launcher, str(res_path), env.get("LD_PRELOAD", ""), *program]
    with open(out_path, "wb") as out, open(err_path, "wb") as err, open_stdin(stdin) as inp:
        proc = subprocess.Popen(argv, stdin=inp, stdout=out, stderr=err, env=launcher_env)
        _, status, _ = os.wait4(proc.pid, 0)
        proc.returncode = ExitStatus.from_wait_status(status).code or 0  # reaped here, not by Popen
    try:
        wall_text, status_text, rss_text, cpu_text, ready_text = res_path.read_text().split()
    except (OSError, ValueError):
        raise BenchError(f"the launcher failed for {program[0]} (wait status {status}); see {err_path}") from None
    res_path.unlink()
    ready = float(ready_text)
    return Launch(float(wall_text), ExitStatus.from_wait_status(int(status_text)), int(rss_text), out_path, err_path,
                  float(cpu_text), ready if ready >= 0 else None)


def launcher_rss_floor(workdir: Path, launcher: Sequence[str]) -> int:
    """Peak RSS (KiB) reported for `/bin/true`: about the smallest value bench can report."""
    true = shutil.which("true") or "/bin/true"
    run = run_once([true], program_env(dict(os.environ), {}), workdir, "rss-floor", launcher)
    run.stdout.unlink(missing_ok=True)
    run.stderr.unlink(missing_ok=True)
    return run.maxrss_kib


def fmt_seconds(x: float) -> str:
    """Seconds with ~4 significant digits: 1.234s, 12.35ms."""
    if x >= 1 or x == 0:
        return f"{x:.3f}s"
    if x >= 0.01:
        return f"{x * 1e3:.1f}ms"
    return f"{x * 1e3:.2f}ms"
