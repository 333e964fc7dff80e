"""Data-structure merging from the profile's pointer edges (after DPA section 3.2).

HALO groups allocation contexts by affinity alone. When one data structure is built from
several contexts (the nodes of one red-black tree inserted from three call chains, the
cells of one list added from two places), HALO's score can split it over several groups
if each context's self-affinity outweighs the affinity between them, and a split
recursive structure is traversed across pools. DPA merges object groups whose objects are
linked into one structure; here the same evidence comes from the profiler's pointer
edges: contexts A and B are one structure when objects of A point to objects of B through
a field that is a *link field* (the same field of A also points to A's own objects, or the
field of B points to B's), the objects are the same size, and the links are not rare.

The result is a partition of contexts into structures; the planner contracts the affinity
graph over it before grouping, so a structure is grouped (or left out) as a whole.
"""

from __future__ import annotations

from ...profile_model import Profile


def _find(parent: dict[int, int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def object_size(profile: Profile, ctx: int) -> int | None:
    c = profile.contexts[ctx]
    return c.bytes // c.objects if c.objects else None


def structures(profile: Profile, usable: set[int], min_share: float = 0.01) -> dict[int, int]:
    """context -> representative context of its structure, for every usable context.

    A pointer edge (A, field, B) with count n merges A and B when: A != B; both usable; both
    contexts' objects have the same average size; the field is a link field of A's or B's
    structure (some edge through that field joins two objects of one structure: a
    next/left/parent field); and n >= min_share * min(objects of A, B). Merging repeats
    until nothing changes, since each merge can make more fields link fields.
    """
    parent = {c: c for c in usable}
    candidates = []
    for (a, off, b), n in sorted(profile.pointer_edges.items()):
        if a == b or a not in parent or b not in parent:
            continue
        size_a, size_b = object_size(profile, a), object_size(profile, b)
        if size_a is None or size_a != size_b:
            continue
        if n < min_share * min(profile.contexts[a].objects, profile.contexts[b].objects):
            continue
        candidates.append((a, off, b))
    changed = True
    while changed:
        changed = False
        link_fields = {(_find(parent, a), off) for (a, off, b) in profile.pointer_edges
                       if a in parent and b in parent and _find(parent, a) == _find(parent, b)}
        for a, off, b in candidates:
            ra, rb = _find(parent, a), _find(parent, b)
            if ra != rb and ((ra, off) in link_fields or (rb, off) in link_fields):
                parent[max(ra, rb)] = min(ra, rb)
                changed = True
    return {c: _find(parent, c) for c in parent}
