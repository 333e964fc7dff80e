#!/usr/bin/env python3
"""Where a sampled profile's time goes (issue 24): hlprof with parts taken away, one at a time.

    python3 profiler/cost_probes.py --corpus cppcheck,xsltproc --input measure --rounds 2 --work DIR

A sampled profile pays, in every window, for Valgrind itself, for Valgrind's malloc
replacement, for recording each block (object, address map), for naming each block's
context (a stack unwind), for the idle instrumentation of off windows (an inline range check
per access) and for the object records, and in one window of R for the full analysis. The
configurations below add these one at a time, so consecutive differences are their costs:

  none          valgrind --tool=none
  replace       hlprof, every window off and uninstrumented, O records off, and (probe build)
                malloc/free only forwarded to Valgrind's allocator: nothing recorded
  record        as replace, but blocks recorded with one fixed context (probe build): no unwind
  contexts      as record with the real context lookup (the release build from here on)
  idle          as contexts, off windows instrumented (the inline check that finds nothing)
  objects       as idle with the O records written (every window off: `--sample-period` huge)
  sample        the sampled profile (--sample=yes, defaults)

The probe builds are copies of profiler/ with a few lines replaced (PROBES below), built
into DIR; the sources in the tree stay as they are. Rounds are interleaved (native, then
each configuration); the figures are CPU time (user+sys) over native, median [min-max].
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_scale import corpus_targets, run_in  # noqa: E402
from heaplayout import paths  # noqa: E402

# probe -> [(file, anchor, replacement)]; each anchor must occur exactly once.
PROBES: dict[str, list[tuple[str, str, str]]] = {
    "replace": [
        ("hp_alloc.c", "   if (zero) VG_(memset)(p, 0, size);\n   record_block(tid, p, size, kind);",
         "   if (zero) VG_(memset)(p, 0, size);\n   return p;"),
        ("hp_alloc.c", "   if (!p) return;\n   HpObj* o = block_at((Addr)p);\n   if (!o) return;                 /* not ours: ignore */",
         "   if (!p) return;\n   VG_(cli_free)(p); return;\n   HpObj* o = block_at((Addr)p);\n   if (!o) return;"),
        ("hp_alloc.c", "   if (!p) return new_block(tid, n, VG_(clo_alignment), 'r', False);\n",
         "   if (!p) return new_block(tid, n, VG_(clo_alignment), 'r', False);\n"
         "   { SizeT old = VG_(cli_malloc_usable_size)(p);\n"
         "     if (n == 0) { VG_(cli_free)(p); return NULL; }\n"
         "     if (n <= old) return p;\n"
         "     void* q = VG_(cli_malloc)(VG_(clo_alignment), n);\n"
         "     if (q) { VG_(memcpy)(q, p, old); VG_(cli_free)(p); }\n"
         "     return q; }\n"),
    ],
    "record": [
        ("hp_ctxcache.c", "   if (!hp_opt.context_cache) return hp_context_unwind(tid, kind);",
         "   { static HpCtx* one; if (!one) one = hp_context_unwind(tid, kind); return one; }"),
    ],
}

OFF = ["--sample=yes", "--sample-period=1048576"]   # one window in 2^20: none in these runs (checked)
CONFIGS: dict[str, tuple[str | None, list[str] | None]] = {   # name -> (probe build or None, hlprof options)
    "none": (None, None),
    "replace": ("replace", [*OFF, "--sample-retranslate=yes", "--objects=none"]),
    "record": ("record", [*OFF, "--sample-retranslate=yes", "--objects=none"]),
    "contexts": (None, [*OFF, "--sample-retranslate=yes", "--objects=none"]),
    "idle": (None, [*OFF, "--objects=none"]),
    "objects": (None, [*OFF]),
    "sample": (None, ["--sample=yes"]),
}


def build_probe(name: str, work: Path) -> Path:
    src = work / f"src_{name}"
    if src.exists():
        shutil.rmtree(src)
    (src / "profiler").mkdir(parents=True)
    for f in HERE.iterdir():
        if f.suffix in (".c", ".h") or f.name == "CMakeLists.txt":
            shutil.copy(f, src / "profiler" / f.name)
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(hlprobe C)\nadd_subdirectory(profiler)\n")
    for fname, anchor, repl in PROBES[name]:
        p = src / "profiler" / fname
        text = p.read_text()
        if text.count(anchor) != 1:
            raise SystemExit(f"probe {name}: anchor not found once in {fname} (the source changed): {anchor[:60]!r}")
        p.write_text(text.replace(anchor, repl))
    b = work / f"build_{name}"
    subprocess.run(["cmake", "-S", str(src), "-B", str(b), "-DCMAKE_BUILD_TYPE=Release"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(b), "-j2"], check=True, stdout=subprocess.DEVNULL)
    return b / "profiler" / "lib"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--input", default="measure", choices=("train", "measure"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", required=True, help="probe builds and profiles go here")
    ap.add_argument("--lib", help="VALGRIND_LIB of the release hlprof (default: the build's)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    configs = args.configs.split(",")
    lib = Path(args.lib) if args.lib else paths.build_dir() / "profiler" / "lib"
    libs = {p: build_probe(p, work) for p in {CONFIGS[c][0] for c in configs} if p}
    targets = corpus_targets(args.corpus, args.input, Path(tempfile.gettempdir()) / "hlprof-scale-inputs")
    load = os.getloadavg()
    print(f"# load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; release build {lib}", flush=True)
    for t in targets:
        native, cpu = [], {c: [] for c in configs}
        for _ in range(args.rounds):
            native.append(run_in(t, t.argv, t.env).cpu)
            for c in configs:
                probe, opts = CONFIGS[c]
                env = dict(t.env)
                if opts is None:
                    argv = ["valgrind", "-q", "--tool=none", *t.argv]
                else:
                    env["VALGRIND_LIB"] = str(libs[probe] if probe else lib)
                    out = work / f"{t.name.split(' ')[0]}.{c}.prof"
                    argv = ["valgrind", "-q", "--tool=hlprof", f"--out-file={out}", *opts, *t.argv]
                r = run_in(t, argv, env)
                if r.status != 0:
                    print(f"  {c}: exit {r.status}", file=sys.stderr)
                cpu[c].append(r.cpu)
        print(f"{t.name}: native {statistics.median(native):.3f} s CPU", flush=True)
        prev = None
        for c in configs:
            xs = [a / b for a, b in zip(cpu[c], native)]
            med = statistics.median(xs)
            step = f"  +{med - prev:5.1f}x" if prev is not None else ""
            print(f"  {c:9} {med:6.1f}x [{min(xs):.1f}-{max(xs):.1f}]{step}", flush=True)
            prev = med
    load = os.getloadavg()
    print(f"# load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
