"""Identification: adaptive partial call chains (the plan's rule table) and HALO selectors,
on hand-built contexts. Frames are written as letters; chains are innermost first."""

from __future__ import annotations

from heaplayout.planning import identify
from heaplayout.planning.identify import LabelledContext, Rule

NAMES = "w a b c d e f g h i k m n p q r s x y z v main".split()
F = {name: (0, 0x100 + 0x10 * i) for i, name in enumerate(NAMES)}


def chain(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(F[n] for n in text.split())


def ctx(cid: int, text: str, group: int, accesses: int = 100) -> LabelledContext:
    return LabelledContext(cid, chain(text), accesses, group)


# A wrapper w called from three places (DPA's safe_malloc), sites private to one group,
# a chain that is a whole prefix of other chains, and identical chains in different groups.
CONTEXTS = [
    ctx(1, "w a main", 1),
    ctx(2, "w b main", 2),
    ctx(3, "w c x", 0),
    ctx(4, "w c y", 1),
    ctx(5, "d main", 1),
    ctx(6, "e f", 0),
    ctx(7, "g h", 2),
    ctx(8, "g i", 2),
    ctx(9, "k", 1),  # a stack that ends at k (e.g. cut at the recorded depth)
    ctx(10, "k m", 0),
    ctx(11, "k n", 1),
    ctx(12, "p q", 2, accesses=50),  # same chain as 13: the group with more accesses wins
    ctx(13, "p q", 0, accesses=10),
    ctx(14, "r s", 1, accesses=5),  # same chain as 15, a tie: the lower label wins
    ctx(15, "r s", 2, accesses=5),
]


def test_apcc_minimal_suffixes() -> None:
    table = identify.apcc_rules(CONTEXTS)
    # w is shared by groups 1, 2 and ungrouped: one more frame decides a and b; under c, x is
    # ungrouped and y is group 1, so c needs a third frame (and x needs no rule at all).
    # d, g (both callees in one group) decide alone; e is ungrouped: no rule.
    # k is a whole chain of group 1: rule [k]; its child m is ungrouped, so it needs a rule
    # back to group 0; n is group 1 like k: nothing more.
    # p q: group 2 wins 50 to 10 accesses, the subtree is then all group 2: [p].
    # r s: tie 5 to 5, group 1 (lower) wins: [r].
    expected = {
        Rule(1, chain("w a")), Rule(2, chain("w b")), Rule(1, chain("w c y")),
        Rule(1, chain("d")), Rule(2, chain("g")),
        Rule(1, chain("k")), Rule(0, chain("k m")),
        Rule(2, chain("p")), Rule(1, chain("r")),
    }
    assert set(table.rules) == expected
    assert len(table.rules) == 9
    assert table.total_frames == 2 + 2 + 3 + 1 + 1 + 1 + 2 + 1 + 1
    assert table.max_depth == 3
    assert table.ungrouping_rules == 1
    assert table.overruled == {13: (0, 2), 15: (2, 1)}


def test_apcc_rules_classify_every_context_as_wanted() -> None:
    table = identify.apcc_rules(CONTEXTS)
    for c in CONTEXTS:
        want = table.overruled.get(c.id, (c.group, c.group))[1]
        assert identify.classify(table.rules, c.chain) == want, c
    # chains never profiled: under a one-label prefix they follow it, under a mixed one they
    # stay ungrouped
    assert identify.classify(table.rules, chain("g z")) == 2
    assert identify.classify(table.rules, chain("w z")) == 0
    assert identify.classify(table.rules, chain("k z")) == 1
    assert identify.classify(table.rules, chain("v")) == 0


def test_apcc_one_frame_when_sites_are_private() -> None:
    table = identify.apcc_rules([ctx(1, "a main", 1), ctx(2, "b main", 1), ctx(3, "c main", 0)])
    assert set(table.rules) == {Rule(1, chain("a")), Rule(1, chain("b"))}
    assert table.max_depth == 1 and not table.overruled


def test_apcc_no_groups_no_rules() -> None:
    assert identify.apcc_rules([ctx(1, "a", 0), ctx(2, "b", 0)]).rules == []


# HALO selectors (Figure 10), worked by hand:
#   m1 (a w x) g1 100, m2 (b w y) g1 50, u1 (a w z) ungrouped, u2 (b v y) ungrouped,
#   o1 (c w x) g2 10.  Order: group 1 (150 accesses), then group 2.
#   group 1 (conflicts: u1, u2, o1):
#     m1: counts a:1 (u1) w:2 (u1,o1) x:1 (o1) -> tie a/x, innermost a; conflicts 1 (u1)
#         on chains with a: a:1 w:1 x:0 -> x; conflicts 0          => a AND x
#     m2: counts b:1 (u2) w:2 y:1 (u2) -> b; then on u2: b:1 w:0 y:1 -> w  => b AND w
#   group 2 (ignore 1, 2; conflicts u1, u2): o1: c:0 -> c                  => c
SEL = [ctx(1, "a w x", 1, 100), ctx(2, "b w y", 1, 50), ctx(3, "a w z", 0), ctx(4, "b v y", 0),
       ctx(5, "c w x", 2, 10)]


def test_halo_selectors_by_hand() -> None:
    s = identify.halo_selectors(SEL)
    assert [(sel.group, sel.terms) for sel in s.selectors] == [
        (1, [chain("a x"), chain("b w")]),
        (2, [chain("c")]),
    ]
    assert (s.conjunctions, s.terms, s.sites) == (3, 5, 5)
    assert s.unresolved == []
    assert [identify.selector_group(s, c.chain) for c in SEL] == [1, 1, 0, 0, 2]


def test_halo_selectors_unresolvable_member() -> None:
    s = identify.halo_selectors([ctx(1, "a", 1), ctx(2, "a", 0)])
    assert s.unresolved == [1]
    assert s.selectors[0].terms == [chain("a")]


def test_unseen_chains_under_a_mixed_prefix_take_the_nearest_label() -> None:
    """A chain the profile never saw (a new caller, a deeper recursion) branches off the
    profiled chains somewhere; it gets the label of most allocations among those sharing
    the longest prefix with it, not "ungrouped" by accident (issue 20)."""
    contexts = [LabelledContext(1, chain("w a main"), 100, 1, objects=900),
                LabelledContext(2, chain("w b main"), 100, 2, objects=100),
                LabelledContext(3, chain("e f"), 100, 0, objects=50),
                LabelledContext(4, chain("e g"), 100, 1, objects=20)]
    table = identify.apcc_rules(contexts)
    assert identify.classify(table.rules, chain("w c main")) == 1  # most of w's allocations
    assert identify.classify(table.rules, chain("w b main")) == 2  # profiled chains unchanged
    assert identify.classify(table.rules, chain("w a main")) == 1
    assert identify.classify(table.rules, chain("e h")) == 0  # e's allocations are mostly ungrouped
    assert identify.classify(table.rules, chain("e g")) == 1
    assert set(table.rules) == {Rule(1, chain("w")), Rule(2, chain("w b")), Rule(1, chain("e g"))}


def test_a_dominant_label_decides_its_prefix_alone() -> None:
    """With dominance 0.9, a prefix whose profiled allocations are at least 90% one label's
    gets one rule: the minority is placed with the majority (and reported as overruled)
    instead of making every allocation through the prefix walk further."""
    contexts = [LabelledContext(1, chain("w a main"), 100, 1, objects=950),
                LabelledContext(2, chain("w b main"), 100, 0, objects=50),
                LabelledContext(3, chain("e f"), 100, 1, objects=800),
                LabelledContext(4, chain("e g"), 100, 0, objects=200)]
    exact = identify.apcc_rules(contexts)
    assert set(exact.rules) == {Rule(1, chain("w")), Rule(0, chain("w b")), Rule(1, chain("e")),
                                Rule(0, chain("e g"))} and not exact.overruled
    cheap = identify.apcc_rules(contexts, dominance=0.9)
    # w: 95% group 1 decides alone; e: 80%, not dominant, stays exact
    assert set(cheap.rules) == {Rule(1, chain("w")), Rule(1, chain("e")), Rule(0, chain("e g"))}
    assert cheap.overruled == {2: (0, 1)}
    assert identify.classify(cheap.rules, chain("w b main")) == 1


def test_the_walk_budget_collapses_the_sites_that_lose_least_per_walk() -> None:
    """Sites w and e both need a walk (two labels each, none dominant). With a budget that
    fits only one of them, the one whose collapse loses fewer accesses per walked
    allocation (e) is decided by its nearest label; w keeps its exact rules. Budget 0
    collapses both, budget 1 neither."""
    contexts = [LabelledContext(1, chain("w a main"), 9000, 1, objects=600),
                LabelledContext(2, chain("w b main"), 8000, 2, objects=400),  # w: 8000 lost / 1000
                LabelledContext(3, chain("e f"), 100, 1, objects=700),
                LabelledContext(4, chain("e g"), 300, 0, objects=300),  # e: 300 lost / 1000
                LabelledContext(5, chain("s"), 10, 3, objects=8000)]  # decided at its site
    exact = identify.apcc_rules(contexts, walk_budget=1.0)
    assert exact.walk_budget.walking_before == 2000 and exact.walk_budget.collapsed_sites == 0
    assert identify.classify(exact.rules, chain("e g")) == 0
    half = identify.apcc_rules(contexts, walk_budget=0.12)  # 1000 of 10000 may walk
    wb = half.walk_budget
    assert (wb.walking_sites, wb.collapsed_sites, wb.walking_after, wb.lost_accesses) == (2, 1, 1000, 300)
    assert identify.classify(half.rules, chain("e g")) == 1  # e decided by its first frame
    assert identify.classify(half.rules, chain("w b main")) == 2  # w still told apart
    assert max(len(r.frames) for r in half.rules if r.frames[0] == chain("e")[0]) == 1
    none = identify.apcc_rules(contexts, walk_budget=0.0)
    assert all(len(r.frames) == 1 for r in none.rules)
    assert none.walk_budget.walking_after == 0 and none.walk_budget.collapsed_sites == 2
    assert identify.classify(none.rules, chain("w b main")) == 1  # the nearest label: most allocations
    assert set(none.overruled) == {2, 4}


def test_the_classifier_answers_as_classify_does() -> None:
    """identify.Classifier (a dict probe per rule length) against classify (a scan of every
    rule) on random rule tables and chains, including unseen and cut chains."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        contexts = [LabelledContext(i, tuple((0, rng.randint(0, 6)) for _ in range(rng.randint(1, 5))),
                                    rng.randint(0, 100), rng.choice([0, 0, 1, 2, 3]), rng.randint(1, 50))
                    for i in range(rng.randint(1, 25))]
        table = identify.apcc_rules(contexts, dominance=rng.choice([1.0, 0.9]))
        fast = identify.Classifier(table.rules)
        for c in contexts:
            for chain in (c.chain, c.chain + ((0, 9),), c.chain[:1], ((0, 8),) + c.chain):
                assert fast(chain) == identify.classify(table.rules, chain)
