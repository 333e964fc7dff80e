"""PreFix object recycling: which contexts recycle, and N = most hot objects live at once."""

from __future__ import annotations

from dataclasses import replace

from heaplayout.strategies.prefix.analyze import per_context_trace
from heaplayout.strategies.prefix.params import PrefixParams
from heaplayout.strategies.prefix.recycle import decide_recycling, max_live

from test_prefix_hot import make_profile


def _objects(intervals):
    p = make_profile([(1, 16, 1, a, f) for a, f in intervals])
    return p.objects


def test_max_live():
    assert max_live(_objects([(0, 5), (10, 15), (20, 25)])) == 1
    assert max_live(_objects([(0, 20), (5, 10), (6, 30), (25, None)])) == 3
    # freed and allocated at the same clock: the order is unknown, both count as live
    assert max_live(_objects([(0, 10), (10, 20)])) == 2


def test_many_objects_few_live_are_recycled():
    # 40 objects, two live at a time (each lives until the one after next is allocated)
    objs = [(1, 24 if i != 7 else 40, 3, 10 * i, 10 * i + 15) for i in range(40)]
    p = make_profile(objs)
    rec = decide_recycling(p, [(1, i) for i in range(40)], per_context_trace(p), PrefixParams())
    assert set(rec) == {1}
    r = rec[1]
    assert (r.slots, r.slot_size, r.hot_objects, r.allocations, r.accesses) == (2, 40, 40, 40, 120)


def test_long_lived_or_partly_hot_contexts_are_not_recycled():
    live = make_profile([(1, 16, 3, i, None) for i in range(40)])
    assert decide_recycling(live, [(1, i) for i in range(40)], per_context_trace(live), PrefixParams()) == {}
    short = [(1, 16, 3, 10 * i, 10 * i + 5) for i in range(100)]
    p = make_profile(short)
    # 40 of 100 allocations hot: recycling would serve the 60 cold ones too
    assert decide_recycling(p, [(1, i) for i in range(40)], per_context_trace(p), PrefixParams()) == {}
    assert set(decide_recycling(p, [(1, i) for i in range(100)], per_context_trace(p), PrefixParams())) == {1}
    few = make_profile(short[:10])
    assert decide_recycling(few, [(1, i) for i in range(10)], per_context_trace(few), PrefixParams()) == {}
    lower = replace(PrefixParams(), recycle_min_objects=8)
    assert set(decide_recycling(few, [(1, i) for i in range(10)], per_context_trace(few), lower)) == {1}


def test_n_is_bounded_by_the_contexts_exact_max_live():
    p = make_profile([(1, 16, 3, 10 * (i // 2), 10 * (i // 2) + 10) for i in range(40)])
    rec = decide_recycling(p, [(1, i) for i in range(40)], per_context_trace(p), PrefixParams())
    assert rec[1].slots == 4  # clock ties counted as overlapping
    p.contexts[1].max_live = 2  # the profiler's exact count
    rec = decide_recycling(p, [(1, i) for i in range(40)], per_context_trace(p), PrefixParams())
    assert rec[1].slots == 2
