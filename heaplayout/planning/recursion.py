"""Allocation contexts compared modulo recursion.

The profiler already drops a repeated return address (HALO's recursion reduction), but a
recursive function with several recursive call sites (a tree walk that recurses into four
children, a loop unrolled by the compiler) leaves one frame per call site it passed
through, in the order it passed them: the same allocation gets a different chain for every
path through the recursion, and a run that recurses deeper or differently than the
training run makes chains the profile never saw. So chains are compared by function: a
frame whose function is already in the chain (innermost occurrence kept) is dropped. The
innermost frame of each function stays, so the rules still name the call site that leads to
the allocation; how deep and by which way the recursion got there no longer matters.

"Function" is an FDE of .eh_frame (elf.function_starts): it exists in stripped binaries,
and the runtime's unwinder reads the same table, so the plan's `function` records let the
runtime collapse a walk exactly as the planner collapsed the profile.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from .. import elf
from ..profile_model import Context, Profile

Frame = tuple[int, int]  # (module id, offset) as in the profile


@dataclass
class FunctionMap:
    """Function start addresses per profile module (modules whose file could not be read
    against the profile's build-id are absent: their frames are compared as they are)."""
    starts: dict[int, list[int]] = field(default_factory=dict)
    unreadable: dict[int, str] = field(default_factory=dict)  # module id -> why

    def function_of(self, frame: Frame) -> Frame | None:
        """(module, start of the function holding the frame), or None when unknown."""
        module, offset = frame
        starts = self.starts.get(module)
        if not starts:
            return None
        i = bisect.bisect_right(starts, offset) - 1
        return (module, starts[i]) if 0 <= i < len(starts) - 1 else None

    def end_of(self, function: Frame) -> int:
        """The first address past the function: the next function's start (the table ends
        with the end of the code)."""
        module, start = function
        starts = self.starts[module]
        return starts[bisect.bisect_right(starts, start)]


def function_map(profile: Profile) -> FunctionMap:
    """Read the function tables of the profile's non-system modules from their files; a
    file whose build-id differs from the profile's is not used."""
    fm = FunctionMap()
    for m in profile.modules.values():
        if m.system:
            continue
        try:
            if m.build_id and (elf.build_id(Path(m.path)) or "").lower() != m.build_id.lower():
                fm.unreadable[m.id] = "build-id differs from the profiled file"
                continue
            fm.starts[m.id] = elf.function_starts(Path(m.path))
        except (OSError, ValueError) as err:
            fm.unreadable[m.id] = str(err)
    return fm


def collapse_chain(chain: tuple[Frame, ...] | list[Frame], fm: FunctionMap) -> tuple[Frame, ...]:
    """The chain with every frame dropped whose function already has a frame nearer the
    allocation (frames of unknown function are kept, repeats of the same frame dropped)."""
    out: list[Frame] = []
    seen: set[Frame] = set()
    for frame in chain:
        fn = fm.function_of(frame)
        key = fn if fn is not None else frame
        if key in seen:
            continue
        seen.add(key)
        out.append(frame)
    return tuple(out)


@dataclass
class Collapsed:
    profile: Profile  # contexts with equal collapsed chains merged into one
    merged_from: dict[int, list[int]]  # new context id -> the original ids it stands for
    functions: set[Frame]  # functions of the frames in the collapsed chains


def collapse_profile(profile: Profile, fm: FunctionMap) -> Collapsed:
    """A copy of the profile whose contexts are the distinct collapsed chains: counts add
    up, the most objects live at once is bounded by the sum, affinity, walk weights and
    pointer edges are carried over to the merged ids. Objects and the stream keep their
    ids, with their context renamed."""
    out = Profile(version=profile.version, header=dict(profile.header), args=list(profile.args),
                  modules=profile.modules, symbols=profile.symbols, stream=profile.stream,
                  stream_truncated=profile.stream_truncated, summary=dict(profile.summary),
                  complete=profile.complete, has_totals=profile.has_totals,
                  has_adjacent_links=profile.has_adjacent_links)
    by_chain: dict[tuple[Frame, ...], int] = {}
    renamed: dict[int, int] = {}
    merged_from: dict[int, list[int]] = {}
    functions: set[Frame] = set()
    for c in sorted(profile.contexts.values(), key=lambda c: c.id):
        chain = collapse_chain(c.frames, fm)
        for frame in chain:
            fn = fm.function_of(frame)
            if fn is not None:
                functions.add(fn)
        nid = by_chain.get(chain)
        if nid is None:
            nid = by_chain[chain] = c.id
            out.contexts[nid] = Context(nid, c.kind, list(chain))
        t = out.contexts[nid]
        renamed[c.id] = nid
        merged_from.setdefault(nid, []).append(c.id)
        t.objects += c.objects
        t.bytes += c.bytes
        t.max_live += c.max_live
        t.loads += c.loads
        t.stores += c.stores
        t.load_bytes += c.load_bytes
        t.store_bytes += c.store_bytes
    for t in out.contexts.values():
        t.max_live = min(t.max_live, t.objects)
    out.objects = [o if renamed.get(o.context, o.context) == o.context else
                   type(o)(o.id, renamed[o.context], o.instance, o.size, o.alloc_time, o.free_time, o.tid, o.loads,
                           o.stores, o.load_bytes, o.store_bytes, o.run)
                   for o in profile.objects]
    for (x, y), w in profile.affinity.items():
        a, b = renamed.get(x, x), renamed.get(y, y)
        key = (min(a, b), max(a, b))
        out.affinity[key] = out.affinity.get(key, 0) + w
    for x, w in profile.walk.items():
        out.walk[renamed.get(x, x)] = out.walk.get(renamed.get(x, x), 0) + w
    for (a, off, b), n in profile.pointer_edges.items():
        key = (renamed.get(a, a), off, renamed.get(b, b))
        out.pointer_edges[key] = out.pointer_edges.get(key, 0) + n
        if (a, off, b) in profile.adjacent_links:
            out.adjacent_links[key] = out.adjacent_links.get(key, 0) + profile.adjacent_links[(a, off, b)]
    out.has_neighbours = profile.has_neighbours
    for (a, b), n in profile.neighbours.items():
        key = (renamed.get(a, a), renamed.get(b, b))
        out.neighbours[key] = out.neighbours.get(key, 0) + n
    if "contexts" in out.summary:
        out.summary["contexts"] = len(out.contexts)
    return Collapsed(out, merged_from, functions)
