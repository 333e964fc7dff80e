"""Keep what allocation order already gives: companions stay together.

A program that allocates a record and then the list cell pointing to it (or an owner and
its companion object) gets them side by side from any allocator that serves both from one
region in allocation order (glibc's top chunk, a bump pool), and its walks use them
together: one cache line or page brings both. HALO groups contexts by affinity alone
(co-allocatable pairs accessed close in time), and with its thresholds, the coverage cut
or our walk weight, a cell and its record can end up in different groups, or one grouped
and the other left to the allocator: then every step of the walk touches two regions
instead of one. Measured on an independent hospital simulation (issue 20): the plan ran
1.42x glibc's time where glibc kept the pairs adjacent.

Two contexts are companions when
  - allocation order pairs them: an object of one is the very next allocation after an
    object of the other (the profile's N records, per thread) for at least
    `companion_share` of the objects of the rarer context; and
  - they are used together: their affinity (HALO's co-access count) is at least
    `companion_use` of the rarer context's accesses.
The planner contracts companions into one node before grouping (like shape merging), so
HALO either groups them together, where bump allocation keeps them in allocation order,
or leaves both to the allocator, which keeps them side by side as before.
"""

from __future__ import annotations

from ...profile_model import Profile


def _find(parent: dict[int, int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def companion_pairs(profile: Profile, usable: set[int], share: float, use: float) -> list[tuple[int, int]]:
    """Pairs (a, b), a < b, of usable contexts that are companions (module doc)."""
    order: dict[tuple[int, int], int] = {}
    for (a, b), n in profile.neighbours.items():
        if a != b and a in usable and b in usable:
            key = (min(a, b), max(a, b))
            order[key] = order.get(key, 0) + n
    pairs = []
    for (a, b), n in sorted(order.items()):
        ca, cb = profile.contexts[a], profile.contexts[b]
        rarer_objects = min(ca.objects, cb.objects)
        rarer_accesses = min(ca.accesses, cb.accesses)
        if rarer_objects == 0 or rarer_accesses == 0:
            continue
        if n >= share * rarer_objects and profile.affinity.get((a, b), 0) >= use * rarer_accesses:
            pairs.append((a, b))
    return pairs


def join(rep: dict[int, int], pairs: list[tuple[int, int]]) -> dict[int, int]:
    """The partition `rep` (context -> representative) with each pair's parts merged; the
    smallest context id represents a part."""
    parent = {c: c for c in rep}
    for c, r in rep.items():
        parent.setdefault(r, r)
        ra, rc = _find(parent, r), _find(parent, c)
        if ra != rc:
            parent[max(ra, rc)] = min(ra, rc)
    for a, b in pairs:
        if a in parent and b in parent:
            ra, rb = _find(parent, a), _find(parent, b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return {c: _find(parent, c) for c in rep}
