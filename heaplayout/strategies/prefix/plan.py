"""A PrefixLayout as plan records (docs/plan-format.md: prefix_region, prefix_counter,
prefix_site, prefix_select, prefix_slot), for `heaplayout plan --strategy prefix:VARIANT`.

Each PreFix context is a site of its own; its rules are the planner's adaptive partial call
chains (identify.apcc_rules) with every PreFix context its own label and every other
usable context label 0, exact (dominance 1, no walk budget): an allocation of another
context counted on a site's counter would shift the values of every later one. Contexts
are not collapsed modulo recursion, because an instance number counts the allocations of
one profiled context (docs/prefix.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...plan_format import MAX_RULE_FRAMES, Plan, PlanModule, SelectRule
from ...plan_prefix import MAX_COUNTERS, MAX_SITES, PrefixCounter, PrefixRecords, PrefixSite, PrefixSlot
from ...planning import identify
from ...profile_model import Profile
from .analyze import analyze
from .params import PrefixParams
from .result import ContextRule, PrefixLayout
from .sites import by_call_site


@dataclass
class PrefixPlanned:
    layout: PrefixLayout
    records: PrefixRecords
    rules: identify.RuleTable
    site_of_context: dict[int, int]


def _ranges(values: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for v in sorted(values):
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return tuple((a, b) for a, b in out)


def counter_record(cid: int, r: ContextRule) -> PrefixCounter:
    if r.pattern == "recycle":
        return PrefixCounter(cid, "recycle", r.count)
    if r.pattern == "all":
        return PrefixCounter(cid, "all", r.count)
    if r.pattern == "regular":
        return PrefixCounter(cid, "regular", r.count, r.start, r.stride, tuple(sorted(r.extra)))
    return PrefixCounter(cid, "fixed", 0, ranges=_ranges(r.values))


def within_runtime_limits(layout: PrefixLayout) -> set[int]:
    """The contexts of the hottest counters that the runtime's tables hold (MAX_COUNTERS
    counters, MAX_SITES sites): a counter is kept or dropped with all its contexts, since a
    counter counting fewer contexts would give every later allocation another value. A
    dropped context's slots stay holes in the region; its objects go where the plan's other
    records send them."""
    contexts_of: dict[int, list[int]] = {}
    accesses: dict[int, int] = {}  # counter -> profiled accesses of the objects its slots take
    for r in layout.rules:
        contexts_of.setdefault(r.counter, []).append(r.context)
        accesses[r.counter] = accesses.get(r.counter, 0) + r.accesses

    def heat(counter: int) -> int:
        return accesses[counter]

    kept: set[int] = set()
    ncounters = 0
    for counter in sorted(contexts_of, key=lambda k: (-heat(k), k)):
        if ncounters + 1 > MAX_COUNTERS or len(kept) + len(contexts_of[counter]) > MAX_SITES:
            continue
        ncounters += 1
        kept.update(contexts_of[counter])
    return kept


def prefix_records(profile: Profile, layout: PrefixLayout, usable: set[int],
                   module_index: dict[int, int]) -> PrefixPlanned:
    """The records of one layout; module_index (profile module -> plan module) is extended
    with the modules the rules name."""
    from ...planning.planner import plan_frame  # planner imports this module lazily
    counters: dict[int, int] = {}  # analysis counter id -> dense plan id
    pre = PrefixRecords(region_bytes=layout.region_bytes, region_align=layout.align)
    site_of: dict[int, int] = {}
    kept = within_runtime_limits(layout)
    for r in sorted((r for r in layout.rules if r.context in kept), key=lambda r: (r.counter, r.context)):
        if r.counter not in counters:
            counters[r.counter] = len(counters) + 1
            pre.counters.append(counter_record(counters[r.counter], r))
        site_of[r.context] = len(site_of) + 1
        pre.sites.append(PrefixSite(site_of[r.context], counters[r.counter]))
    slots = [PrefixSlot(counters[s.counter], s.index if s.recycled else s.value, site_of[s.context], s.offset, s.size)
             for s in layout.slots if s.context in kept]
    pre.slots = sorted(slots, key=lambda s: (s.counter, s.value))
    contexts = [identify.LabelledContext(c.id, tuple(c.frames[:MAX_RULE_FRAMES]), c.accesses, site_of.get(c.id, 0),
                                         c.objects)
                for c in profile.contexts.values() if c.id in usable]
    table = identify.apcc_rules(contexts, 1.0, 1.0)
    for r in table.rules:
        for m, _ in r.frames:
            module_index.setdefault(m, len(module_index))
    pre.rules = [SelectRule(r.group, tuple((module_index[m], plan_frame(off)) for m, off in r.frames))
                 for r in table.rules]
    return PrefixPlanned(layout, pre, table, site_of)


def make_prefix_plan(profile: Profile, variant: str, usable: set[int], skips: list[str], *, chunk_size: int,
                     max_object_size: int, params: PrefixParams | None = None, source: str = "",
                     base: Plan | None = None, by_site: bool = False) -> tuple[Plan, PrefixPlanned]:
    """A plan whose placement is the PreFix region of `variant` (hot, hds, hds+hot); with
    `base` (a HALO plan of the same profile), that plan's groups place the objects outside
    the region, in the same file. by_site: objects numbered per call site, as the paper
    does, so that the runtime never walks the stack for them (sites.py)."""
    from ...planning.planner import profile_module_for, usable_contexts  # planner imports this module lazily
    identified_by = "contexts (call chains)"
    if by_site:
        sited = by_call_site(profile)
        profile = sited.profile
        usable = usable_contexts(profile)
        identified_by = (f"call site alone ({len(profile.contexts)} call sites"
                         + (f", {sited.left_out} left out: not every object recorded" if sited.left_out else "")
                         + ")")
    layout = analyze(profile, params, [variant]).layouts[variant]
    index: dict[int, int] = {}
    if base is not None:
        for m in base.modules:
            pm = profile_module_for(profile, m)
            if pm is not None:
                index[pm] = m.index
    planned = prefix_records(profile, layout, usable, index)
    plan = base if base is not None else Plan(strategy="", chunk_size=chunk_size, max_object_size=max_object_size)
    plan.strategy = f"prefix:{variant}"
    have = {m.index for m in plan.modules}
    for mid, i in sorted(index.items(), key=lambda kv: kv[1]):
        if i not in have:
            mod = profile.modules[mid]
            plan.modules.append(PlanModule(i, mod.build_id.lower() if mod.build_id else None, mod.path))
    plan.skips = list(dict.fromkeys(plan.skips + skips))
    plan.prefix = planned.records
    st = layout.stats
    comments = [
        f"prefix:{variant}: region {layout.region_bytes} bytes, {st.slots} slots for {st.objects} profiled objects, "
        f"{st.coverage:.1%} of heap accesses; {len(planned.records.counters)} counters, {len(planned.records.sites)} "
        f"sites, patterns {layout.patterns()}",
        f"identification: {len(planned.rules.rules)} prefix_select rules ({len(planned.rules.overruled)} contexts "
        f"indistinguishable); objects numbered per {identified_by}, not collapsed modulo recursion",
        f"prefix parameters: {layout.parameters}",
    ]
    if base is None:
        plan.comments = [f"made by heaplayout plan from {source or 'a profile'} "
                         f"(exe {profile.header.get('exe', '?')})"] + comments
    else:
        plan.comments = plan.comments + ["objects outside the region: the HALO plan above"] + comments
    return plan, planned


def pre_counters(planned: PrefixPlanned) -> list[PrefixCounter]:
    return planned.records.counters
