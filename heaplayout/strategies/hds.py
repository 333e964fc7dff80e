"""Baselines that group by the immediate call site (the innermost frame only).

`hds`: Chilimbi and Shaham's cache-conscious coallocation of hot data streams (PLDI'06), as
HALO replicated it (HALO 5.1): hot data streams of 2 to 20 objects are found in the object
reference stream, the stream threshold is set so that the hot streams account for 90% of
the references, each stream becomes a co-allocation set of the call sites that allocated its
objects, and the runtime identifies a group by the immediate call site of the allocation.

Our stream analysis is a simple stand-in for SEQUITUR, in three steps:

1. Reduce the reference stream: drop an object's immediate repeats (one macro access).
2. Count every repeated subsequence (n-gram) of length 2..max_len, level by level: an
   (n+1)-gram can only repeat where its n-gram prefix repeats, so each level only looks at
   the positions the previous level kept. n-grams get small integer ids from
   (id of prefix, next object), so a level costs one dict lookup per kept position.
3. Pick hot data streams hottest first. A stream's heat is its length times its
   occurrences that overlap neither each other nor the places of streams already picked
   (so a stream that overlaps itself, a short cycle, is not overrated, and heats add up to
   the references covered). Picking stops when the hot streams cover `coverage` of the
   reduced stream.

Co-allocation sets become groups hottest first: a set whose sites are all new forms a
group; otherwise its new sites join the group of its first already-grouped site (a site can
be in one group only, because the runtime sees nothing but the site).

`callsite`: one group per hot immediate call site, the per-site pools baseline (DPA's
call-site strategy without wrappers): sites from most to least accessed until `coverage` of
accesses, each kept if it has at least `gthresh` of all accesses.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, fields

from ..profile_model import Profile

Site = tuple[int, int]  # (module id, offset) of the innermost frame, as in the profile


@dataclass(frozen=True)
class HdsParams:
    # HALO 5.1: "minimal hot data streams that contain between 2 and 20 elements".
    min_len: int = 2
    max_len: int = 20
    # HALO 5.1: "the stream threshold set to account for 90% of all heap accesses".
    coverage: float = 0.90
    # A stream must occur at least twice to be a repeated subsequence (Chilimbi's streams
    # repeat by definition); raise it to keep only frequent streams.
    min_repeats: int = 2
    # Not from the papers: references analysed from the start of the stream. The analysis is
    # pure Python and keeps every repeated n-gram's positions: 200K references take seconds
    # and a few hundred MB at most.
    max_refs: int = 200_000
    # As HALO's gthresh (ours, see GroupingParams): a group must cover 0.5% of the references.
    gthresh: float = 0.005
    # As GroupingParams.max_group_members.
    max_group_members: int = 16

    def describe(self) -> str:
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


@dataclass(frozen=True)
class HotStream:
    objects: tuple[int, ...]
    occurrences: int  # non-overlapping occurrences taken by the parse

    @property
    def heat(self) -> int:
        return len(self.objects) * self.occurrences


@dataclass
class SiteGroup:
    sites: list[Site]
    weight: int  # hds: heat of its streams; callsite: accesses


def reduce_stream(refs: list[int]) -> list[int]:
    """Drop immediate repeats of the same object."""
    out: list[int] = []
    for r in refs:
        if not out or out[-1] != r:
            out.append(r)
    return out


def repeated_ngrams(seq: list[int], max_len: int, min_repeats: int) -> list[tuple[array, dict[int, int]]]:
    """Level n (index n-1 in the result, n >= 2): an array with, per position, the id of the
    n-gram starting there (-1 when that n-gram does not repeat), and id -> count.
    Level 1 is the sequence itself (ids = the object ids), with no counts."""
    levels: list[tuple[array, dict[int, int]]] = [(array("q", seq), {})]
    n = len(seq)
    prev = levels[0][0]
    active = range(n)
    for length in range(2, max_len + 1):
        ids: dict[tuple[int, int], int] = {}
        counts: dict[int, int] = {}
        here = array("i", [-1]) * n
        for i in active:
            if i + length > n or prev[i] < 0:
                continue
            key = (prev[i], seq[i + length - 1])
            gid = ids.get(key)
            if gid is None:
                gid = ids[key] = len(ids)
            here[i] = gid
            counts[gid] = counts.get(gid, 0) + 1
        kept = []
        for i in active:
            g = here[i]
            if g >= 0:
                if counts[g] >= min_repeats:
                    kept.append(i)
                else:
                    here[i] = -1
        levels.append((here, {g: c for g, c in counts.items() if c >= min_repeats}))
        if not kept:
            break
        prev, active = here, kept
    return levels


def _occurrences(ids: array, length: int) -> dict[int, list[int]]:
    """Repeated n-gram id -> start positions (ascending) at one level."""
    where: dict[int, list[int]] = {}
    for i, g in enumerate(ids):
        if g >= 0:
            where.setdefault(g, []).append(i)
    return where


def _non_overlapping(positions: list[int], length: int, taken: bytearray) -> list[int]:
    """Occurrences taken left to right that overlap neither each other nor `taken`."""
    out: list[int] = []
    free_from = 0
    for i in positions:
        if i >= free_from and not any(taken[i : i + length]):
            out.append(i)
            free_from = i + length
    return out


def hot_streams(refs: list[int], params: HdsParams) -> list[HotStream]:
    """The hot data streams of a reference stream, hottest first (see module doc)."""
    seq = reduce_stream(refs[: params.max_refs])
    levels = repeated_ngrams(seq, params.max_len, params.min_repeats)
    taken = bytearray(len(seq))
    # candidates: (heat if nothing else were taken, length, id); heat counts non-overlapping
    # occurrences, so a stream overlapping itself (a short cycle) is not overrated
    occurrences: dict[int, dict[int, list[int]]] = {}
    candidates: list[tuple[int, int, int]] = []
    for length in range(max(2, params.min_len), len(levels) + 1):
        occurrences[length] = _occurrences(levels[length - 1][0], length)
        for g, positions in occurrences[length].items():
            n = len(_non_overlapping(positions, length, taken))
            if n >= params.min_repeats:
                candidates.append((length * n, length, g))
    candidates.sort(key=lambda c: (-c[0], -c[1], c[2]))
    hot: list[HotStream] = []
    covered = 0
    target = params.coverage * len(seq)
    for _, length, g in candidates:
        if covered >= target:
            break
        taken_here = _non_overlapping(occurrences[length][g], length, taken)
        if len(taken_here) < params.min_repeats:
            continue  # hotter streams already took its places
        for i in taken_here:
            taken[i : i + length] = b"\x01" * length
        first = taken_here[0]
        hot.append(HotStream(tuple(seq[first : first + length]), len(taken_here)))
        covered += length * len(taken_here)
    hot.sort(key=lambda s: (-s.heat, -len(s.objects), s.objects))
    return hot


def immediate_site(profile: Profile, context_id: int) -> Site | None:
    c = profile.contexts.get(context_id)
    return c.frames[0] if c is not None and c.frames else None


def coallocation_groups(sets: list[tuple[list[Site], int]], max_members: int) -> list[SiteGroup]:
    """Turn (sites, heat) co-allocation sets, hottest first, into disjoint site groups."""
    groups: list[SiteGroup] = []
    group_of: dict[Site, int] = {}
    for sites, heat in sets:
        owners = [group_of[s] for s in sites if s in group_of]
        new = [s for s in sites if s not in group_of]
        if owners:
            index = owners[0]
            groups[index].weight += heat
        else:
            index = len(groups)
            groups.append(SiteGroup([], heat))
        g = groups[index]
        for s in new:
            if len(g.sites) < max_members:
                g.sites.append(s)
                group_of[s] = index
    return [g for g in groups if g.sites]


def hds_groups(profile: Profile, params: HdsParams, max_object_size: int,
               usable: set[int] | None = None) -> tuple[list[SiteGroup], list[HotStream]]:
    """Groups of immediate call sites from the profile's hot data streams.

    Objects larger than `max_object_size` (never grouped by the runtime) and objects of
    contexts outside `usable` are left out of the co-allocation sets."""
    context_of = {o.id: o.context for o in profile.objects if o.size <= max_object_size}
    streams = hot_streams(profile.stream, params)
    by_sites: dict[tuple[Site, ...], int] = {}
    order: list[tuple[Site, ...]] = []
    for s in streams:
        sites: list[Site] = []
        for oid in s.objects:
            ctx = context_of.get(oid)
            if ctx is None or (usable is not None and ctx not in usable):
                continue
            site = immediate_site(profile, ctx)
            if site is not None and site not in sites:
                sites.append(site)
        if not sites:
            continue
        key = tuple(sites)
        if key not in by_sites:
            order.append(key)
            by_sites[key] = 0
        by_sites[key] += s.heat
    sets = sorted(((list(k), by_sites[k]) for k in order), key=lambda kv: -kv[1])
    groups = coallocation_groups(sets, params.max_group_members)
    total = max(1, len(reduce_stream(profile.stream[: params.max_refs])))
    kept = [g for g in groups if g.weight >= params.gthresh * total]
    kept.sort(key=lambda g: -g.weight)
    return kept, streams


def callsite_groups(profile: Profile, coverage: float, gthresh: float,
                    usable: set[int] | None = None) -> list[SiteGroup]:
    """One group per hot immediate call site (see module doc)."""
    per_site: dict[Site, int] = {}
    for c in profile.contexts.values():
        if c.frames and c.accesses > 0 and (usable is None or c.id in usable):
            per_site[c.frames[0]] = per_site.get(c.frames[0], 0) + c.accesses
    total = profile.heap_accesses or sum(per_site.values())
    groups: list[SiteGroup] = []
    running = 0
    for site, accesses in sorted(per_site.items(), key=lambda kv: (-kv[1], kv[0])):
        if running >= coverage * total:
            break
        running += accesses
        if accesses >= gthresh * total:
            groups.append(SiteGroup([site], accesses))
    return groups
