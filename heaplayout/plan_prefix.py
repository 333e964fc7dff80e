"""The PreFix records of the plan file (docs/plan-format.md, docs/prefix.md): prefix_region,
prefix_counter, prefix_site, prefix_select and prefix_slot. Their reader is the twin of
runtime/src/plan_parse.c's (parse_counter, parse_slot, check_slots_apart): the same checks in
the same order with the same messages; plan_format calls in here for these records.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from dataclasses import dataclass, field
from typing import Iterator

MAX_REGION = 1 << 30
MIN_REGION_ALIGN = 16
MAX_REGION_ALIGN = 4096
MAX_COUNTERS = 4096
MAX_SITES = 4096
MAX_RANGES = 65536
MAX_EXTRAS = 8
MAX_SLOTS = 1 << 24
MAX_RECYCLE = 1 << 24
MAX_VALUE = 0xFFFFFFFF
COUNTER_KINDS = ("all", "regular", "fixed", "recycle")
_VALUE_RANGE = "must be 0..4294967295"


@dataclass(frozen=True)
class PrefixCounter:
    id: int
    kind: str  # all, regular, fixed, recycle
    count: int = 0  # all: values 0..count-1; regular: progression length; recycle: slots
    start: int = 0
    stride: int = 1
    extra: tuple[int, ...] = ()  # regular
    ranges: tuple[tuple[int, int], ...] = ()  # fixed: (lo, hi) inclusive

    @property
    def nvalues(self) -> int:
        if self.kind == "regular":
            return self.count + len(self.extra)
        if self.kind == "fixed":
            return sum(hi - lo + 1 for lo, hi in self.ranges)
        return self.count

    def values(self) -> Iterator[int]:
        """Its values in ascending order (recycle: the slot numbers)."""
        if self.kind == "regular":
            return heapq.merge(range(self.start, self.start + self.stride * self.count, self.stride), self.extra)
        if self.kind == "fixed":
            return itertools.chain.from_iterable(range(lo, hi + 1) for lo, hi in self.ranges)
        return iter(range(self.count))

    def text(self) -> str:
        if self.kind == "regular":
            return " ".join(map(str, ["regular", self.start, self.stride, self.count, *self.extra]))
        if self.kind == "fixed":
            return "fixed " + " ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)
        return f"{self.kind} {self.count}"


@dataclass(frozen=True)
class PrefixSite:
    id: int
    counter: int


@dataclass(frozen=True)
class PrefixSlot:
    counter: int
    value: int  # recycle: the slot number
    site: int
    offset: int
    size: int


@dataclass
class PrefixRecords:
    """What a plan says about its region; region_bytes 0: none."""
    region_bytes: int = 0
    region_align: int = 16
    counters: list[PrefixCounter] = field(default_factory=list)
    sites: list[PrefixSite] = field(default_factory=list)
    rules: list = field(default_factory=list)  # SelectRule, group = site (0: no site)
    slots: list[PrefixSlot] = field(default_factory=list)

    def lines(self) -> list[str]:
        from .plan_format import format_frame
        if not self.region_bytes:
            return []
        out = [f"prefix_region {self.region_bytes} {self.region_align}"]
        out += [f"prefix_counter {c.id} {c.text()}" for c in self.counters]
        out += [f"prefix_site {s.id} {s.counter}" for s in self.sites]
        out += [f"prefix_select {r.group} {' '.join(map(format_frame, r.frames))}" for r in self.rules]
        out += [f"prefix_slot {s.counter} {s.value} {s.site} {s.offset} {s.size}" for s in self.slots]
        return out


class SlotWalk:
    """The slots of one counter come as its values in ascending order: where the reader is."""

    def __init__(self) -> None:
        self.counter = 0
        self.index = 0
        self.values: Iterator[int] = iter(())
        self.expected: int | None = None
        self.slot_lines: list[int] = []

    def begin(self, counter: PrefixCounter) -> None:
        self.counter = counter.id
        self.index = 0
        self.values = counter.values()
        self.expected = next(self.values, None)

    def advance(self) -> None:
        self.index += 1
        self.expected = next(self.values, None)


def _refused(line: int, reason: str) -> Exception:
    from .plan_format import _Refused
    return _Refused(line, reason)


def parse_region(line: int, fields: list[str], pre: PrefixRecords) -> None:
    from .plan_format import _arity, _bounded, _show
    _arity(line, "prefix_region", fields, 2)
    pre.region_bytes = _bounded(line, "prefix_region bytes", fields[0], 1, MAX_REGION, "must be 1..1073741824")
    pow2 = "must be a power of two from 16 to 4096"
    pre.region_align = _bounded(line, "prefix_region align", fields[1], MIN_REGION_ALIGN, MAX_REGION_ALIGN, pow2)
    if pre.region_align & (pre.region_align - 1):
        raise _refused(line, f"prefix_region align {_show(fields[1])}: {pow2}")


def parse_counter(line: int, fields: list[str], pre: PrefixRecords, nranges: list[int]) -> None:
    from .plan_format import _bounded, _number, _show
    if len(fields) < 2:
        raise _refused(line, "prefix_counter needs an id and a kind")
    n = len(pre.counters) + 1
    _bounded(line, "prefix_counter id", fields[0], n, n, "prefix_counter ids must be 1, 2, 3, ... in order")
    if n > MAX_COUNTERS:
        raise _refused(line, f"too many prefix counters (the runtime takes at most {MAX_COUNTERS})")
    kind = fields[1]
    if kind in ("all", "recycle"):
        if len(fields) != 3:
            raise _refused(line, f"prefix_counter {kind} takes a count")
        if kind == "all":
            count = _bounded(line, "prefix_counter all", fields[2], 1, MAX_VALUE, "must be 1..4294967295")
        else:
            count = _bounded(line, "prefix_counter recycle", fields[2], 1, MAX_RECYCLE, "must be 1..16777216")
        pre.counters.append(PrefixCounter(n, kind, count))
    elif kind == "regular":
        if not 5 <= len(fields) <= 5 + MAX_EXTRAS:
            raise _refused(line, f"prefix_counter regular takes START STRIDE COUNT and at most {MAX_EXTRAS} extra values")
        start = _bounded(line, "prefix_counter start", fields[2], 0, MAX_VALUE, _VALUE_RANGE)
        stride = _bounded(line, "prefix_counter stride", fields[3], 1, MAX_VALUE, "must be 1..4294967295")
        count = _bounded(line, "prefix_counter count", fields[4], 1, MAX_VALUE, "must be 1..4294967295")
        if count - 1 > (MAX_VALUE - start) // stride:
            raise _refused(line, "prefix_counter regular: the progression passes 4294967295")
        extra: list[int] = []
        for text in fields[5:]:
            v = _bounded(line, "prefix_counter extra", text, 0, MAX_VALUE, _VALUE_RANGE)
            if extra and v <= extra[-1]:
                raise _refused(line, f"prefix_counter extra {_show(text)}: extra values must be ascending")
            if v >= start and (v - start) % stride == 0 and (v - start) // stride < count:
                raise _refused(line, f"prefix_counter extra {_show(text)}: already in the progression")
            extra.append(v)
        pre.counters.append(PrefixCounter(n, kind, count, start, stride, tuple(extra)))
    elif kind == "fixed":
        if len(fields) < 3:
            raise _refused(line, "prefix_counter fixed needs at least one range")
        ranges: list[tuple[int, int]] = []
        for text in fields[2:]:
            a, dash, b = text.partition("-")
            lo, hi = _number(a), _number(b if dash else a)
            if lo is None or hi is None:
                raise _refused(line, f"prefix_counter range: '{_show(text)}' is not a number or A-B")
            if lo > MAX_VALUE or hi > MAX_VALUE:
                raise _refused(line, f"prefix_counter range {_show(text)}: values {_VALUE_RANGE}")
            if lo > hi:
                raise _refused(line, f"prefix_counter range {_show(text)}: must be A-B with A <= B")
            if ranges and lo <= ranges[-1][1]:
                raise _refused(line, f"prefix_counter range {_show(text)}: ranges must be ascending and disjoint")
            if nranges[0] == MAX_RANGES:
                raise _refused(line, f"too many fixed ranges (the runtime takes at most {MAX_RANGES})")
            nranges[0] += 1
            ranges.append((lo, hi))
        pre.counters.append(PrefixCounter(n, kind, len(ranges), ranges=tuple(ranges)))
    else:
        raise _refused(line, f"prefix_counter kind '{_show(kind)}': expected all, regular, fixed or recycle")


def parse_site(line: int, fields: list[str], pre: PrefixRecords) -> None:
    from .plan_format import _arity, _bounded
    _arity(line, "prefix_site", fields, 2)
    n = len(pre.sites) + 1
    _bounded(line, "prefix_site id", fields[0], n, n, "prefix_site ids must be 1, 2, 3, ... in order")
    if n > MAX_SITES:
        raise _refused(line, f"too many prefix sites (the runtime takes at most {MAX_SITES})")
    counter = _bounded(line, "prefix_site counter", fields[1], 1, len(pre.counters),
                       f"no such counter (counters are 1..{len(pre.counters)})")
    pre.sites.append(PrefixSite(n, counter))


def complete(line: int, upto: int, pre: PrefixRecords, walk: SlotWalk) -> None:
    """Counters from the current one up to (not including) `upto` must have all their slots."""
    if 1 <= walk.counter < upto and walk.expected is not None:
        raise _refused(line, f"counter {walk.counter} has no slot for its value {walk.expected}")
    for k in range(walk.counter + 1, upto):
        walk.begin(pre.counters[k - 1])
        raise _refused(line, f"counter {k} has no slot for its value {walk.expected}")


def parse_slot(line: int, fields: list[str], pre: PrefixRecords, walk: SlotWalk) -> None:
    from .plan_format import _arity, _bounded
    _arity(line, "prefix_slot", fields, 5)
    if len(pre.slots) == MAX_SLOTS:
        raise _refused(line, f"too many prefix_slot records (the runtime takes at most {MAX_SLOTS})")
    nc, ns, region, align = len(pre.counters), len(pre.sites), pre.region_bytes, pre.region_align
    counter = _bounded(line, "prefix_slot counter", fields[0], 1, nc, f"no such counter (counters are 1..{nc})")
    value = _bounded(line, "prefix_slot value", fields[1], 0, MAX_VALUE, _VALUE_RANGE)
    site = _bounded(line, "prefix_slot site", fields[2], 1, ns, f"no such site (sites are 1..{ns})")
    offset = _bounded(line, "prefix_slot offset", fields[3], 0, region - 1, f"outside the region ({region} bytes)")
    size = _bounded(line, "prefix_slot size", fields[4], 1, region, f"must be 1..{region} (the region's bytes)")
    if offset % align or size % align:
        raise _refused(line, f"prefix_slot offset {offset} size {size}: not multiples of the region's alignment {align}")
    if offset + size > region:
        raise _refused(line, f"prefix_slot offset {offset} size {size}: past the region's end ({region} bytes)")
    if pre.sites[site - 1].counter != counter:
        raise _refused(line, f"prefix_slot: site {site} counts on counter {pre.sites[site - 1].counter}, not {counter}")
    if counter < walk.counter:
        raise _refused(line, f"prefix_slot records must be sorted by counter and value (counter {counter} after "
                       f"{walk.counter})")
    if counter > walk.counter:
        complete(line, counter, pre, walk)
        walk.begin(pre.counters[counter - 1])
    c = pre.counters[counter - 1]
    if walk.expected is None:
        raise _refused(line, f"prefix_slot {counter} {value}: counter {counter} has only {c.nvalues} values")
    if value != walk.expected:
        raise _refused(line, f"prefix_slot {counter} {value}: expected value {walk.expected} (counter {counter}'s "
                       "values, in ascending order)")
    walk.advance()
    pre.slots.append(PrefixSlot(counter, value, site, offset, size))
    walk.slot_lines.append(line)


def check_apart(pre: PrefixRecords, walk: SlotWalk) -> None:
    """Slots that overlap: the first slot in file order that covers a granule an earlier one
    covers; the message names the earlier slot that covers its lowest such granule
    (plan_parse.c, hl_plan_check_slots, walks a granule map; the earlier slots are disjoint
    intervals here, kept sorted)."""
    by_offset = sorted(pre.slots, key=lambda s: s.offset)
    if all(a.offset + a.size <= b.offset for a, b in zip(by_offset, by_offset[1:])):
        return  # the usual case, in n log n; the walk below only names the culprit
    starts: list[int] = []
    spans: list[tuple[int, int]] = []  # (end, slot index), by start
    for i, s in enumerate(pre.slots):
        k = bisect.bisect_right(starts, s.offset) - 1
        hit = None
        if k >= 0 and spans[k][0] > s.offset:
            hit = spans[k][1]
        elif k + 1 < len(starts) and starts[k + 1] < s.offset + s.size:
            hit = spans[k + 1][1]
        if hit is not None:
            raise _refused(walk.slot_lines[i], f"prefix_slot overlaps the slot on line {walk.slot_lines[hit]}")
        starts.insert(k + 1, s.offset)
        spans.insert(k + 1, (s.offset + s.size, i))
