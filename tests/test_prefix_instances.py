"""PreFix instance identification: Fixed / Regular / All, and shared counters checked on the
allocation trace."""

from __future__ import annotations

from heaplayout.strategies.prefix.analyze import per_context_trace
from heaplayout.strategies.prefix.hot import complete_objects
from heaplayout.strategies.prefix.instances import assign_counters, classify, shared_values, value_ranges
from heaplayout.strategies.prefix.params import PrefixParams

from test_prefix_hot import make_profile


def test_classify():
    assert classify([0, 1, 2], 3, 3).kind == "all"
    r = classify([0, 1, 2], 5, 3)
    assert (r.kind, r.start, r.stride, r.count) == ("regular", 0, 1, 3)
    r = classify([7, 1, 3, 5], None, 3)
    assert (r.kind, r.start, r.stride, r.count) == ("regular", 1, 2, 4)
    assert classify([1, 3, 8], 10, 3).kind == "fixed"
    assert classify([4, 9], 10, 3).kind == "fixed"  # two ids are no evidence of a progression
    assert classify([5], 10, 3).values == (5,)
    assert classify([0, 1, 2], None, 3).kind == "regular"  # "all" needs the allocation count
    assert classify([0], 1, 3).kind == "all"


def _counters(p, placed):
    first = {(o.context, o.instance): (o.run, o.id) for o in p.objects}
    return assign_counters(placed, first, per_context_trace(p), complete_objects(p), SHARE)


SHARE = PrefixParams(share_counters=True)


def test_one_hot_object_per_site_share_one_counter():
    # mcf's pattern: three sites allocate one hot object each, in turn; cold context 9 between
    p = make_profile([(10, 16, 5), (9, 16, 0), (11, 16, 5), (9, 16, 0), (12, 16, 5)])
    cs = _counters(p, [(10, 0), (11, 0), (12, 0)])
    assert len(cs) == 1 and cs[0].contexts == (10, 11, 12)
    assert cs[0].pattern.kind == "all" and cs[0].pattern.count == 3
    assert cs[0].value_of == {(10, 0): 0, (11, 0): 1, (12, 0): 2}


def test_no_sharing_when_the_shared_values_form_no_progression():
    # A0 A1 B0 B1 A2: hot A0 and B1 have shared values {0, 3}: a fixed list, not shared
    p = make_profile([(1, 16, 5), (1, 16, 0), (2, 16, 0), (2, 16, 5), (1, 16, 0)])
    cs = _counters(p, [(1, 0), (2, 1)])
    assert [c.contexts for c in cs] == [(1,), (2,)]
    assert cs[0].pattern.kind == "fixed" and cs[0].value_of == {(1, 0): 0}
    assert cs[1].value_of == {(2, 1): 1}


def test_contexts_in_tandem_share():
    p = make_profile([(1, 16, 5), (2, 16, 5)] * 3)
    cs = _counters(p, [(1, i) for i in range(3)] + [(2, i) for i in range(3)])
    assert len(cs) == 1 and cs[0].pattern.kind == "all" and cs[0].pattern.count == 6
    assert cs[0].value_of[(2, 2)] == 5


def test_own_counter_patterns():
    p = make_profile([(1, 16, 5 if i % 2 else 0) for i in range(10)])
    cs = _counters(p, [(1, i) for i in (1, 3, 5, 7, 9)])
    assert len(cs) == 1
    pat = cs[0].pattern
    assert (pat.kind, pat.start, pat.stride, pat.count) == ("regular", 1, 2, 5)


def test_incomplete_contexts_are_not_shared_nor_all():
    p = make_profile([(10, 16, 5), (11, 16, 5)])
    p.contexts[11].objects = 2  # an allocation without its O record
    cs = _counters(p, [(10, 0), (11, 0)])
    assert [c.contexts for c in cs] == [(10,), (11,)]
    assert cs[0].pattern.kind == "all" and cs[1].pattern.kind == "fixed"


def test_runs_that_interleave_differently_do_not_share():
    p = make_profile([(1, 16, 5, 0, None, 1, 0), (2, 16, 5, 0, None, 1, 0),
                      (2, 16, 5, 0, None, 1, 1), (1, 16, 5, 0, None, 1, 1)])
    assert shared_values([1, 2], per_context_trace(p)) is None
    assert len(_counters(p, [(1, 0), (2, 0)])) == 2
    same = make_profile([(1, 16, 5, 0, None, 1, 0), (2, 16, 5, 0, None, 1, 0),
                         (1, 16, 5, 0, None, 1, 1), (2, 16, 5, 0, None, 1, 1)])
    assert shared_values([1, 2], per_context_trace(same)) == {(1, 0): 0, (2, 0): 1}


def test_regular_with_a_few_listed_extras():
    # prefix_hot's shape: instances 0, 1, 2 and every 16th from 5
    values = [0, 1, 2] + list(range(5, 5 + 16 * 40, 16))
    p = classify(values, 1000, 3, max_extras=8)
    assert (p.kind, p.start, p.stride, p.count, p.extra) == ("regular", 5, 16, 40, (0, 1, 2))
    assert p.cost == 4
    assert classify(values, 1000, 3, max_extras=2).kind == "fixed"
    # the progression need not be contiguous among the values: 10 lies inside it
    q = classify([1, 4, 7, 10, 11, 13, 16], None, 3, max_extras=1)
    assert (q.kind, q.start, q.stride, q.count, q.extra) == ("regular", 1, 3, 6, (11,))


def test_value_ranges():
    assert value_ranges([5, 1, 2, 3, 9, 10]) == [(1, 3), (5, 5), (9, 10)]
    assert value_ranges([]) == []


def test_contexts_of_two_threads_do_not_share():
    # as test_contexts_in_tandem_share, but context 2 allocates in another thread: the
    # runtime counts a counter in one thread only, so a shared value would never be reached
    p = make_profile([(1, 16, 5, 0, None, 1), (2, 16, 5, 0, None, 2)] * 3)
    cs = _counters(p, [(1, i) for i in range(3)] + [(2, i) for i in range(3)])
    assert [c.contexts for c in cs] == [(1,), (2,)]


def test_sharing_needs_a_shorter_rule():
    # A: instances 0..3 all hot (all); B: one hot object allocated after them. Shared values
    # 0..4 (all) cost 1 < 1 + 1: shared.
    p = make_profile([(1, 16, 5)] * 4 + [(2, 16, 5)])
    assert len(_counters(p, [(1, i) for i in range(4)] + [(2, 0)])) == 1
    # B's hot object comes 3 allocations of B later: shared values 0..3 and 7, a progression
    # with one extra (cost 2), not shorter than all + fixed {3} (cost 2): not shared
    q = make_profile([(1, 16, 5)] * 4 + [(2, 16, 0)] * 3 + [(2, 16, 5)])
    cs = _counters(q, [(1, i) for i in range(4)] + [(2, 3)])
    assert [c.contexts for c in cs] == [(1,), (2,)]


def test_no_sharing_by_default():
    p = make_profile([(10, 16, 5), (11, 16, 5), (12, 16, 5)])
    first = {(o.context, o.instance): (o.run, o.id) for o in p.objects}
    cs = assign_counters([(10, 0), (11, 0), (12, 0)], first, per_context_trace(p), complete_objects(p), PrefixParams())
    assert [c.contexts for c in cs] == [(10,), (11,), (12,)]
    assert all(c.pattern.kind == "all" for c in cs)
