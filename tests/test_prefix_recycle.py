"""PreFix object recycling: which contexts recycle, and N = most objects live at once."""

from __future__ import annotations

from dataclasses import replace

from heaplayout.strategies.prefix.analyze import per_context_trace
from heaplayout.strategies.prefix.params import PrefixParams
from heaplayout.strategies.prefix.recycle import decide_recycling, max_live

from test_prefix_hot import make_profile


def _objects(intervals):
    p = make_profile([(1, 16, 1, a, f) for a, f in intervals])
    return p.objects


def _recycled(p, placed, params=PrefixParams()):
    return decide_recycling(p, placed, per_context_trace(p), params)


def test_max_live_from_clocks():
    assert max_live(_objects([(0, 5), (10, 15), (20, 25)])) == 1
    assert max_live(_objects([(0, 20), (5, 10), (6, 30), (25, None)])) == 3
    # freed and allocated at the same clock: the order is unknown, both count as live
    assert max_live(_objects([(0, 10), (10, 20)])) == 2


def test_many_objects_few_live_are_recycled():
    # 40 objects, two live at a time (each lives until the one after next is allocated)
    p = make_profile([(1, 24 if i != 7 else 40, 3, 10 * i, 10 * i + 15) for i in range(40)])
    assert p.contexts[1].max_live == 2
    r = _recycled(p, [(1, i) for i in range(40)])[1]
    assert (r.slots, r.slot_size, r.objects, r.accesses) == (2, 40, 40, 120)
    # the slots are sized for the placed ids: the 40-byte object, not placed, does not fit
    r = _recycled(p, [(1, i) for i in range(40) if i != 7])[1]
    assert (r.slots, r.slot_size, r.objects, r.accesses) == (2, 24, 39, 117)


def test_recycling_never_grows_the_region():
    p = make_profile([(1, 16, 3, 10 * i, 10 * i + 15) for i in range(40)])
    assert _recycled(p, [(1, 0)]) == {}  # 2 slots for 1 placed id
    assert set(_recycled(p, [(1, 0), (1, 9)])) == {1}  # 2 slots for 2


def test_long_lived_or_few_objects_are_not_recycled():
    live = make_profile([(1, 16, 3, i, None) for i in range(40)])
    assert _recycled(live, [(1, i) for i in range(40)]) == {}
    few = make_profile([(1, 16, 3, 10 * i, 10 * i + 5) for i in range(10)])
    assert _recycled(few, [(1, 0)]) == {}
    assert set(_recycled(few, [(1, 0)], replace(PrefixParams(), recycle_min_objects=8))) == {1}
    # 40 objects, 16 live at once: 40 < 4 x 16
    wide = make_profile([(1, 16, 3, i, i + 16) for i in range(40)])
    assert wide.contexts[1].max_live == 16 and _recycled(wide, [(1, 0)]) == {}
    # only contexts with a placed id are considered
    assert _recycled(make_profile([(1, 16, 3, 10 * i, 10 * i + 5) for i in range(40)]), [(2, 0)]) == {}


def test_n_is_the_profilers_max_live_else_the_clocks():
    # pairs allocated together, freed together when the next pair is allocated (same clock)
    p = make_profile([(1, 16, 3, 10 * (i // 2), 10 * (i // 2) + 10) for i in range(40)])
    every = [(1, i) for i in range(40)]
    assert _recycled(p, every)[1].slots == 2  # exact: the pair is freed before the next
    p.contexts[1].max_live = 0  # a cut profile: from the clocks, ties counted as overlapping
    assert _recycled(p, every)[1].slots == 4
