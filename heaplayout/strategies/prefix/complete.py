"""Completing progressions: the coverage cut should not break a regular pattern.

Hot objects are chosen by accesses until a coverage is reached, and where many objects are
about equally hot (the suite's prefix_hot: every 16th record, walked alike) the cut falls
among them: the chosen ids are a progression with holes, a fixed list of thousands of
values, where the program's own pattern is "every 16th". Here a context's chosen ids on the
lattice of their longest progression (instances.longest_progression, from the first to the
last chosen id on it) are completed with the missing ids when

- at least `complete_min_share` of the lattice is chosen already, and
- every missing id has at least `complete_min_heat` times the median accesses of the
  chosen ones on the lattice (they are as hot; a cold id in a hole keeps the list fixed).

All or nothing: a lattice only partly filled would leave the pattern as irregular as it
was, for more bytes.
"""

from __future__ import annotations

from statistics import median

from .hot import HotObject, ObjectKey
from .instances import longest_progression
from .params import PrefixParams


def complete_progressions(chosen: list[HotObject], pool: dict[ObjectKey, HotObject],
                          params: PrefixParams) -> list[HotObject]:
    """The ids to add to `chosen` (module doc), per context in instance order."""
    by_context: dict[int, dict[int, HotObject]] = {}
    for h in chosen:
        by_context.setdefault(h.context, {})[h.instance] = h
    added: list[HotObject] = []
    for c, mine in sorted(by_context.items()):
        if len(mine) < max(2, params.min_regular_ids):
            continue
        values = sorted(mine)
        start, stride, _ = longest_progression(values)
        on = [v for v in values if (v - start) % stride == 0]
        lattice = range(on[0], on[-1] + 1, stride)
        missing = [v for v in lattice if v not in mine]
        if not missing or len(lattice) - len(missing) < params.complete_min_share * len(lattice):
            continue
        floor = params.complete_min_heat * median(mine[v].accesses for v in lattice if v in mine)
        extra = [pool.get((c, v)) for v in missing]
        if all(h is not None and h.accesses >= floor for h in extra):
            added.extend(h for h in extra if h is not None)
    return added
