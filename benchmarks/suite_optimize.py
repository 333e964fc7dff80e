"""`heaplayout optimize` on every workload of the suite, as a user would run it: profiled on
the small input, measured on the reference input, and the same table as the real-program
corpus's optimize stage (benchmarks/real/optimize_stage.py).

    python3 benchmarks/suite_optimize.py [--out build/suite-optimize] [--budget 150]
                                         [--only a,b] [--variant fp|nofp] [--force]

Writes OUT/<workload>/optimize.json (optimize's evidence) and OUT/optimize.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.real import optimize_stage  # noqa: E402
from heaplayout.workloads import load_suite  # noqa: E402

HL = [sys.executable, "-m", "heaplayout.cli"]


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/suite-optimize")
    ap.add_argument("--budget", type=float, default=150.0, metavar="SECONDS", help="optimize --budget per workload")
    ap.add_argument("--only", metavar="A,B", help="only these workloads")
    ap.add_argument("--variant", choices=("fp", "nofp"), default="fp", help="binaries with or without frame pointers")
    ap.add_argument("--force", action="store_true", help="redo workloads whose optimize.json exists")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    suite = load_suite()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {w.name for w in suite}
        if unknown:
            ap.error(f"unknown workload(s): {', '.join(sorted(unknown))}")
        suite = [w for w in suite if w.name in wanted]
    rows = []
    for w in suite:
        dest = out / w.name
        path = dest / "optimize.json"
        if not path.exists() or args.force:
            dest.mkdir(parents=True, exist_ok=True)
            cmd = [*HL, "optimize", "--train", shlex.join(w.args("small")), "--budget", f"{args.budget:g}",
                   "-o", str(dest), "--json", str(path), "--", *w.argv("ref", args.variant)]
            say(f"[suite-optimize] {w.name}: {shlex.join(cmd)}")
            t0 = time.monotonic()
            with open(dest / "optimize.log", "wb") as log:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
            say(f"[suite-optimize] {w.name}: exit {rc} in {time.monotonic() - t0:.0f}s")
        doc = json.loads(path.read_text()) if path.exists() else None
        rows.append(optimize_stage.summary_row(w.name, doc))
    command = "python3 benchmarks/suite_optimize.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    text = f"Command: `{command}`\n\n" + optimize_stage.markdown(rows)
    (out / "optimize.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
