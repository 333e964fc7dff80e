"""The engine behind `heaplayout bench`: configurations, interleaved runs, statistics,
output checks and cachegrind counts. Nothing here prints; progress goes through a callback.

A *configuration* is one way of running the unmodified program: a plain allocator
(`glibc`, `jemalloc`, ...) or our runtime with a policy on top of an allocator
(`callsite`, `off+mimalloc`, ...), optionally with runtime options and a label:

    config  := [LABEL '='] spec
    spec    := base [':' OPTION '=' VALUE {',' OPTION '=' VALUE}]
    base    := ALLOCATOR | POLICY ['+' ALLOCATOR] ['=' ARGUMENT]

`ARGUMENT` is for policies that take one: `plan=FILE` (and `plan+mimalloc=FILE`) names the
plan file of the `plan` policy. A label can be neither a built-in name nor an option
name, so `small=callsite:min_objects=10,max_size=256` and `plan=out.plan` are unambiguous.
docs/bench.md describes the statistics and the JSON written from `result_to_json`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from . import allocators, paths
from .runtime_env import OPTION_VARIABLES, POLICIES, RuntimeConfig, allocator_env, for_program, runtime_env

DEFAULT_CONFIGS = ("glibc", "jemalloc", "mimalloc", "tcmalloc", "off", "callsite")
# Policies the runtime will have; naming one that runtime_env does not know yet is a
# "not built yet" error rather than "unknown".
FUTURE_POLICIES = ("dpa",)
# Policies whose spec carries an argument after '=' (the plan file), stored as this option.
ARGUMENT_POLICIES = {"plan": "plan"}
DEFAULT_LL = "4194304,16,64"  # 4 MiB, 16-way, 64-byte lines (a realistic L3 slice; FACTS.md)
DEFAULT_D1 = "32768,8,64"  # 32 KiB, 8-way, 64-byte lines (fixed, not taken from the host)
JSON_SCHEMA = "heaplayout-bench/1"
SUITE_JSON_SCHEMA = "heaplayout-bench-suite/1"

_LABEL_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class BenchError(Exception):
    """A usage or setup problem: reported as one line, exit status 2."""


class ConfigError(BenchError):
    pass


# --------------------------------------------------------------------------- configurations


@dataclass(frozen=True)
class Config:
    """One way of running the program. `policy` None means a plain allocator."""

    label: str
    spec: str  # the spec as written (without the label)
    allocator: str = "glibc"
    policy: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    @property
    def uses_runtime(self) -> bool:
        return self.policy is not None


def _builtin_names() -> set[str]:
    return set(allocators.ALLOCATORS) | set(POLICIES) | set(FUTURE_POLICIES)


def _is_label(head: str) -> bool:
    """Whether the text before the first '=' of a config is a label (else it is a spec)."""
    return bool(_LABEL_RE.match(head)) and head not in ARGUMENT_POLICIES


def parse_spec(spec: str, label: str | None = None) -> Config:
    """Parse SPEC (no label) into a Config; `label` defaults to the spec text."""
    label = spec if label is None else label
    if not spec:
        raise ConfigError(f"configuration {label!r} has an empty spec")
    base, sep, opt_text = spec.partition(":")
    argument: str | None = None
    if "=" in base:
        base, _, argument = base.partition("=")
    name, plus, alloc = base.partition("+")
    if plus and not alloc:
        raise ConfigError(f"configuration {label!r}: missing allocator after '+' in {spec!r}")

    options: dict[str, str] = {}
    if sep:
        if not opt_text:
            raise ConfigError(f"configuration {label!r}: no options after ':' in {spec!r}")
        for item in opt_text.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key or not value:
                raise ConfigError(f"configuration {label!r}: option {item!r} is not NAME=VALUE")
            if key not in OPTION_VARIABLES:
                raise ConfigError(
                    f"configuration {label!r}: unknown runtime option {key!r}; known: {', '.join(OPTION_VARIABLES)}"
                )
            if key in options:
                raise ConfigError(f"configuration {label!r}: option {key!r} given twice")
            options[key] = value

    if name in allocators.ALLOCATORS and not plus:
        if argument is not None or options:
            raise ConfigError(
                f"configuration {label!r}: {name!r} is a plain allocator; options and arguments apply only to "
                f"our policies (e.g. callsite+{name}:min_objects=10)"
            )
        return Config(label=label, spec=spec, allocator=name)

    if name in FUTURE_POLICIES and name not in POLICIES:
        raise ConfigError(f"configuration {label!r}: the {name!r} policy is not built yet (spec {spec!r})")
    if name not in POLICIES:
        raise ConfigError(
            f"unknown configuration {spec!r}; use one of {', '.join(allocators.ALLOCATORS)} (plain allocators), "
            f"{', '.join(POLICIES)} (our runtime on glibc), POLICY+ALLOCATOR, or NAME=SPEC"
        )
    if alloc and alloc not in allocators.ALLOCATORS:
        raise ConfigError(
            f"configuration {label!r}: unknown allocator {alloc!r} in {spec!r}; choose one of: "
            f"{', '.join(allocators.ALLOCATORS)}"
        )
    if name in ARGUMENT_POLICIES:
        if not argument:
            raise ConfigError(f"configuration {label!r}: the {name!r} policy needs a file: {name}=FILE")
        options[ARGUMENT_POLICIES[name]] = argument
    elif argument is not None:
        raise ConfigError(f"configuration {label!r}: policy {name!r} takes no '={argument}' argument")
    return Config(
        label=label,
        spec=spec,
        allocator=alloc or "glibc",
        policy=name,
        options=tuple(options.items()),
    )


def parse_config(text: str) -> Config:
    """Parse one `[LABEL=]SPEC`."""
    text = text.strip()
    head, eq, rest = text.partition("=")
    if eq and _is_label(head):
        if head in _builtin_names():
            raise ConfigError(f"label {head!r} is a built-in configuration name; pick another label")
        if head in OPTION_VARIABLES:
            raise ConfigError(f"label {head!r} is a runtime option name; pick another label")
        return parse_spec(rest, label=head)
    return parse_spec(text)


def split_config_list(value: str) -> list[str]:
    """Split a comma-separated --config value. A piece `OPTION=VALUE` (a runtime option
    name) continues the options of the configuration before it."""
    items: list[str] = []
    for piece in value.split(","):
        piece = piece.strip()
        key = piece.partition("=")[0]
        if items and "=" in piece and key in OPTION_VARIABLES and ":" in items[-1]:
            items[-1] += "," + piece
        elif piece:
            items.append(piece)
    return items


def parse_configs(values: Sequence[str] | None) -> list[Config]:
    """All --config values (repeatable, comma-separated) in order; the first is the baseline."""
    texts = [t for v in (values or [",".join(DEFAULT_CONFIGS)]) for t in split_config_list(v)]
    if not texts:
        raise ConfigError("no configuration given")
    configs = [parse_config(t) for t in texts]
    seen: set[str] = set()
    for c in configs:
        if c.label in seen:
            raise ConfigError(f"configuration {c.label!r} given twice; label repeats with NAME=SPEC")
        seen.add(c.label)
    return configs


def config_env(config: Config) -> dict[str, str]:
    """The variables a configuration adds to the program's environment. Raises BenchError
    when an allocator package or the runtime library is missing."""
    try:
        if not config.uses_runtime:
            return allocator_env(config.allocator)
        options = dict(config.options)
        plan = options.pop("plan", None)
        return runtime_env(RuntimeConfig(policy=config.policy or "off", allocator=config.allocator,
                                         options=options, plan=plan))
    except (ValueError, paths.MissingArtifact) as err:
        raise BenchError(f"configuration {config.label!r}: {err}") from None


def program_env(base: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The user's environment minus any LD_PRELOAD, plus the configuration's variables."""
    env = {k: v for k, v in base.items() if k != "LD_PRELOAD"}
    env.update(extra)
    return env


def resolve_program(program: Sequence[str]) -> list[str]:
    """The program with its executable resolved on PATH; BenchError if it cannot run."""
    if not program:
        raise BenchError("no program given; usage: heaplayout bench [options] -- PROG [ARGS...]")
    exe = program[0]
    found = shutil.which(exe) if "/" not in exe else (exe if os.path.isfile(exe) and os.access(exe, os.X_OK) else None)
    if found is None:
        if "/" in exe and os.path.exists(exe):
            raise BenchError(f"program not executable: {exe}")
        raise BenchError(f"program not found: {exe}")
    return [os.path.abspath(found), *program[1:]]


# --------------------------------------------------------------------------- running


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


# The process that starts the program. The child's peak RSS (ru_maxrss) includes the
# resident size of the process it was forked from at exec time (Linux carries the old mm's
# high-water mark over exec), and Python's subprocess uses vfork, which shares all of our
# memory: a direct Popen would report at least this Python process's peak RSS for every
# program. So a small launcher forks the program, times it around fork and wait4, and
# writes "wall_s wait_status maxrss_kib" to a result file. The C launcher (compiled per
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
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return 125;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    FILE *f = fopen(argv[1], "w");
    if (!f) return 125;
    fprintf(f, "%.9f %d %ld\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
            status, ru.ru_maxrss);
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
    try:
        os.execve(prog[0], prog, env)
    except OSError as e:
        os.write(2, ("heaplayout bench: cannot run %s: %s\n" % (prog[0], e.strerror)).encode())
    os._exit(127)
_, status, ru = os.wait4(pid, 0)
t1 = time.perf_counter()
with open(result, "w") as f:
    f.write("%r %d %d\n" % (t1 - t0, status, ru.ru_maxrss))
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


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_once(program: Sequence[str], env: dict[str, str], workdir: Path, tag: str,
             launcher: Sequence[str] = PYTHON_LAUNCHER) -> tuple[float, ExitStatus, int, Path, Path]:
    """Run `program` once with exactly `env` (LD_PRELOAD applied only to the program, not to
    the launcher); `program[0]` must be a path (see resolve_program).
    Returns (wall seconds, exit status, peak RSS KiB, stdout file, stderr file)."""
    out_path, err_path, res_path = workdir / f"{tag}.out", workdir / f"{tag}.err", workdir / f"{tag}.res"
    launcher_env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    argv = [*launcher, str(res_path), env.get("LD_PRELOAD", ""), *program]
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=launcher_env)
        _, status, _ = os.wait4(proc.pid, 0)
        proc.returncode = ExitStatus.from_wait_status(status).code or 0  # reaped here, not by Popen
    try:
        wall_text, status_text, rss_text = res_path.read_text().split()
    except (OSError, ValueError):
        raise BenchError(f"the launcher failed for {program[0]} (wait status {status}); see {err_path}") from None
    res_path.unlink()
    return float(wall_text), ExitStatus.from_wait_status(int(status_text)), int(rss_text), out_path, err_path


def launcher_rss_floor(workdir: Path, launcher: Sequence[str]) -> int:
    """Peak RSS (KiB) reported for `/bin/true`: about the smallest value bench can report."""
    true = shutil.which("true") or "/bin/true"
    _, _, rss, out, err = run_once([true], program_env(dict(os.environ), {}), workdir, "rss-floor", launcher)
    out.unlink(missing_ok=True)
    err.unlink(missing_ok=True)
    return rss


# --------------------------------------------------------------------------- scheduling, statistics


def schedule(labels: Sequence[str], runs: int, warmup: int) -> list[tuple[bool, int, str]]:
    """Interleaved order: every configuration once per round, in the given order, first the
    warm-up rounds then the timed ones. Items are (warmup, round (1-based), label)."""
    order: list[tuple[bool, int, str]] = []
    for is_warmup, count in ((True, warmup), (False, runs)):
        for r in range(1, count + 1):
            order.extend((is_warmup, r, label) for label in labels)
    return order


@dataclass(frozen=True)
class Spread:
    """Median and spread of a sample. Quartiles use statistics.quantiles(method='inclusive')."""

    median: float
    min: float
    max: float
    q1: float
    q3: float
    n: int

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    def to_json(self) -> dict:
        return {"median": self.median, "min": self.min, "max": self.max, "q1": self.q1, "q3": self.q3,
                "iqr": self.iqr, "n": self.n}


def spread(values: Sequence[float]) -> Spread:
    if not values:
        raise ValueError("spread of an empty sample")
    vals = sorted(values)
    if len(vals) == 1:
        q1 = q3 = vals[0]
    else:
        q1, _, q3 = statistics.quantiles(vals, n=4, method="inclusive")
    return Spread(median=statistics.median(vals), min=vals[0], max=vals[-1], q1=q1, q3=q3, n=len(vals))


def paired_ratios(times: dict[int, float], baseline: dict[int, float]) -> list[float]:
    """Per round, t_config / t_baseline of the same round (rounds present in both)."""
    return [times[r] / baseline[r] for r in sorted(times) if r in baseline and baseline[r] > 0]


# --------------------------------------------------------------------------- output comparison


def first_difference(expected: Path, actual: Path, limit: int = 160) -> str | None:
    """None when the files are identical, else where they first differ (1-based line)."""
    with open(expected, "rb") as fe, open(actual, "rb") as fa:
        line = 0
        while True:
            le, la = fe.readline(), fa.readline()
            line += 1
            if le == la:
                if not le:
                    return None
                continue
            def show(b: bytes) -> str:
                return repr(b.decode("utf-8", "replace").rstrip("\n")[:limit]) if b else "<end of output>"
            return f"stdout line {line}: baseline {show(le)}, got {show(la)}"


def stderr_tail(path: Path, limit: int = 200) -> str:
    """The last non-empty line of a stderr file, shortened (for failure messages)."""
    try:
        lines = [ln for ln in path.read_bytes().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return repr(lines[-1][:limit]) if lines else ""


@dataclass
class Mismatch:
    label: str
    round: int
    warmup: bool
    what: str  # "exit", "stdout" or "exit+stdout"
    detail: str
    run_kind: str = "timed"  # "timed", "warmup" or "cachegrind"

    def message(self, baseline: str) -> str:
        where = "cachegrind run" if self.run_kind == "cachegrind" else f"{self.run_kind} round {self.round}"
        return f"OUTPUT MISMATCH: configuration {self.label!r} ({where}) differs from baseline {baseline!r}: {self.detail}"


def compare_run(ref_status: ExitStatus, ref_stdout: Path, ref_sha: str, status: ExitStatus, stdout: Path,
                sha: str) -> tuple[str, str] | None:
    """(what, detail) when a run's exit status or stdout differs from the reference."""
    parts, what = [], []
    if status != ref_status:
        what.append("exit")
        parts.append(f"baseline {ref_status.describe()}, got {status.describe()}")
    if sha != ref_sha:
        what.append("stdout")
        parts.append(first_difference(ref_stdout, stdout) or "stdout differs")
    if not parts:
        return None
    return "+".join(what), "; ".join(parts)


# --------------------------------------------------------------------------- cachegrind


@dataclass(frozen=True)
class CacheSpec:
    LL: str = DEFAULT_LL
    D1: str = DEFAULT_D1

    def valgrind_args(self) -> list[str]:
        return ["--tool=cachegrind", "--cache-sim=yes", f"--LL={self.LL}", f"--D1={self.D1}"]


def check_cache_geometry(text: str, what: str) -> str:
    """Validate SIZE,WAYS,LINE (positive integers); returns it normalized."""
    parts = text.split(",")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        nums = []
    if len(nums) != 3 or min(nums) <= 0:
        raise BenchError(f"--{what} wants SIZE,WAYS,LINE in bytes/ways/bytes, e.g. {DEFAULT_LL}; got {text!r}")
    return ",".join(str(n) for n in nums)


class CachegrindParseError(BenchError):
    pass


def parse_cachegrind(text: str) -> dict[str, int]:
    """Event totals from a cachegrind out file: its `events:` names and `summary:` counts."""
    events: list[str] | None = None
    summary: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line[len("events:"):].split()
        elif line.startswith("summary:"):
            summary = line[len("summary:"):].split()
    if events is None or summary is None:
        raise CachegrindParseError("cachegrind output has no events:/summary: line")
    if len(summary) != len(events):
        raise CachegrindParseError(f"cachegrind summary has {len(summary)} counts for {len(events)} events")
    try:
        return {name: int(count) for name, count in zip(events, summary)}
    except ValueError:
        raise CachegrindParseError("cachegrind summary has a non-integer count") from None


@dataclass(frozen=True)
class CacheCounts:
    I_refs: int
    D_refs: int
    D1_misses: int
    LL_misses: int  # data misses in LL (DLmr + DLmw)

    @classmethod
    def from_events(cls, ev: dict[str, int]) -> "CacheCounts":
        need = ("Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw")
        missing = [n for n in need if n not in ev]
        if missing:
            raise CachegrindParseError(f"cachegrind events lack {', '.join(missing)} (was --cache-sim=yes given?)")
        return cls(I_refs=ev["Ir"], D_refs=ev["Dr"] + ev["Dw"], D1_misses=ev["D1mr"] + ev["D1mw"],
                   LL_misses=ev["DLmr"] + ev["DLmw"])


def run_cachegrind(program: Sequence[str], env: dict[str, str], workdir: Path, tag: str, cache: CacheSpec,
                   valgrind: str = "valgrind") -> tuple[CacheCounts, dict[str, int], ExitStatus, Path, Path]:
    """One run under cachegrind. LD_PRELOAD stays in valgrind's own environment, which
    valgrind passes to the client (an `env LD_PRELOAD=..` client would measure `env`)."""
    out_path, err_path, cg_path = workdir / f"{tag}.out", workdir / f"{tag}.err", workdir / f"{tag}.cg"
    argv = [valgrind, *cache.valgrind_args(), f"--cachegrind-out-file={cg_path}", *program]
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env).returncode
    if not cg_path.exists():
        raise BenchError(f"cachegrind wrote no output for {tag} (valgrind exit {rc}); see {err_path}")
    events = parse_cachegrind(cg_path.read_text())
    return CacheCounts.from_events(events), events, ExitStatus.from_returncode(rc), out_path, err_path


# --------------------------------------------------------------------------- the whole benchmark


@dataclass
class ConfigResult:
    config: Config
    env: dict[str, str]
    runs: list[RunResult] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    cache: CacheCounts | None = None
    cache_events: dict[str, int] | None = None
    runtime_stats: object = None  # HEAPLAYOUT_STATS_JSON of the last warm-up run (our policies only)

    def timed(self) -> list[RunResult]:
        return [r for r in self.runs if not r.warmup]

    def times_by_round(self) -> dict[int, float]:
        return {r.round: r.wall_s for r in self.timed()}

    @property
    def output_ok(self) -> bool:
        return not self.mismatches


@dataclass
class BenchResult:
    program: list[str]
    runs: int
    warmup: int
    configs: list[ConfigResult]
    cache_spec: CacheSpec | None
    rss_floor_kib: int | None
    reference_status: ExitStatus | None = None
    started_utc: str = ""
    baseline_unstable: bool = False
    launcher: str = ""

    @property
    def baseline(self) -> ConfigResult:
        return self.configs[0]

    @property
    def ok(self) -> bool:
        return all(c.output_ok for c in self.configs)

    def mismatches(self) -> list[Mismatch]:
        return [m for c in self.configs for m in c.mismatches]

    def wall(self, c: ConfigResult) -> Spread:
        return spread([r.wall_s for r in c.timed()])

    def ratio(self, c: ConfigResult) -> Spread:
        return spread(paired_ratios(c.times_by_round(), self.baseline.times_by_round()))

    def rss(self, c: ConfigResult) -> Spread:
        return spread([r.maxrss_kib for r in c.timed()])

    def cache_ratio(self, c: ConfigResult, name: str) -> float | None:
        base = self.baseline.cache
        if c.cache is None or base is None:
            return None
        b = getattr(base, name)
        return getattr(c.cache, name) / b if b else None


def read_runtime_stats(path: Path) -> object:
    """The runtime's statistics JSON, None when it wrote none, {"error": ...} when unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError as err:
        return {"error": f"unreadable statistics JSON from the runtime: {err}"}


Progress = Callable[[str], None]


def run_bench(program: Sequence[str], configs: Sequence[Config], workdir: Path, runs: int = 5, warmup: int = 1,
              cache: CacheSpec | None = None, progress: Progress | None = None,
              base_env: dict[str, str] | None = None) -> BenchResult:
    """Run every configuration `warmup` + `runs` times, interleaved, then (with `cache`) once
    each under cachegrind. Every run's exit status and stdout are compared with the
    baseline's first run. Temporary files go to `workdir` (which the caller cleans up)."""
    if runs < 1:
        raise BenchError("--runs must be at least 1")
    if warmup < 0:
        raise BenchError("--warmup cannot be negative")
    say = progress or (lambda _msg: None)
    base_env = dict(os.environ) if base_env is None else base_env
    program = list(program)
    workdir.mkdir(parents=True, exist_ok=True)
    results = {c.label: ConfigResult(config=c, env=config_env(c)) for c in configs}
    launcher = build_launcher(workdir)
    envs = {label: program_env(base_env, for_program(cr.env, program[0])) for label, cr in results.items()}
    baseline = configs[0].label
    bench = BenchResult(program=program, runs=runs, warmup=warmup, configs=list(results.values()), cache_spec=cache,
                        rss_floor_kib=launcher_rss_floor(workdir, launcher), launcher=launcher[0],
                        started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    ref: tuple[ExitStatus, Path, str] | None = None
    kept: set[str] = set()  # labels whose first mismatching stdout is kept for the message

    def check(label: str, rnd: int, is_warmup: bool, kind: str, status: ExitStatus, out: Path, err: Path,
              sha: str) -> None:
        nonlocal ref
        if ref is None:
            ref = (status, out, sha)
            bench.reference_status = status
            return
        diff = compare_run(ref[0], ref[1], ref[2], status, out, sha)
        if diff is None:
            if out != ref[1]:
                out.unlink(missing_ok=True)
            return
        detail = diff[1]
        if "exit" in diff[0]:
            tail = stderr_tail(err)
            if tail:
                detail += f"; its stderr ends: {tail}"
        results[label].mismatches.append(Mismatch(label, rnd, is_warmup, diff[0], detail, kind))
        if label == baseline:
            bench.baseline_unstable = True
        if label in kept:
            out.unlink(missing_ok=True)
        kept.add(label)

    # file names: the configuration's index keeps them unique, the label keeps them readable
    safe = {c.label: f"c{i}-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", c.label) for i, c in enumerate(configs)}
    order = schedule([c.label for c in configs], runs, warmup)
    for is_warmup, rnd, label in order:
        kind = "warmup" if is_warmup else "timed"
        tag = f"{kind}{rnd}-{safe[label]}"
        env = envs[label]
        stats_path = None
        if is_warmup and rnd == warmup and results[label].config.uses_runtime:
            # the last warm-up run of our configurations also writes the runtime's pool statistics
            stats_path = workdir / f"stats-{safe[label]}.json"
            env = {**env, "HEAPLAYOUT_STATS_JSON": str(stats_path)}
        wall, status, rss, out, err = run_once(program, env, workdir, tag, launcher)
        if stats_path is not None:
            results[label].runtime_stats = read_runtime_stats(stats_path)
        total = warmup if is_warmup else runs
        note = "" if status.ok else f" ({status.describe()})"
        say(f"[bench] {'warmup' if is_warmup else 'round'} {rnd}/{total} {label} {fmt_seconds(wall)}{note}")
        sha = _sha256_file(out)
        results[label].runs.append(RunResult(label, rnd, is_warmup, wall, status, rss, out, err, sha))
        check(label, rnd, is_warmup, kind, status, out, err, sha)

    if cache is not None:
        for c in configs:
            say(f"[bench] cachegrind {c.label} ...")
            tag = f"cachegrind-{safe[c.label]}"
            counts, events, status, out, err = run_cachegrind(program, envs[c.label], workdir, tag, cache)
            results[c.label].cache, results[c.label].cache_events = counts, events
            say(f"[bench] cachegrind {c.label}: I refs {counts.I_refs:,}, D1 misses {counts.D1_misses:,}, "
                f"LL misses {counts.LL_misses:,}")
            check(c.label, 1, False, "cachegrind", status, out, err, _sha256_file(out))
    return bench


# --------------------------------------------------------------------------- reporting


def config_text(c: Config) -> str:
    """The --config text that gives back `c`."""
    return c.spec if c.label == c.spec else f"{c.label}={c.spec}"


def command_line(bench: BenchResult) -> str:
    """A `heaplayout bench` command that repeats this measurement (for JSON and markdown)."""
    parts = ["heaplayout", "bench", "--runs", str(bench.runs), "--warmup", str(bench.warmup),
             "--config", ",".join(config_text(c.config) for c in bench.configs)]
    if bench.cache_spec is not None:
        parts += ["--cachegrind", f"--LL={bench.cache_spec.LL}", f"--D1={bench.cache_spec.D1}"]
    return shlex.join([*parts, "--", *bench.program])


def result_to_json(bench: BenchResult) -> dict:
    """The --json document (schema in docs/bench.md)."""
    configs = []
    for c in bench.configs:
        w, ratio, rss = bench.wall(c), bench.ratio(c), bench.rss(c)
        entry: dict = {
            "label": c.config.label,
            "spec": c.config.spec,
            "allocator": c.config.allocator,
            "policy": c.config.policy,
            "options": dict(c.config.options),
            "env": c.env,
            "baseline": c is bench.baseline,
            "wall_s": {**w.to_json(), "values": [r.wall_s for r in c.timed()]},
            "ratio": {**ratio.to_json(), "values": paired_ratios(c.times_by_round(), bench.baseline.times_by_round())},
            "peak_rss_kib": {"median": rss.median, "max": rss.max, "values": [r.maxrss_kib for r in c.timed()]},
            "exit": [_status_json(r.status) for r in c.timed()],
            "output_ok": c.output_ok,
            "mismatches": [dataclasses.asdict(m) for m in c.mismatches],
            "cachegrind": None,
            "runtime_stats": c.runtime_stats,
        }
        if c.cache is not None:
            entry["cachegrind"] = {
                **dataclasses.asdict(c.cache),
                "I_refs_ratio": bench.cache_ratio(c, "I_refs"),
                "D1_misses_ratio": bench.cache_ratio(c, "D1_misses"),
                "LL_misses_ratio": bench.cache_ratio(c, "LL_misses"),
                "events": c.cache_events,
            }
        configs.append(entry)
    return {
        "schema": JSON_SCHEMA,
        "command": command_line(bench),
        "program": bench.program,
        "started_utc": bench.started_utc,
        "runs": bench.runs,
        "warmup": bench.warmup,
        "baseline": bench.baseline.config.label,
        "baseline_exit": _status_json(bench.reference_status) if bench.reference_status else None,
        "rss_floor_kib": bench.rss_floor_kib,
        "launcher": "c" if bench.launcher != sys.executable else "python",
        "cachegrind": None if bench.cache_spec is None else {"LL": bench.cache_spec.LL, "D1": bench.cache_spec.D1},
        "ok": bench.ok,
        "configs": configs,
    }


def _status_json(s: ExitStatus) -> dict:
    return {"code": s.code, "signal": s.signal}


def fmt_seconds(x: float) -> str:
    """Seconds with ~4 significant digits: 1.234s, 12.35ms."""
    if x >= 1 or x == 0:
        return f"{x:.3f}s"
    if x >= 0.01:
        return f"{x * 1e3:.1f}ms"
    return f"{x * 1e3:.2f}ms"


def _fmt_mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def _fmt_ratio(s: Spread) -> str:
    return f"{s.median:.3f} [{s.min:.3f}–{s.max:.3f}]"


def _fmt_count(n: int) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f}{unit}"
    return str(n)


def table_rows(bench: BenchResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the per-configuration table (shared by terminal and markdown)."""
    header = ["config", "median", "min–max", "IQR", "ratio [min–max]", "ratio IQR", "peak RSS", "output"]
    if bench.cache_spec is not None:
        header += ["I refs", "D1 miss", "D1 ratio", "LL miss", "LL ratio"]
    rows = []
    for c in bench.configs:
        w, r, rss = bench.wall(c), bench.ratio(c), bench.rss(c)
        name = c.config.label + (" (baseline)" if c is bench.baseline else "")
        if c.output_ok:
            output = "same"
        else:
            output = "MISMATCH" if c is not bench.baseline else "UNSTABLE"
        row = [name, fmt_seconds(w.median), f"{fmt_seconds(w.min)}–{fmt_seconds(w.max)}", fmt_seconds(w.iqr),
               _fmt_ratio(r), f"{r.iqr:.3f}",
               _fmt_mib(rss.median), output]
        if bench.cache_spec is not None:
            if c.cache is None:
                row += ["-"] * 5
            else:
                d1, ll = bench.cache_ratio(c, "D1_misses"), bench.cache_ratio(c, "LL_misses")
                row += [_fmt_count(c.cache.I_refs), _fmt_count(c.cache.D1_misses),
                        "-" if d1 is None else f"{d1:.3f}", _fmt_count(c.cache.LL_misses),
                        "-" if ll is None else f"{ll:.3f}"]
        rows.append(row)
    return header, rows


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(header)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(widths[i + 1]) for i, cell in enumerate(row[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def format_markdown(header: list[str], rows: list[list[str]]) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def describe_run(bench: BenchResult) -> str:
    """One line saying what was measured (for the terminal and markdown)."""
    cg = ""
    if bench.cache_spec is not None:
        cg = f"; cachegrind --D1={bench.cache_spec.D1} --LL={bench.cache_spec.LL}"
    prog = " ".join(bench.program)
    return (f"{prog}: {bench.runs} interleaved rounds after {bench.warmup} warm-up; "
            f"ratio = per-round t/t({bench.baseline.config.label}){cg}")


# --------------------------------------------------------------------------- suite


@dataclass
class SuiteEntry:
    name: str
    paper: str
    pattern: str
    program: list[str]
    result: BenchResult


def suite_rows(entries: Sequence[SuiteEntry]) -> tuple[list[str], list[list[str]]]:
    """Rows: workloads; columns: each non-baseline configuration's wall-time ratio (median
    [min–max]), and with cachegrind its D1 and LL miss ratios."""
    if not entries:
        return ["workload"], []
    first = entries[0].result
    others = [c.config.label for c in first.configs[1:]]
    header = ["workload", f"{first.baseline.config.label} median"]
    for label in others:
        header.append(f"{label} time")
        if first.cache_spec is not None:
            header += [f"{label} D1", f"{label} LL"]
    header.append("output")
    rows = []
    for e in entries:
        b = e.result
        by_label = {c.config.label: c for c in b.configs}
        row = [e.name, fmt_seconds(b.wall(b.baseline).median)]
        for label in others:
            c = by_label[label]
            row.append(_fmt_ratio(b.ratio(c)))
            if b.cache_spec is not None:
                for name in ("D1_misses", "LL_misses"):
                    v = b.cache_ratio(c, name)
                    row.append("-" if v is None else f"{v:.3f}")
        bad = [c.config.label for c in b.configs if not c.output_ok]
        row.append("same" if not bad else "MISMATCH: " + ", ".join(bad))
        rows.append(row)
    return header, rows


def suite_to_json(entries: Sequence[SuiteEntry], input_name: str, variant: str) -> dict:
    return {
        "schema": SUITE_JSON_SCHEMA,
        "input": input_name,
        "variant": variant,
        "ok": all(e.result.ok for e in entries),
        "workloads": [
            {"name": e.name, "paper": e.paper, "pattern": e.pattern, "program": e.program,
             "result": result_to_json(e.result)}
            for e in entries
        ],
    }


def select_workloads(suite: Iterable, only: Sequence[str] | None) -> list:
    """The workloads named in `only` (all when None), in suite order; BenchError on unknown names."""
    suite = list(suite)
    if not only:
        return suite
    names = {w.name for w in suite}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise BenchError(f"unknown workload(s) {', '.join(unknown)}; the suite has: {', '.join(sorted(names))}")
    wanted = set(only)
    return [w for w in suite if w.name in wanted]
