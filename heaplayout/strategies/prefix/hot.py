"""Hot objects: PreFix's object id is (allocation context, instance), and the hot ones are
the most accessed ids up to a coverage of all heap accesses.

The profile's `O` records give, per object, its context, its instance (the n-th object of
that context, from 0) and its loads and stores over the whole run. A merged profile holds
several runs whose instances each restart at 0: an id is then hot by the accesses of all
its runs together, and its size is the largest any run gave it (one slot serves them all).

Objects the runtime could not recognise are not eligible: contexts without a program frame
(planner.usable_contexts), aligned allocations (memalign and friends may ask for more than
a slot's 16), and, by default, contexts that allocate from several threads (their instance
numbers follow the scheduler).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...planning.planner import usable_contexts
from ...profile_model import Object, Profile
from .params import PrefixParams

ObjectKey = tuple[int, int]  # (context id, instance): PreFix's object id


@dataclass(frozen=True)
class HotObject:
    context: int
    instance: int
    accesses: int  # loads + stores, over all runs
    size: int  # the largest size any run gave this id
    first: tuple[int, int]  # (run, object id) of its first allocation: the allocation order

    @property
    def key(self) -> ObjectKey:
        return (self.context, self.instance)


@dataclass
class HotSelection:
    objects: list[HotObject]  # chosen, most accessed first
    heap_accesses: int  # all heap accesses of the profile (the coverage's denominator)
    candidates: int  # eligible ids with at least one access
    excluded_contexts: dict[int, str] = field(default_factory=dict)  # context -> why not eligible
    pool: dict[ObjectKey, HotObject] = field(default_factory=dict)  # every eligible id with accesses
    completed: int = 0  # ids added to complete a progression (complete.py)

    @property
    def accesses(self) -> int:
        return sum(o.accesses for o in self.objects)

    @property
    def coverage(self) -> float:
        return self.accesses / self.heap_accesses if self.heap_accesses else 0.0


def excluded_contexts(profile: Profile, params: PrefixParams) -> dict[int, str]:
    """Contexts whose objects cannot take a slot, with the reason."""
    usable = usable_contexts(profile)
    threads: dict[int, set[int]] = {}
    if params.single_thread_contexts:
        for o in profile.objects:
            threads.setdefault(o.context, set()).add(o.tid)
    out: dict[int, str] = {}
    for c in profile.contexts.values():
        if c.id not in usable:
            out[c.id] = "no program frame"
        elif c.kind == "a":
            out[c.id] = "aligned allocation"
        elif len(threads.get(c.id, ())) > 1:
            out[c.id] = "allocated by several threads"
    return out


def aggregate(objects: list[Object], skip: set[int] | dict[int, str]) -> dict[ObjectKey, HotObject]:
    """One entry per (context, instance), runs added up."""
    acc: dict[ObjectKey, list[int]] = {}
    first: dict[ObjectKey, tuple[int, int]] = {}
    for o in objects:
        if o.context in skip:
            continue
        key = (o.context, o.instance)
        entry = acc.get(key)
        if entry is None:
            acc[key] = [o.accesses, o.size]
            first[key] = (o.run, o.id)
        else:
            entry[0] += o.accesses
            entry[1] = max(entry[1], o.size)
            first[key] = min(first[key], (o.run, o.id))
    return {k: HotObject(k[0], k[1], a, s, first[k]) for k, (a, s) in acc.items()}


def select_hot(profile: Profile, params: PrefixParams) -> HotSelection:
    """The most accessed eligible ids until their accesses reach `coverage` of all heap
    accesses (or the eligible ones run out). The byte cap is applied later (layout.py), once
    recycling has said what each object costs in the region."""
    params.check()
    skip = excluded_contexts(profile, params)
    entries = [h for h in aggregate(profile.objects, skip).values() if h.accesses > 0]
    entries.sort(key=lambda h: (-h.accesses, h.first))
    total = profile.heap_accesses or sum(o.accesses for o in profile.objects)
    target = params.coverage * total
    chosen: list[HotObject] = []
    running = 0
    for h in entries:
        if running >= target:
            break
        chosen.append(h)
        running += h.accesses
    return HotSelection(chosen, total, len(entries), skip, {h.key: h for h in entries})


def allocation_trace(profile: Profile) -> dict[int, list[Object]]:
    """Per run, its objects in allocation order (the object id is the allocation sequence
    number)."""
    runs: dict[int, list[Object]] = {}
    for o in profile.objects:
        runs.setdefault(o.run, []).append(o)
    for objs in runs.values():
        objs.sort(key=lambda o: o.id)
    return runs


def complete_objects(profile: Profile) -> set[int]:
    """Contexts whose every allocation has an `O` record (a profile made with
    --objects=accessed leaves out objects never accessed): only on those can a shared
    counter be simulated or an "every instance" pattern be claimed."""
    if profile.header.get("objects", "all") not in ("all", ""):
        return set()
    seen: dict[int, int] = {}
    for o in profile.objects:
        seen[o.context] = seen.get(o.context, 0) + 1
    return {c.id for c in profile.contexts.values() if seen.get(c.id, 0) == c.objects}
