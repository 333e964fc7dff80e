"""DIMACS CNF for a SAT solver: random 3-SAT near the satisfiability threshold.

Below the threshold (clauses/variables < 4.26) most instances are satisfiable, above it
unsatisfiable; near it they are hardest. The solver learns and deletes clauses all run
long. An instance that is unsatisfiable gives the same answer however a multi-threaded
solver races, which keeps the output check exact.
"""

from __future__ import annotations

import random


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    n = params["vars"]
    m = int(n * params["ratio"])
    out = [f"p cnf {n} {m}"]
    for _ in range(m):
        lits = rng.sample(range(1, n + 1), 3)
        out.append(" ".join(str(v if rng.random() < 0.5 else -v) for v in lits) + " 0")
    return {"formula.cnf": ("\n".join(out) + "\n").encode()}
