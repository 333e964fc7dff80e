"""python3 -m heaplayout.strategies.prefix PROFILE [--variant V|all] [--coverage X]
[--max-bytes N] [--json FILE] [--replay OTHER]: the PreFix layouts of a profile, summarised,
and what they would place on another profile of the same binary."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ...profile_reader import ProfileError, read_profile
from .analyze import analyze
from .params import VARIANTS, PrefixParams
from .hot import select_hot
from .replay import replay
from .report import replay_summary, summary, write_json


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m heaplayout.strategies.prefix",
                                 description="PreFix layouts (hot objects by context and instance, reordered "
                                             "by hot data streams, recycled slots) from a heaplayout profile")
    ap.add_argument("profile")
    ap.add_argument("--variant", default="all", choices=[*VARIANTS, "all"],
                    help="the variant to detail (all: the three side by side, hds+hot detailed)")
    d = PrefixParams()
    ap.add_argument("--coverage", type=float, default=d.coverage, help=f"share of heap accesses (default {d.coverage})")
    ap.add_argument("--max-bytes", type=int, default=None, help="cap on the region's size (default: none)")
    ap.add_argument("--hds-max-refs", type=int, default=d.hds_max_refs,
                    help=f"stream references analysed (default {d.hds_max_refs})")
    ap.add_argument("--share-counters", action="store_true",
                    help="share a counter between contexts where the shared values form a progression")
    ap.add_argument("--top", type=int, default=10, help="contexts and slots to list (default 10)")
    ap.add_argument("--json", metavar="FILE", help="write the layouts (every slot) as JSON")
    ap.add_argument("--replay", metavar="OTHER", help="another profile of the same binary (another input): "
                    "what each layout would place there")
    args = ap.parse_args(argv)
    params = replace(d, coverage=args.coverage, max_bytes=args.max_bytes, hds_max_refs=args.hds_max_refs,
                     share_counters=args.share_counters)
    try:
        params.check()
        profile = read_profile(args.profile)
    except (ProfileError, ValueError, OSError) as e:
        print(f"prefix: {e}", file=sys.stderr)
        return 2
    if not profile.complete:
        print("prefix: the profile has no END record (the run was cut): counts are partial", file=sys.stderr)
    variants = list(VARIANTS) if args.variant == "all" else [args.variant]
    analysis = analyze(profile, params, variants)
    print(summary(analysis, profile, "hds+hot" if args.variant == "all" else args.variant, args.top))
    if args.json:
        write_json(analysis, args.json)
    if args.replay:
        try:
            other = read_profile(args.replay)
        except (ProfileError, OSError) as e:
            print(f"prefix: {e}", file=sys.stderr)
            return 2
        hot = {h.key for h in select_hot(other, params).objects}
        results = {v: replay(lay, profile, other, hot) for v, lay in analysis.layouts.items()}
        print()
        print(replay_summary(results, args.replay))
    return 0


if __name__ == "__main__":
    sys.exit(main())
