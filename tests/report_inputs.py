"""A small real profile, plan and simulation of one suite workload, shared by the report
and export tests (profiling is the slow part: halo_tokens 20000 5 takes about a second
under the profiler)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from heaplayout import paths

WORKLOAD = "halo_tokens"
ARGS = ["20000", "5"]


@dataclass
class WorkloadRun:
    program: list[str]
    profile: Path
    plan: Path
    sim_before: Path  # simulate --contexts under glibc alone
    sim_after: Path  # simulate --contexts under the plan


def heaplayout(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "heaplayout.cli", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def make_run(build_dir: Path, out: Path, simulate: bool = True) -> WorkloadRun:
    prog = [str(build_dir / "workloads" / "fp" / WORKLOAD), *ARGS]
    run = WorkloadRun(prog, out / "w.prof", out / "w.plan", out / "sim.before.json", out / "sim.after.json")
    steps = [("profile", "-o", str(run.profile), "--", *prog),
             ("plan", "-o", str(run.plan), str(run.profile))]
    if simulate:
        steps += [("simulate", "--contexts", "--json", str(run.sim_before), "--", *prog),
                  ("simulate", "--contexts", "--plan", str(run.plan), "--json", str(run.sim_after), "--", *prog)]
    for argv in steps:
        r = heaplayout(*argv, cwd=out)
        assert r.returncode == 0, f"heaplayout {' '.join(argv)}: {r.stderr}"
    return run
