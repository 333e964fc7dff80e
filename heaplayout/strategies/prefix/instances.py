"""Instance identification (PreFix §2.2): counters and the patterns of their hot values.

The runtime keeps a counter per static allocation context (for us a profile context: the
call chain the plan's rules identify) and increments it at every allocation there; the
value before the increment is the allocation's instance, PreFix's dynamic object id. The
values whose objects have a slot are written as one of three patterns, so that the check
at run time is short:

- **all**: every value 0..n-1 of the profiled run (n = the context's allocations): no test
  but a bound, the value is the slot's index;
- **regular**: an arithmetic progression, `start`, `stride`, `count` values (at least
  `min_regular_ids` of them, fewer always form one), plus at most `max_regular_extras`
  values outside it, listed (the paper's "regular & fixed": the suite's prefix_hot has
  instances 0, 1, 2 and every 16th from 5). The progression is the longest one with the
  most common gap between successive values;
- **fixed**: any other set, listed.

**Shared counters.** Several contexts can increment one counter; an allocation's value is
then its position among the allocations of all those contexts. The paper shares "if
sharing results in object ids ... that follow one of three supported patterns", checked by
simulating the shared counter on the allocation trace. Every set is trivially a fixed list,
so we share only where the shared values form an *all* or *regular* pattern whose rule is
shorter than the two it replaces (`Pattern.cost`): that is where a counter saves a rule
(mcf's six sites with one hot object each, allocated in turn, become values 0..5 of one
counter). A shared value depends on how the contexts interleave, which another input may
change; sharing only where it shortens the rule keeps that risk where it buys something.
Contexts are tried in the order of their first hot allocation, each joining the group
before it when that test passes; groups over `share_max_allocations` allocations, contexts
lacking some `O` records (hot.complete_objects), groups allocated from more than one
thread in a run (the runtime counts a counter in its owner thread only) and, in a merged
profile, groups whose values differ between runs are not shared.

Sharing is off by default (`share_counters`): the paper shares to save instrumented code,
which a preloaded runtime does not pay, and a shared value shifts whenever one of the
contexts allocates differently on another input (measured in docs/prefix.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...profile_model import Object
from .hot import ObjectKey
from .params import PrefixParams


@dataclass(frozen=True)
class Pattern:
    kind: str  # "all", "regular" or "fixed"
    start: int
    stride: int  # 0 for fixed
    count: int  # values of the progression (fixed: of the list)
    values: tuple[int, ...]  # every value, ascending (the rule itself for fixed)
    extra: tuple[int, ...] = ()  # regular: the listed values outside the progression

    @property
    def cost(self) -> int:
        """Values a rule must list: a progression is one, a fixed set one per value."""
        return len(self.values) if self.kind == "fixed" else 1 + len(self.extra)


@dataclass(frozen=True)
class Counter:
    id: int
    contexts: tuple[int, ...]  # the contexts that increment it
    pattern: Pattern
    value_of: dict[ObjectKey, int]  # each placed (context, instance) -> its counter value

    @property
    def shared(self) -> bool:
        return len(self.contexts) > 1


def longest_progression(v: Sequence[int]) -> tuple[int, int, int]:
    """(start, stride, count) of the longest arithmetic progression in ascending distinct
    values whose stride is the most common gap between successive values (ties: the smaller
    gap, then the earlier start)."""
    if len(v) < 2:
        return (v[0], 1, 1) if v else (0, 1, 0)
    gaps: dict[int, int] = {}
    for a, b in zip(v, v[1:]):
        gaps[b - a] = gaps.get(b - a, 0) + 1
    stride = min(gaps, key=lambda g: (-gaps[g], g))
    present = set(v)
    best = (v[0], stride, 1)
    for x in v:
        if x - stride in present:
            continue  # not the start of a run
        n = 1
        while x + n * stride in present:
            n += 1
        if n > best[2]:
            best = (x, stride, n)
    return best


def classify(values: Sequence[int], allocations: int | None, min_regular: int, max_extras: int = 0) -> Pattern:
    """The pattern of a set of counter values; `allocations` is how many values the counter
    took in the profiled run (None when unknown: no "all" then)."""
    v = tuple(sorted(set(values)))
    if not v:
        raise ValueError("no values to classify")
    if allocations is not None and v[0] == 0 and v[-1] == len(v) - 1 == allocations - 1:
        return Pattern("all", 0, 1, len(v), v)
    start, stride, count = longest_progression(v)
    if count >= max(2, min_regular) and len(v) - count <= max_extras:
        run = set(range(start, start + stride * count, stride))
        return Pattern("regular", start, stride, count, v, tuple(x for x in v if x not in run))
    return Pattern("fixed", v[0], 0, len(v), v)


def value_ranges(values: Sequence[int]) -> list[tuple[int, int]]:
    """Ascending values as inclusive (first, last) runs of consecutive values: how a fixed
    list is written compactly (a plan record, a report)."""
    out: list[tuple[int, int]] = []
    for x in sorted(set(values)):
        if out and x == out[-1][1] + 1:
            out[-1] = (out[-1][0], x)
        else:
            out.append((x, x))
    return out


def shared_values(contexts: Sequence[int], per_context: dict[int, list[Object]]) -> dict[ObjectKey, int] | None:
    """Simulate one counter over the allocations of `contexts` (each run on its own): the
    value of each (context, instance); None when runs disagree on an id's value."""
    objs = sorted((o for c in contexts for o in per_context.get(c, ())), key=lambda o: (o.run, o.id))
    out: dict[ObjectKey, int] = {}
    run, position = None, 0
    for o in objs:
        if o.run != run:
            run, position = o.run, 0
        key = (o.context, o.instance)
        if out.setdefault(key, position) != position:
            return None
        position += 1
    return out


def _run_allocations(contexts: Sequence[int], per_context: dict[int, list[Object]]) -> int:
    """The most allocations one run made at these contexts together."""
    per_run: dict[int, int] = {}
    for c in contexts:
        for o in per_context.get(c, ()):
            per_run[o.run] = per_run.get(o.run, 0) + 1
    return max(per_run.values(), default=0)


def _own_pattern(context: int, instances: list[int], complete: bool, per_context: dict[int, list[Object]],
                 params: PrefixParams) -> tuple[Pattern, dict[ObjectKey, int]]:
    allocations = _run_allocations([context], per_context) if complete else None
    return (classify(instances, allocations, params.min_regular_ids, params.max_regular_extras),
            {(context, i): i for i in instances})


def _one_thread(contexts: Sequence[int], per_context: dict[int, list[Object]]) -> bool:
    """Each run allocated at these contexts from one thread: the runtime numbers a counter's
    allocations in the one thread that owns it (docs/prefix.md, "Threads")."""
    tids: dict[int, set[int]] = {}
    for c in contexts:
        for o in per_context.get(c, ()):
            tids.setdefault(o.run, set()).add(o.tid)
    return all(len(t) == 1 for t in tids.values())


def _try_share(contexts: list[int], hot: dict[int, list[int]], per_context: dict[int, list[Object]],
               params: PrefixParams) -> tuple[Pattern, dict[ObjectKey, int]] | None:
    allocations = _run_allocations(contexts, per_context)
    if allocations > params.share_max_allocations or not _one_thread(contexts, per_context):
        return None
    values = shared_values(contexts, per_context)
    if values is None:
        return None
    mine = {(c, i): values[(c, i)] for c in contexts for i in hot[c] if (c, i) in values}
    if len(mine) != sum(len(hot[c]) for c in contexts):
        return None  # a hot id with no record in this profile's trace
    return classify(list(mine.values()), allocations, params.min_regular_ids, params.max_regular_extras), mine


def assign_counters(placed: Sequence[ObjectKey], first_use: dict[ObjectKey, tuple[int, int]],
                    per_context: dict[int, list[Object]], complete: set[int], params: PrefixParams,
                    first_id: int = 1) -> list[Counter]:
    """Counters for the placed ids, shared where that gives a shorter rule (module doc)."""
    hot: dict[int, list[int]] = {}
    for c, i in placed:
        hot.setdefault(c, []).append(i)
    for ids in hot.values():
        ids.sort()
    start = {c: min(first_use[(c, i)] for i in ids) for c, ids in hot.items()}
    contexts = sorted(hot, key=lambda c: (start[c], c))
    groups: list[tuple[list[int], Pattern, dict[ObjectKey, int]]] = []
    for c in contexts:
        own = _own_pattern(c, hot[c], c in complete, per_context, params)
        if params.share_counters and groups and c in complete and all(g in complete for g in groups[-1][0]):
            members, pattern, _ = groups[-1]
            shared = _try_share(members + [c], hot, per_context, params)
            # shared only where one rule is shorter than the two (module doc)
            if shared is not None and shared[0].kind != "fixed" and shared[0].cost < pattern.cost + own[0].cost:
                groups[-1] = (members + [c], shared[0], shared[1])
                continue
        groups.append(([c], own[0], own[1]))
    return [Counter(first_id + n, tuple(members), pattern, values)
            for n, (members, pattern, values) in enumerate(groups)]
