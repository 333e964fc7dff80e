#!/usr/bin/env python3
"""Instructions and ns per malloc/free pair, for every allocation shape of
build/benchmarks/malloc_shapes (pair, sizes, grow, ring, realloc, calloc, mixed, sites, threads) under each allocator alone and
our runtime's `off`, `callsite` and a plan on top of glibc and mimalloc.

Instructions are exact: callgrind's total for a run of 2N pairs minus that of a run of N
pairs, divided by N (start-up, warm-up and exit cancel out; the loop's own instructions,
about 10-25 per pair by shape, are in every row alike). The threads shape waits at
barriers, whose instructions depend on scheduling: its count is exact to a few tenths.
Times are medians of interleaved rounds (every configuration once per round), with each
configuration's ratio to the allocator underneath taken round by round (the machine is
shared: compare ratios, not single figures).

    python3 benchmarks/run_pair_shapes.py [--shapes pair,sizes,grow,ring,realloc,calloc,mixed,threads] [--rounds 7]
        [--pairs 5000000] [--count-pairs 200000] [--no-time] [--no-count]

The plan is written from the binary's own disassembly (heaplayout.elf): one group holding
all ten sites (eight malloc sites, the realloc and calloc sites), identified by their return
addresses, and a group for each of the `sites` shape's 32 sites.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from heaplayout import elf, paths  # noqa: E402
from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env  # noqa: E402

SHAPES = ["pair", "sizes", "grow", "ring", "realloc", "calloc", "mixed", "sites", "threads"]


@dataclass(frozen=True)
class Config:
    name: str
    allocator: str
    policy: str | None  # None: the allocator alone

    def env(self, plan: Path) -> dict[str, str]:
        if self.policy is None:
            return allocator_env(self.allocator)
        return runtime_env(RuntimeConfig(policy=self.policy, allocator=self.allocator,
                                         plan=str(plan) if self.policy == "plan" else None))

    @property
    def underneath(self) -> str:
        return self.allocator


CONFIGS = [
    Config("glibc", "glibc", None),
    Config("jemalloc", "jemalloc", None),
    Config("mimalloc", "mimalloc", None),
    Config("tcmalloc", "tcmalloc", None),
    Config("ours off / glibc", "glibc", "off"),
    Config("ours callsite / glibc", "glibc", "callsite"),
    Config("ours plan / glibc", "glibc", "plan"),
    Config("ours off / mimalloc", "mimalloc", "off"),
    Config("ours callsite / mimalloc", "mimalloc", "callsite"),
    Config("ours plan / mimalloc", "mimalloc", "plan"),
]


def write_plan(binary: Path, out: Path) -> Path:
    ras = [elf.call_return_addresses(binary, f"site{n}", "malloc")[0] for n in range(8)]
    ras += [elf.call_return_addresses(binary, f"{fn}_site", fn)[0] for fn in ("realloc", "calloc")]
    # the `sites` shape's 32 sites, a group each: a chunk per site, as under callsite
    many = [elf.call_return_addresses(binary, f"site{t}{u}", "malloc")[0] for t in range(1, 5) for u in range(8)]
    lines = ["heaplayout-plan 1", "strategy halo", "chunk_size 1048576", "max_object_size 4096",
             f"module 0 {elf.build_id(binary)} {binary}", "skip libc.so.6", f"group 1 {len(ras)} 1"]
    lines += [f"group {g} 1 1" for g in range(2, 2 + len(many))]
    lines += [f"select 1 0:{ra:x}" for ra in ras]
    lines += [f"select {g} 0:{ra:x}" for g, ra in enumerate(many, start=2)]
    out.write_text("\n".join(lines + ["end"]) + "\n")
    return out


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HEAPLAYOUT_")}
    env["HEAPLAYOUT_MIN_OBJECTS"] = "0"  # the warm-up's objects suffice; no site waits for 100
    env.update(extra)
    return env


def run_ns(binary: Path, shape: str, pairs: int, env: dict[str, str]) -> float:
    res = subprocess.run([str(binary), shape, str(pairs)], env=env, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"{shape}: exited {res.returncode}: {res.stderr.strip()[:300]}")
    return float(res.stdout.split()[1])


def callgrind_total(binary: Path, shape: str, pairs: int, env: dict[str, str], tmp: Path) -> int:
    out = tmp / f"cg-{time.monotonic_ns()}.out"
    res = subprocess.run(["valgrind", "--tool=callgrind", "--fair-sched=yes", f"--callgrind-out-file={out}",
                          str(binary), shape, str(pairs)], env=env, capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        raise RuntimeError(f"callgrind {shape}: exited {res.returncode}: {res.stderr.strip()[-300:]}")
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            out.unlink()
            return int(line.split()[1])
    raise RuntimeError(f"callgrind {shape}: no totals in {out}")


def instructions_per_pair(binary: Path, shape: str, pairs: int, env: dict[str, str], tmp: Path) -> float:
    one = callgrind_total(binary, shape, pairs, env, tmp)
    two = callgrind_total(binary, shape, 2 * pairs, env, tmp)
    return (two - one) / pairs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--configs", help="comma-separated subset of: " + ", ".join(c.name for c in CONFIGS))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=5_000_000, help="pairs per timed run")
    ap.add_argument("--count-pairs", type=int, default=200_000, help="N of the callgrind runs (N and 2N)")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--no-count", action="store_true")
    args = ap.parse_args(argv)
    shapes = [s.strip() for s in args.shapes.split(",")]
    if set(shapes) - set(SHAPES):
        ap.error(f"unknown shapes: {', '.join(sorted(set(shapes) - set(SHAPES)))}")
    configs = CONFIGS
    if args.configs:
        wanted = [w.strip() for w in args.configs.split(",")]
        configs = [c for c in CONFIGS if c.name in wanted]
        if len(configs) != len(wanted):
            ap.error(f"unknown configurations among: {args.configs}")
    binary = paths.build_dir() / "benchmarks" / "malloc_shapes"
    if not binary.exists():
        print(f"run_pair_shapes: {binary} not found; build with scripts/build.sh", file=sys.stderr)
        return 2
    if not args.no_count and shutil.which("valgrind") is None:
        print("run_pair_shapes: valgrind not found (scripts/setup.sh installs it)", file=sys.stderr)
        return 2

    print(f"command: {shlex.join([sys.executable, *sys.argv])}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load average at start: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="hl-shapes-") as tmpdir:
        tmp = Path(tmpdir)
        plan = write_plan(binary, tmp / "shapes.plan")
        envs = {c.name: clean_env(c.env(plan)) for c in configs}
        instr: dict[tuple[str, str], float] = {}
        if not args.no_count:
            for shape in shapes:
                for c in configs:
                    instr[(shape, c.name)] = instructions_per_pair(binary, shape, args.count_pairs, envs[c.name], tmp)
                print(f"counted {shape}", file=sys.stderr)
        times: dict[tuple[str, str], list[float]] = {(s, c.name): [] for s in shapes for c in configs}
        if not args.no_time:
            for rnd in range(args.rounds):
                for shape in shapes:
                    for c in configs:  # interleaved: every configuration once per round
                        times[(shape, c.name)].append(run_ns(binary, shape, args.pairs, envs[c.name]))
                print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)

    print()
    print(f"instructions: callgrind, ({2 * args.count_pairs} pairs - {args.count_pairs} pairs) / "
          f"{args.count_pairs}; ns: {args.rounds} interleaved rounds of {args.pairs} pairs, median (min-max); "
          "ratio: to the allocator alone underneath, per round, median (min-max)")
    for shape in shapes:
        print()
        print(f"shape `{shape}`")
        print()
        print("| configuration | instructions/pair | ns/pair | ratio to allocator alone |")
        print("|---|---|---|---|")
        for c in configs:
            ins = f"{instr[(shape, c.name)]:.1f}" if (shape, c.name) in instr else "-"
            t = times[(shape, c.name)]
            ns = f"{statistics.median(t):.1f} ({min(t):.1f}-{max(t):.1f})" if t else "-"
            ratio = "-"
            base = times.get((shape, c.underneath))
            if c.policy is not None and t and base:
                r = [a / b for a, b in zip(t, base)]
                ratio = f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f})"
            print(f"| {c.name} | {ins} | {ns} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
