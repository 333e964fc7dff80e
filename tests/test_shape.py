"""Data-structure merging from pointer edges (heaplayout/strategies/halo/shape.py) and graph contraction."""

from __future__ import annotations

from heaplayout.strategies.halo import grouping, shape
from heaplayout.profile_model import Context, Profile


def profile_with(sizes: dict[int, tuple[int, int]], edges: dict[tuple[int, int, int], int]) -> Profile:
    """Contexts id -> (objects, object size) and pointer edges (from, field, to) -> count."""
    p = Profile()
    for cid, (objects, size) in sizes.items():
        p.contexts[cid] = Context(cid, "m", [(0, 0x100 + cid)], objects=objects, bytes=objects * size)
    p.pointer_edges = dict(edges)
    return p


def test_tree_nodes_from_several_contexts_are_one_structure():
    # contexts 1, 2, 3 allocate 32-byte tree nodes; field 8 (left child) links nodes of all
    # three; context 4 is a 64-byte payload the nodes point to through field 16
    p = profile_with(
        {1: (1000, 32), 2: (1000, 32), 3: (500, 32), 4: (2500, 64)},
        {(1, 8, 1): 400, (1, 8, 2): 300, (2, 8, 3): 200, (1, 16, 4): 1000, (2, 16, 4): 1000},
    )
    rep = shape.structures(p, {1, 2, 3, 4})
    assert rep[1] == rep[2] == rep[3] == 1
    assert rep[4] == 4  # different size, and field 16 is no link field: not merged


def test_no_merge_without_a_link_field_or_with_rare_links():
    # 1 -> 2 at field 0, but field 0 never points to 1's own objects nor 2's to 2's
    p = profile_with({1: (1000, 24), 2: (1000, 24)}, {(1, 0, 2): 900})
    assert shape.structures(p, {1, 2}) == {1: 1, 2: 2}
    # a link field, but only 5 links among 1000 objects: below the 1% share
    p = profile_with({1: (1000, 24), 2: (1000, 24)}, {(1, 8, 1): 500, (1, 8, 2): 5})
    assert shape.structures(p, {1, 2}) == {1: 1, 2: 2}
    assert shape.structures(p, {1, 2}, min_share=0.001) == {1: 1, 2: 1}


def test_unusable_contexts_are_left_alone():
    p = profile_with({1: (100, 16), 2: (100, 16)}, {(1, 8, 1): 50, (1, 8, 2): 50})
    assert shape.structures(p, {1}) == {1: 1}


def test_contract_adds_accesses_and_turns_inner_edges_into_loops():
    g = grouping.AffinityGraph({1: 10, 2: 20, 3: 5}, {(1, 1): 4, (1, 2): 6, (2, 3): 3, (3, 3): 1})
    c = grouping.contract(g, {1: 1, 2: 1, 3: 3})
    assert c.accesses == {1: 30, 3: 5}
    assert c.edges == {(1, 1): 10, (1, 3): 3, (3, 3): 1}
    assert c.total_accesses == 35
