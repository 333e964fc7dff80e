#!/usr/bin/env python3
"""Measure `heaplayout cc` on the suite's C workloads (docs/results.md, issue 27).

Builds every C workload three ways into OUT: plain clang-16 -O2 -g (`glibc`), `heaplayout cc
--no-pool` (same compiler, libheaplayout.so linked with policy off: the pool runtime's cost
without pools) and `heaplayout cc` (`apa`). Then either
  time        interleaved rounds of the reference input: CPU seconds (user+sys) of glibc,
              jemalloc, mimalloc, tcmalloc (LD_PRELOAD on the plain build), nopool and apa;
              the output of every run must equal the plain build's
  cachegrind  D1 and LL misses (--cache-sim=yes --LL=4194304,16,64) of glibc, mimalloc and
              apa on the small input
  halo        the HALO plan on the unmodified (plain) build against apa: `heaplayout profile`
              of the small input, `heaplayout plan`, then interleaved rounds of the reference
              input: glibc, halo (the plain build under libheaplayout.so with the plan), apa
  ablation    instructions, D1 and LL misses of apa against apa with one optimization off or
              one collocation heuristic on (the variants below) on the small input; every
              variant's output must equal the plain build's
  check       the output of apa, apa without the top-down phase and apa with poolcreate at
              the entry against the plain build's, on the small and reference inputs, with
              the statistics of each and the number of pools created at run time (an
              LD_PRELOAD library that counts poolcreate/poolinit_bp calls and prints it)
and prints JSON lines. Usage: measure_suite.py OUT {time,cachegrind,halo,ablation,check} [--rounds N] [--maximal]
[--ablations a,b] [names...] (--maximal adds `heaplayout cc --collocate=maximal` builds to the timed
variants; --ablations runs only those variants of the ablation mode, e.g. apa-no-align).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from heaplayout.workloads import load_suite  # noqa: E402

PRELOADS = {
    "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "mimalloc": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
    "tcmalloc": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
}
LL = "--LL=4194304,16,64"  # a realistic last level (FACTS.md: the default hides LL misses)
D1 = "--D1=32768,8,64"
# ablation mode: name -> (driver options, plugin environment)
ABLATIONS = {
    "apa-no-free-elim": ([], {"HEAPLAYOUT_CC_NO_FREE_ELIM": "1"}),
    "apa-no-destroy-move": ([], {"HEAPLAYOUT_CC_NO_DESTROY_MOVE": "1"}),
    "apa-neither": ([], {"HEAPLAYOUT_CC_NO_FREE_ELIM": "1", "HEAPLAYOUT_CC_NO_DESTROY_MOVE": "1"}),
    "apa-maximal": (["--collocate=maximal"], {}),
    "apa-collection": (["--collocate=collection"], {}),
    "apa-no-align": ([], {"HEAPLAYOUT_CC_NO_ALIGN": "1"}),
    "apa-no-topdown": ([], {"HEAPLAYOUT_CC_NO_TOPDOWN": "1"}),
    "apa-no-create-move": ([], {"HEAPLAYOUT_CC_NO_CREATE_MOVE": "1"}),
}
CHECK_VARIANTS = ["apa-no-topdown", "apa-no-create-move"]

# check mode: counts the pools a run creates, in front of libheaplayout.so's pool API.
COUNT_CREATES = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
static long creates;
void poolcreate(void *pd, size_t hint, size_t align) {
  static void (*next)(void *, size_t, size_t);
  if (!next) next = (void (*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "poolcreate");
  creates++;
  next(pd, hint, align);
}
void poolinit_bp(void *pd, size_t align) {
  static void (*next)(void *, size_t);
  if (!next) next = (void (*)(void *, size_t))dlsym(RTLD_NEXT, "poolinit_bp");
  creates++;
  next(pd, align);
}
__attribute__((destructor)) static void report(void) { fprintf(stderr, "heaplayout-count: pools created %ld\n", creates); }
"""


def count_preload(out: Path) -> Path:
    src, lib = out / "count_creates.c", out / "count_creates.so"
    src.write_text(COUNT_CREATES)
    subprocess.run(["clang-16", "-O2", "-shared", "-fPIC", str(src), "-o", str(lib), "-ldl"], check=True)
    return lib


def check_workload(out: Path, w, exes: dict[str, Path], preload: Path) -> dict:
    rec: dict = {"name": w.name}
    for label, args in (("small", w.small), ("reference", w.ref)):
        want = subprocess.run([str(exes["glibc"]), *args], capture_output=True, text=True).stdout
        for n in ("apa", *CHECK_VARIANTS):
            env = {**os.environ, "LD_PRELOAD": str(preload)}
            r = subprocess.run([str(exes[n]), *args], capture_output=True, text=True, env=env)
            if r.stdout != want or r.returncode != 0:
                raise RuntimeError(f"{w.name} {n} {label}: output differs or exit {r.returncode}")
            m = re.search(r"heaplayout-count: pools created (\d+)", r.stderr)
            rec.setdefault("pools_created", {}).setdefault(label, {})[n] = int(m.group(1)) if m else None
    rec["identical"] = True
    for n in CHECK_VARIANTS:
        stats = out / f"{w.name}.{n}.stats"
        rec[f"stats_{n}"] = json.loads(stats.read_text().splitlines()[0]) if stats.exists() else None
    return rec


def build_ablations(out: Path, w, names: list[str]) -> dict[str, Path]:
    src = REPO / "workloads" / w.source
    common = ["-O2", "-g", f"-I{src.parent}", str(src), "-lpthread"]
    exes = {}
    for name in names:
        opts, env = ABLATIONS[name]
        exes[name] = out / f"{w.name}.{name}"
        stats = out / f"{w.name}.{name}.stats"
        stats.unlink(missing_ok=True)
        subprocess.run([sys.executable, "-m", "heaplayout.cli", "cc", f"--stats-file={stats}", *opts, *common,
                        "-o", str(exes[name])],
                       check=True, cwd=REPO, env={**os.environ, **env})
    return exes


def build(out: Path, w, maximal: bool = False) -> dict[str, Path]:
    src = REPO / "workloads" / w.source
    common = ["-O2", "-g", f"-I{src.parent}", str(src), "-lpthread"]
    exes = {"glibc": out / f"{w.name}.glibc", "nopool": out / f"{w.name}.nopool", "apa": out / f"{w.name}.apa"}
    cc = [sys.executable, "-m", "heaplayout.cli", "cc"]
    cmds = {
        "glibc": ["clang-16", *common, "-o", str(exes["glibc"])],
        "nopool": [*cc, "--no-pool", *common, "-o", str(exes["nopool"])],
        "apa": [*cc, f"--stats-file={out / (w.name + '.stats')}", *common, "-o", str(exes["apa"])],
    }
    if maximal:
        exes["apa-maximal"] = out / f"{w.name}.apa-maximal"
        cmds["apa-maximal"] = [*cc, "--collocate=maximal", *common, "-o", str(exes["apa-maximal"])]
    (out / f"{w.name}.stats").unlink(missing_ok=True)
    for name, cmd in cmds.items():
        subprocess.run(cmd, check=True, cwd=REPO)
    return exes


def cpu_run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(cpu seconds, wall seconds, stdout) of one run."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read().decode() if p.stdout else ""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv} exited {status}")
    return usage.ru_utime + usage.ru_stime, wall, out


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    xs = sorted(xs)
    if len(xs) < 3:
        return xs[0], statistics.median(xs), xs[-1]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[1], q[2]


def time_workload(w, exes: dict[str, Path], rounds: int) -> dict:
    base_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    variants = {
        "glibc": (exes["glibc"], {}),
        **{a: (exes["glibc"], {"LD_PRELOAD": lib}) for a, lib in PRELOADS.items()},
        "nopool": (exes["nopool"], {}),
        "apa": (exes["apa"], {}),
        **({"apa-maximal": (exes["apa-maximal"], {})} if "apa-maximal" in exes else {}),
    }
    names = list(variants)
    cpu: dict[str, list[float]] = {n: [] for n in names}
    reference = None
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]  # rotate: no fixed position
        for n in order:
            exe, extra = variants[n]
            c, _, out = cpu_run([str(exe), *w.ref], {**base_env, **extra})
            if reference is None:
                reference = out
            if out != reference:
                raise RuntimeError(f"{w.name} {n}: output differs")
            cpu[n].append(c)
    result = {"name": w.name, "args": w.ref, "rounds": rounds, "cpu": cpu, "load": os.getloadavg()[0]}
    for n in names:
        if n == "glibc":
            continue
        ratios = [a / b for a, b in zip(cpu[n], cpu["glibc"])]
        result[f"{n}/glibc"] = quartiles(ratios)
    best = min(("glibc", *PRELOADS), key=lambda n: statistics.median(cpu[n]))
    result["best_allocator"] = best
    result["apa/best"] = quartiles([a / b for a, b in zip(cpu["apa"], cpu[best])])
    return result


def halo_env(out: Path, w, exe: Path) -> dict[str, str]:
    """Profile the plain build on the small input, plan with HALO, return the run's environment."""
    cli = [sys.executable, "-m", "heaplayout.cli"]
    prof, plan = out / f"{w.name}.prof", out / f"{w.name}.plan"
    subprocess.run([*cli, "profile", "-o", str(prof), "--", str(exe), *w.small], check=True, cwd=REPO,
                   capture_output=True)
    subprocess.run([*cli, "plan", "-o", str(plan), str(prof)], check=True, cwd=REPO, capture_output=True)
    r = subprocess.run([*cli, "run", "--print-env", "--plan", str(plan)], check=True, cwd=REPO,
                       capture_output=True, text=True)
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


def time_halo(w, exes: dict[str, Path], env_plan: dict[str, str], rounds: int) -> dict:
    base_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    variants = {"glibc": (exes["glibc"], {}), "halo": (exes["glibc"], env_plan), "apa": (exes["apa"], {})}
    names = list(variants)
    cpu: dict[str, list[float]] = {n: [] for n in names}
    reference = None
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            exe, extra = variants[n]
            c, _, out = cpu_run([str(exe), *w.ref], {**base_env, **extra})
            reference = out if reference is None else reference
            if out != reference:
                raise RuntimeError(f"{w.name} {n}: output differs")
            cpu[n].append(c)
    return {"name": w.name, "args": w.ref, "rounds": rounds, "cpu": cpu, "load": os.getloadavg()[0],
            "halo/glibc": quartiles([a / b for a, b in zip(cpu["halo"], cpu["glibc"])]),
            "apa/glibc": quartiles([a / b for a, b in zip(cpu["apa"], cpu["glibc"])]),
            "apa/halo": quartiles([a / b for a, b in zip(cpu["apa"], cpu["halo"])])}


def cachegrind(exe: Path, args: list[str], env_extra: dict[str, str]) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env.update(env_extra)  # LD_PRELOAD in valgrind's own environment (FACTS.md)
        r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", D1, LL, f"--cachegrind-out-file={out}",
                            str(exe), *args], env=env, capture_output=True, text=True, check=True)
        m = {k: int(v.replace(",", "")) for k, v in
             re.findall(r"==\d+== (I   refs|D1  misses|LLd misses|D   refs):\s+([\d,]+)", r.stderr)}
        return {"I refs": m.get("I   refs", 0), "D refs": m.get("D   refs", 0), "D1 misses": m.get("D1  misses", 0),
                "LLd misses": m.get("LLd misses", 0), "stdout": r.stdout}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("mode", choices=["time", "cachegrind", "halo", "ablation", "check"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--maximal", action="store_true", help="also time --collocate=maximal builds")
    ap.add_argument("--ablations", default=",".join(ABLATIONS),
                    help="comma-separated variants for the ablation mode (default: all)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_intermixed_args()
    a.out.mkdir(parents=True, exist_ok=True)
    ablations = [n for n in a.ablations.split(",") if n]
    unknown = [n for n in ablations if n not in ABLATIONS]
    if unknown:
        ap.error(f"unknown ablation {', '.join(unknown)} (known: {', '.join(ABLATIONS)})")
    for w in load_suite():
        if not w.source.endswith(".c") or (a.names and w.name not in a.names):
            continue
        exes = build(a.out, w, a.maximal)
        if a.mode == "time":
            rec = time_workload(w, exes, a.rounds)
        elif a.mode == "check":
            exes.update(build_ablations(a.out, w, CHECK_VARIANTS))
            rec = check_workload(a.out, w, exes, count_preload(a.out))
        elif a.mode == "ablation":
            exes.update(build_ablations(a.out, w, ablations))
            rec = {"name": w.name, "args": w.small}
            reference = None
            for n in ("glibc", "apa", *ablations):
                rec[n] = cachegrind(exes[n], w.small, {})
                out = rec[n].pop("stdout")
                reference = out if reference is None else reference
                if out != reference:
                    raise RuntimeError(f"{w.name} {n}: output differs")
        elif a.mode == "halo":
            rec = time_halo(w, exes, halo_env(a.out, w, exes["glibc"]), a.rounds)
        else:
            rec = {"name": w.name, "args": w.small,
                   "glibc": cachegrind(exes["glibc"], w.small, {}),
                   "mimalloc": cachegrind(exes["glibc"], w.small, {"LD_PRELOAD": PRELOADS["mimalloc"]}),
                   "apa": cachegrind(exes["apa"], w.small, {})}
            for n in ("glibc", "mimalloc", "apa"):
                rec[n].pop("stdout")
        rec["stats"] = json.loads((a.out / f"{w.name}.stats").read_text().splitlines()[0])
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
