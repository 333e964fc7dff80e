"""From a profile to a plan: grouping by strategy, identification, and the plan records.

Strategies: `halo` (grouping.py, full-chain identification by adaptive partial call chains),
`hds` and `callsite` (hds.py, identification by the immediate call site).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..plan_format import MAX_RULE_FRAMES, Plan, PlanGroup, PlanModule, SelectRule
from ..profile_model import Profile
from ..strategies import hds
from ..strategies.halo import companions, grouping, shape
from . import identify, recursion

STRATEGIES = ("halo", "hds", "callsite")
# PreFix (docs/prefix.md): apart from STRATEGIES, which optimize's candidates are made of
PREFIX_STRATEGIES = ("prefix:hot", "prefix:hds", "prefix:hds+hot")
DEFAULT_CHUNK_SIZE = 1 << 20  # HALO 5.1: grouped objects come from 1 MiB chunks
DEFAULT_MAX_OBJECT_SIZE = 4096  # HALO 5.1: maximum grouped-object size 4 KiB
# Where ungrouped objects go. HALO forwards them to the allocator underneath ("allocator").
DEFAULT_REST = "allocator"
DEFAULT_REST_MAX_SIZE = 128  # DPA 3.3.2: per-site pools for objects up to 128 bytes
# The runtime skips a frame when its module's file name is exactly a `skip` name (runtime
# plan.c), while the profiler trims modules whose name *contains* a `trim` string. The plan
# lists the usual file names of the libraries the profiler trims; those of the profile's
# own system modules are added (see skip_names).
KNOWN_SYSTEM_LIBRARIES = ("libc.so.6", "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2")
DEFAULT_TRIM = ("vgpreload_", "libc.so", "libc-", "libstdc++.so", "ld-linux", "libgcc_s.so")
# Minimum alignment of grouped objects: "auto" asks for HALO's 8 (section 5) when every
# module the plan names was built by GCC only, which assumes 8 of malloc and new results;
# clang assumes 16 of any result of 16 bytes or more and may use aligned vector stores.
MIN_ALIGNS = ("auto", "8", "16")
# Ours. A group is packed (24-byte objects in 24-byte slots, which straddle lines) when its
# objects meet their own kind this often per access (the profile's loop and walk weights):
# health's list cells 5.3 and patients 2.0 (-8% and -9% D1 misses packed); objects met
# alone lose by straddling (cxx_dom, cxx_netsim: +1-2% packed, loop+walk < 0.2).
PACK_SELF_SHARE = 0.5
# Ours. How a group's fresh space is laid out: "spans" carves a span per size class, as
# every other pool of the runtime does; "interleave" bumps every size in allocation order,
# HALO's group allocator. Spans by default, measured (docs/results.md §17, docs/planning.md
# "a group's sizes interleaved or apart"): lua5.4's halo plan on mimalloc ran 1.31-1.51x
# mimalloc's CPU time interleaved, 0.94-1.17x with spans (one group: 84,000 live objects of
# 19 classes); on the suite spans cut D1 misses 8-29% on six workloads and cost
# prefix_recycle 12%. hds plans keep allocation order: their groups are hot data streams.
GROUP_LAYOUTS = ("spans", "interleave")
DEFAULT_GROUP_LAYOUT = "spans"
# Ours. Identification by rule: where one label has at least this share of the profiled
# allocations under a chain prefix, that prefix decides alone and the others are placed
# with it. Telling the minority apart needs more frames, and then every allocation through
# the prefix walks the stack: measured on cppcheck (Debian, no frame pointers), 4.1M walks
# and replays took about 1.9 s, ~0.47 us each, the cost of several cache misses, while
# the minority's objects gain at most their own misses. 1.0: exact rules (DPA's).
DEFAULT_DOMINANCE = 0.9
# Ours. The most share of the profiled allocations whose call site may need a stack walk;
# past it, the sites that lose the fewest accesses per walked allocation are decided by
# their nearest label alone (identify._spend_walk_budget). The profile cannot say whether a
# walk pays: a walk or replay costs ~0.47 us (cppcheck, above), and what a correctly placed
# object gains is not its access count (sqlite3's walking site loses 217 accesses per walk
# and its exact plan ran 1.08x jemalloc, its walk-free one 1.00x; halo_tokens' loses 17
# and only the exact plan wins). So the default keeps HALO's exact identification and
# `optimize` measures the walk-free plan beside it (its strategy halo-site, budget 0).
DEFAULT_WALK_BUDGET = 1.0


def plan_frame(offset: int) -> int:
    """The plan offset of a profile frame offset.

    Valgrind's stack traces (VG_(get_StackTrace)) record every caller frame as its return
    address minus 1, so that the address falls inside the call instruction; the profile keeps
    that. The runtime compares return addresses (`__builtin_return_address`), so add the 1
    back. Every profile frame the planner uses is a caller frame (the allocation function's
    own frame is trimmed), so the same adjustment applies to all of them.
    """
    return offset + 1


def profile_frame(offset: int) -> int:
    """Inverse of plan_frame, for `plan show --profile`."""
    return offset - 1


@dataclass
class PlannedGroup:
    id: int
    contexts: list[int]  # profile context ids
    weight: int  # halo: affinity inside the group; hds: stream heat; callsite: accesses
    score: float | None = None  # halo: s(G) of Figure 7
    packed: bool = False  # 24-byte objects in 24-byte slots (with min_align 8)
    spans: bool = False  # fresh space per size class (GROUP_LAYOUTS)
    sites: list[hds.Site] = field(default_factory=list)  # hds and callsite: the identifying sites


@dataclass
class PlanResult:
    plan: Plan
    groups: list[PlannedGroup]
    labels: dict[int, int]  # context id -> group (0 = ungrouped), as wanted by the grouping
    rules: identify.RuleTable
    selectors: identify.SelectorSet
    usable: set[int]  # contexts the runtime can identify
    hot_streams: int = 0  # hds: number of hot data streams
    collapsed: recursion.Collapsed | None = None  # the profile modulo recursion that was planned, if it was


def usable_contexts(profile: Profile) -> set[int]:
    """Contexts the runtime can recognise: at least one frame, every frame in a known module
    that the runtime does not skip. (The profiler falls back to a system frame when a stack
    has no program frame at all; such contexts are never grouped.)"""
    ok = set()
    for c in profile.contexts.values():
        if c.frames and all(m in profile.modules and not profile.modules[m].system for m, _ in c.frames):
            ok.add(c.id)
    return ok


def skip_names(profile: Profile) -> list[str]:
    """Exact module file names the runtime must skip: the known system libraries that the
    profile's trim list covers, plus the file names of system modules in the profile."""
    trim_text = profile.header.get("trim", "")
    trim = [t for t in trim_text.split(",") if t] if trim_text and trim_text != "-" else list(DEFAULT_TRIM)
    names = [lib for lib in KNOWN_SYSTEM_LIBRARIES if any(t in lib for t in trim)]
    names += sorted(Path(m.path).name for m in profile.modules.values() if m.system)
    return list(dict.fromkeys(n for n in names if n and " " not in n))


def _halo_groups(profile: Profile, params: grouping.GroupingParams, usable: set[int]) -> list[PlannedGroup]:
    graph = grouping.graph_from_profile(profile, usable, params.walk_weight)
    rep = shape.structures(profile, usable, params.shape_min_share) if params.shape_merge else {c: c for c in usable}
    if params.companion_share > 0:
        pairs = companions.companion_pairs(profile, usable, params.companion_share, params.companion_use)
        rep = companions.join(rep, pairs)
    if all(c == r for c, r in rep.items()):  # nothing contracted: exactly HALO's grouping
        return [PlannedGroup(i, list(g.members), g.weight, g.score)
                for i, g in enumerate(grouping.group_contexts(graph, params), start=1)]
    members: dict[int, list[int]] = {}
    for c in sorted(rep):
        members.setdefault(rep[c], []).append(c)
    groups = grouping.group_contexts(grouping.contract(graph, rep), params)
    return [PlannedGroup(i, [c for r in g.members for c in members.get(r, [r])], g.weight, g.score)
            for i, g in enumerate(groups, start=1)]


def _site_planned(profile: Profile, site_groups: list[hds.SiteGroup], usable: set[int]) -> list[PlannedGroup]:
    out = []
    for i, sg in enumerate(site_groups, start=1):
        sites = set(sg.sites)
        members = sorted(c.id for c in profile.contexts.values() if c.id in usable and c.frames[0] in sites)
        out.append(PlannedGroup(i, members, sg.weight, None, list(sg.sites)))
    return out


def _labelled(profile: Profile, labels: dict[int, int], usable: set[int], depth: int | None) -> list[identify.LabelledContext]:
    return [identify.LabelledContext(c.id, tuple(c.frames if depth is None else c.frames[:depth]), c.accesses,
                                     labels.get(c.id, 0), c.objects)
            for c in profile.contexts.values() if c.id in usable]


def make_plan(profile: Profile, strategy: str = "halo", *,
              grouping_params: grouping.GroupingParams | None = None,
              hds_params: hds.HdsParams | None = None,
              chunk_size: int = DEFAULT_CHUNK_SIZE,
              max_object_size: int | None = None,
              rest: str = DEFAULT_REST, rest_max_size: int = DEFAULT_REST_MAX_SIZE,
              min_align: str = "auto", source: str = "",
              dominance: float = DEFAULT_DOMINANCE, walk_budget: float = DEFAULT_WALK_BUDGET,
              prefix_rest: str = "allocator", group_layout: str = DEFAULT_GROUP_LAYOUT) -> PlanResult:
    """Group, identify and build the plan for one profile. prefix_rest "halo": a prefix
    strategy's plan also holds the HALO plan for the objects outside the region."""
    gp = grouping_params or grouping.GroupingParams()
    hp = hds_params or hds.HdsParams()
    if group_layout not in GROUP_LAYOUTS:
        raise ValueError(f"group layout {group_layout!r}: expected one of {', '.join(GROUP_LAYOUTS)}")
    if max_object_size is None:
        max_object_size = profile.header_int("max_object_size", DEFAULT_MAX_OBJECT_SIZE) or DEFAULT_MAX_OBJECT_SIZE
    if strategy.startswith("prefix:"):  # never modulo recursion: instances count one profiled context
        from ..strategies.prefix.plan import make_prefix_plan
        base = None
        if prefix_rest == "halo":
            base = make_plan(profile, "halo", grouping_params=grouping_params, chunk_size=chunk_size,
                             max_object_size=max_object_size, rest=rest, rest_max_size=rest_max_size,
                             min_align=min_align, source=source, dominance=dominance, walk_budget=walk_budget,
                             group_layout=group_layout)
        elif prefix_rest != "allocator":
            raise ValueError(f"prefix rest {prefix_rest!r}: expected allocator or halo")
        usable = usable_contexts(profile)
        # walk budget 0 (no stack walks): PreFix numbers objects per call site, as the paper does
        plan, planned = make_prefix_plan(profile, strategy.removeprefix("prefix:"), usable, skip_names(profile),
                                         chunk_size=chunk_size, max_object_size=max_object_size, source=source,
                                         base=base.plan if base else None, by_site=walk_budget == 0)
        if base is not None:
            return PlanResult(plan, base.groups, base.labels, base.rules, base.selectors, base.usable,
                              collapsed=base.collapsed)
        return PlanResult(plan, [], {}, planned.rules, identify.halo_selectors([]), usable)
    # contexts compared modulo recursion (recursion.py), so that a deeper or other path
    # through a recursive function at run time still meets the rules; only when every
    # program module's function table could be read, since the runtime then collapses
    # every walk the same way (the plan's `recursion function` record)
    functions = recursion.function_map(profile)
    profiled_contexts = len(profile.contexts)
    collapsed = None
    if not functions.unreadable:
        collapsed = recursion.collapse_profile(profile, functions)
        profile = collapsed.profile
    usable = usable_contexts(profile)
    streams = 0
    if strategy == "halo":
        groups = _halo_groups(profile, gp, usable)
        depth: int | None = MAX_RULE_FRAMES  # chains recorded deeper are cut to what a rule can hold
        described = gp.describe()
    elif strategy == "hds":
        site_groups, hot = hds.hds_groups(profile, hp, max_object_size, usable)
        streams = len(hot)
        groups = _site_planned(profile, site_groups, usable)
        depth = 1
        described = hp.describe()
    elif strategy == "callsite":
        groups = _site_planned(profile, hds.callsite_groups(profile, gp.coverage, gp.gthresh, usable), usable)
        depth = 1
        described = f"coverage={gp.coverage} gthresh={gp.gthresh}"
    else:
        raise ValueError(f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES + PREFIX_STRATEGIES)})")

    labels = {c: g.id for g in groups for c in g.contexts}
    contexts = _labelled(profile, labels, usable, depth)
    table = identify.apcc_rules(contexts, dominance, walk_budget,
                                total_allocations=sum(c.objects for c in profile.contexts.values()))
    selectors = identify.halo_selectors(contexts)
    _check_rules(table, contexts)

    plan = Plan(strategy=strategy, chunk_size=chunk_size, max_object_size=max_object_size, rest=rest,
                rest_max_size=rest_max_size if rest == "callsite" else 0,
                recursion_function=collapsed is not None)
    index: dict[int, int] = {}
    for mid in sorted({m for r in table.rules for m, _ in r.frames}):
        index[mid] = len(index)
        mod = profile.modules[mid]
        plan.modules.append(PlanModule(index[mid], mod.build_id.lower() if mod.build_id else None, mod.path))
    plan.skips = skip_names(profile)
    plan.min_align, why = choose_min_align(min_align, plan.modules)
    for g in groups:
        g.packed = plan.min_align == 8 and self_share(profile, g.contexts) >= PACK_SELF_SHARE
        g.spans = group_layout == "spans" and strategy != "hds"
    plan.groups = [PlanGroup(g.id, len(g.contexts), g.weight, g.packed, g.spans) for g in groups]
    plan.rules = [SelectRule(r.group, tuple((index[m], plan_frame(off)) for m, off in r.frames)) for r in table.rules]
    plan.comments = [
        f"made by heaplayout plan from {source or 'a profile'} (exe {profile.header.get('exe', '?')})",
        f"parameters: {described}",
        f"identification: {len(table.rules)} rules with {table.total_frames} frames (longest "
        f"{table.max_depth}, {table.ungrouping_rules} back to ungrouped, {len(table.overruled)} "
        f"indistinguishable contexts); HALO selectors would need {selectors.conjunctions} conjunctions, "
        f"{selectors.terms} terms, {selectors.sites} call sites",
        f"min_align {plan.min_align}: {why}",
        walk_budget_comment(table.walk_budget),
        f"recursion: {profiled_contexts} profiled contexts are {len(profile.contexts)} modulo recursion"
        if collapsed else "recursion: not collapsed (cannot read the function table of "
        + ", ".join(f"{Path(profile.modules[m].path).name} ({why})" for m, why in functions.unreadable.items()) + ")",
    ]
    return PlanResult(plan, groups, labels, table, selectors, usable, streams, collapsed)


def walk_budget_comment(wb: identify.WalkBudget | None) -> str:
    if wb is None:
        return "walk budget: none"
    text = (f"walk budget {wb.budget:.2%} of {wb.allocations} profiled allocations: sites needing a walk "
            f"held {wb.share_before:.2%}")
    if wb.collapsed_sites:
        text += (f"; {wb.collapsed_sites} of {wb.walking_sites} such sites decided by their first frame, "
                 f"{wb.share_after:.2%} left, {wb.lost_accesses} accesses placed otherwise")
    return text


def self_share(profile: Profile, contexts: list[int]) -> float:
    """How often the group's objects are met near another object of their own context, per
    access: the loop edges (co-allocatable pairs) and walk weights (the others) over the
    accesses, summed over the contexts."""
    accesses = sum(profile.contexts[c].accesses for c in contexts if c in profile.contexts)
    pairs = sum(profile.affinity.get((c, c), 0) + profile.walk.get(c, 0) for c in contexts)
    return pairs / accesses if accesses else 0.0


def choose_min_align(wanted: str, modules: list[PlanModule]) -> tuple[int, str]:
    """The plan's min_align and why: 16 unless 8 is asked for. `auto` was 8 when every
    module was built by GCC, which changed what valid programs do: glibc documents 16-byte
    alignment for every malloc result, and programs rely on it (a 24-byte float block
    stored with movaps crashed; pointer tags in the 4 low bits of 24-byte nodes gave a
    wrong result; docs/results.md section 30). `modules` is kept for the signature."""
    if wanted not in MIN_ALIGNS:
        raise ValueError(f"min_align {wanted!r}: expected one of {', '.join(MIN_ALIGNS)}")
    if wanted == "8":
        return 8, "asked for (--min-align 8: the program must not rely on malloc's 16-byte alignment)"
    if wanted == "16":
        return 16, "asked for"
    return 16, "malloc's 16-byte alignment is part of its contract (--min-align 8 packs, where the program allows it)"


def _check_rules(table: identify.RuleTable, contexts: list[identify.LabelledContext]) -> None:
    """Every context must come out of the runtime's matching with the label we meant."""
    classify = identify.Classifier(table.rules)
    for c in contexts:
        want = table.overruled.get(c.id, (c.group, c.group))[1]
        got = classify(c.chain)
        if got != want:
            raise AssertionError(f"internal error: rules give context {c.id} group {got}, wanted {want}")


def profile_module_for(profile: Profile, module: PlanModule) -> int | None:
    """The profile module a plan module names (same build-id, else same path)."""
    for m in profile.modules.values():
        if module.build_id and m.build_id and m.build_id.lower() == module.build_id:
            return m.id
    for m in profile.modules.values():
        if m.path == module.path or Path(m.path).name == Path(module.path).name:
            return m.id
    return None
