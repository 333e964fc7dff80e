"""Object recycling (PreFix §2.4): a context that allocates many hot objects, few of them
live at once, gets N slots that its allocations take in turn instead of one slot each.

At run time (Figure 7) every allocation of a recycled context increments its counter and
looks at slot `value mod N`: free and large enough, the object goes there; otherwise to the
allocator underneath. So recycling serves *every* allocation of the context, cold ones
too, and it is chosen only where the hot objects are nearly all of them
(`recycle_min_hot_share`), many (`recycle_min_objects`), and at least
`recycle_min_ratio` times as many as are live at once.

N is the most hot objects of the context live at once in the profile. The profile's clock
counts heap accesses, so an object freed and another allocated with no access in between
carry the same time and their order is unknown: we count them as both live (N may be one
too many, never too few). N is also bounded by the context's own `max_live` (exact, over
all its objects). The slot size is the largest size of its hot objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ...profile_format import Object, Profile
from .hot import ObjectKey
from .params import PrefixParams


@dataclass(frozen=True)
class Recycled:
    context: int
    slots: int  # N
    slot_size: int  # the largest hot object's size (before alignment)
    hot_objects: int  # its hot objects (records, over all runs), all served by the N slots
    allocations: int  # all its allocations
    accesses: int  # accesses of its hot objects


def max_live(objects: Iterable[Object]) -> int:
    """Most of these objects live at once, per run (module doc: ties count as overlapping)."""
    events: list[tuple[int, int, int]] = []  # (run, time, +1 alloc before -1 free at a tie)
    for o in objects:
        events.append((o.run, o.alloc_time, 0))
        if o.free_time is not None:
            events.append((o.run, o.free_time, 1))
    events.sort()
    best = live = 0
    run = None
    for r, _, kind in events:
        if r != run:
            run, live = r, 0
        live += 1 if kind == 0 else -1
        best = max(best, live)
    return best


def decide_recycling(profile: Profile, placed: Iterable[ObjectKey], per_context: dict[int, list[Object]],
                     params: PrefixParams) -> dict[int, Recycled]:
    """The contexts among the placed ids that recycle, with their slots."""
    wanted: dict[int, set[int]] = {}
    for c, i in placed:
        wanted.setdefault(c, set()).add(i)
    out: dict[int, Recycled] = {}
    for c, instances in wanted.items():
        ctx = profile.contexts.get(c)
        if ctx is None or len(instances) < params.recycle_min_objects:
            continue
        hot = [o for o in per_context.get(c, ()) if o.instance in instances]
        allocations = max(ctx.objects, len(per_context.get(c, ())))
        if len(hot) < params.recycle_min_objects or len(hot) < params.recycle_min_hot_share * allocations:
            continue
        n = max_live(hot)
        if ctx.max_live:
            n = min(n, ctx.max_live)
        n = max(n, 1)
        if n * params.recycle_min_ratio > len(hot):
            continue
        out[c] = Recycled(c, n, max(o.size for o in hot), len(hot), allocations, sum(o.accesses for o in hot))
    return out
