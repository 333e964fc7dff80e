"""A DOT graph for graphviz `dot`: a layered dependency graph with clusters and labels.

`dot` ranks nodes, inserts virtual nodes for long edges, orders ranks by repeated median
sweeps and routes splines; each step allocates per node and per edge. The graph looks like
a module dependency graph: clusters (packages), mostly forward edges, some long ones.
"""

from __future__ import annotations

import random

from . import words


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    n, clusters = params["nodes"], params["clusters"]
    names = [f"{w}_{i}" for i, w in enumerate(words(rng, n))]
    out = ["digraph deps {", "  node [shape=box, fontsize=10];", "  rankdir=TB;"]
    per = max(1, n // clusters)
    for c in range(clusters):
        out.append(f"  subgraph cluster_{c} {{ label=\"pkg{c}\";")
        out += [f"    \"{names[i]}\";" for i in range(c * per, min(n, (c + 1) * per))]
        out.append("  }")
    out += [f"  \"{names[i]}\";" for i in range(clusters * per, n)]
    for i in range(1, n):
        for _ in range(rng.randint(1, params["fanout"])):
            j = max(0, i - 1 - int(rng.expovariate(1 / params["span"])))
            out.append(f"  \"{names[j]}\" -> \"{names[i]}\";")
    out.append("}")
    return {"graph.dot": ("\n".join(out) + "\n").encode()}
