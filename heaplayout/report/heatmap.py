"""The heap-access heatmap (PreFix's figure 9): the profile's reference stream over time
(x) against the modelled address of the object each reference touched (y), binned into a
fixed grid so that the page's size does not grow with the profile.

Each reference is drawn at its object's start (the stream names objects, not offsets in
them). A stream longer than HEATMAP_MAX_REFERENCES is sampled every k-th entry; the counts
are then those of the sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..profile_model import Profile
from .layout_model import Layout
from .limits import (HEATMAP_ADDRESS_BINS, HEATMAP_MAX_REFERENCES, HEATMAP_TIME_BINS, LINE_BYTES, PAGE_BYTES,
                     PAGE_WINDOW)


@dataclass
class Heatmap:
    title: str
    time_bins: int
    address_bins: int
    extent: int  # bytes on the displayed address axis
    cells: dict[tuple[int, int], int]  # (time bin, address bin) -> references
    bands: list[tuple[str, int, int]]  # labelled stretches of the address axis (bytes)
    references: int  # references placed (after sampling)
    unplaced: int  # references to objects without an O record
    pages_per_window: float  # distinct 4 KiB model pages per PAGE_WINDOW references
    lines_per_window: float  # distinct 64-byte model lines per PAGE_WINDOW references
    sampled_every: int = 1
    notes: list[str] = field(default_factory=list)

    def flat_cells(self) -> list[int]:
        """[t, a, n, t, a, n, ...] for the page's script."""
        out: list[int] = []
        for (t, a), n in sorted(self.cells.items()):
            out += [t, a, n]
        return out


def sampling_step(length: int) -> int:
    return max(1, -(-length // HEATMAP_MAX_REFERENCES))


def build_heatmap(profile: Profile, layout: Layout) -> Heatmap:
    stream = profile.stream
    step = sampling_step(len(stream))
    sample = stream[::step] if step > 1 else stream
    n = len(sample)
    extent = max(1, layout.extent)
    pos, addr = layout.position, layout.model_address
    cells: dict[tuple[int, int], int] = {}
    unplaced = placed = 0
    window = max(1, PAGE_WINDOW // step)
    pages_sum = lines_sum = windows = 0
    pages: set[int] = set()
    lines: set[int] = set()
    for i, oid in enumerate(sample):
        p = pos.get(oid)
        if p is None:
            unplaced += 1
        else:
            placed += 1
            key = (i * HEATMAP_TIME_BINS // n, min(HEATMAP_ADDRESS_BINS - 1, p * HEATMAP_ADDRESS_BINS // extent))
            cells[key] = cells.get(key, 0) + 1
            a = addr[oid]
            pages.add(a // PAGE_BYTES)
            lines.add(a // LINE_BYTES)
        if (i + 1) % window == 0:
            pages_sum += len(pages)
            lines_sum += len(lines)
            windows += 1
            pages.clear()
            lines.clear()
    if windows == 0 and (pages or lines):  # a stream shorter than one window
        pages_sum, lines_sum, windows = len(pages), len(lines), 1
    notes = []
    if step > 1:
        notes.append(f"1 in {step} of {len(stream):,} references drawn")
    if profile.stream_truncated:
        notes.append("the profiler cut the stream at --stream-max: later references are missing")
    if unplaced:
        notes.append(f"{unplaced:,} references to objects the profile has no record of (--objects) are not drawn")
    return Heatmap(layout.title, HEATMAP_TIME_BINS, HEATMAP_ADDRESS_BINS, extent, cells,
                   [(b.label, b.start, b.end) for b in layout.bands], placed, unplaced,
                   pages_sum / windows if windows else 0.0, lines_sum / windows if windows else 0.0, step, notes)
