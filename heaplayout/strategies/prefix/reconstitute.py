"""PreFix's Algorithm 1: reconstituting hot data streams (RHDS) for the layout.

Observed streams (OHDS) overlap: one object may be in several, and a region can place it
only once. Algorithm 1 turns the OHDS, hottest first, into disjoint reconstituted streams
whose concatenation, followed by the hot singletons, is the order of the objects in the
preallocated region. How we read each step (the names are the paper's):

- Initialization: RHDS starts with the hottest OHDS; every reconstituted stream starts
  unmerged (`merged` false).
- For each further OHDS `current`, hottest first, `remaining` = its objects not yet in any
  RHDS (in the order of `current`).
  - remaining empty: every object already has a place; nothing to do.
  - no object of `current` in RHDS: **unchanged inclusion**, `current` becomes a new RHDS.
  - otherwise **merging**: the first (hottest-placed) RHDS that shares an object with
    `current` and has not merged before takes `remaining`; it is marked merged, so a stream
    absorbs at most one other. The paper places two merged streams "adjacent to each other
    with common objects in the middle"; we write `remaining` (current's own objects), then
    the shared objects, then the rest of the RHDS. Figure 2's layout begins 2018, 2009,
    2012 after the hottest OHDS {2012, 2009}, which this order gives when a later stream
    brought 2018 with 2009; the mirror order would serve as well.
  - no unmerged RHDS shares an object with `current`: **splitting**; its remaining objects
    become a new RHDS (`Make_HDS(remaining)`, unmerged) when there are at least two. When
    only one is left it is a singleton ("a HDS must have at least two objects").
- **Singletons last**: singletons go to the end of the region, after every RHDS, in the
  order they arose. A singleton that a later stream places in an RHDS stays there only
  (the algorithm's `remaining` is taken against RHDS, not against the singletons, and an
  object gets one slot).

`merged` covers only the merge step: a split-off RHDS or one included unchanged can still
take the remaining objects of one later stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass
class Reconstituted:
    streams: list[list] = field(default_factory=list)  # RHDS, in region order
    singletons: list = field(default_factory=list)  # after every RHDS, in the order they arose
    included: int = 0  # OHDS added unchanged (the first one included)
    merged: int = 0  # OHDS whose remaining objects joined an RHDS
    split: int = 0  # OHDS whose remaining objects became a new RHDS or a singleton
    covered: int = 0  # OHDS whose objects were all placed already

    @property
    def order(self) -> list:
        """The region order: every RHDS, then the singletons."""
        return [o for s in self.streams for o in s] + self.singletons


def reconstitute(ohds: Sequence[Sequence[K]]) -> Reconstituted:
    """Algorithm 1 over OHDS given hottest first, each a sequence of distinct objects."""
    out = Reconstituted()
    if not ohds:
        return out
    out.streams.append(list(dict.fromkeys(ohds[0])))
    out.included = 1
    merged = [False]
    where: dict[K, int] = {o: 0 for o in out.streams[0]}  # object -> its RHDS
    singletons: list[K] = []
    for current_seq in ohds[1:]:
        current = list(dict.fromkeys(current_seq))
        remaining = [o for o in current if o not in where]
        if not remaining:
            out.covered += 1
            continue
        if len(remaining) == len(current):
            _add(out, merged, where, remaining)
            out.included += 1
            continue
        mine = set(current)
        # `where` names the one RHDS of every placed object, so the RHDS holding any of this
        # stream's objects are found from the objects, not by scanning every RHDS.
        holders = sorted({where[o] for o in current if o in where})
        target = next((i for i in holders if not merged[i]), None)
        if target is not None:
            merged[target] = True
            stream = out.streams[target]
            common = [o for o in stream if o in mine]
            rest = [o for o in stream if o not in mine]
            out.streams[target] = remaining + common + rest
            for o in remaining:
                where[o] = target
            out.merged += 1
            continue
        out.split += 1
        if len(remaining) > 1:
            _add(out, merged, where, remaining)
        else:
            singletons.append(remaining[0])
    out.singletons = [o for o in dict.fromkeys(singletons) if o not in where]
    return out


def _add(out: Reconstituted, merged: list[bool], where: dict, objects: list) -> None:
    out.streams.append(objects)
    merged.append(False)
    for o in objects:
        where[o] = len(out.streams) - 1
