#!/usr/bin/env python3
"""Whether two hlsim builds give the same results: a change meant to make the tool cheaper
without changing what it computes must leave every count, cycle and attribution bucket of
its JSON output as it was.

    python3 simulator/samecounts.py run BUILD_DIR OUT_DIR [--jobs 2]
    python3 simulator/samecounts.py compare OLD_OUT_DIR NEW_OUT_DIR

`run` simulates a fixed set of runs with BUILD_DIR's tool (from /tmp/hlsim-samecounts, so
that both builds' clients see the same paths: run one `run` at a time) (small inputs of the suite):
`--hw yes` on seven workloads, the default model on three, `--hw yes` with per-context
attribution, `--hw` variants that switch other parts on (the adjacent-line prefetcher,
deps=all, nextline into L2, two levels), and through `heaplayout simulate` our runtime's
callsite pools (per-pool attribution) and the first-touch oracle in its helper process. It
writes one JSON per run. `compare` compares two such directories field by field and lists
every difference; only the fields that name the run (the program's path, the pid in the
out-file name, wall-clock fields if any) are left out.

Every run gets the tool's `--fixed-random=yes` (through VALGRIND_OPTS), which both builds
must have: without it two runs of one build differ in a few timing counts (`line_waits`,
`dependent`, stall cycles), because the client's stack canary comes from the kernel's random
bytes and a late 8-byte load of it enters the timing model's dependence table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heaplayout.workloads import load_suite  # noqa: E402

HW = ["--hw=yes"]
# name, workload, tool options (a tool run), or ("simulate", [heaplayout simulate options])
RUNS: list[tuple[str, str, object]] = [
    *[(f"hw-{w}", w, HW + ["--contexts=no"])
      for w in ("treeadd", "health", "cxx_netsim", "bisort", "mst", "perimeter", "ft")],
    *[(f"model-{w}", w, ["--contexts=no"]) for w in ("treeadd", "health", "cxx_netsim")],
    ("hw-contexts-health", "health", HW + ["--contexts=yes"]),
    ("hw-contexts-cxx_netsim", "cxx_netsim", HW + ["--contexts=yes"]),
    ("hw-adjacent-depsall-health", "health", HW + ["--contexts=no", "--pf-adjacent=yes", "--deps=all"]),
    ("hw-nextline-l2-treeadd", "treeadd", HW + ["--contexts=no", "--prefetch=nextline", "--pf-level=2"]),
    ("hw-2levels-mst", "mst", HW + ["--contexts=no", "--levels=2"]),
    ("stride-degree3-chomp", "chomp", ["--contexts=no", "--prefetch=stride", "--pf-degree=3"]),
    ("sim-callsite-hw-health", "health", ("simulate", ["--policy", "callsite", "--hw", "yes"])),
    ("sim-callsite-hw-treeadd", "treeadd", ("simulate", ["--policy", "callsite", "--hw", "yes", "--contexts"])),
    ("sim-oracle-hw-treeadd", "treeadd", ("simulate", ["--oracle", "first-touch", "--hw", "yes", "--no-baseline"])),
]

IGNORED = {"program", "pid", "time", "timestamp", "wall", "wall_s"}


# Both builds run from this one place: the client sees the paths of its program, the tool and
# the preloaded libraries in its argv and environment, and their lengths move its stack, so
# two builds in two directories give slightly different runs (a few dozen instructions and
# references on every workload) whatever the tool computes.
STAGE = Path("/tmp/hlsim-samecounts")


def stage(build: Path) -> Path:
    """STAGE made to hold `build`: a symlink for each of its entries, and for each entry of
    its simulator/ directory."""
    if STAGE.exists():
        shutil.rmtree(STAGE)
    (STAGE / "simulator").mkdir(parents=True)
    for e in build.iterdir():
        if e.name != "simulator":
            (STAGE / e.name).symlink_to(e)
    for e in (build / "simulator").iterdir():
        (STAGE / "simulator" / e.name).symlink_to(e)
    return STAGE


def run_one(build: Path, out: Path, name: str, workload: str, what: object) -> str:
    w = {x.name: x for x in load_suite()}[workload]
    argv = [str(build / "workloads" / "fp" / Path(a).name) if i == 0 else a
            for i, a in enumerate(w.argv("small"))]
    env = dict(os.environ, HEAPLAYOUT_BUILD_DIR=str(build), VALGRIND_LIB=str(build / "simulator" / "lib"),
               VALGRIND_OPTS="--fixed-random=yes")
    env.pop("LD_PRELOAD", None)
    dest = out / f"{name}.json"
    if isinstance(what, tuple):
        cmd = [sys.executable, "-m", "heaplayout", "simulate", *what[1], "--json", str(dest), "--", *argv]
    else:
        cmd = ["valgrind", "-q", "--tool=hlsim", *what, f"--out-file={dest}", *argv]
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       cwd=str(Path(__file__).resolve().parent.parent))
    if r.returncode != 0 or not dest.exists():
        return f"{name}: failed ({r.returncode}): {r.stderr[-500:]}"
    return f"{name}: ok"


def diff(a: object, b: object, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in IGNORED:
                continue
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'new' if k not in a else 'old'}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} entries against {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("build", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--only", default="", help="comma-separated run names")
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        runs = [x for x in RUNS if not args.only or x[0] in args.only.split(",")]
        build = stage(args.build.resolve())
        with ThreadPoolExecutor(args.jobs) as ex:
            results = list(ex.map(lambda x: run_one(build, args.out.resolve(), *x), runs))
        print("\n".join(results))
        return 0 if all(x.endswith(": ok") for x in results) else 1
    bad = 0
    names = sorted(p.name for p in args.old.glob("*.json"))
    for n in names:
        new = args.new / n
        if not new.exists():
            print(f"{n}: missing in {args.new}")
            bad += 1
            continue
        out: list[str] = []
        diff(json.loads((args.old / n).read_text()), json.loads(new.read_text()), "", out)
        print(f"{n}: {'identical' if not out else f'{len(out)} differences'}")
        for line in out[:40]:
            print("   ", line)
        bad += bool(out)
    print(f"{len(names) - bad}/{len(names)} identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
