#!/usr/bin/env python3
"""malloc/free microbenchmark and stress peak RSS across allocators and heaplayout policies.

Runs build/benchmarks/malloc_pair (back-to-back pairs, and a ring of live objects) and the
stress program build/tests/stress/stress under each configuration, in interleaved rounds
(every configuration once per round, rounds repeated), and prints a markdown table: median and
min-max of ns per pair, median peak RSS of the stress program (ru_maxrss from os.wait4), and
for the callsite runs how many objects the runtime really pooled (from its stats JSON).

    python3 benchmarks/run_malloc_bench.py [--rounds 7] [--pairs 10000000] [--size 64]
        [--window 1000] [--stress-args 4 100000 1] [--configs glibc,mimalloc,...]

Build first: scripts/build.sh. Expect noise on a shared machine: compare medians, look at the
spread, re-run before believing small differences.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
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

from heaplayout import paths  # noqa: E402
from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env  # noqa: E402


@dataclass(frozen=True)
class Config:
    name: str
    allocator: str
    policy: str | None  # None: the plain allocator, no heaplayout runtime

    def env(self, stats_json: str | None = None) -> dict[str, str]:
        if self.policy is None:
            env = allocator_env(self.allocator)
        else:
            env = runtime_env(RuntimeConfig(policy=self.policy, allocator=self.allocator, stats_json=stats_json))
        if self.allocator == "mimalloc":
            # Debian's mimalloc 2.0.9 misaligns some 256-byte-aligned blocks on its own; the
            # stress program checks alignment, so cap what it asks for (see tests/stress).
            env["STRESS_MAX_ALIGN"] = "128"
        return env


CONFIGS = [
    Config("glibc", "glibc", None),
    Config("jemalloc", "jemalloc", None),
    Config("mimalloc", "mimalloc", None),
    Config("tcmalloc", "tcmalloc", None),
    Config("ours off / glibc", "glibc", "off"),
    Config("ours callsite / glibc", "glibc", "callsite"),
    Config("ours off / mimalloc", "mimalloc", "off"),
    Config("ours callsite / mimalloc", "mimalloc", "callsite"),
]


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HEAPLAYOUT_")}
    env.update(extra)
    return env


def run_pair(binary: Path, cfg: Config, pairs: int, size: int, window: int) -> float:
    argv = [str(binary), "--pairs", str(pairs), "--size", str(size), "--window", str(window)]
    res = subprocess.run(argv, env=clean_env(cfg.env()), capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"{cfg.name}: {shlex.join(argv)} exited {res.returncode}: {res.stderr.strip()}")
    for line in res.stdout.splitlines():
        if line.startswith("ns_per_pair "):
            return float(line.split()[1])
    raise RuntimeError(f"{cfg.name}: no ns_per_pair in output: {res.stdout!r}")


def pooled_objects(stats_path: Path) -> int | None:
    try:
        data = json.loads(stats_path.read_text())
    except (OSError, ValueError):
        return None
    return sum(int(p.get("objects", 0)) for p in data.get("pools", []))


def run_stress(binary: Path, cfg: Config, args: list[str], tmp: Path) -> tuple[int, float, int | None] | None:
    """(peak RSS in KiB, wall seconds, pooled objects or None) of one stress run; None when the
    stress program failed (reported on stderr: the table says how many runs failed)."""
    stats = tmp / f"stats-{os.getpid()}-{time.monotonic_ns()}.json"
    env = clean_env(cfg.env(stats_json=str(stats) if cfg.policy == "callsite" else None))
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(binary), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(f"run_malloc_bench: {cfg.name}: stress {' '.join(args)} exited {proc.returncode}: "
              f"{err.decode(errors='replace').strip()[:500]}", file=sys.stderr)
        stats.unlink(missing_ok=True)
        return None
    pooled = pooled_objects(stats) if cfg.policy == "callsite" else None
    stats.unlink(missing_ok=True)
    return usage.ru_maxrss, wall, pooled


def fmt_ns(values: list[float]) -> str:
    if not values:
        return "–"
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=10_000_000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--window", type=int, default=1000, help="live objects in the ring variant (default 1000)")
    ap.add_argument("--stress-args", nargs=3, default=["4", "100000", "1"], metavar=("THREADS", "OPS", "SEED"))
    ap.add_argument("--no-stress", action="store_true", help="skip the stress peak-RSS runs")
    ap.add_argument("--configs", help="comma-separated subset of: " + ", ".join(c.name for c in CONFIGS))
    args = ap.parse_args(argv)

    configs = CONFIGS
    if args.configs:
        wanted = [w.strip() for w in args.configs.split(",")]
        configs = [c for c in CONFIGS if c.name in wanted]
        unknown = set(wanted) - {c.name for c in configs}
        if unknown:
            ap.error(f"unknown configurations: {', '.join(sorted(unknown))}")

    build = paths.build_dir()
    pair_bin = build / "benchmarks" / "malloc_pair"
    stress_bin = build / "tests" / "stress" / "stress"
    for b in [pair_bin] + ([] if args.no_stress else [stress_bin]):
        if not b.exists():
            print(f"run_malloc_bench: {b} not found; build with scripts/build.sh", file=sys.stderr)
            return 2
    try:
        for c in configs:
            c.env()
    except Exception as err:  # missing runtime library or allocator package
        print(f"run_malloc_bench: {err}", file=sys.stderr)
        return 2

    pair_ns: dict[str, list[float]] = {c.name: [] for c in configs}
    ring_ns: dict[str, list[float]] = {c.name: [] for c in configs}
    rss: dict[str, list[int]] = {c.name: [] for c in configs}
    wall: dict[str, list[float]] = {c.name: [] for c in configs}
    pooled: dict[str, list[int | None]] = {c.name: [] for c in configs}
    stress_failed: dict[str, int] = {c.name: 0 for c in configs}

    print(f"command: {shlex.join([sys.executable, *sys.argv])}")
    print(f"build: {build}, runtime: {paths.runtime_library()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, host cores: {os.cpu_count()}, "
          f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    with tempfile.TemporaryDirectory(prefix="hl-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for rnd in range(args.rounds):
            for c in configs:  # interleaved: A B C ... per round
                pair_ns[c.name].append(run_pair(pair_bin, c, args.pairs, args.size, 0))
                ring_ns[c.name].append(run_pair(pair_bin, c, args.pairs, args.size, args.window))
                if not args.no_stress:
                    got = run_stress(stress_bin, c, list(args.stress_args), tmp)
                    if got is None:
                        stress_failed[c.name] += 1
                        continue
                    kib, secs, n = got
                    rss[c.name].append(kib)
                    wall[c.name].append(secs)
                    pooled[c.name].append(n)
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)

    print(f"malloc_pair: {args.pairs} pairs of {args.size} bytes; ring variant keeps {args.window} objects live. "
          f"stress {' '.join(args.stress_args)} (threads, ops/thread, seed). {args.rounds} interleaved rounds; "
          f"median (min–max).")
    print()
    header = ["configuration", "ns/pair back-to-back", f"ns/pair ring {args.window}"]
    if not args.no_stress:
        header += ["stress peak RSS MiB", "stress wall s", "pooled objects (stress)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for c in configs:
        row = [c.name, fmt_ns(pair_ns[c.name]), fmt_ns(ring_ns[c.name])]
        if not args.no_stress:
            r = rss[c.name]
            failed = f" **{stress_failed[c.name]} of {args.rounds} runs failed**" if stress_failed[c.name] else ""
            if r:
                row.append(f"{statistics.median(r) / 1024:.1f} ({min(r) / 1024:.1f}–{max(r) / 1024:.1f}){failed}")
                row.append(f"{statistics.median(wall[c.name]):.2f}")
            else:
                row += [failed.strip(), "–"]
            if c.policy == "callsite":
                vals = [v for v in pooled[c.name] if v is not None]
                row.append(str(int(statistics.median(vals))) if vals else "no stats JSON")
            else:
                row.append("–")
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
