"""The affinity graph with the plan's groups drawn around their contexts (HALO's figure 9),
as inline SVG: one circle per context (area ~ accesses), one line per affinity edge (width
~ weight), a dashed ring and a label per group. Contexts are named by symbol and line.

The layout is deterministic and needs no script: each group's contexts sit on a circle
around the group's centre, groups (then the ungrouped contexts) in rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from ..profile_model import Profile
from .limits import GRAPH_MAX_EDGES, GRAPH_MAX_NODES
from .naming import context_names, full_chain

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22")
UNGROUPED = "#7f7f7f"
WIDTH = 1000
NODE_GAP = 60  # pixels of circle per member
LABEL_CHARS = 30


def group_colour(group: int) -> str:
    return UNGROUPED if group == 0 else PALETTE[(group - 1) % len(PALETTE)]


@dataclass
class Node:
    context: int
    group: int
    x: float = 0.0
    y: float = 0.0
    r: float = 4.0


def _shorten(text: str, n: int = LABEL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def affinity_svg(profile: Profile, group_of: dict[int, int] | None) -> tuple[str, dict]:
    """The SVG and what it shows (counts for the page's summary and the tests)."""
    names = context_names(profile)
    groups = group_of or {}
    touched = {c for pair in profile.affinity for c in pair}
    ranked = sorted((c for c in profile.contexts.values() if c.accesses > 0 or c.id in touched),
                    key=lambda c: (-c.accesses, c.id))
    shown = ranked[:GRAPH_MAX_NODES]
    if not shown:
        return '<p class="empty">The profile has no accessed contexts.</p>', {
            "nodes": 0, "edges": 0, "groups": 0, "contexts": len(profile.contexts),
            "affinity_edges": len(profile.affinity)}
    max_acc = max(1, max(c.accesses for c in shown))
    nodes = {c.id: Node(c.id, groups.get(c.id, 0), r=4 + 14 * math.sqrt(c.accesses / max_acc)) for c in shown}
    clusters: dict[int, list[Node]] = {}
    for n in nodes.values():
        clusters.setdefault(n.group, []).append(n)
    order = sorted(clusters, key=lambda g: (g == 0, g))

    # place clusters in rows
    x = y = 0.0
    row_h = 0.0
    placed: list[tuple[int, float, float, float]] = []  # group, cx, cy, ring radius
    for g in order:
        members = clusters[g]
        ring = 0.0 if len(members) == 1 else max(40.0, NODE_GAP * len(members) / (2 * math.pi))
        half = ring + 115  # room for the node labels beside the ring
        tall = 30 + 2 * (ring + 32) + 24  # group label, ring, node labels below
        if x + 2 * half > WIDTH and x > 0:
            x, y, row_h = 0.0, y + row_h, 0.0
        cx, cy = x + half, y + 30 + ring + 32
        for i, n in enumerate(sorted(members, key=lambda n: -profile.contexts[n.context].accesses)):
            a = 2 * math.pi * i / len(members) - math.pi / 2
            n.x, n.y = cx + ring * math.cos(a), cy + ring * math.sin(a)
        placed.append((g, cx, cy, ring))
        x += 2 * half
        row_h = max(row_h, tall)
    height = y + row_h

    edges = sorted(((w, a, b) for (a, b), w in profile.affinity.items() if a != b and a in nodes and b in nodes),
                   reverse=True)[:GRAPH_MAX_EDGES]
    max_w = max([w for w, _a, _b in edges] + [1])
    out = [f'<svg id="affinity-graph" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
           f'viewBox="0 0 {WIDTH} {height:.0f}" role="img" aria-label="affinity graph">']
    for g, cx, cy, ring in placed:
        if g == 0 and group_of is not None:
            label = "ungrouped"
        elif g == 0:
            label = "no plan given: contexts not grouped"
        else:
            label = f"group {g}"
        rr = ring + 24 + (0 if ring else 6)
        dash = ' stroke-dasharray="6 4"' if g else ' stroke-dasharray="2 4"'
        out.append(f'<g class="cluster" data-group="{g}"><circle cx="{cx:.1f}" cy="{cy:.1f}" r="{rr:.1f}" '
                   f'fill="{group_colour(g)}" fill-opacity="0.06" stroke="{group_colour(g)}"{dash}/>'
                   f'<text x="{cx:.1f}" y="{cy - rr - 6:.1f}" text-anchor="middle" class="cluster-label" '
                   f'fill="{group_colour(g)}">{escape(label)}</text></g>')
    for w, a, b in edges:
        na, nb = nodes[a], nodes[b]
        same = na.group == nb.group and na.group != 0
        out.append(f'<line class="edge" data-a="{a}" data-b="{b}" x1="{na.x:.1f}" y1="{na.y:.1f}" x2="{nb.x:.1f}" '
                   f'y2="{nb.y:.1f}" stroke="{group_colour(na.group) if same else "#999"}" '
                   f'stroke-opacity="{0.35 + 0.5 * w / max_w:.2f}" stroke-width="{0.6 + 6 * w / max_w:.1f}">'
                   f'<title>affinity {escape(names[a])} — {escape(names[b])}: {w:,}</title></line>')
    for n in nodes.values():
        c = profile.contexts[n.context]
        self_w = profile.affinity.get((n.context, n.context), 0)
        ring_w = 0 if not self_w else 1 + 4 * min(1.0, self_w / max_w)
        tip = (f"context {n.context}: {c.objects:,} objects, {c.bytes:,} bytes, {c.accesses:,} accesses, "
               f"self-affinity {self_w:,}\n{full_chain(profile, n.context)}")
        out.append(f'<g class="node" data-context="{n.context}" data-group="{n.group}">'
                   f'<circle cx="{n.x:.1f}" cy="{n.y:.1f}" r="{n.r:.1f}" fill="{group_colour(n.group)}" '
                   f'stroke="#222" stroke-width="{ring_w:.1f}"><title>{escape(tip)}</title></circle>'
                   f'<text x="{n.x:.1f}" y="{n.y + n.r + 11:.1f}" text-anchor="middle">'
                   f'#{n.context} {escape(_shorten(names[n.context]))}</text></g>')
    out.append("</svg>")
    info = {"nodes": len(nodes), "edges": len(edges), "groups": len([g for g in clusters if g]),
            "contexts": len(profile.contexts), "affinity_edges": len(profile.affinity)}
    return "\n".join(out), info
