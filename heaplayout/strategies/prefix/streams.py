"""Observed hot data streams (PreFix's OHDS) from the profile's reference stream.

The detector is `hot_streams` of strategies/hds.py, the one the `hds` strategy uses, reused
as it is: it works on object ids (the stream's own alphabet), finds repeated subsequences of
2..20 objects, and picks them hottest first until they cover 90% of the analysed
references, where a stream's heat is its length times its non-overlapping occurrences, i.e.
the references it accounts for. That is what PreFix needs from an HDS detector: groups of
objects accessed together, ranked by their share of the references. The paper uses a
longest-common-subsequence method instead of SEQUITUR "because it is highly efficient and as
effective"; ours is neither, but it is already tested (tests/test_grouping.py) and bounded
(`hds_max_refs`).

What PreFix adds on top:
- the stream's object ids become PreFix ids (context, instance), so that a stream seen in
  one run names the objects the runtime can recognise;
- an HDS keeps only objects that can take a slot (`eligible`, in practice the hot set), each
  once, in order of first appearance in the stream; one with fewer than two objects left is
  no HDS (its object stays a hot singleton);
- streams that end up with the same object set are one HDS whose heat is their sum.

The stream is bounded (`--stream-max`: on a long run it is the run's beginning), and of it
`hds_max_refs` references are analysed, read as `hds_windows` equal windows spread evenly
over it (`sample_stream`), so that every phase of the profiled part has its say. A window's
joint with the next adds at most one spurious occurrence per n-gram there, and a stream
must repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hds import HdsParams, hot_streams
from ...profile_model import Profile
from .hot import ObjectKey
from .params import PrefixParams


@dataclass(frozen=True)
class ObservedHds:
    objects: tuple[ObjectKey, ...]  # distinct, in order of first appearance in the stream
    heat: int  # references of the reduced stream its occurrences account for


def hds_params(params: PrefixParams) -> HdsParams:
    return HdsParams(min_len=params.hds_min_len, max_len=params.hds_max_len,
                     coverage=params.hds_coverage, max_refs=params.hds_max_refs)


def sample_stream(stream: list[int], max_refs: int, windows: int) -> list[int]:
    """At most `max_refs` references: the whole stream when it fits, else `windows` equal
    windows starting at evenly spaced places (the first at 0, the last ending at the end)."""
    if len(stream) <= max_refs or windows <= 1:
        return stream[:max_refs]
    width = max_refs // windows
    step = (len(stream) - width) / (windows - 1)
    out: list[int] = []
    for w in range(windows):
        start = round(w * step)
        out.extend(stream[start : start + width])
    return out


def observed_hds(profile: Profile, params: PrefixParams, eligible: set[ObjectKey]) -> list[ObservedHds]:
    """OHDS: the hot data streams over eligible objects, hottest first."""
    key_of = {o.id: (o.context, o.instance) for o in profile.objects}
    refs = sample_stream(profile.stream, params.hds_max_refs, params.hds_windows)
    return streams_to_ohds([(s.objects, s.heat) for s in hot_streams(refs, hds_params(params))], key_of, eligible)


def streams_to_ohds(streams: list[tuple[tuple[int, ...], int]], key_of: dict[int, ObjectKey],
                    eligible: set[ObjectKey]) -> list[ObservedHds]:
    """(object ids, heat) streams -> OHDS over eligible PreFix ids (see module doc)."""
    heat: dict[frozenset[ObjectKey], int] = {}
    order: dict[frozenset[ObjectKey], tuple[ObjectKey, ...]] = {}
    for ids, h in streams:
        keys: list[ObjectKey] = []
        for oid in ids:
            k = key_of.get(oid)
            if k is not None and k in eligible and k not in keys:
                keys.append(k)
        if len(keys) < 2:
            continue
        s = frozenset(keys)
        if s not in heat:
            heat[s] = 0
            order[s] = tuple(keys)
        heat[s] += h
    # a stable sort keeps first appearance among equal heats, so the result is deterministic
    return sorted((ObservedHds(order[s], heat[s]) for s in order), key=lambda o: -o.heat)
