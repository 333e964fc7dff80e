"""HALO context grouping (HALO section 4.2, Figures 6-8).

The input is an affinity graph: nodes are allocation contexts with their access counts,
undirected weighted edges say how often objects of two contexts were accessed close together
in time (a loop edge (x, x) counts pairs of distinct objects of the same context). Grouping
partitions the popular contexts into tight-knit groups whose objects the runtime places in a
shared pool:

1. Popularity filter: walk the contexts from most to least accessed and keep them until
   `coverage` (90%) of all accesses is accounted for; the rest leave the graph (4.1).
2. Edge filter: drop edges lighter than the minimum edge weight (Figure 6, first line).
3. Seed a group with the hotter end of the strongest edge among ungrouped contexts, then
   grow it greedily: add the ungrouped context with the largest positive merge benefit
   (Figure 8) until none is positive or the group is full.
4. Keep the group only if the weight of its edges reaches `gthresh` of all accesses.

Score of a node set V (Figure 7), a weighted density that spreads weight over loops only
where loops exist:  s(V) = sum of edge weights inside V / (|L| + |V|(|V|-1)/2), where L are
the loop edges of V with positive weight. A set whose denominator is 0 (one context without a
loop) scores 0.

Merge benefit of adding context b to group A (Figure 8):
    m(A, b) = s(A + b) - (1 - T) * max(s(A), s({b}))
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ...profile_model import Profile

Edge = tuple[int, int]  # (u, v) with u <= v; u == v is a loop edge


@dataclass(frozen=True)
class GroupingParams:
    """Every grouping parameter, with the paper's default where it gives one."""

    # HALO 4.1: nodes are kept from hottest down until 90% of all accesses are covered.
    coverage: float = 0.90
    # Not given by HALO (Figure 6 has args.min_weight without a value). We drop edges below
    # 0.05% of all heap accesses: one tenth of gthresh, so an edge too light to matter for
    # any group can not pull contexts together. Expressed relative to accesses so the same
    # default works for short and long profiles.
    min_edge_weight: float = 0.0005
    # HALO 4.2 and 5.1: merge tolerance T = 5%.
    merge_tol: float = 0.05
    # Not given by HALO. 16 contexts: beyond that a group is usually several structures
    # mixed together (worse locality than two groups), and each member costs rules.
    max_group_members: int = 16
    # Not given by HALO (args.gthresh). A group must carry 0.5% of all accesses in its
    # edges: a pool for less cannot pay for its chunk and identification cost.
    gthresh: float = 0.005
    # Beyond HALO: 1 contracts the contexts one data structure is built from (linked by
    # pointer fields, DPA 3.2; heaplayout/strategies/halo/shape.py) into one node before grouping, so a
    # structure is never split over pools; 0 groups contexts exactly as HALO does.
    shape_merge: int = 1
    # A pointer link merges two contexts when it joins at least this share of the objects
    # of the smaller one: 1% ignores stray pointers without missing real links.
    shape_min_share: float = 0.01
    # Beyond HALO: this share of a context's walk weight (pairs of its own objects accessed
    # together but not co-allocatable: a structure traversed in another order than it was
    # allocated) joins its loop. HALO counts only co-allocatable pairs, so it does not see
    # that such a structure is traversed on its own, and merges it with whatever it is
    # co-accessed with, spreading the traversal over twice the memory (Olden health's
    # waiting lists: docs/planning.md). 0 groups exactly as HALO.
    walk_weight: float = 1.0
    # Beyond HALO (heaplayout/strategies/halo/companions.py): contexts whose objects are allocated next to
    # each other (one is the very next allocation after the other) for at least this share
    # of the rarer context's objects are companions: a per-object pairing such as a record
    # and its list cell, not two streams that happen to interleave. 0 turns the rule off.
    companion_share: float = 0.5
    # ... and only when they are used together: their affinity is at least this share of
    # the rarer context's accesses (a cell walk touching each record gives about 1; objects
    # allocated together but used apart give about 0).
    companion_use: float = 0.1

    def describe(self) -> str:
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


@dataclass
class AffinityGraph:
    """Nodes (context id -> accesses) and undirected weighted edges, loops allowed."""

    accesses: dict[int, int]
    edges: dict[Edge, int] = field(default_factory=dict)
    # All heap accesses of the program, the base of `gthresh` and `min_edge_weight`; kept
    # when nodes are filtered out. 0 means "the sum of the node accesses".
    total_accesses: int = 0

    def __post_init__(self) -> None:
        self.edges = {edge_key(u, v): w for (u, v), w in self.edges.items()}
        for u, v in self.edges:
            if u not in self.accesses or v not in self.accesses:
                raise ValueError(f"edge ({u}, {v}) names a context that is not a node")
        if self.total_accesses == 0:
            self.total_accesses = sum(self.accesses.values())

    def weight(self, u: int, v: int) -> int:
        return self.edges.get(edge_key(u, v), 0)


@dataclass
class Group:
    members: list[int]  # context ids, in the order they joined
    weight: int  # sum of edge weights inside the group, loops included
    score: float  # s(members), Figure 7


def edge_key(u: int, v: int) -> Edge:
    return (u, v) if u <= v else (v, u)


def graph_from_profile(profile: Profile, usable: set[int] | None = None, walk_weight: float = 0.0) -> AffinityGraph:
    """The affinity graph of a profile: every context with accesses is a node.

    `usable`, when given, limits the nodes to those contexts (the planner leaves out contexts
    the runtime can not identify); edges to other contexts are dropped. `walk_weight` adds
    that share of each context's walk weight (the profile's R records: pairs of its own
    objects accessed together but not co-allocatable) to its loop.
    """
    accesses = {
        c.id: c.accesses
        for c in profile.contexts.values()
        if c.accesses > 0 and (usable is None or c.id in usable)
    }
    edges = {
        (u, v): w
        for (u, v), w in profile.affinity.items()
        if w > 0 and u in accesses and v in accesses
    }
    if walk_weight:
        for x, n in profile.walk.items():
            if x in accesses and n > 0:
                edges[(x, x)] = edges.get((x, x), 0) + round(walk_weight * n)
    total = profile.heap_accesses or sum(c.accesses for c in profile.contexts.values())
    return AffinityGraph(accesses, edges, total)


def contract(graph: AffinityGraph, rep: dict[int, int]) -> AffinityGraph:
    """The graph with each node replaced by its representative rep[node] (nodes missing
    from rep stand for themselves): accesses and edge weights add up, and edges between
    members of one representative become its loop."""
    accesses: dict[int, int] = {}
    for n, a in graph.accesses.items():
        r = rep.get(n, n)
        accesses[r] = accesses.get(r, 0) + a
    edges: dict[Edge, int] = {}
    for (u, v), w in graph.edges.items():
        e = edge_key(rep.get(u, u), rep.get(v, v))
        edges[e] = edges.get(e, 0) + w
    return AffinityGraph(accesses, edges, graph.total_accesses)


def by_heat(graph: AffinityGraph, nodes: set[int] | list[int]) -> list[int]:
    """Nodes from most to least accessed; ties by context id, so results are reproducible."""
    return sorted(nodes, key=lambda n: (-graph.accesses[n], n))


def popular_subgraph(graph: AffinityGraph, coverage: float) -> AffinityGraph:
    """Keep the most accessed nodes until `coverage` of all accesses is reached (HALO 4.1).

    Coverage is of `total_accesses`; a node is kept while the running total before it is
    still short of the target, so the node that crosses the line stays in.
    """
    target = coverage * graph.total_accesses
    kept: dict[int, int] = {}
    running = 0
    for n in by_heat(graph, list(graph.accesses)):
        if running >= target:
            break
        kept[n] = graph.accesses[n]
        running += graph.accesses[n]
    edges = {e: w for e, w in graph.edges.items() if e[0] in kept and e[1] in kept}
    return AffinityGraph(kept, edges, graph.total_accesses)


def heavy_edges(graph: AffinityGraph, min_weight: float) -> AffinityGraph:
    """Drop edges lighter than `min_weight` (an absolute weight)."""
    edges = {e: w for e, w in graph.edges.items() if w >= min_weight}
    return AffinityGraph(dict(graph.accesses), edges, graph.total_accesses)


def inner_weight(graph: AffinityGraph, nodes: set[int]) -> tuple[int, int]:
    """(sum of edge weights inside `nodes`, number of positive loop edges inside `nodes`)."""
    total = 0
    loops = 0
    for (u, v), w in graph.edges.items():
        if u in nodes and v in nodes:
            total += w
            if u == v and w > 0:
                loops += 1
    return total, loops


def score(graph: AffinityGraph, nodes: set[int]) -> float:
    """s(G[nodes]) of Figure 7."""
    total, loops = inner_weight(graph, nodes)
    n = len(nodes)
    denominator = loops + n * (n - 1) // 2
    return total / denominator if denominator else 0.0


def merge_benefit(graph: AffinityGraph, group: set[int], candidate: int, tol: float) -> float:
    """m(A, B) of Figure 8 for group A and the single context B = {candidate}."""
    merged = score(graph, group | {candidate})
    return merged - (1.0 - tol) * max(score(graph, group), score(graph, {candidate}))


def strongest_edge(graph: AffinityGraph, avail: set[int]) -> Edge | None:
    """The heaviest edge with both ends available; ties go to the hotter, then lower, ids."""
    best: Edge | None = None
    best_key: tuple = ()
    for (u, v), w in graph.edges.items():
        if u in avail and v in avail:
            key = (w, max(graph.accesses[u], graph.accesses[v]), -u, -v)
            if best is None or key > best_key:
                best, best_key = (u, v), key
    return best


def score_of(weight: int, loops: int, size: int) -> float:
    """Figure 7 from its parts: inner edge weight, positive loops, number of contexts."""
    denominator = loops + size * (size - 1) // 2
    return weight / denominator if denominator else 0.0


def adjacency(graph: AffinityGraph) -> dict[int, dict[int, int]]:
    """node -> {neighbour: weight}; a loop appears as the node's own entry."""
    adj: dict[int, dict[int, int]] = {n: {} for n in graph.accesses}
    for (u, v), w in graph.edges.items():
        adj[u][v] = w
        adj[v][u] = w
    return adj


@dataclass
class _Growing:
    """A group being grown, with its inner weight and loop count kept up to date so a merge
    benefit costs one pass over the candidate's edges instead of over the whole graph."""

    members: list[int]
    weight: int
    loops: int

    def with_candidate(self, adj: dict[int, dict[int, int]], b: int) -> tuple[int, int]:
        """(inner weight, positive loops) of the group with b added."""
        inside = set(self.members)
        links = sum(w for a, w in adj[b].items() if a in inside)
        loop = adj[b].get(b, 0)
        return self.weight + links + loop, self.loops + (1 if loop > 0 else 0)


def group_contexts(graph: AffinityGraph, params: GroupingParams) -> list[Group]:
    """Figure 6: popularity filter, edge filter, then greedy seeded growth.

    Returns the kept groups in the order they were formed (strongest seed first). The merge
    benefit is Figure 8 exactly (`merge_benefit` computes the same value from scratch).
    """
    g = popular_subgraph(graph, params.coverage)
    g = heavy_edges(g, params.min_edge_weight * graph.total_accesses)
    adj = adjacency(g)
    avail = set(g.accesses)
    groups: list[Group] = []
    tol = params.merge_tol
    while avail:
        edge = strongest_edge(g, avail)
        if edge is None:
            break  # the rest have no edges: nothing left to group
        seed = by_heat(g, set(edge))[0]
        seed_loop = adj[seed].get(seed, 0)
        grow = _Growing([seed], seed_loop, 1 if seed_loop > 0 else 0)
        avail.discard(seed)
        while len(grow.members) < params.max_group_members:
            size = len(grow.members)
            s_group = score_of(grow.weight, grow.loops, size)
            best_benefit = 0.0
            best: tuple[int, int, int] | None = None  # (candidate, weight, loops)
            for stranger in by_heat(g, avail):
                weight, loops = grow.with_candidate(adj, stranger)
                own_loop = adj[stranger].get(stranger, 0)
                s_alone = score_of(own_loop, 1 if own_loop > 0 else 0, 1)
                benefit = score_of(weight, loops, size + 1) - (1.0 - tol) * max(s_group, s_alone)
                if benefit > best_benefit:
                    best_benefit, best = benefit, (stranger, weight, loops)
            if best is None:
                break
            grow = _Growing(grow.members + [best[0]], best[1], best[2])
            avail.discard(best[0])
        if grow.weight > 0 and grow.weight >= graph.total_accesses * params.gthresh:
            groups.append(Group(grow.members, grow.weight, score_of(grow.weight, grow.loops, len(grow.members))))
    return groups
