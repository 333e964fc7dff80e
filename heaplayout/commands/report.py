"""`heaplayout report`: one self-contained HTML page from a profile, a plan, simulations and
measurements (docs/report.md).

    heaplayout report [--profile P] [--plan F] [--bench J] [--simulate S ...] [--optimize J] -o report.html
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..report import ReportInputs, write_report
from ..report.inputs import ReportError

PROG = "heaplayout report"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="one HTML page: heap-access heatmap before/after a plan, affinity graph and groups, "
        "per-context table, measurements",
        description="Write one self-contained HTML file (no network: its script and style are inline) from any "
        "of: a profile, a plan, `heaplayout simulate --contexts --json` results, a `heaplayout bench --json` "
        "result and an optimize.json. Sections whose input is missing say which option fills them.",
    )
    p.add_argument("--profile", metavar="P", type=Path, help="profile (heaplayout profile -o P)")
    p.add_argument("--plan", metavar="F", type=Path, help="plan (heaplayout plan -o F); needs --profile for the groups")
    p.add_argument("--bench", metavar="J", type=Path, help="heaplayout bench --json J")
    p.add_argument("--simulate", metavar="S", type=Path, action="append", default=[],
                   help="heaplayout simulate [--contexts] --json S; repeat for several layouts (the first is the "
                   "reference of the others' changes)")
    p.add_argument("--optimize", metavar="J", type=Path, help="optimize.json of heaplayout optimize: the "
                   "recommendation and its evidence, and its race rounds when --bench is not given")
    p.add_argument("-o", "--output", metavar="FILE", default="report.html", help="HTML file (default report.html)")
    p.set_defaults(func=report_command)


def report_command(args: argparse.Namespace) -> int:
    if args.program:
        print(f"{PROG}: takes no program; it reads files (see heaplayout report --help)", file=sys.stderr)
        return 2
    inputs = ReportInputs(profile=args.profile, plan=args.plan, bench=args.bench, simulate=list(args.simulate),
                          optimize=args.optimize)
    try:
        rep = write_report(inputs, args.output)
    except ReportError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"{PROG}: {args.output}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(f"report: {args.output} ({len(rep.html) // 1024} KiB, {len(rep.heatmaps)} heatmaps, "
          f"built in {rep.seconds:.1f} s)", file=sys.stderr)
    return 0
