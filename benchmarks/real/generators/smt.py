"""SMT-LIB 2 for z3: a sequence of scheduling and bit-vector queries with push/pop.

Each query declares fresh integer start times with precedence and resource (disjunctive)
constraints, or a bit-vector equation system, and asks (check-sat); the solver builds and
discards terms, clauses and lemmas for every query. Only sat/unsat and values of a few
objectives are printed (z3 is deterministic for a given input and build).
"""

from __future__ import annotations

import random


def _schedule(rng: random.Random, jobs: int, out: list[str]) -> None:
    dur = [rng.randint(1, 9) for _ in range(jobs)]
    out.append("(push 1)")
    out += [f"(declare-const s{j} Int)" for j in range(jobs)]
    out += [f"(assert (>= s{j} 0))" for j in range(jobs)]
    for j in range(1, jobs):
        if rng.random() < 0.4:
            i = rng.randrange(j)
            out.append(f"(assert (>= s{j} (+ s{i} {dur[i]})))")
    machines = max(2, jobs // 4)
    groups: list[list[int]] = [[] for _ in range(machines)]
    for j in range(jobs):
        groups[rng.randrange(machines)].append(j)
    for g in groups:
        for a in range(len(g)):
            for b in range(a + 1, len(g)):
                i, j = g[a], g[b]
                out.append(f"(assert (or (>= s{i} (+ s{j} {dur[j]})) (>= s{j} (+ s{i} {dur[i]}))))")
    horizon = sum(dur) // machines + rng.randint(0, 6)
    out += [f"(assert (<= (+ s{j} {dur[j]}) {horizon}))" for j in range(jobs)]
    out += ["(check-sat)", "(pop 1)"]


def _bitvector(rng: random.Random, nvars: int, out: list[str]) -> None:
    out.append("(push 1)")
    out += [f"(declare-const b{k} (_ BitVec 32))" for k in range(nvars)]
    for _ in range(nvars):
        a, b, c = rng.sample(range(nvars), 3)
        op = rng.choice(["bvadd", "bvxor", "bvmul", "bvor"])
        out.append(f"(assert (= (bvand ({op} b{a} b{b}) #x{rng.getrandbits(32):08x}) "
                   f"(bvand b{c} #x{rng.getrandbits(32):08x})))")
    out += ["(check-sat)", "(pop 1)"]


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    out = ["(set-option :produce-models false)", "(set-logic ALL)"]
    for q in range(params["queries"]):
        if q % 3 == 2:
            _bitvector(rng, params["bv_vars"], out)
        else:
            _schedule(rng, rng.randint(params["jobs"] // 2, params["jobs"]), out)
    return {"queries.smt2": ("\n".join(out) + "\n").encode()}
