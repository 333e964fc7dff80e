"""Instance identification (PreFix §2.2): counters and the patterns of their hot values.

The runtime keeps a counter per static allocation context (for us a profile context: the
call chain the plan's rules identify) and increments it at every allocation there; the
value before the increment is the allocation's instance, PreFix's dynamic object id. The
values whose objects have a slot are written as one of three patterns, so that the check
at run time is short:

- **all**: every value 0..n-1 of the profiled run (n = the context's allocations): no test
  but a bound, the value is the slot's index;
- **regular**: an arithmetic progression, `start`, `stride`, `count` values (at least
  `min_regular_ids` of them, fewer always form one);
- **fixed**: any other set, listed.

**Shared counters.** Several contexts can increment one counter; an allocation's value is
then its position among the allocations of all those contexts. The paper shares "if
sharing results in object ids ... that follow one of three supported patterns", checked by
simulating the shared counter on the allocation trace. Every set is trivially a fixed list,
so we share only where the shared values form an *all* or *regular* pattern: that is where
a counter saves a rule (mcf's six sites with one hot object each, allocated in turn, become
values 0..5 of one counter). A shared value depends on how the contexts interleave, which
another input may change; sharing only where it shortens the rule keeps that risk where it
buys something. Contexts are tried in the order of their first hot allocation, each joining
the group before it when the group's simulated values still form a pattern; groups over
`share_max_allocations` allocations, contexts lacking some `O` records
(hot.complete_objects) and, in a merged profile, groups whose values differ between runs
are not shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...profile_format import Object
from .hot import ObjectKey
from .params import PrefixParams


@dataclass(frozen=True)
class Pattern:
    kind: str  # "all", "regular" or "fixed"
    start: int
    stride: int  # 0 for fixed
    count: int  # how many values match
    values: tuple[int, ...]  # the values, ascending (the rule itself for fixed)

    @property
    def cost(self) -> int:
        """Values a rule must list: a progression is one rule, a fixed set one per value."""
        return len(self.values) if self.kind == "fixed" else 1


@dataclass(frozen=True)
class Counter:
    id: int
    contexts: tuple[int, ...]  # the contexts that increment it
    pattern: Pattern
    value_of: dict[ObjectKey, int]  # each placed (context, instance) -> its counter value

    @property
    def shared(self) -> bool:
        return len(self.contexts) > 1


def classify(values: Sequence[int], allocations: int | None, min_regular: int) -> Pattern:
    """The pattern of a set of counter values; `allocations` is how many values the counter
    took in the profiled run (None when unknown: no "all" then)."""
    v = tuple(sorted(set(values)))
    if not v:
        raise ValueError("no values to classify")
    if allocations is not None and v[0] == 0 and v[-1] == len(v) - 1 == allocations - 1:
        return Pattern("all", 0, 1, len(v), v)
    if len(v) >= max(2, min_regular):
        stride = v[1] - v[0]
        if all(b - a == stride for a, b in zip(v, v[1:])):
            return Pattern("regular", v[0], stride, len(v), v)
    return Pattern("fixed", v[0], 0, len(v), v)


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


def _own_counter(cid: int, context: int, instances: list[int], complete: bool,
                 per_context: dict[int, list[Object]], params: PrefixParams) -> Counter:
    allocations = _run_allocations([context], per_context) if complete else None
    return Counter(cid, (context,), classify(instances, allocations, params.min_regular_ids),
                   {(context, i): i for i in instances})


def _try_share(contexts: list[int], hot: dict[int, list[int]], per_context: dict[int, list[Object]],
               params: PrefixParams) -> tuple[Pattern, dict[ObjectKey, int]] | None:
    if _run_allocations(contexts, per_context) > params.share_max_allocations:
        return None
    values = shared_values(contexts, per_context)
    if values is None:
        return None
    mine = {(c, i): values[(c, i)] for c in contexts for i in hot[c] if (c, i) in values}
    if len(mine) != sum(len(hot[c]) for c in contexts):
        return None  # a hot id with no record in this profile's trace
    pattern = classify(list(mine.values()), _run_allocations(contexts, per_context), params.min_regular_ids)
    return (pattern, mine) if pattern.kind != "fixed" else None


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
    groups: list[tuple[list[int], tuple[Pattern, dict[ObjectKey, int]] | None]] = []
    for c in contexts:
        if groups and c in complete and all(g in complete for g in groups[-1][0]):
            members = groups[-1][0] + [c]
            shared = _try_share(members, hot, per_context, params)
            if shared is not None:
                groups[-1] = (members, shared)
                continue
        groups.append(([c], None))
    out: list[Counter] = []
    for members, shared in groups:
        cid = first_id + len(out)
        if shared is None:
            out.append(_own_counter(cid, members[0], hot[members[0]], members[0] in complete, per_context, params))
        else:
            out.append(Counter(cid, tuple(members), shared[0], shared[1]))
    return out
