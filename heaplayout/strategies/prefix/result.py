"""The PrefixLayout: what the analysis hands to a plan writer and to the user."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .layout import Slot


@dataclass(frozen=True)
class ContextRule:
    """How the runtime recognises this context's objects that have a slot."""
    context: int
    counter: int  # the counter this context increments (shared when other contexts do too)
    pattern: str  # "all", "regular", "fixed" (the counter's), or "recycle"
    start: int
    stride: int  # 0 for fixed; 1 for all and recycle
    count: int  # values that match; recycle: N, the slots
    values: tuple[int, ...]  # fixed: the counter values; otherwise empty
    extra: tuple[int, ...]  # regular: values matched besides the progression
    shared: bool  # the counter is incremented by other contexts too
    slots: int  # slots of this context in the region
    accesses: int  # profiled accesses of the objects those slots take


@dataclass
class VariantStats:
    variant: str
    region_bytes: int
    slots: int
    objects: int  # profiled objects the slots take (a recycled slot takes many)
    object_bytes: int  # their profiled sizes, before alignment
    accesses: int  # their profiled accesses
    heap_accesses: int

    @property
    def coverage(self) -> float:
        return self.accesses / self.heap_accesses if self.heap_accesses else 0.0


@dataclass
class StreamStats:
    ohds: int = 0  # observed hot data streams over hot objects
    rhds: int = 0  # reconstituted streams
    rhds_objects: int = 0
    singletons: int = 0
    included: int = 0
    merged: int = 0
    split: int = 0
    covered: int = 0


@dataclass
class PrefixLayout:
    variant: str
    region_bytes: int
    align: int
    rules: list[ContextRule]
    slots: list[Slot]  # in region order
    stats: VariantStats
    # what every variant shares
    hot_objects: int = 0  # chosen by coverage, before the cap
    hot_bytes: int = 0
    hot_accesses: int = 0
    completed: int = 0  # of the hot ids, added to complete a progression (complete.py)
    streams: StreamStats = field(default_factory=StreamStats)
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> contexts not eligible
    dropped_by_cap: int = 0  # ids (or recycled contexts) the byte cap left out
    parameters: str = ""

    def patterns(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rules:
            out[r.pattern] = out.get(r.pattern, 0) + 1
        return out

    @property
    def counters(self) -> int:
        return len({r.counter for r in self.rules})

    def to_dict(self) -> dict:
        d = asdict(self)
        d["stats"]["coverage"] = self.stats.coverage
        d["patterns"] = self.patterns()
        d["counters"] = self.counters
        return d


@dataclass
class PrefixAnalysis:
    """The layouts of the variants asked for, from one hot selection and one stream analysis."""
    layouts: dict[str, PrefixLayout]
    heap_accesses: int
    profile_objects: int

    def table(self) -> list[dict]:
        return [{"variant": v, "region_bytes": l.region_bytes, "slots": l.stats.slots,
                 "objects": l.stats.objects, "coverage": l.stats.coverage, "contexts": len(l.rules),
                 "counters": l.counters} for v, l in self.layouts.items()]
