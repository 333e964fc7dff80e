#!/usr/bin/env python3
"""Profiling overhead of hlprof: wall and CPU time and peak memory of each program natively,
under `valgrind --tool=none`, and under `heaplayout profile` (hlprof with default options).

    python3 profiler/bench_overhead.py                      # workload suite (small) + real programs
    python3 profiler/bench_overhead.py --input ref --workloads health,treeadd
    python3 profiler/bench_overhead.py --no-suite           # only the distribution programs

Slowdowns are given on CPU time (user+sys of the process tree, robust when other jobs share
the machine) and on wall time. Peak memory is the largest RSS of the process tree (wait4).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heaplayout import paths  # noqa: E402
from heaplayout.profile_reader import read_profile  # noqa: E402

PY_WORK = """
d = {}
for i in range(200000):
    d[str(i)] = [i, str(i) * 2, (i, i + 1)]
print(sum(len(v[1]) for v in d.values()))
"""

C_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct node { struct node *l, *r; int key; char name[24]; };
static struct node* insert(struct node* t, int k) {
  if (!t) { t = calloc(1, sizeof *t); t->key = k; snprintf(t->name, sizeof t->name, "n%d", k); return t; }
  if (k < t->key) t->l = insert(t->l, k); else t->r = insert(t->r, k);
  return t;
}
#define F(n) static int f##n(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * n ^ (s >> 3); return s; }
F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15) F(16)
int main(int argc, char** argv) {
  struct node* t = 0;
  for (int i = 0; i < argc * 1000; i++) t = insert(t, (i * 7919) % 10007);
  return f1(argc)+f2(argc)+f3(argc)+f4(argc)+f5(argc)+f6(argc)+f7(argc)+f8(argc)
       + f9(argc)+f10(argc)+f11(argc)+f12(argc)+f13(argc)+f14(argc)+f15(argc)+f16(argc) + (t != 0);
}
"""


@dataclass
class Run:
    wall: float
    cpu: float
    maxrss_kb: int
    status: int


def measure(argv: list[str], env: dict[str, str], stdin_path: str | None = None) -> Run:
    """Run argv; wall time, CPU time and peak RSS of the program. /usr/bin/time measures the
    RSS (a forked Python child would report the interpreter's own RSS from before exec)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    timer = shutil.which("time", path="/usr/bin")
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = [timer, "-f", "%e %U %S %M", "-o", tf.name, *argv] if timer else argv
        t0 = time.perf_counter()
        proc = subprocess.run(full, env=env, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        fields = tf.read().split()[-4:] if timer else []
    if stdin_path:
        stdin.close()
    code = proc.returncode
    if code != 0:
        err = proc.stderr.decode(errors="replace")
        print(f"  warning: {' '.join(argv[:3])}... exited {code}: {err.strip()[-300:]}", file=sys.stderr)
    if len(fields) == 4:
        return Run(float(fields[0]), float(fields[1]) + float(fields[2]), int(fields[3]), code)
    return Run(wall, 0.0, 0, code)


@dataclass
class Program:
    name: str
    argv: list[str]
    env: dict[str, str]
    stdin: str | None = None
    setup: object = None  # callable run before each measurement


def real_programs(tmp: Path) -> list[Program]:
    progs = []
    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    py = shutil.which("python3", path="/usr/bin") or shutil.which("python3")
    if py:
        script = tmp / "work.py"
        script.write_text(PY_WORK)
        progs.append(Program("python3 (dict build, PYTHONMALLOC=malloc)", [py, str(script)],
                             dict(base, PYTHONMALLOC="malloc")))
    sqlite = shutil.which("sqlite3")
    if sqlite:
        sql = tmp / "gen.sql"
        import random

        rnd = random.Random(1)
        with open(sql, "w") as f:
            f.write("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);\nBEGIN;\n")
            for i in range(200000):
                f.write(f"INSERT INTO t VALUES({i}, '{rnd.random()}', {rnd.random()});\n")
            f.write("COMMIT;\nCREATE INDEX tb ON t(b);\nSELECT count(*), sum(c) FROM t WHERE b > '0.5';\n")
        db = tmp / "db.sqlite"
        progs.append(Program("sqlite3 (200k inserts, index, query)", [sqlite, str(db)], base, stdin=str(sql),
                             setup=lambda db=db: db.unlink(missing_ok=True)))
    gcc = shutil.which("gcc")
    if gcc:
        src = tmp / "prog.c"
        # a few hundred functions, so that the compiler works for about a second
        src.write_text(C_SOURCE + "".join(
            f"int g{i}(int* a, int n) {{ int s = 0; for (int j = 0; j < n; j++) s += a[j] * {i} ^ (s >> {i % 7 + 1}); "
            f"if (s > {i}) return g{i}(a, n - 1) + s; return s; }}\n" for i in range(400)))
        # cc1 itself, with the arguments the driver would pass (valgrind does not follow children)
        dry = subprocess.run([gcc, "-###", "-O2", "-S", str(src), "-o", str(tmp / "prog.s")],
                             capture_output=True, text=True).stderr
        cc1_line = next((ln for ln in dry.splitlines() if ln.strip().split(" ")[0].endswith("/cc1")), None)
        if cc1_line:
            import shlex

            progs.append(Program("gcc: cc1 -O2 (400-function C file)", shlex.split(cc1_line), base))
    return progs


def suite_programs(input_name: str, only: set[str] | None) -> list[Program]:
    from heaplayout.workloads import load_suite

    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    progs = []
    for w in load_suite():
        if only and w.name not in only:
            continue
        try:
            argv = w.argv(input_name)
        except paths.MissingArtifact as err:
            print(f"  skipping {w.name}: {err}", file=sys.stderr)
            continue
        progs.append(Program(f"{w.name} ({input_name})", argv, base))
    return progs


def median_run(runs: list[Run]) -> Run:
    """Median of each field separately (runs are few; medians resist one disturbed round)."""
    med = lambda xs: sorted(xs)[len(xs) // 2]
    return Run(wall=med([r.wall for r in runs]), cpu=med([r.cpu for r in runs]),
               maxrss_kb=med([r.maxrss_kb for r in runs]), status=runs[0].status)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", choices=("small", "ref"), default="small", help="workload input (default small)")
    ap.add_argument("--workloads", help="comma-separated workload names (default: all)")
    ap.add_argument("--no-suite", action="store_true", help="skip the workload suite")
    ap.add_argument("--no-real", action="store_true", help="skip the distribution programs")
    ap.add_argument("--repeat", type=int, default=3,
                    help="interleaved rounds of native / none / hlprof per program; medians are shown (default 3)")
    args = ap.parse_args()

    lib = paths.build_dir() / "profiler" / "lib"
    if not (lib / "hlprof-amd64-linux").exists():
        print(f"hlprof not built in {lib}: run scripts/build.sh", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="hlprof-bench-"))
    progs: list[Program] = []
    if not args.no_suite:
        progs += suite_programs(args.input, set(args.workloads.split(",")) if args.workloads else None)
    if not args.no_real:
        progs += real_programs(tmp)

    hdr = (f"{'program':44} {'native s':>9} {'none x':>7} {'hlprof s':>9} {'x cpu':>6} {'range':>11} {'x wall':>6} "
           f"{'RSS MB':>7} {'prof RSS':>8} {'prof MB':>7} {'objects':>9} {'ctx':>5} {'heap acc':>11}")
    print(hdr)
    print("-" * len(hdr))
    ratios = []
    for prog in progs:
        def run(argv, env):
            if prog.setup:
                prog.setup()
            return measure(argv, env, prog.stdin)

        none_env = dict(prog.env)
        none_env.pop("VALGRIND_LIB", None)
        out = tmp / "p.prof"
        prof_env = dict(prog.env, VALGRIND_LIB=str(lib))
        rounds: list[tuple[Run, Run, Run]] = []
        for _ in range(max(1, args.repeat)):   # interleaved, so that load changes hit all three alike
            rounds.append((run(prog.argv, prog.env),
                           run(["valgrind", "-q", "--tool=none", *prog.argv], none_env),
                           run(["valgrind", "-q", "--tool=hlprof", f"--out-file={out}", *prog.argv], prof_env)))
        native = median_run([r[0] for r in rounds])
        none = median_run([r[1] for r in rounds])
        prof = median_run([r[2] for r in rounds])
        p = read_profile(out, with_objects=False, with_stream=False)
        size_mb = out.stat().st_size / 1e6
        nat_cpu = max(native.cpu, 1e-3)
        x_cpu = prof.cpu / nat_cpu
        x_wall = prof.wall / max(native.wall, 1e-3)
        per_round = sorted(r[2].cpu / max(r[0].cpu, 1e-3) for r in rounds)
        ratios.append((prog.name, x_cpu, x_wall))
        print(f"{prog.name[:44]:44} {native.wall:9.2f} {none.cpu / nat_cpu:7.1f} {prof.wall:9.2f} {x_cpu:6.1f} "
              f"{per_round[0]:5.1f}-{per_round[-1]:<5.1f} "
              f"{x_wall:6.1f} {native.maxrss_kb / 1024:7.1f} {prof.maxrss_kb / 1024:8.1f} {size_mb:7.1f} "
              f"{p.summary.get('objects', 0):9d} {len(p.contexts):5d} {p.summary.get('heap_accesses', 0):11d}",
              flush=True)
    print()
    print("x cpu = (user+sys under hlprof) / (user+sys native); none x = the same for valgrind --tool=none;")
    print(f"times are medians of {max(1, args.repeat)} interleaved rounds; range = lowest-highest x cpu of a round;")
    print("RSS = peak resident set of the program natively / under hlprof; prof MB = profile file size.")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
