"""Group identification: which call chains the runtime maps to which group.

Two forms are computed from the same labelled contexts (every profiled context with its call
chain, innermost frame first, and its group, 0 for ungrouped):

* The rule table the plan uses: DPA's adaptive partial call chains (DPA 3.1, 4). A context is
  decided by the shortest chain prefix (innermost frames) that no context with a different
  label shares. Rules follow the runtime's matching: the longest rule that is a prefix of the
  allocation's chain wins, no match means ungrouped. Ungrouped contexts need no rules,
  except when a profiled chain is a whole prefix of another one with a different label
  (a short stack, or a depth-truncated one): the shorter chain's rule also matches the
  longer chain, so the longer one gets its own rule, with group 0 when it is ungrouped.
  Chains seen in no profile fall to the longest rule they match: under a one-label prefix
  they join that label (DPA's generalisation); under a mixed prefix they take the label of
  the nearest profiled contexts, those sharing the longest prefix with them, weighted by
  their allocations (a deeper recursion or a new caller at run time is treated like the
  profiled chains it branches off from, not left ungrouped by accident).

* HALO's selectors (Figure 10): per group a disjunction of conjunctions of call sites that
  may appear anywhere on the stack. Reported for comparison only.

Contexts whose chains are identical over their whole recorded depth but carry different
labels cannot be told apart by any rule. The label with the most accesses wins (ties: the
lower label, so "ungrouped" beats a group); the others are counted as indistinguishable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Frame = tuple[int, int]  # (module id, offset) exactly as in the profile
Chain = tuple[Frame, ...]  # innermost first

@dataclass(frozen=True)
class LabelledContext:
    id: int
    chain: Chain
    accesses: int
    group: int  # 0 = ungrouped
    objects: int = 0  # allocations made from it: the weight of its label for unseen chains nearby


@dataclass(frozen=True)
class Rule:
    group: int  # 0 sends matching chains back to "ungrouped"
    frames: Chain


@dataclass(frozen=True)
class WalkBudget:
    """What the walk budget did: allocations (of the profile) at sites whose rules need a
    stack walk, before and after collapsing the sites over budget."""
    budget: float
    allocations: int
    walking_before: int
    walking_after: int
    collapsed_sites: int
    walking_sites: int
    lost_accesses: int  # accesses of contexts a collapsed site now places otherwise

    @property
    def share_before(self) -> float:
        return self.walking_before / self.allocations if self.allocations else 0.0

    @property
    def share_after(self) -> float:
        return self.walking_after / self.allocations if self.allocations else 0.0


@dataclass
class RuleTable:
    rules: list[Rule]
    # contexts whose label had to be overruled because an identical chain wins: id -> (wanted, got)
    overruled: dict[int, tuple[int, int]] = field(default_factory=dict)
    walk_budget: WalkBudget | None = None

    @property
    def total_frames(self) -> int:
        return sum(len(r.frames) for r in self.rules)

    @property
    def max_depth(self) -> int:
        return max((len(r.frames) for r in self.rules), default=0)

    @property
    def ungrouping_rules(self) -> int:
        return sum(1 for r in self.rules if r.group == 0)

    def depth_histogram(self) -> dict[int, int]:
        hist: dict[int, int] = {}
        for r in self.rules:
            hist[len(r.frames)] = hist.get(len(r.frames), 0) + 1
        return dict(sorted(hist.items()))


@dataclass
class _Node:
    """A chain prefix in the trie of all chains."""

    depth: int
    children: dict[Frame, "_Node"] = field(default_factory=dict)
    ending: list[LabelledContext] = field(default_factory=list)  # contexts whose chain ends here
    forced: int | None = None  # label of the contexts ending here, after resolving conflicts
    labels: set[int] = field(default_factory=set)  # labels of all contexts at or below
    weight: dict[int, int] = field(default_factory=dict)  # label -> allocations at or below
    collapsed: bool = False  # decided by its nearest label alone: over the walk budget


def _build_trie(contexts: list[LabelledContext]) -> _Node:
    root = _Node(0)
    for c in contexts:
        if not c.chain:
            continue  # nothing the runtime could match
        node = root
        for frame in c.chain:
            node = node.children.setdefault(frame, _Node(node.depth + 1))
        node.ending.append(c)
    return root


def _winning_label(ending: list[LabelledContext]) -> int:
    """Majority by accesses among contexts with the same chain; ties to the lower label."""
    by_label: dict[int, int] = {}
    for c in ending:
        by_label[c.group] = by_label.get(c.group, 0) + c.accesses
    return min(by_label, key=lambda label: (-by_label[label], label))


def _collect_labels(node: _Node, overruled: dict[int, tuple[int, int]]) -> None:
    """Fill node.forced and node.labels bottom-up, resolving identical chains."""
    for child in node.children.values():
        _collect_labels(child, overruled)
        node.labels |= child.labels
        for label, w in child.weight.items():
            node.weight[label] = node.weight.get(label, 0) + w
    if node.ending:
        node.forced = _winning_label(node.ending)
        for c in node.ending:
            if c.group != node.forced:
                overruled[c.id] = (c.group, node.forced)
            node.weight[node.forced] = node.weight.get(node.forced, 0) + c.objects
        node.labels.add(node.forced)


def _nearest_label(node: _Node) -> int:
    """The label of most allocations under a mixed prefix; ties to the lower label."""
    return min(node.labels, key=lambda label: (-node.weight.get(label, 0), label))


def _relabel(node: _Node, label: int, overruled: dict[int, tuple[int, int]]) -> None:
    """Every context at or below node gets `label` (a dominated subtree, _emit)."""
    for c in node.ending:
        if c.group != label:
            overruled[c.id] = (c.group, label)
    for child in node.children.values():
        _relabel(child, label, overruled)


def _emit(node: _Node, prefix: Chain, inherited: int, out: list[Rule],
          dominance: float = 1.0, overruled: dict[int, tuple[int, int]] | None = None) -> None:
    """Rules for the subtree under `prefix`, where shorter rules already give `inherited`.

    A subtree of one label is decided at its top: one rule, unless the label is already
    what a shorter rule gives. A mixed subtree gives unseen chains that branch off here the
    label of most allocations below (_nearest_label), or, where a profiled chain ends at this
    very prefix, that chain's label, which must be given here; the children inherit it (so a
    child of another label, even ungrouped, needs a rule)."""
    if node.depth > 0 and len(node.labels) == 1:
        (label,) = node.labels
        if label != inherited:
            out.append(Rule(label, prefix))
        return
    if node.depth > 0 and (dominance < 1.0 or node.collapsed) and overruled is not None:
        # a label with at least `dominance` of the allocations below decides the whole
        # subtree: the others' rules would make every allocation here walk the stack.
        # A site over the walk budget (_spend_walk_budget) is decided the same way.
        total = sum(node.weight.values())
        best = _nearest_label(node)
        if node.collapsed or (total > 0 and node.weight.get(best, 0) >= dominance * total):
            if best != inherited:
                out.append(Rule(best, prefix))
            _relabel(node, best, overruled)
            return
    here = node.forced if node.forced is not None else (_nearest_label(node) if node.depth > 0 else None)
    if here is not None:
        if here != inherited:
            out.append(Rule(here, prefix))
        inherited = here
    for frame in sorted(node.children):
        _emit(node.children[frame], prefix + (frame,), inherited, out, dominance, overruled)


def _subtree_accesses(node: _Node, label: int) -> int:
    """Accesses of the contexts at or below node whose label is not `label`."""
    lost = sum(c.accesses for c in node.ending if c.group != label)
    return lost + sum(_subtree_accesses(child, label) for child in node.children.values())


def _walking_sites(root: _Node, dominance: float) -> list[_Node]:
    """First-frame nodes whose allocations all walk the stack under the rules _emit writes:
    more than one label below and none dominant."""
    walking = []
    for site in root.children.values():
        total = sum(site.weight.values())
        if len(site.labels) < 2 or total == 0:
            continue
        if dominance < 1.0 and site.weight.get(_nearest_label(site), 0) >= dominance * total:
            continue
        walking.append(site)
    return walking


def _spend_walk_budget(root: _Node, dominance: float, walk_budget: float, total_allocations: int) -> WalkBudget:
    """Collapse walking sites, cheapest loss per walked allocation first, until the profiled
    allocations that would walk are at most walk_budget of all allocations. The loss of a
    site is the accesses of its contexts that its nearest label would place otherwise."""
    walking = _walking_sites(root, dominance)
    walked = sum(sum(site.weight.values()) for site in walking)
    allowed = walk_budget * total_allocations
    before = walked
    lost = 0
    collapsed = 0
    if walked > allowed:
        def price(site: _Node) -> tuple[float, int]:
            allocations = sum(site.weight.values())
            return (_subtree_accesses(site, _nearest_label(site)) / allocations, -allocations)
        for site in sorted(walking, key=price):
            if walked <= allowed:
                break
            site.collapsed = True
            collapsed += 1
            walked -= sum(site.weight.values())
            lost += _subtree_accesses(site, _nearest_label(site))
    return WalkBudget(walk_budget, total_allocations, before, walked, collapsed, len(walking), lost)


def apcc_rules(contexts: list[LabelledContext], dominance: float = 1.0, walk_budget: float = 1.0,
               total_allocations: int | None = None) -> RuleTable:
    """Adaptive partial call chains: each context is decided by the shortest prefix of its
    chain (innermost frames) that no context of another label shares; see the module doc.
    walk_budget caps the share of total_allocations (default: those of `contexts`) whose
    site needs a stack walk (_spend_walk_budget); 1 leaves every distinction in."""
    root = _build_trie(contexts)
    overruled: dict[int, tuple[int, int]] = {}
    _collect_labels(root, overruled)
    if total_allocations is None:
        total_allocations = sum(c.objects for c in contexts)
    budget = _spend_walk_budget(root, dominance, walk_budget, total_allocations)
    rules: list[Rule] = []
    _emit(root, (), 0, rules, dominance, overruled)
    return RuleTable(rules, overruled, budget)


def classify(rules: list[Rule], chain: Chain) -> int:
    """What the runtime does: the longest rule that is a prefix of `chain`, else 0."""
    best_len = 0
    group = 0
    for r in rules:
        n = len(r.frames)
        if n > best_len and chain[:n] == r.frames:
            best_len, group = n, r.group
    return group


class Classifier:
    """classify() for many chains: the rules by their frames, each chain's prefixes looked
    up from the longest rule length down (a dict probe per length, not a scan of every rule)."""

    def __init__(self, rules: list[Rule]):
        self.by_frames = {r.frames: r.group for r in rules}
        self.lengths = sorted({len(r.frames) for r in rules}, reverse=True)

    def __call__(self, chain: Chain) -> int:
        for n in self.lengths:
            if n <= len(chain):
                group = self.by_frames.get(chain[:n])
                if group is not None:
                    return group
        return 0


# --- HALO selectors (Figure 10) ------------------------------------------------------------

Conjunction = tuple[Frame, ...]  # call sites that must all be on the stack


@dataclass
class Selector:
    group: int
    terms: list[Conjunction]  # disjunction


@dataclass
class SelectorSet:
    selectors: list[Selector]  # in evaluation order (most popular group first)
    unresolved: list[int] = field(default_factory=list)  # member contexts with conflicts left

    @property
    def conjunctions(self) -> int:
        return sum(len(s.terms) for s in self.selectors)

    @property
    def terms(self) -> int:
        return sum(len(t) for s in self.selectors for t in s.terms)

    @property
    def sites(self) -> int:
        """Distinct call sites the selectors watch (HALO instruments each one)."""
        return len({site for s in self.selectors for t in s.terms for site in t})


def halo_selectors(contexts: list[LabelledContext]) -> SelectorSet:
    """Figure 10. Groups are handled from most to least accessed; a group's selector only has
    to avoid contexts of later groups and ungrouped ones (earlier selectors are tested first).
    For each member the conjunction grows by the call site of the member's chain found on the
    fewest conflicting chains (ties: the innermost site, our reading of "lower in the
    stack") until no conflict is left or a site no longer reduces them.

    One reading choice: Figure 10 ORs the conjunction into the selector at every step; we OR
    in only the final conjunction per member, since the less specific earlier ones would
    match every conflict the refinement removed.
    """
    members: dict[int, list[LabelledContext]] = {}
    for c in contexts:
        if c.group:
            members.setdefault(c.group, []).append(c)
    order = sorted(members, key=lambda g: (-sum(c.accesses for c in members[g]), g))
    result = SelectorSet([])
    # contexts (by index) whose chain has each site, and those of each label: the conflicting
    # chains of a conjunction are then set intersections, not a scan of every context per site
    having: dict[Frame, set[int]] = {}
    of_label: dict[int, set[int]] = {}
    for i, c in enumerate(contexts):
        of_label.setdefault(c.group, set()).add(i)
        for site in set(c.chain):
            having.setdefault(site, set()).add(i)
    live = set(range(len(contexts)))  # contexts of labels not yet handled (ungrouped stay)
    for group in order:
        live -= of_label.get(group, set())
        selector = Selector(group, [])
        for member in members[group]:
            expr: list[Frame] = []
            conflicts: int | None = None  # None stands for the figure's infinity
            chains = live  # the conflicting contexts that have every site of expr
            while conflicts != 0:
                best: tuple[int, int, Frame] | None = None
                for position, site in enumerate(member.chain):
                    m = len(chains & having[site])
                    if best is None or (m, position) < best[:2]:
                        best = (m, position, site)
                if best is None:
                    break  # a member without frames
                m, _, site = best
                if m == conflicts:
                    break
                expr.append(site)
                conflicts = m
                chains = chains & having[site]
            if conflicts:
                result.unresolved.append(member.id)
            if expr and tuple(expr) not in selector.terms:
                selector.terms.append(tuple(expr))
        result.selectors.append(selector)
    return result


def selector_group(selectors: SelectorSet, chain: Chain) -> int:
    """HALO's runtime test: the first selector with a conjunction whose sites are all on the
    stack; 0 when none matches."""
    sites = set(chain)
    for s in selectors.selectors:
        if any(all(site in sites for site in term) for term in s.terms):
            return s.group
    return 0
