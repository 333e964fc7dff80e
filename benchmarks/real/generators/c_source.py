"""A C translation unit for gcc's cc1: many small functions over generated structs.

What a compiler allocates per function (trees, RTL, basic blocks, SSA names) grows with the
number and size of functions, so the generator writes struct types, functions with loops,
switches, nested conditionals and calls between them, and a main that uses them.
"""

from __future__ import annotations

import random


def _expr(rng: random.Random, vars_: list[str], depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(vars_ + [str(rng.randint(1, 99))])
    op = rng.choice(["+", "-", "*", "^", "&", "|", "<<", ">>"])
    right = _expr(rng, vars_, depth - 1)
    if op in ("<<", ">>"):
        right = f"({right} & 7)"
    return f"({_expr(rng, vars_, depth - 1)} {op} {right})"


def _stmt(rng: random.Random, vars_: list[str], depth: int, funcs: list[str]) -> str:
    r = rng.random()
    v = rng.choice(vars_)
    if depth == 0 or r < 0.35:
        return f"{v} = {_expr(rng, vars_, 3)};"
    if r < 0.5 and funcs:
        return f"{v} += {rng.choice(funcs)}(s, {_expr(rng, vars_, 2)});"
    if r < 0.7:
        body = " ".join(_stmt(rng, vars_, depth - 1, funcs) for _ in range(rng.randint(1, 3)))
        return f"for (int i = 0; i < {rng.randint(2, 40)}; i++) {{ {body} s->f[i & 7] += {v}; }}"
    if r < 0.85:
        cases = " ".join(f"case {k}: {_stmt(rng, vars_, depth - 1, funcs)} break;" for k in range(rng.randint(2, 6)))
        return f"switch ({v} & 7) {{ {cases} default: {v}++; }}"
    a = " ".join(_stmt(rng, vars_, depth - 1, funcs) for _ in range(2))
    b = _stmt(rng, vars_, depth - 1, funcs)
    return f"if ({_expr(rng, vars_, 2)} > {rng.randint(0, 50)}) {{ {a} }} else {{ {b} }}"


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    lines = ["typedef unsigned long u64;",
             "struct S { u64 f[8]; struct S *next; const char *name; };",
             "int printf(const char *, ...);"]
    funcs: list[str] = []
    for i in range(params["functions"]):
        name = f"fn{i}"
        vars_ = [f"v{k}" for k in range(rng.randint(3, 8))]
        decl = " ".join(f"u64 {v} = x + {k};" for k, v in enumerate(vars_))
        body = " ".join(_stmt(rng, vars_, params["depth"], funcs[-6:]) for _ in range(rng.randint(3, params["stmts"])))
        ret = " + ".join(vars_)
        lines.append(f"static u64 {name}(struct S *s, u64 x) {{ {decl} {body} return {ret}; }}")
        funcs.append(name)
    calls = " ".join(f"acc += {f}(&s, acc & 255);" for f in funcs[-20:])
    lines.append(f"int main(void) {{ struct S s = {{{{0}}, 0, \"s\"}}; u64 acc = 1; {calls} "
                 "printf(\"%lu\\n\", acc); return 0; }")
    return {"unit.c": ("\n".join(lines) + "\n").encode()}
