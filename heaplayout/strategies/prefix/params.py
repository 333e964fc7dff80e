"""PreFix's tunables, in one place, each with its source and the reason for its default."""

from __future__ import annotations

from dataclasses import dataclass, fields

VARIANTS = ("hot", "hds", "hds+hot")


@dataclass(frozen=True)
class PrefixParams:
    # PreFix §1/Figure 1 and Table 5: the preallocated objects account for most heap
    # accesses (HALO's 90% popularity threshold, which the paper's hot objects follow).
    coverage: float = 0.90
    # Not from the paper (it has no cap; mysql grew 18 -> 426 MB): None keeps every hot
    # object, a number drops the least accessed objects until the region fits.
    max_bytes: int | None = None
    # Slot alignment: what malloc guarantees on x86-64 (16), so a slot holds any object the
    # allocator underneath could have returned for a request of that size.
    align: int = 16
    # HDS (Chilimbi-Shaham, as HALO 5.1 replicated it): streams of 2..20 objects covering
    # 90% of the analysed references; hds.HdsParams holds the same defaults.
    hds_min_len: int = 2
    hds_max_len: int = 20
    hds_coverage: float = 0.90
    # Ours, as hds.HdsParams.max_refs: the pure-Python stream analysis reads at most this many
    # references from the start of the stream (seconds, a few hundred MB).
    hds_max_refs: int = 200_000
    # Ours: those references are read as this many equal windows spread evenly over the
    # stream, not from its start: a run's start is often its construction phase (the suite's
    # halo_tokens: its first 200K references give one stream, 8 windows give 1,498 streams
    # over hot objects).
    hds_windows: int = 8
    # Ours: fewer than 3 ids always form an arithmetic progression, so "regular" is only
    # claimed for 3 or more (two ids stay a fixed list, which is as short).
    min_regular_ids: int = 3
    # Ours: a progression may come with this many listed values outside it (Table 2's
    # "regular & fixed"; the suite's prefix_hot: 3 header objects + every 16th record).
    max_regular_extras: int = 8
    # Ours (complete.py): a progression with holes left by the coverage cut is completed
    # when at least this share of it is chosen ...
    complete_min_share: float = 0.5
    # ... and every missing id has at least this times the median accesses of the chosen.
    complete_min_heat: float = 0.5
    # Ours: the paper recycles where "a large number of objects is allocated ... only a small
    # number of them are simultaneously live" and names no numbers. A context with hot
    # objects is recycled when it allocates at least this many objects ...
    recycle_min_objects: int = 32
    # ... and at least this many times as many as are live at once (N slots serve them).
    recycle_min_ratio: int = 4
    # Ours: contexts allocating from more than one thread number their objects in the
    # order of the scheduler, which another run does not repeat; they are left out.
    single_thread_contexts: bool = True
    # PreFix shares counters to save instrumentation (BOLT code size); a counter per
    # context costs the preloaded runtime a few bytes, and sharing lost placements on
    # another input: replayed on a second profile, lua5.4's hot layout placed objects with
    # 85.7% of the heap accesses unshared, 67.8% shared; gawk 67.3% and 59.4% (docs/prefix.md).
    share_counters: bool = False
    # Ours: a shared counter is simulated on the allocation trace of its contexts; groups
    # with more allocations than this are not tried (bounds the analysis time, and a
    # counter over that many allocations rarely keeps its pattern on another input).
    share_max_allocations: int = 1 << 16

    def describe(self) -> str:
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))

    def check(self) -> None:
        if not 0.0 < self.coverage <= 1.0:
            raise ValueError(f"coverage {self.coverage}: expected a share in (0, 1]")
        if self.max_bytes is not None and self.max_bytes < 0:
            raise ValueError(f"max_bytes {self.max_bytes}: expected a size in bytes")
        if self.align < 1 or self.align & (self.align - 1):
            raise ValueError(f"align {self.align}: expected a power of two")
