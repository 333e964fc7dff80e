"""PreFix Algorithm 1 (reconstituting HDS) on hand-worked OHDS lists."""

from __future__ import annotations

import random

from heaplayout.strategies.prefix.reconstitute import reconstitute


def test_unchanged_inclusion_of_disjoint_streams():
    r = reconstitute([["A", "B"], ["C", "D"]])
    assert r.streams == [["A", "B"], ["C", "D"]] and r.singletons == []
    assert (r.included, r.merged, r.split, r.covered) == (2, 0, 0, 0)
    assert r.order == ["A", "B", "C", "D"]


def test_merging_puts_the_common_objects_in_the_middle():
    r = reconstitute([["A", "B"], ["B", "E"]])
    assert r.streams == [["E", "B", "A"]] and r.merged == 1


def test_paper_figure_2_first_merge():
    # the hottest OHDS {2012, 2009}; a later one brings 2018 with 2009: the region starts
    # 2018, 2009, 2012 as in Figure 2
    assert reconstitute([[2012, 2009], [2018, 2009]]).order == [2018, 2009, 2012]


def test_a_stream_absorbs_at_most_one_other_then_split_gives_a_singleton():
    r = reconstitute([["A", "B"], ["B", "E"], ["A", "F"]])
    assert r.streams == [["E", "B", "A"]]
    assert r.singletons == ["F"] and r.split == 1
    assert r.order == ["E", "B", "A", "F"]


def test_split_remainder_of_two_or_more_is_a_new_stream():
    r = reconstitute([["A", "B"], ["B", "E"], ["A", "F", "G"]])
    assert r.streams == [["E", "B", "A"], ["F", "G"]] and r.singletons == []


def test_merge_goes_to_the_first_unmerged_stream_sharing_an_object():
    # RHDS [A,B] merged with [B,C]; [D,E] included; [A,D,X]: [C,B,A] is merged, so [D,E] takes X
    r = reconstitute([["A", "B"], ["B", "C"], ["D", "E"], ["A", "D", "X"]])
    assert r.streams == [["C", "B", "A"], ["X", "D", "E"]]


def test_fully_placed_streams_change_nothing():
    r = reconstitute([["A", "B"], ["B", "A"], ["A", "B"]])
    assert r.streams == [["A", "B"]] and r.covered == 2


def test_a_singleton_later_placed_in_a_stream_is_not_repeated():
    r = reconstitute([["A", "B"], ["B", "E"], ["A", "F"], ["F", "H"]])
    assert r.singletons == []
    assert r.order == ["E", "B", "A", "F", "H"]


def test_every_object_placed_once_on_random_streams():
    rnd = random.Random(7)
    for _ in range(300):
        ohds = [rnd.sample(range(30), rnd.randint(2, 6)) for _ in range(rnd.randint(1, 15))]
        order = reconstitute(ohds).order
        assert len(order) == len(set(order))
        assert set(order) == {o for s in ohds for o in s}  # nothing is discarded
        assert order[: len(ohds[0])] != [] and set(ohds[0]) <= set(order)


def test_empty():
    assert reconstitute([]).order == []
