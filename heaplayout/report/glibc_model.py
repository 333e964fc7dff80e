"""A model of glibc's malloc (ptmalloc2, as in glibc 2.36) that gives each request the
address glibc would, for the report's heatmap of the allocator alone.

What it follows: chunk sizes (request + 8 rounded up to 16, at least 32); the per-thread
cache (7 chunks per size up to 1040 bytes, LIFO); fastbins (chunks up to 128 bytes, LIFO, not
coalesced; serving a request from one moves up to 7 more into the cache, reversing their
order); small bins (FIFO, a hit moves more of the size into the cache); the unsorted list
(freed chunks coalesced with free neighbours; scanned oldest first on a miss, an exact fit
stashed into the cache while it has room, the rest sorted into bins; the last remainder split
for a small request when it is the only unsorted chunk); best fit from the bins with the
remainder back to the unsorted list; the top chunk; fastbins consolidated before a large
request and when a freed chunk reaches 64 KiB; realloc in place when it shrinks (the tail
freed) or can grow into the top or a free neighbour. Requests of 128 KiB and more are mapped
apart (glibc's initial mmap threshold, which it raises at run time: not followed).

What it leaves out: a single arena (threads get their own in glibc), the top never trimmed
nor short (the heap grows on demand), large bins kept in size order without glibc's
nextsize lists, the 10,000-chunk limit of one unsorted scan. benchmarks/report_model/
fidelity.py measures how often it gives glibc's address (docs/report.md).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict

HEADER = 16  # the user pointer is 16 bytes past the chunk start
MIN_CHUNK = 32
MMAP_THRESHOLD = 128 * 1024  # DEFAULT_MMAP_THRESHOLD_MIN
TCACHE_COUNT = 7  # tcache_count
TCACHE_MAX_CHUNK = 1040  # chunks of requests up to tcache_max_bytes (1032)
FASTBIN_MAX_CHUNK = 128  # DEFAULT_MXFAST on 64-bit (64 * SIZE_SZ / 4)
SMALLBIN_LIMIT = 1024  # MIN_LARGE_SIZE: chunks below are small-bin sizes
CONSOLIDATE_AT = 64 * 1024  # FASTBIN_CONSOLIDATION_THRESHOLD
PAGE = 4096

Segment = tuple[str, int]  # ("heap", 0) or ("mmap", 0)
HEAP: Segment = ("heap", 0)
MMAP: Segment = ("mmap", 0)


def chunk_size(size: int) -> int:
    return max(MIN_CHUNK, (size + 8 + 15) & ~15)


class GlibcModel:
    """Offsets are user pointers relative to the heap's first chunk (or to the mmap area)."""

    def __init__(self) -> None:
        self.top = 0
        self.mmap_top = 0
        self.tcache: dict[int, list[int]] = {}
        self.fast: dict[int, list[int]] = {}
        self.size_of: dict[int, int] = {}  # free chunk start -> size (bins and unsorted only)
        self.start_at_end: dict[int, int] = {}  # free chunk end -> start, for coalescing backwards
        self.unsorted: OrderedDict[int, None] = OrderedDict()  # oldest first
        self.bins: dict[int, OrderedDict[int, None]] = {}  # size -> chunk starts, oldest first
        self.bin_sizes: list[int] = []  # sorted sizes with a non-empty bin
        self.last_remainder: int | None = None

    # ---------------------------------------------------------------- free chunks

    def _add(self, start: int, size: int, unsorted: bool) -> None:
        self.size_of[start] = size
        self.start_at_end[start + size] = start
        if unsorted:
            self.unsorted[start] = None
            return
        b = self.bins.get(size)
        if b is None:
            b = self.bins[size] = OrderedDict()
            bisect.insort(self.bin_sizes, size)
        b[start] = None

    def _remove(self, start: int) -> int:
        size = self.size_of.pop(start)
        del self.start_at_end[start + size]
        if start in self.unsorted:
            del self.unsorted[start]
        else:
            b = self.bins[size]
            del b[start]
            if not b:
                del self.bins[size]
                self.bin_sizes.pop(bisect.bisect_left(self.bin_sizes, size))
        return size

    def _release(self, start: int, size: int) -> None:
        """A chunk that is neither cached nor a fastbin's: coalesce, then the top or the unsorted list."""
        prev = self.start_at_end.get(start)
        if prev is not None:
            size += self._remove(prev)
            start = prev
        following = start + size
        if following == self.top:
            self.top = start
            return
        if following in self.size_of:
            size += self._remove(following)
        self._add(start, size, unsorted=True)
        if size >= CONSOLIDATE_AT:
            self._consolidate()

    def _consolidate(self) -> None:
        fast, self.fast = self.fast, {}
        for size in sorted(fast):
            for start in reversed(fast[size]):
                self._release(start, size)

    def _free_chunk(self, start: int, size: int) -> None:
        cached = self.tcache.setdefault(size, [])
        if size <= TCACHE_MAX_CHUNK and len(cached) < TCACHE_COUNT:
            cached.append(start)
        elif size <= FASTBIN_MAX_CHUNK:
            self.fast.setdefault(size, []).append(start)
        else:
            self._release(start, size)

    # ---------------------------------------------------------------- allocation

    def _int_malloc(self, nb: int) -> int:
        if nb <= FASTBIN_MAX_CHUNK and self.fast.get(nb):
            fast = self.fast[nb]
            victim = fast.pop()
            cached = self.tcache.setdefault(nb, [])
            while fast and len(cached) < TCACHE_COUNT:
                cached.append(fast.pop())
            return victim
        if nb < SMALLBIN_LIMIT:
            if self.bins.get(nb):
                victim = next(iter(self.bins[nb]))
                self._remove(victim)
                cached = self.tcache.setdefault(nb, [])
                while self.bins.get(nb) and len(cached) < TCACHE_COUNT and nb <= TCACHE_MAX_CHUNK:
                    more = next(iter(self.bins[nb]))
                    self._remove(more)
                    cached.append(more)
                return victim
        elif any(self.fast.values()):
            self._consolidate()
        stashed = False
        while self.unsorted:
            victim = next(iter(self.unsorted))
            size = self.size_of[victim]
            if nb < SMALLBIN_LIMIT and len(self.unsorted) == 1 and victim == self.last_remainder \
                    and size >= nb + MIN_CHUNK:
                self._remove(victim)
                self._add(victim + nb, size - nb, unsorted=True)
                self.last_remainder = victim + nb
                return victim
            self._remove(victim)
            if size == nb:
                cached = self.tcache.setdefault(nb, [])
                if nb <= TCACHE_MAX_CHUNK and len(cached) < TCACHE_COUNT:
                    cached.append(victim)
                    stashed = True
                    continue
                return victim
            self._add(victim, size, unsorted=False)
        if stashed:
            return self.tcache[nb].pop()
        i = bisect.bisect_left(self.bin_sizes, nb)
        if i < len(self.bin_sizes):
            size = self.bin_sizes[i]
            victim = next(iter(self.bins[size]))
            self._remove(victim)
            if size - nb >= MIN_CHUNK:
                self._add(victim + nb, size - nb, unsorted=True)
                if nb < SMALLBIN_LIMIT:
                    self.last_remainder = victim + nb
            return victim
        victim = self.top
        self.top += nb
        return victim

    def _mmap(self, size: int) -> tuple[Segment, int]:
        at = self.mmap_top
        self.mmap_top += (size + HEADER + PAGE - 1) // PAGE * PAGE
        return MMAP, at + HEADER

    def malloc(self, size: int) -> tuple[Segment, int]:
        if size >= MMAP_THRESHOLD:
            return self._mmap(size)
        nb = chunk_size(size)
        cached = self.tcache.get(nb)
        if cached:
            return HEAP, cached.pop() + HEADER
        return HEAP, self._int_malloc(nb) + HEADER

    def free(self, seg: Segment, offset: int, size: int) -> None:
        if seg == HEAP:
            self._free_chunk(offset - HEADER, chunk_size(size))

    def realloc(self, seg: Segment, offset: int, old_size: int, size: int) -> tuple[Segment, int]:
        if seg != HEAP or size >= MMAP_THRESHOLD:
            new = self.malloc(size)
            self.free(seg, offset, old_size)
            return new
        start, have, nb = offset - HEADER, chunk_size(old_size), chunk_size(size)
        if have < nb:
            following = start + have
            if following == self.top:
                self.top = start + nb
                return HEAP, offset
            if following in self.size_of and have + self.size_of[following] >= nb:
                have += self._remove(following)
            else:
                victim = self._int_malloc(nb)  # realloc skips the thread cache
                self._free_chunk(start, have)
                return HEAP, victim + HEADER
        if have - nb >= MIN_CHUNK:
            self._free_chunk(start + nb, have - nb)
        return HEAP, offset
