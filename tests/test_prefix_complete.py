"""PreFix: completing a progression the coverage cut left with holes."""

from __future__ import annotations

from dataclasses import replace

from heaplayout.strategies.prefix.complete import complete_progressions
from heaplayout.strategies.prefix.hot import HotObject
from heaplayout.strategies.prefix.params import PrefixParams


def _h(ctx, inst, acc):
    return HotObject(ctx, inst, acc, 64, (0, inst))


def _pool(accesses):
    return {(1, i): _h(1, i, a) for i, a in accesses.items()}


def test_holes_of_equally_hot_ids_are_filled():
    # every 16th from 5 is hot (about 100 accesses); the cut kept all but 37 and 85
    pool = _pool({i: (100 + i % 7 if i % 16 == 5 else 2) for i in range(120)})
    chosen = [pool[(1, i)] for i in range(5, 120, 16) if i not in (37, 85)]
    added = complete_progressions(chosen, pool, PrefixParams())
    assert sorted(h.instance for h in added) == [37, 85]


def test_a_cold_hole_keeps_the_list():
    pool = _pool({i: (100 if i % 16 == 5 else 2) for i in range(120)})
    pool[(1, 37)] = _h(1, 37, 10)  # far below half the median
    chosen = [pool[(1, i)] for i in range(5, 120, 16) if i not in (37, 85)]
    assert complete_progressions(chosen, pool, PrefixParams()) == []
    # an id with no record (never accessed) is no candidate either
    del pool[(1, 37)]
    assert complete_progressions(chosen, pool, PrefixParams()) == []


def test_a_sparse_lattice_is_not_completed():
    pool = _pool({i: 100 for i in range(40)})
    chosen = [pool[(1, i)] for i in (0, 1, 2, 3, 20, 39)]  # stride 1: 6 of 40
    assert complete_progressions(chosen, pool, PrefixParams()) == []
    dense = replace(PrefixParams(), complete_min_share=0.1)
    assert len(complete_progressions(chosen, pool, dense)) == 34


def test_complete_progressions_change_nothing_when_regular():
    pool = _pool({i: 100 for i in range(10)})
    assert complete_progressions([pool[(1, i)] for i in range(10)], pool, PrefixParams()) == []
