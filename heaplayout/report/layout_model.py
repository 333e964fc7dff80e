"""Where each profiled object would sit: the profile's allocations and frees replayed through
a model of an allocator, and through the plan's pools.

The profile records which object every heap reference touched and when each object was
allocated and freed, not addresses (hlprof tracks objects, and its run's addresses are
valgrind's allocator's anyway). The heatmap needs addresses, so they are modelled:

- **allocator alone** (`glibc_model.GlibcModel`): glibc's malloc, free and realloc, bins,
  thread cache, coalescing and splitting (that module says what is left out).
  benchmarks/report_model/fidelity.py measures how many objects it puts where glibc does
  (docs/report.md).
- **under the plan** (`PlanModel`): objects of a grouped context (up to the plan's
  max_object_size) are bump-allocated in their group's chunks of the plan's chunk size:
  all sizes in allocation order, or, in a group the plan marks `spans` and in call-site
  pools, each size class from its own span of SPAN_BYTES carved from the chunk; a freed
  slot is reused most recently freed first by the same size class of the same group
  (runtime/src: size_class.c, alloc.c); with `rest callsite` the other small objects get
  one pool per call site; everything else goes to the same GlibcModel. Chunk colouring,
  per-thread pools, per-chunk free lists and PreFix regions are not modelled.

A model's addresses are only as good as the model: the heatmap shows the shape of the
placement (what is next to what, how far apart), not the addresses a run would print.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..plan_format import Plan
from ..profile_model import Object, Profile
from .glibc_model import GlibcModel, Segment

MMAP_BASE = 1 << 40  # model address spaces of the three kinds of memory, far apart
POOL_BASE = 1 << 44
SPAN_BYTES = 16384  # the runtime's default HEAPLAYOUT_SPAN_BYTES (tunables.h)


def slot_size(size: int, align: int) -> int:
    """The runtime's size classes (size_class.c): 8-byte steps up to 256 bytes, then four per
    power of two; 16-aligned unless the plan allows 8 (min_align 8)."""
    size = max(size, 1)
    if size <= 256:
        return (size + align - 1) // align * align
    p = 1 << ((size - 1).bit_length() - 1)
    step = p // 4
    return (size + step - 1) // step * step


class PlanModel:
    def __init__(self, plan: Plan, group_of: dict[int, int], site_of: dict[int, object]) -> None:
        self.plan = plan
        self.group_of = group_of
        self.site_of = site_of  # context -> its call site (innermost frame), for rest callsite
        self.align = 8 if plan.min_align == 8 else 16
        self.under = GlibcModel()
        self.chunks = 0
        self.current: dict[object, tuple[int, int]] = {}  # pool -> (chunk index, bytes used)
        self.free_slots: dict[tuple[object, int], list[tuple[int, int]]] = {}
        self.owner: dict[int, object] = {}  # chunk index -> pool
        self.pool_of_object: dict[int, tuple[object, int]] = {}
        self.span: dict[tuple[object, int], tuple[int, int, int]] = {}  # (pool, class) -> chunk, next, end
        self.spans_groups = {g.id for g in plan.groups if g.spans}

    def pool(self, obj: Object) -> object | None:
        g = self.group_of.get(obj.context, 0)
        if g and obj.size <= self.plan.max_object_size:
            return g
        if self.plan.rest == "callsite" and obj.size <= self.plan.rest_max_size:
            return ("site", self.site_of.get(obj.context))
        return None

    def malloc(self, obj: Object) -> tuple[Segment, int]:
        pool = self.pool(obj)
        if pool is None:
            return self.under.malloc(obj.size)
        cls = slot_size(obj.size, self.align)
        free = self.free_slots.get((pool, cls))
        if free:
            chunk, off = free.pop()
        elif not isinstance(pool, int) or pool in self.spans_groups:
            chunk, off = self._span_slot(pool, cls)
        else:
            chunk, off = self._bump(pool, cls)
        self.pool_of_object[obj.id] = (pool, cls)
        return ("chunk", chunk), off

    def _bump(self, pool: object, nbytes: int, align: int = 1) -> tuple[int, int]:
        chunk, used = self.current.get(pool, (-1, self.plan.chunk_size))
        used = (used + align - 1) // align * align
        if used + nbytes > self.plan.chunk_size:
            chunk, used = self.chunks, 0
            self.chunks += 1
            self.owner[chunk] = pool
        self.current[pool] = (chunk, used + nbytes)
        return chunk, used

    def _span_slot(self, pool: object, cls: int) -> tuple[int, int]:
        """The next fresh slot of the class's span, carving a new span (16-aligned, a whole
        number of slots) from the pool's chunk when it runs out (alloc.c span_carve)."""
        chunk, at, end = self.span.get((pool, cls), (-1, 0, 0))
        if at + cls > end:
            chunk, at = self._bump(pool, max(SPAN_BYTES, cls) // cls * cls, 16)
            end = at + max(SPAN_BYTES, cls) // cls * cls
        self.span[(pool, cls)] = (chunk, at + cls, end)
        return chunk, at

    def realloc(self, obj: Object, old: Object, seg: Segment, offset: int) -> tuple[Segment, int]:
        """The runtime's realloc moves between pools; within the allocator underneath, glibc's."""
        if seg[0] != "chunk" and self.pool(obj) is None:
            return self.under.realloc(seg, offset, old.size, obj.size)
        new = self.malloc(obj)
        self.free(old, seg, offset)
        return new

    def free(self, obj: Object, seg: Segment, offset: int) -> None:
        if seg[0] == "chunk":
            pool, cls = self.pool_of_object.pop(obj.id)
            self.free_slots.setdefault((pool, cls), []).append((seg[1], offset))
        else:
            self.under.free(seg, offset, obj.size)


@dataclass
class Band:
    """A stretch of the displayed address axis: one kind of memory or one pool's chunks."""
    label: str
    start: int
    end: int


@dataclass
class Layout:
    title: str
    position: dict[int, int]  # object id -> position on the displayed (compacted) address axis
    model_address: dict[int, int]  # object id -> model address (for page and line counts)
    bands: list[Band] = field(default_factory=list)

    @property
    def extent(self) -> int:
        return self.bands[-1].end if self.bands else 0


ALLOC, FREE, REALLOC = 0, 1, 2


@dataclass(frozen=True)
class Event:
    action: int  # ALLOC, FREE or REALLOC (obj replaces old, which is freed by it)
    obj: Object
    old: Object | None = None


def realloc_pairs(profile: Profile) -> dict[int, Object]:
    """new object id -> the object a realloc moved it from. The profile records a realloc as a
    new object at the realloc call's context and the old object freed at the same clock
    (docs/profile-format.md); a context whose first object came from realloc (kind r) takes
    every object from realloc. Among the objects freed at the new one's clock, the latest
    allocated before it is taken (realloc(NULL, n) finds none: a malloc)."""
    freed_at: dict[tuple[int, int], list[Object]] = {}
    for o in profile.objects:
        if o.free_time is not None:
            freed_at.setdefault((o.run, o.free_time), []).append(o)
    pairs: dict[int, Object] = {}
    taken: set[int] = set()
    for o in sorted(profile.objects, key=lambda o: (o.run, o.id)):
        ctx = profile.contexts.get(o.context)
        if ctx is None or ctx.kind != "r":
            continue
        olds = [x for x in freed_at.get((o.run, o.alloc_time), ()) if x.id < o.id and x.id not in taken]
        if olds:
            old = max(olds, key=lambda x: x.id)
            pairs[o.id] = old
            taken.add(old.id)
    return pairs


def events(profile: Profile) -> list[Event]:
    """Allocations, frees and reallocs in the order they happened: by run, then clock; at one
    clock frees before allocations (no heap access lay between, and a program that frees and
    allocates again without touching memory meets its free first), except an object's own
    free, which follows everything at its clock."""
    pairs = realloc_pairs(profile)
    moved = {old.id for old in pairs.values()}
    keyed: list[tuple[tuple, Event]] = []
    for o in profile.objects:
        old = pairs.get(o.id)
        keyed.append(((o.run, o.alloc_time, 1, o.id), Event(REALLOC, o, old) if old else Event(ALLOC, o)))
        if o.free_time is not None and o.id not in moved:
            keyed.append(((o.run, o.free_time, 2 if o.free_time == o.alloc_time else 0, o.id), Event(FREE, o)))
    keyed.sort(key=lambda e: e[0])
    return [e for _k, e in keyed]


def replay_glibc(profile: Profile, ordered: list[Event] | None = None) -> dict[int, tuple[Segment, int]]:
    """object id -> (segment, offset) the glibc model gives it."""
    m = GlibcModel()
    placed: dict[int, tuple[Segment, int]] = {}
    live: dict[int, tuple[Segment, int]] = {}
    for ev in ordered if ordered is not None else events(profile):
        o = ev.obj
        if ev.action == ALLOC:
            live[o.id] = placed[o.id] = m.malloc(o.size)
        elif ev.action == REALLOC:
            seg, off = live.pop(ev.old.id)
            live[o.id] = placed[o.id] = m.realloc(seg, off, ev.old.size, o.size)
        else:
            seg, off = live.pop(o.id)
            m.free(seg, off, o.size)
    return placed


def _compact(title: str, placed: dict[int, tuple[Segment, int]], sizes: dict[int, int],
             chunk_size: int, chunk_label: dict[int, str]) -> Layout:
    """Lay the segments one after the other on the displayed axis, each only as long as its
    highest byte used (a pool chunk's unused tail and the gaps between kinds of memory are
    left out), and record each object's model address."""
    high: dict[Segment, int] = {}
    for oid, (seg, off) in placed.items():
        high[seg] = max(high.get(seg, 0), off + sizes[oid])
    order = sorted(high, key=lambda s: ({"heap": 0, "mmap": 1, "chunk": 2}[s[0]], s[1]))
    base: dict[Segment, int] = {}
    bands: list[Band] = []
    at = 0
    for seg in order:
        base[seg] = at
        label = {"heap": "allocator heap", "mmap": "large (mmap)"}.get(seg[0]) or chunk_label[seg[1]]
        if bands and bands[-1].label == label:
            bands[-1].end = at + high[seg]
        else:
            bands.append(Band(label, at, at + high[seg]))
        at += high[seg]
    kind_base = {"heap": 0, "mmap": MMAP_BASE, "chunk": POOL_BASE}
    position = {oid: base[seg] + off for oid, (seg, off) in placed.items()}
    model = {oid: kind_base[seg[0]] + (seg[1] * chunk_size if seg[0] == "chunk" else 0) + off
             for oid, (seg, off) in placed.items()}
    return Layout(title, position, model, bands)


def allocator_layout(profile: Profile, ordered: list[Event] | None = None) -> Layout:
    """`ordered`: events(profile), when the caller already has them."""
    sizes = {o.id: max(1, o.size) for o in profile.objects}
    return _compact("allocator alone (glibc model)", replay_glibc(profile, ordered), sizes, 0, {})


def plan_layout(profile: Profile, plan: Plan, group_of: dict[int, int], ordered: list[Event] | None = None) -> Layout:
    site_of = {c.id: (c.frames[0] if c.frames else None) for c in profile.contexts.values()}
    m = PlanModel(plan, group_of, site_of)
    placed: dict[int, tuple[Segment, int]] = {}
    live: dict[int, tuple[Segment, int]] = {}
    for ev in ordered if ordered is not None else events(profile):
        o = ev.obj
        if ev.action == ALLOC:
            live[o.id] = placed[o.id] = m.malloc(o)
        elif ev.action == REALLOC:
            seg, off = live.pop(ev.old.id)
            live[o.id] = placed[o.id] = m.realloc(o, ev.old, seg, off)
        else:
            seg, off = live.pop(o.id)
            m.free(o, seg, off)
    labels = {}
    for chunk, pool in m.owner.items():
        labels[chunk] = f"group {pool}" if isinstance(pool, int) else "call-site pools"
    sizes = {o.id: max(1, o.size) for o in profile.objects}
    return _compact(f"under the plan ({plan.strategy}, modelled)", placed, sizes, plan.chunk_size, labels)
