#!/usr/bin/env python3
"""Profiling at scale (issue 24): CPU-time slowdown and peak memory of hlprof, per
configuration, on the real-program corpus and the workload suite.

    python3 profiler/bench_scale.py --corpus all --input train --rounds 3
    python3 profiler/bench_scale.py --corpus sqlite3,gawk --configs none,full,noaff,noedges,nostream,noobj,bare
    python3 profiler/bench_scale.py --suite health,cxx_dom --suite-input ref --configs none,full,sample
    python3 profiler/bench_scale.py --corpus yosys --configs full,sample --json out.json

Every round runs the program natively and then under each configuration (interleaved, so a
change of load hits all alike); a slowdown is (user+sys under the tool) / (user+sys native)
of the same round, summarized as the median [min-max] over rounds. Peak memory is the
largest RSS (/usr/bin/time's %M) of the tool process. Configurations are named in CONFIGS:
`none` is `valgrind --tool=none`, the others hlprof with options. Profiles go to a temporary
directory (kept with --keep DIR).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_overhead import Run  # noqa: E402
from heaplayout import paths  # noqa: E402

# name -> hlprof options (None: valgrind --tool=none). Component costs are read off by
# switching one analysis off at a time; `bare` leaves only the map lookup, counting and
# context unwinding.
CONFIGS: dict[str, list[str] | None] = {
    "none": None,
    "full": [],
    "noaff": ["--affinity=no"],
    "noedges": ["--pointer-edges=no"],
    "nostream": ["--stream-max=0"],
    "noobj": ["--objects=none"],
    "bare": ["--affinity=no", "--pointer-edges=no", "--stream-max=0", "--objects=none"],
    "sample": ["--sample=yes"],
    "sample100k": ["--sample=yes", "--sample-window=100000"],   # short runs: 10x more windows
    "fullcc": ["--context-cache=yes"],
    "base": [],   # the full profile under --base-lib (another build of hlprof), for before/after rounds
}


@dataclass
class Target:
    name: str
    argv: list[str]
    env: dict[str, str]
    stdin: str | None = None
    cwd: str | None = None


@dataclass
class Row:
    name: str
    native: list[Run] = field(default_factory=list)
    tool: dict[str, list[Run]] = field(default_factory=dict)


def corpus_targets(names: str, which: str, root: Path) -> list[Target]:
    from benchmarks.real import corpus

    progs = corpus.load_corpus()
    progs = progs if names == "all" else corpus.select(progs, names.split(","))
    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    out = []
    for p in progs:
        d = corpus.write_input(p, which, root)
        stdin = p.stdin_path(d)
        out.append(Target(f"{p.name} ({which})", p.argv(d), dict(base, **p.env), str(stdin) if stdin else None,
                          cwd=str(d)))
    return out


def suite_targets(names: str, which: str) -> list[Target]:
    from heaplayout.workloads import load_suite

    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    only = None if names == "all" else set(names.split(","))
    return [Target(f"{w.name} ({which})", w.argv(which), base) for w in load_suite() if only is None or w.name in only]


def tool_argv(config: str, out: Path, extra: list[str]) -> list[str]:
    opts = CONFIGS[config]
    if opts is None:
        return ["valgrind", "-q", "--tool=none"]
    return ["valgrind", "-q", "--tool=hlprof", f"--out-file={out}", *opts, *extra]


def run_in(t: Target, argv: list[str], env: dict[str, str]) -> Run:
    """CPU time from wait4's rusage of /usr/bin/time (Linux counts the reaped program in it:
    microseconds, where time's own %U %S print 10 ms steps, too coarse for 30 ms runs); peak
    RSS from time's %M (the program's own, not the forking interpreter's)."""
    stdin = open(t.stdin, "rb") if t.stdin else subprocess.DEVNULL
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as tf:
        t0 = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", tf.name, *argv], env=env, cwd=t.cwd,
                                stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = proc.stderr.read()
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        rss = tf.read().split()
    if t.stdin:
        stdin.close()
    if proc.returncode != 0:
        print(f"  warning: {' '.join(argv[:4])}... exited {proc.returncode}: {err.decode(errors='replace')[-300:]}",
              file=sys.stderr)
    return Run(wall, ru.ru_utime + ru.ru_stime, int(rss[-1]) if rss else 0, proc.returncode)


def fmt_ratio(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"{statistics.median(xs):.1f} [{min(xs):.1f}-{max(xs):.1f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="", help="corpus programs (comma-separated, or 'all')")
    ap.add_argument("--input", default="train", choices=("train", "measure"), help="corpus input (default train)")
    ap.add_argument("--suite", default="", help="suite workloads (comma-separated, or 'all')")
    ap.add_argument("--suite-input", default="ref", choices=("small", "ref"))
    ap.add_argument("--configs", default="none,full", help=f"comma-separated, of: {', '.join(CONFIGS)}")
    ap.add_argument("--tool-opt", action="append", default=[], help="extra hlprof option for every hlprof config")
    ap.add_argument("--lib", metavar="DIR", help="VALGRIND_LIB of hlprof (default: the build's profiler/lib)")
    ap.add_argument("--base-lib", metavar="DIR", help="VALGRIND_LIB of the build that config 'base' runs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inputs-dir", default=str(Path(tempfile.gettempdir()) / "hlprof-scale-inputs"))
    ap.add_argument("--keep", metavar="DIR", help="keep the profiles (DIR/<program>.<config>.prof)")
    ap.add_argument("--json", metavar="FILE", help="write every round's times and RSS")
    args = ap.parse_args()

    configs = args.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"unknown config {c!r}")
    if "base" in configs and not args.base_lib:
        ap.error("config 'base' needs --base-lib")
    lib = Path(args.lib) if args.lib else paths.build_dir() / "profiler" / "lib"
    if not (lib / "hlprof-amd64-linux").exists():
        print(f"hlprof not built in {lib}", file=sys.stderr)
        return 2
    targets: list[Target] = []
    if args.suite:
        targets += suite_targets(args.suite, args.suite_input)
    if args.corpus:
        targets += corpus_targets(args.corpus, args.input, Path(args.inputs_dir))
    keep = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="hlprof-scale-"))
    keep.mkdir(parents=True, exist_ok=True)
    rows = []
    load = os.getloadavg()
    print(f"# load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; build {lib}")
    hdr = f"{'program':28} {'native s':>8} " + " ".join(f"{c + ' x':>17}" for c in configs) + " " + \
        " ".join(f"{c + ' MB':>9}" for c in configs if c != "none")
    print(hdr)
    for t in targets:
        row = Row(t.name)
        safe = t.name.split(" ")[0]
        for _ in range(args.rounds):
            row.native.append(run_in(t, t.argv, t.env))
            for c in configs:
                env = dict(t.env)
                if CONFIGS[c] is not None:
                    env["VALGRIND_LIB"] = str(args.base_lib if c == "base" else lib)
                out = keep / f"{safe}.{c}.prof"
                row.tool.setdefault(c, []).append(run_in(t, tool_argv(c, out, args.tool_opt) + t.argv, env))
        rows.append(row)
        nat = statistics.median(r.cpu for r in row.native)
        cells = []
        for c in configs:
            ratios = [tr.cpu / max(nr.cpu, 1e-3) for tr, nr in zip(row.tool[c], row.native)]
            cells.append(f"{fmt_ratio(ratios):>17}")
        mem = [f"{statistics.median(r.maxrss_kb for r in row.tool[c]) / 1024:9.0f}" for c in configs if c != "none"]
        print(f"{t.name[:28]:28} {nat:8.3f} " + " ".join(cells) + " " + " ".join(mem), flush=True)
    load = os.getloadavg()
    print(f"# load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("# x = (user+sys under the config) / (user+sys native) per round: median [min-max]; MB = peak RSS (median)")
    if args.json:
        Path(args.json).write_text(json.dumps([
            {"name": r.name, "native": [vars(x) for x in r.native],
             "tool": {c: [vars(x) for x in runs] for c, runs in r.tool.items()}} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
