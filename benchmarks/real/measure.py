"""The measuring stages: allocators (and callsite on each) and profile-guided plans.

Both go through heaplayout's own bench engine (interleaved rounds, paired ratios, output
checks with the program's normalization as the stdout digest); this module only decides
the configurations, runs `heaplayout profile` / `heaplayout plan`, and feeds stdin.

Standard input: bench starts programs with stdin from /dev/null. When its `run_bench`
takes no `stdin` argument, a program with a stdin file runs through `feed-stdin.sh`, a
two-line shell script that redirects the file and execs the program. The script is not an
ELF file, so bench leaves HEAPLAYOUT_PROGRAM alone and the one set here (the real
executable) decides which process the runtime optimizes: the shell runs unoptimized and
only the program itself is placed. Bench's wall time then includes one exec of /bin/sh
(about a millisecond, the same in every configuration).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

from heaplayout import bench, paths

from .check import base_environment
from .corpus import Program
from .outputs import file_digest

ALLOCATORS = ("glibc", "jemalloc", "mimalloc", "tcmalloc")
PLAN_STRATEGIES = {  # label -> `heaplayout plan` options
    "halo": ["--strategy", "halo"],
    "halo_rest": ["--strategy", "halo", "--rest", "callsite"],
}
HL = [sys.executable, "-m", "heaplayout.cli"]

FEEDER = '#!/bin/sh\n# feed-stdin.sh FILE PROG ARGS...: run PROG with FILE on its standard input\nf=$1; shift; exec "$@" < "$f"\n'

Say = Callable[[str], None]


def allocator_configs() -> list[str]:
    """The four allocators alone, then our callsite policy on each (same order)."""
    return [*ALLOCATORS, "callsite", *(f"callsite+{a}" for a in ALLOCATORS[1:])]


def plan_label(strategy: str, allocator: str) -> str:
    return f"{strategy}.{allocator}"


def plan_configs(best: str, plans: dict[str, Path]) -> list[str]:
    """glibc first (the baseline), the best allocator, then each plan on glibc and on the best."""
    bases = ["glibc"] if best == "glibc" else ["glibc", best]
    configs = list(bases)
    for alloc in bases:
        for strategy, path in plans.items():
            spec = f"plan={path}" if alloc == "glibc" else f"plan+{alloc}={path}"
            configs.append(f"{plan_label(strategy, alloc)}={spec}")
    return configs


def _bench_program(program: Program, input_dir: Path, workdir: Path) -> tuple[list[str], dict, dict]:
    """(argv for bench, extra run_bench keyword arguments, base environment)."""
    env = base_environment(program)
    argv = program.argv(input_dir)
    stdin = program.stdin_path(input_dir)
    kwargs: dict = {}
    if stdin is not None:
        if "stdin" in inspect.signature(bench.run_bench).parameters:
            kwargs["stdin"] = stdin
        else:
            feeder = workdir / "feed-stdin.sh"
            feeder.write_text(FEEDER)
            feeder.chmod(0o755)
            argv = [str(feeder), str(stdin), *argv]
            env["HEAPLAYOUT_PROGRAM"] = program.exe
    return argv, kwargs, env


def build_identity() -> dict:
    """What was measured: the runtime library's sha256 and the source commit. Other engineers
    rebuild the runtime while the corpus runs; a bench whose library changed between its
    first and last run mixes two builds, and the report says so."""
    lib = paths.runtime_library()
    digest = hashlib.sha256(lib.read_bytes()).hexdigest() if lib.exists() else None
    head = subprocess.run(["git", "-C", str(paths.REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True)
    return {"runtime_library": str(lib), "runtime_sha256": digest,
            "commit": head.stdout.strip() if head.returncode == 0 else None}


def run_configs(program: Program, input_dir: Path, configs: list[str], workdir: Path, runs: int, warmup: int,
                say: Say) -> dict:
    """One interleaved bench of `configs` on the input in `input_dir`: bench's JSON document,
    with the build identity at its start and end."""
    before = build_identity()
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    argv, kwargs, env = _bench_program(program, input_dir, workdir)
    parsed = bench.parse_configs(configs)
    result = bench.run_bench(bench.resolve_program(argv), parsed, workdir / "runs", runs=runs, warmup=warmup,
                             progress=lambda m: say(f"[real] {program.name}: {m}"), base_env=env,
                             digest=file_digest(program.normalize), **kwargs)
    doc = bench.result_to_json(result)
    doc["mismatch_messages"] = [m.message(result.baseline.config.label) for m in result.mismatches()]
    doc["build"] = {"start": before, "end": build_identity()}
    if doc["build"]["start"]["runtime_sha256"] != doc["build"]["end"]["runtime_sha256"]:
        say(f"[real] {program.name}: WARNING: the runtime library was rebuilt during this bench")
    shutil.rmtree(workdir, ignore_errors=True)
    return doc


def best_allocator(doc: dict) -> str:
    """The allocator alone with the lowest median paired ratio to glibc."""
    ratios = {c["label"]: c["ratio"]["median"] for c in doc["configs"] if c["label"] in ALLOCATORS}
    return min(ALLOCATORS, key=lambda a: (ratios.get(a, float("inf")), ALLOCATORS.index(a)))


def profile(program: Program, input_dir: Path, out: Path, log: Path, say: Say) -> str | None:
    """`heaplayout profile` on the training input; None when it worked, else what failed."""
    stdin = program.stdin_path(input_dir)
    cmd = [*HL, "profile", "-o", str(out), "--log-file", str(log.with_suffix(".valgrind.log")), "--",
           *program.argv(input_dir)]
    say(f"[real] {program.name}: profiling the training input (valgrind, ~30x slower)")
    with open(log, "ab") as lf, open(stdin or os.devnull, "rb") as sin:
        lf.write(("$ " + " ".join(cmd) + "\n").encode())
        lf.flush()
        rc = subprocess.run(cmd, stdin=sin, stdout=subprocess.DEVNULL, stderr=lf, env=base_environment(program),
                            cwd=input_dir).returncode
    if not out.exists():
        return f"heaplayout profile wrote no profile (exit {rc}); see {log}"
    return None


def make_plans(program: Program, prof: Path, dest: Path, log: Path, say: Say) -> tuple[dict[str, Path], list[str]]:
    """Each strategy's plan from the profile; (plans written, failures)."""
    plans, failures = {}, []
    for label, opts in PLAN_STRATEGIES.items():
        path = dest / f"{label}.plan"
        cmd = [*HL, "plan", *opts, "-o", str(path), "--json", str(path.with_suffix(".json")), str(prof)]
        with open(log, "ab") as lf:
            lf.write(("$ " + " ".join(cmd) + "\n").encode())
            lf.flush()
            rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT).returncode
        if rc == 0 and path.exists():
            plans[label] = path
            say(f"[real] {program.name}: plan {label} written")
        else:
            failures.append(f"heaplayout plan {' '.join(opts)} failed (exit {rc}); see {log}")
    return plans, failures


def write_json(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)
