"""HALO grouping (Figures 6-8) on a hand-built affinity graph, and the hds/callsite baselines.

The graph used throughout (context id: accesses; edge weights):

    accesses: 1: 1000, 2: 800, 3: 600, 4: 400, 5: 100, 6: 50      (total 2950)
    edges:    (1,2) 100   (1,3) 97   (2,3) 98   (3,4) 10
              (4,4) 60 (loop)   (4,5) 50   (5,6) 5

Scores, s(V) = inner weight / (positive loops + |V|(|V|-1)/2), 0 when the denominator is 0:
    s({1}) = 0 (no loop)            s({4}) = 60/1 = 60
    s({1,2}) = 100/1 = 100          s({1,3}) = 97
    s({1,4}) = 60/(1+1) = 30        s({1,2,3}) = (100+97+98)/3 = 98.333
    s({4,5}) = (60+50)/(1+1) = 55   s({5,6}) = 5
"""

from __future__ import annotations

import pytest

from heaplayout.strategies import hds
from heaplayout.strategies.halo import grouping
from heaplayout.strategies.halo.grouping import AffinityGraph, GroupingParams
from heaplayout.profile_model import Context, Object, Profile

ACCESSES = {1: 1000, 2: 800, 3: 600, 4: 400, 5: 100, 6: 50}
EDGES = {(1, 2): 100, (1, 3): 97, (2, 3): 98, (3, 4): 10, (4, 4): 60, (4, 5): 50, (5, 6): 5}
# no filtering, so that only the formulas decide
OPEN = GroupingParams(coverage=1.0, min_edge_weight=0.0, merge_tol=0.05, max_group_members=16, gthresh=0.0)


def graph() -> AffinityGraph:
    return AffinityGraph(dict(ACCESSES), dict(EDGES))


def members(groups: list[grouping.Group]) -> list[list[int]]:
    return [g.members for g in groups]


def test_score_and_merge_benefit_match_the_hand_computation() -> None:
    g = graph()
    assert g.total_accesses == 2950
    assert grouping.score(g, {1}) == 0.0
    assert grouping.score(g, {4}) == 60.0
    assert grouping.score(g, {1, 4}) == 30.0
    assert grouping.score(g, {1, 2, 3}) == pytest.approx(295 / 3)
    # m({1,2}, 3) = 98.333 - 0.95 * max(100, 0) = 3.333
    assert grouping.merge_benefit(g, {1, 2}, 3, 0.05) == pytest.approx(295 / 3 - 95)
    # m({1}, 4) = 30 - 0.95 * max(0, 60) = -27
    assert grouping.merge_benefit(g, {1}, 4, 0.05) == pytest.approx(-27)


def test_groups_worked_out_by_hand() -> None:
    # Group 1: strongest edge (1,2)=100, hotter end 1 seeds {1}.
    #   candidates: 2: m = 100 - 0.95*0 = 100; 3: 97; 4: 30 - 0.95*60 = -27; 5, 6: 0  -> add 2
    #   {1,2}: 3: m = 98.333 - 95 = 3.333; 4: s = (100+60)/(1+3) = 40, m = -55;
    #          5, 6: s = 100/3, m < 0                                                   -> add 3
    #   {1,2,3}: 4: s = (295+10+60)/(1+6) = 52.1, m = 52.1 - 0.95*98.3 < 0; 5, 6 < 0   -> stop
    #   weight 295.
    # Group 2: available {4,5,6}; strongest edge is the loop (4,4)=60, seed 4, s = 60.
    #   5: m = 55 - 0.95*60 = -2 (the tolerance is not enough); 6: s = 60/2 = 30, m < 0 -> stop
    #   weight 60.
    # Group 3: available {5,6}; edge (5,6)=5, hotter end 5. 6: m = 5 - 0 = 5 -> add. weight 5.
    groups = grouping.group_contexts(graph(), OPEN)
    assert members(groups) == [[1, 2, 3], [4], [5, 6]]
    assert [g.weight for g in groups] == [295, 60, 5]
    assert groups[0].score == pytest.approx(295 / 3)


def test_tolerance_changes_the_groups() -> None:
    # T = 0: {1,2} + 3 gives m = 98.333 - 100 < 0, so {1,2} stops. Then {3,4,5,6}: seed 4
    # (loop 60); 3: s({3,4}) = 70/2 = 35 < 60; 5: 55 < 60 -> {4}. Then {3,5,6}: edge (5,6),
    # seed 5, 6 joins (m = 5), 3 does not (s({3,5,6}) = 5/3 < 5). 3 is left with no edge.
    strict = grouping.group_contexts(graph(), GroupingParams(**{**OPEN.__dict__, "merge_tol": 0.0}))
    assert members(strict) == [[1, 2], [4], [5, 6]]
    # T = 10%: 5 joins 4: m = 55 - 0.9*60 = 1 > 0; then 6: s({4,5,6}) = 115/4 = 28.75,
    # m = 28.75 - 0.9*55 < 0. 6 alone has no edge left.
    loose = grouping.group_contexts(graph(), GroupingParams(**{**OPEN.__dict__, "merge_tol": 0.10}))
    assert members(loose) == [[1, 2, 3], [4, 5]]


def test_popularity_filter_changes_the_groups() -> None:
    # coverage 60% of 2950 = 1770: keep 1 (running 0 -> 1000), keep 2 (1000 -> 1800), stop.
    params = GroupingParams(**{**OPEN.__dict__, "coverage": 0.6})
    assert members(grouping.group_contexts(graph(), params)) == [[1, 2]]
    # the default 90% (2655): 1, 2, 3 (2400), 4 (2400 < 2655 -> 2800), then stop: 5, 6 out
    kept = grouping.popular_subgraph(graph(), 0.9)
    assert set(kept.accesses) == {1, 2, 3, 4}
    assert kept.total_accesses == 2950  # gthresh stays relative to all accesses


def test_min_edge_weight_changes_the_groups() -> None:
    # 2% of 2950 = 59: (3,4)=10, (4,5)=50, (5,6)=5 go; the loop (4,4)=60 stays.
    params = GroupingParams(**{**OPEN.__dict__, "min_edge_weight": 0.02})
    assert members(grouping.group_contexts(graph(), params)) == [[1, 2, 3], [4]]


def test_gthresh_drops_light_groups() -> None:
    # 1% of 2950 = 29.5: {5,6} (weight 5) is dropped; 5% = 147.5: only {1,2,3} (295) stays.
    assert members(grouping.group_contexts(graph(), GroupingParams(**{**OPEN.__dict__, "gthresh": 0.01}))) == \
        [[1, 2, 3], [4]]
    assert members(grouping.group_contexts(graph(), GroupingParams(**{**OPEN.__dict__, "gthresh": 0.05}))) == \
        [[1, 2, 3]]


def test_max_group_members() -> None:
    # at most 2: {1,2} is full; then as for T=5% on {3,4,5,6}: seed 4, 3 (35 - 57) and 5
    # (55 - 57) stay out -> {4}; then {5,6}; 3 is left alone.
    params = GroupingParams(**{**OPEN.__dict__, "max_group_members": 2})
    assert members(grouping.group_contexts(graph(), params)) == [[1, 2], [4], [5, 6]]


def test_defaults_are_the_papers() -> None:
    p = GroupingParams()
    assert (p.coverage, p.merge_tol) == (0.90, 0.05)


def test_graph_from_profile_uses_accesses_and_affinity() -> None:
    prof = Profile()
    prof.contexts = {i: Context(i, "m", [(1, 0x100 * i)], loads=a) for i, a in ACCESSES.items()}
    prof.affinity = dict(EDGES)
    g = grouping.graph_from_profile(prof)
    assert g.accesses == ACCESSES and g.edges == EDGES
    assert members(grouping.group_contexts(g, OPEN)) == [[1, 2, 3], [4], [5, 6]]
    # contexts the runtime can not identify are left out, with their edges
    g2 = grouping.graph_from_profile(prof, usable={1, 2, 3})
    assert set(g2.accesses) == {1, 2, 3} and (3, 4) not in g2.edges


def test_walk_weight_keeps_a_traversed_structure_alone() -> None:
    """Health's waiting lists, in small: cells (1) and patients (2) are co-accessed (edge
    100), cells are also walked on their own in another order than allocated (walk 400).
    HALO (walk_weight 0): s({1}) = 10, s({1,2}) = (10+5+100)/3 = 38.3 -> merged.
    walk_weight 1: loop(1) = 410, s({1}) = 410; s({1,2}) = (410+5+100)/3 = 171.7,
    m = 171.7 - 0.95*410 < 0 -> 1 stays alone; then {2} (loop 5) alone."""
    prof = Profile()
    prof.contexts = {1: Context(1, "m", [(1, 0x100)], loads=1000), 2: Context(2, "m", [(1, 0x200)], loads=500)}
    prof.affinity = {(1, 1): 10, (2, 2): 5, (1, 2): 100}
    prof.walk = {1: 400}
    halo = grouping.graph_from_profile(prof)
    assert halo.edges[(1, 1)] == 10
    assert members(grouping.group_contexts(halo, OPEN)) == [[1, 2]]
    ours = grouping.graph_from_profile(prof, walk_weight=1.0)
    assert ours.edges[(1, 1)] == 410 and ours.edges[(2, 2)] == 5
    assert members(grouping.group_contexts(ours, OPEN)) == [[1], [2]]
    assert GroupingParams().walk_weight == 1.0


# --- hot data streams ----------------------------------------------------------------------

def test_hot_stream_analysis_finds_the_planted_stream() -> None:
    # Objects 100..105 are walked in the same order 40 times, interleaved with noise objects
    # that never repeat in the same order (each noise id appears once). Immediate repeats of
    # an object count once.
    planted = [100, 101, 101, 102, 103, 104, 105]
    refs: list[int] = []
    noise = 1000
    for _ in range(40):
        refs += planted
        refs += [noise, noise + 1, noise + 2]
        noise += 3
    params = hds.HdsParams(max_len=20, coverage=0.5)
    streams = hds.hot_streams(refs, params)
    # 40 * 6 = 240 of the 360 reduced references are the planted walk; the hottest stream is
    # the longest repeated piece, which is the walk itself (the noise breaks every longer one).
    assert streams[0].objects == (100, 101, 102, 103, 104, 105)
    assert streams[0].occurrences == 40 and streams[0].heat == 240
    assert len(streams) == 1  # 240 / 360 already covers half


def test_repeated_ngrams_counts() -> None:
    seq = [1, 2, 3, 1, 2, 3, 1, 2, 4]
    levels = hds.repeated_ngrams(seq, 4, 2)
    ids2, counts2 = levels[1]
    # bigrams: 12 23 31 12 23 31 12 24 -> 12:3, 23:2, 31:2, 24:1 (dropped)
    assert sorted(counts2.values()) == [2, 2, 3]
    assert ids2[7] == -1
    ids3, counts3 = levels[2]
    # trigrams: 123 231 312 123 231 312 124 -> 123:2, 231:2, 312:2
    assert sorted(counts3.values()) == [2, 2, 2]


def _site_profile() -> Profile:
    """Three call sites; objects 1..6 alternate between sites A and B in a repeated walk,
    object 7 (site C) is accessed between walks."""
    prof = Profile()
    a, b, c = (0, 0x10), (0, 0x20), (0, 0x30)
    prof.contexts = {
        1: Context(1, "m", [a, (0, 0x99)], loads=500),
        2: Context(2, "m", [a, (0, 0x98)], loads=100),  # same immediate site as 1
        3: Context(3, "m", [b], loads=300),
        4: Context(4, "m", [c], loads=5),
    }
    ctx_of = {1: 1, 2: 3, 3: 2, 4: 3, 5: 1, 6: 3, 7: 4}
    prof.objects = [Object(o, ctx, 0, 32, 0, None, 1, 1, 0, 8, 0) for o, ctx in ctx_of.items()]
    for i in range(30):
        prof.stream += [1, 2, 3, 4, 5, 6] + ([7] if i % 2 else [])
    return prof


def test_hds_groups_by_immediate_call_site() -> None:
    prof = _site_profile()
    groups, streams = hds.hds_groups(prof, hds.HdsParams(), max_object_size=4096)
    assert streams and set(streams[0].objects) <= {1, 2, 3, 4, 5, 6, 7}
    # the walk mixes sites A (objects 1, 3, 5) and B (2, 4, 6): one co-allocation group
    assert len(groups) == 1
    assert set(groups[0].sites) >= {(0, 0x10), (0, 0x20)}


def test_callsite_groups_one_per_hot_site() -> None:
    prof = _site_profile()
    # per site: A = 600, B = 300, C = 5 of 905; 90% = 814.5: A, then B (600 < 814.5), stop
    groups = hds.callsite_groups(prof, coverage=0.9, gthresh=0.005)
    assert [(g.sites, g.weight) for g in groups] == [([(0, 0x10)], 600), ([(0, 0x20)], 300)]
