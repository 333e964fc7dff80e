"""How close the report's glibc-like model (heaplayout/report/layout_model.py) comes to
glibc: run PROG natively under alloc_log.c, profile the same run, and count the heap objects
that the model puts at glibc's address (up to one constant shift of the whole heap), and
those whose distance from the previous allocation is glibc's.

    python3 benchmarks/report_model/fidelity.py -- PROG ARGS

A deterministic single-threaded program allocates the same sequence natively as under the
profiler, so the n-th allocation of the log is the profile's object n (checked by size).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from heaplayout.profile_reader import read_profile
from heaplayout.report.layout_model import replay_glibc

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print(__doc__, file=sys.stderr)
        return 2
    program = argv[argv.index("--") + 1:]
    with tempfile.TemporaryDirectory(prefix="hl-fidelity.") as tmp:
        shim, log, prof_path = Path(tmp) / "alloc_log.so", Path(tmp) / "alloc.log", Path(tmp) / "p.prof"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(HERE / "alloc_log.c")], check=True)
        env = {**os.environ, "LD_PRELOAD": str(shim), "HL_ALLOC_LOG": str(log)}
        subprocess.run(program, env=env, stdout=subprocess.DEVNULL, check=True)
        subprocess.run([sys.executable, "-m", "heaplayout.cli", "profile", "-o", str(prof_path), "--", *program],
                       stdout=subprocess.DEVNULL, check=True)
        real = [(int(f[1]), int(f[2], 16)) for f in (line.split() for line in log.read_text().splitlines())
                if f[0] in "mr"]
        prof = read_profile(prof_path)
    objects = sorted(prof.objects, key=lambda o: o.id)
    same_size = sum(1 for o, r in zip(objects, real) if o.size == r[0])
    placed = replay_glibc(prof)
    pairs = [(placed[o.id][1], r[1]) for o, r in zip(objects, real) if placed[o.id][0][0] == "heap"]
    shift, hits = collections.Counter(rp - mp for mp, rp in pairs).most_common(1)[0] if pairs else (0, 0)
    # local agreement: the step from the previous heap allocation to this one is the same (an
    # early divergence shifts every later address but leaves neighbours where they were)
    steps = sum(1 for (m0, r0), (m1, r1) in zip(pairs, pairs[1:]) if m1 - m0 == r1 - r0)
    print(f"{' '.join(program)}: {len(objects):,} profiled objects, {len(real):,} native allocations, "
          f"{same_size:,} of the same size in order; {len(pairs):,} heap objects, {hits:,} "
          f"({100 * hits / max(1, len(pairs)):.1f}%) at the model's address, {100 * steps / max(1, len(pairs) - 1):.1f}% "
          "at the model's distance from the previous allocation")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
