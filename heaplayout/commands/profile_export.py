"""`heaplayout profile export FILE --pprof OUT [--folded OUT]`: a profile for other tools.

The pprof file opens in `go tool pprof` (and anything that reads profile.proto); the folded
file feeds flamegraph.pl, inferno or speedscope (heaplayout/profile_export.py).
"""

from __future__ import annotations

import argparse
import sys

from ..profile_export import FOLDED_VALUES, write_folded, write_pprof
from ..profile_reader import ProfileError, read_profile

PROG = "heaplayout profile export"


def export_command(files: list[str], args: argparse.Namespace) -> int:
    if len(files) != 1 or not (args.pprof or args.folded):
        print(f"{PROG}: usage: heaplayout profile export FILE [--pprof OUT] [--folded OUT "
              f"[--folded-value {'|'.join(FOLDED_VALUES)}]] (at least one output)", file=sys.stderr)
        return 2
    try:
        # context totals, frames and symbols are all it needs
        prof = read_profile(files[0], with_objects=False, with_stream=False)
    except (OSError, ProfileError) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    if not prof.complete:
        print(f"{PROG}: warning: {files[0]} is incomplete (the run was cut short): the totals are those of the "
              "objects freed before the cut", file=sys.stderr)
    try:
        if args.pprof:
            write_pprof(prof, args.pprof)
            print(f"pprof: {args.pprof} ({len(prof.contexts)} contexts; sample types objects, bytes, accesses)",
                  file=sys.stderr)
        if args.folded:
            write_folded(prof, args.folded, args.folded_value)
            print(f"folded stacks: {args.folded} (value: {args.folded_value})", file=sys.stderr)
    except OSError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    return 0
