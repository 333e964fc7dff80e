"""Text summary and JSON of a PreFix analysis."""

from __future__ import annotations

import json
from pathlib import Path

from ...profile_model import Profile
from .instances import value_ranges
from .replay import ReplayStats
from .result import ContextRule, PrefixAnalysis, PrefixLayout


def _bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _rule_text(r: ContextRule) -> str:
    if r.pattern == "recycle":
        return f"recycle N={r.count}"
    if r.pattern == "fixed":
        runs = value_ranges(r.values)
        shown = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:4]) + (",..." if len(runs) > 4 else "")
        text = f"fixed {{{shown}}} ({r.count} values in {len(runs)} runs)"
    else:
        text = f"{r.pattern} start={r.start} stride={r.stride} count={r.count}"
        if r.extra:
            text += " + {" + ",".join(map(str, r.extra)) + "}"
    return text + (f" shared counter {r.counter}" if r.shared else "")


def summary(analysis: PrefixAnalysis, profile: Profile, detail: str | None, top: int = 10) -> str:
    first = next(iter(analysis.layouts.values()))
    lines = [f"exe {profile.header.get('exe', '?')}: {analysis.heap_accesses} heap accesses, "
             f"{analysis.profile_objects} object records"
             + (" (stream truncated)" if profile.stream_truncated else "")]
    hot_share = first.hot_accesses / analysis.heap_accesses if analysis.heap_accesses else 0.0
    lines.append(f"hot objects: {first.hot_objects} ids ({first.completed} of them completing a progression), "
                 f"{_bytes(first.hot_bytes)}, {hot_share:.1%} of heap accesses")
    if first.excluded:
        lines.append("contexts not eligible: " + ", ".join(f"{n} {why}" for why, n in sorted(first.excluded.items())))
    s = first.streams
    if s.ohds or any(v != "hot" for v in analysis.layouts):
        lines.append(f"hot data streams: {s.ohds} observed over hot objects -> {s.rhds} reconstituted "
                     f"({s.rhds_objects} objects) + {s.singletons} singletons; Algorithm 1: {s.included} included "
                     f"unchanged, {s.merged} merged, {s.split} split, {s.covered} already covered")
    lines.append("")
    lines.append(f"{'variant':<8} {'region':>10} {'slots':>7} {'objects':>8} {'coverage':>8} {'contexts':>8} "
                 f"{'counters':>8} {'capped':>6}")
    for v, lay in analysis.layouts.items():
        st = lay.stats
        lines.append(f"{v:<8} {_bytes(lay.region_bytes):>10} {st.slots:>7} {st.objects:>8} {st.coverage:>8.1%} "
                     f"{len(lay.rules):>8} {lay.counters:>8} {lay.dropped_by_cap:>6}")
    if detail is not None and detail in analysis.layouts:
        lines += ["", *_detail(analysis.layouts[detail], profile, top)]
    return "\n".join(lines)


def _detail(lay: PrefixLayout, profile: Profile, top: int) -> list[str]:
    pats = ", ".join(f"{n} {p}" for p, n in sorted(lay.patterns().items()))
    shared = sum(1 for r in lay.rules if r.shared)
    out = [f"variant {lay.variant}: region {lay.region_bytes} bytes (align {lay.align}), {len(lay.rules)} contexts "
           f"({pats}), {lay.counters} counters, {shared} contexts on a shared counter"]
    out.append("top contexts by accesses in the region:")
    for r in sorted(lay.rules, key=lambda r: -r.accesses)[:top]:
        c = profile.contexts.get(r.context)
        where = profile.describe_frame(*c.frames[0]) if c and c.frames else "?"
        out.append(f"  ctx {r.context}: {r.slots} slots, {r.accesses} accesses, {_rule_text(r)}  {where}")
    out.append("first slots (context, instance or recycled index, offset, size):")
    for sl in lay.slots[:top]:
        idx = f"r{sl.index}" if sl.recycled else str(sl.index)
        out.append(f"  ({sl.context}, {idx}, {sl.offset}, {sl.size})")
    return out


def write_json(analysis: PrefixAnalysis, path: str | Path) -> None:
    doc = {"heap_accesses": analysis.heap_accesses, "profile_objects": analysis.profile_objects,
           "variants": {v: lay.to_dict() for v, lay in analysis.layouts.items()}}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def replay_summary(results: dict[str, ReplayStats], name: str) -> str:
    lines = [f"replayed on {name} (Table 5: HA = heap accesses of the placed objects; hot = of them, hot there "
             "too; tied = placed in a recycled slot freed at the same clock)",
             f"{'variant':<8} {'placed':>8} {'HA':>7} {'hot':>7} {'slots used':>11} {'too large':>9} "
             f"{'other ctx':>9} {'busy':>7} {'tied':>7} {'no ctx':>6}"]
    for v, r in results.items():
        hot = r.hot_placed / r.placed if r.placed else 0.0
        lines.append(f"{v:<8} {r.placed:>8} {r.coverage:>7.1%} {hot:>7.1%} {f'{r.slots_used}/{r.slots}':>11} "
                     f"{r.too_large:>9} {r.other_context:>9} {r.busy:>7} {r.tied:>7} {r.missing_contexts:>6}")
    return "\n".join(lines)
