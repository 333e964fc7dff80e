"""Object recycling (PreFix §2.4): a context with hot objects that allocates many objects,
few of them live at once, gets N slots that its allocations take in turn instead of one
slot per hot id.

At run time (Figure 7) *every* allocation of a recycled context increments its counter and
looks at slot `value mod N`: free and large enough, the object goes there; otherwise to the
allocator underneath. Cold objects of the context take slots too, so what matters is all
its objects, not only the hot ones:

- N is the most objects of the context live at once: the profiler's `max_live` (exact:
  it counts allocations and frees in the order they happen). Only when a cut profile lacks
  it is N computed from the objects' clocks, where an object freed and another allocated
  with no heap access in between carry the same time and their order is unknown: we count
  them as both live (one slot too many, never one too few). N counted over the hot objects
  alone would be too few whenever cold objects of the context are live among them;
- the context is recycled when it allocates at least `recycle_min_objects` objects and at
  least `recycle_min_ratio` times N (in the run with the most);
- the slot size is the largest of its placed (hot) ids: a larger object goes to the
  allocator underneath (one outlier would otherwise size all N slots: lua's string buffers,
  304 slots of 64 KiB);
- and recycling must not grow the region: N slots take at most the bytes the context's
  placed ids would take in slots of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ...profile_model import Object, Profile
from .hot import ObjectKey
from .layout import slot_bytes
from .params import PrefixParams


@dataclass(frozen=True)
class Recycled:
    context: int
    slots: int  # N
    slot_size: int  # the largest of its placed ids (before alignment)
    objects: int  # its objects that fit a slot (records, over all runs): the N slots serve them in turn
    accesses: int  # their accesses


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
    """The contexts among the placed ids that recycle, with their slots (module doc)."""
    wanted: dict[int, set[int]] = {}
    for c, i in placed:
        wanted.setdefault(c, set()).add(i)
    out: dict[int, Recycled] = {}
    for c in sorted(wanted):
        ctx = profile.contexts.get(c)
        objs = per_context.get(c, [])
        if ctx is None or not objs:
            continue
        size: dict[int, int] = {}
        for o in objs:
            if o.instance in wanted[c]:
                size[o.instance] = max(size.get(o.instance, 0), o.size)
        if not size:
            continue
        per_run: dict[int, int] = {}
        for o in objs:
            per_run[o.run] = per_run.get(o.run, 0) + 1
        allocations = max(per_run.values())
        if len(per_run) == 1:
            allocations = max(allocations, ctx.objects)  # with --objects=accessed some have no record
        n = max(1, ctx.max_live or max_live(objs))
        if allocations < params.recycle_min_objects or allocations < params.recycle_min_ratio * n:
            continue
        slot = max(size.values())
        if n * slot_bytes(slot, params.align) > sum(slot_bytes(z, params.align) for z in size.values()):
            continue
        fit = [o for o in objs if o.size <= slot_bytes(slot, params.align)]
        out[c] = Recycled(c, n, slot, len(fit), sum(o.accesses for o in fit))
    return out
