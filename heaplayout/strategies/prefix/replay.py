"""Replaying a layout on a profile: which objects the runtime would place, without running.

PreFix's Table 5 compares the profiling run with a long run: the share of heap accesses of
the objects that took a slot (HA), and how many of them were hot. `replay` computes both
from a second profile of the same binary (another input, or the same one as a check): it
walks the profile's allocation trace as the runtime would see it (PreFix Figures 4 and 7):

- contexts are matched by their frames (module build-id or path, offset), as `profile
  merge` matches them; a rule's context absent from the profile places nothing;
- each counter counts the allocations of its contexts, per run, from 0;
- a value with a slot takes it when the slot belongs to the allocating context (a shared
  counter's values can shift onto another context's slot on another input: the runtime
  must check the context too, see docs/prefix.md) and the object fits the slot's bytes;
- a recycled context's value takes slot `value mod N` when it is free and large enough; a
  slot is free once its object was freed. A free at the same clock as the allocation (no
  heap access between them) cannot be ordered by the profile: the slot counts as free (the
  recycling loop frees the oldest object, then allocates), and such placements are counted
  in `tied`, so `placed - tied` is the count if every such free came after the allocation.

An object that is refused goes to the allocator underneath, as at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...profile_model import Object, Profile
from .hot import ObjectKey
from .result import PrefixLayout


@dataclass
class ReplayStats:
    placed: int = 0  # objects that took a slot
    accesses: int = 0  # their accesses in the replayed profile
    heap_accesses: int = 0
    hot_placed: int = 0  # placed objects that are hot in the replayed profile (when it was given)
    slots_used: int = 0  # slots taken at least once
    slots: int = 0
    too_large: int = 0  # value matched, object larger than the slot
    other_context: int = 0  # value matched a slot of another context on the same counter
    busy: int = 0  # recycled slot still taken
    tied: int = 0  # placed in a recycled slot freed at the same clock (module doc)
    missing_contexts: int = 0  # rule contexts the replayed profile does not have

    @property
    def coverage(self) -> float:
        return self.accesses / self.heap_accesses if self.heap_accesses else 0.0


def replay(layout: PrefixLayout, source: Profile, target: Profile,
           hot_keys: set[ObjectKey] | None = None) -> ReplayStats:
    """The objects of `target` that `layout` (made from `source`) would place (module doc).
    `hot_keys`: the target's own hot ids, to count how many placed objects are hot."""
    by_key = {target.context_key(c): c.id for c in target.contexts.values()}
    to_target: dict[int, int] = {}  # source context -> target context
    stats = ReplayStats(heap_accesses=target.heap_accesses or sum(o.accesses for o in target.objects),
                        slots=len(layout.slots))
    for r in layout.rules:
        t = by_key.get(source.context_key(source.contexts[r.context]))
        if t is None:
            stats.missing_contexts += 1
        else:
            to_target[t] = r.context
    rule_of = {r.context: r for r in layout.rules}
    slot_at: dict[tuple[int, int], int] = {}  # (counter, value) -> slot index
    recycled_at: dict[tuple[int, int], int] = {}  # (context, n) -> slot index
    for i, s in enumerate(layout.slots):
        if s.recycled:
            recycled_at[(s.context, s.index)] = i
        else:
            slot_at[(s.counter, s.value)] = i
    used: set[int] = set()
    objs = sorted((o for o in target.objects if o.context in to_target), key=lambda o: (o.run, o.id))
    counters: dict[int, int] = {}
    occupant: dict[int, Object] = {}
    run = None
    for o in objs:
        if o.run != run:
            run, counters, occupant = o.run, {}, {}
        rule = rule_of[to_target[o.context]]
        value = counters.get(rule.counter, 0)
        counters[rule.counter] = value + 1
        if rule.pattern == "recycle":
            i = recycled_at[(rule.context, value % rule.count)]
            prev = occupant.get(i)
            if prev is not None and (prev.free_time is None or prev.free_time > o.alloc_time):
                stats.busy += 1
                continue
            tie = prev is not None and prev.free_time == o.alloc_time
        else:
            tie = False
            i = slot_at.get((rule.counter, value), -1)
            if i < 0:
                continue
            if layout.slots[i].context != rule.context:
                stats.other_context += 1
                continue
        if o.size > layout.slots[i].size:
            stats.too_large += 1
            continue
        stats.tied += tie
        occupant[i] = o
        used.add(i)
        stats.placed += 1
        stats.accesses += o.accesses
        if hot_keys is not None and (o.context, o.instance) in hot_keys:
            stats.hot_placed += 1
    stats.slots_used = len(used)
    return stats
