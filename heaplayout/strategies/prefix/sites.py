"""PreFix by call site: the paper's own context, (static allocation site, instance), with no
stack walk at run time.

The default PreFix plan tells contexts apart by their call chains (plan.py), as HALO does.
Where those chains share their first return address, the runtime must walk the stack on
every allocation through it, because a site's counter has to see each one: on sqlite3,
whose allocations all pass through one wrapper, that was a walk for 63.5% of 5M
allocations and a plan 2.3x slower than the allocator alone (docs/results.md §12). The
paper numbers the objects of a *static* malloc site: here, the call site that the
profiler's context begins with (its first program frame). Its counter then counts every
allocation through that return address, which the runtime answers from a per-thread
cache in a few instructions (prefix.c, site_of).

`by_call_site` rewrites a profile so that each call site is one context whose instances are
renumbered in allocation order over all of its former contexts; the PreFix analysis then
runs on it unchanged. A call site can only be renumbered when the profile holds every
object of every context through it (not with --objects=accessed): the others are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...profile_model import Context, Object, Profile
from .hot import complete_objects

Frame = tuple[int, int]


@dataclass
class SiteProfile:
    profile: Profile  # one context per call site (id: the smallest of its former contexts)
    site_of: dict[int, int]  # former context -> its call site's context id
    left_out: int  # call sites whose objects are not all recorded


def by_call_site(profile: Profile) -> SiteProfile:
    """The profile with its contexts merged by first frame (module doc). Affinity, walk
    weights and pointer edges are not carried over: the PreFix analysis reads objects, the
    stream and context totals only."""
    members: dict[Frame, list[Context]] = {}
    for c in profile.contexts.values():
        if c.frames:
            members.setdefault(c.frames[0], []).append(c)
    recorded = complete_objects(profile)
    out = Profile(version=profile.version, header=dict(profile.header), args=list(profile.args),
                  modules=profile.modules, symbols=profile.symbols, stream=profile.stream,
                  stream_truncated=profile.stream_truncated, summary=dict(profile.summary),
                  complete=profile.complete, has_totals=profile.has_totals)
    site_of: dict[int, int] = {}
    left_out = 0
    for frame, ctxs in members.items():
        if not all(c.id in recorded for c in ctxs):
            left_out += 1
            continue
        sid = min(c.id for c in ctxs)
        # max_live: the profiler's exact count for a site of one context; over several, their
        # sum would only bound it, so 0 makes recycling count it from the objects' clocks
        # (recycle.max_live, which counts an alloc and a free at one clock as overlapping:
        # prefix_recycle's site got 65 slots instead of 64 and 59% more D1 misses)
        merged = Context(sid, ctxs[0].kind if len({c.kind for c in ctxs}) == 1 else "m", [frame],
                         max_live=ctxs[0].max_live if len(ctxs) == 1 else 0)
        for c in ctxs:
            site_of[c.id] = sid
            merged.objects += c.objects
            merged.bytes += c.bytes
            merged.loads += c.loads
            merged.stores += c.stores
            merged.load_bytes += c.load_bytes
            merged.store_bytes += c.store_bytes
        out.contexts[sid] = merged
    # instances renumbered per (site, run) in allocation order: the object id is the run's
    # global allocation sequence number
    next_instance: dict[tuple[int, int], int] = {}
    objects: list[Object] = []
    for o in sorted(profile.objects, key=lambda o: (o.run, o.id)):
        sid = site_of.get(o.context)
        if sid is None:
            continue
        n = next_instance.get((sid, o.run), 0)
        next_instance[(sid, o.run)] = n + 1
        objects.append(Object(o.id, sid, n, o.size, o.alloc_time, o.free_time, o.tid, o.loads, o.stores,
                              o.load_bytes, o.store_bytes, o.run))
    out.objects = objects
    return SiteProfile(out, site_of, left_out)
