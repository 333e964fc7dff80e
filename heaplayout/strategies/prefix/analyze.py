"""From a profile to PreFix layouts: hot objects, streams, Algorithm 1, recycling, the cap,
counters and offsets, for the variants of the paper's §3.2:

- `hot`: every hot object, in allocation order;
- `hds`: the objects of the reconstituted streams, in RHDS order, then the streams' singletons;
- `hds+hot`: as `hds`, then the other hot objects in allocation order.

The hot selection and the stream analysis are done once and shared by the variants; each
variant then decides its recycled contexts, applies the byte cap and assigns counters over
the ids it places (a counter's pattern depends on which ids it must match).
"""

from __future__ import annotations

from typing import Iterable

from ...profile_model import Object, Profile
from .complete import complete_progressions
from .hot import HotObject, ObjectKey, complete_objects, select_hot
from .instances import assign_counters
from .layout import apply_cap, place
from .params import VARIANTS, PrefixParams
from .reconstitute import Reconstituted, reconstitute
from .recycle import decide_recycling
from .result import ContextRule, PrefixAnalysis, PrefixLayout, StreamStats, VariantStats
from .streams import observed_hds


def per_context_trace(profile: Profile) -> dict[int, list[Object]]:
    """Each context's objects in allocation order ((run, id))."""
    out: dict[int, list[Object]] = {}
    for o in profile.objects:
        out.setdefault(o.context, []).append(o)
    for objs in out.values():
        objs.sort(key=lambda o: (o.run, o.id))
    return out


def variant_order(variant: str, alloc_order: list[ObjectKey], rec: Reconstituted | None) -> list[ObjectKey]:
    if variant == "hot":
        return list(alloc_order)
    if rec is None:
        raise ValueError(f"variant {variant} needs the stream analysis")
    streams = rec.order
    if variant == "hds":
        return streams
    if variant == "hds+hot":
        placed = set(streams)
        return streams + [k for k in alloc_order if k not in placed]
    raise ValueError(f"unknown variant {variant!r} (expected one of {', '.join(VARIANTS)})")


def analyze(profile: Profile, params: PrefixParams | None = None,
            variants: Iterable[str] = VARIANTS) -> PrefixAnalysis:
    params = params or PrefixParams()
    params.check()
    variants = list(variants)
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r} (expected one of {', '.join(VARIANTS)})")
    sel = select_hot(profile, params)
    completed = complete_progressions(sel.objects, sel.pool, params)
    sel.objects += completed
    sel.completed = len(completed)
    hot = {h.key: h for h in sel.objects}
    per_context = per_context_trace(profile)
    complete = complete_objects(profile)
    rec = None
    stream_stats = StreamStats()
    if any(v != "hot" for v in variants):
        ohds = observed_hds(profile, params, set(hot))
        rec = reconstitute([o.objects for o in ohds])
        stream_stats = StreamStats(len(ohds), len(rec.streams), sum(len(s) for s in rec.streams),
                                   len(rec.singletons), rec.included, rec.merged, rec.split, rec.covered)
    alloc_order = sorted(hot, key=lambda k: hot[k].first)
    excluded: dict[str, int] = {}
    for why in sel.excluded_contexts.values():
        excluded[why] = excluded.get(why, 0) + 1
    layouts = {}
    for v in variants:
        lay = build_variant(profile, v, variant_order(v, alloc_order, rec), hot, per_context, complete, params)
        lay.hot_objects = len(hot)
        lay.hot_bytes = sum(h.size for h in hot.values())
        lay.hot_accesses = sel.accesses
        lay.completed = sel.completed
        lay.streams = stream_stats
        lay.excluded = excluded
        layouts[v] = lay
    return PrefixAnalysis(layouts, sel.heap_accesses, len(profile.objects))


def build_variant(profile: Profile, variant: str, order: list[ObjectKey], hot: dict[ObjectKey, HotObject],
                  per_context: dict[int, list[Object]], complete: set[int], params: PrefixParams) -> PrefixLayout:
    """One variant's layout from its order of ids (module doc)."""
    sizes = {k: hot[k].size for k in order}
    accesses = {k: hot[k].accesses for k in order}
    recycled = decide_recycling(profile, order, per_context, params)
    units_before = len({k for k in order if k[0] not in recycled}) + len(recycled)
    order, recycled = apply_cap(order, sizes, accesses, recycled, params.max_bytes, params.align)
    own = [k for k in order if k[0] not in recycled]
    counters = assign_counters(own, {k: hot[k].first for k in own}, per_context, complete, params)
    counter_of = {c: cnt.id for cnt in counters for c in cnt.contexts}
    value_of = {k: v for cnt in counters for k, v in cnt.value_of.items()}
    next_id = len(counters) + 1
    for c in sorted(recycled):
        counter_of[c] = next_id
        next_id += 1
    slots, region = place(order, sizes, recycled, counter_of, value_of, params.align)

    per_ctx_slots: dict[int, int] = {}
    per_ctx_acc: dict[int, int] = {}
    for k in own:
        per_ctx_slots[k[0]] = per_ctx_slots.get(k[0], 0) + 1
        per_ctx_acc[k[0]] = per_ctx_acc.get(k[0], 0) + accesses[k]
    rules: list[ContextRule] = []
    for cnt in counters:
        p = cnt.pattern
        for c in cnt.contexts:
            rules.append(ContextRule(c, cnt.id, p.kind, p.start, p.stride, p.count,
                                     p.values if p.kind == "fixed" else (), p.extra, cnt.shared,
                                     per_ctx_slots[c], per_ctx_acc[c]))
    for c in sorted(recycled):
        r = recycled[c]
        rules.append(ContextRule(c, counter_of[c], "recycle", 0, 1, r.slots, (), (), False, r.slots, r.accesses))
    objects = len(own) + sum(r.objects for r in recycled.values())
    covered = sum(accesses[k] for k in own) + sum(r.accesses for r in recycled.values())
    stats = VariantStats(variant, region, len(slots), objects, sum(sizes[k] for k in own), covered,
                         profile.heap_accesses or sum(o.accesses for o in profile.objects))
    units_after = len(own) + len(recycled)
    return PrefixLayout(variant, region, params.align, rules, slots, stats,
                        dropped_by_cap=units_before - units_after, parameters=params.describe())
