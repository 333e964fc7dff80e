"""A Prolog program for SWI-Prolog: a generated family database queried with findall/sort.

Facts are consulted (clauses compiled into malloc'd code blocks), then rules for ancestors
and cousins are evaluated with findall, setof and assert/retract of memo facts; atoms are
created for generated names.
"""

from __future__ import annotations

import random

from . import words


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    n = params["people"]
    names = [f"{w}{i}" for i, w in enumerate(words(rng, n))]
    facts = [f"parent({names[max(0, i - rng.randint(1, params['span']))]}, {names[i]})." for i in range(1, n)]
    facts += [f"age({p}, {rng.randint(1, 99)})." for p in names]
    src = "\n".join(facts) + f"""
:- dynamic memo/2.
ancestor(X, Y) :- parent(X, Y).
ancestor(X, Y) :- parent(X, Z), ancestor(Z, Y).
descendants(X, N) :- ( memo(X, N) -> true ; findall(Y, ancestor(X, Y), L), sort(L, S), length(S, N), assertz(memo(X, N)) ).
cousins(X, Y) :- parent(P, X), parent(G, P), parent(G, Q), Q \\== P, parent(Q, Y).
run(R) :- findall(N-P, (parent(P, _), descendants(P, N)), L), msort(L, S), last(S, Best),
          findall(X-Y, cousins(X, Y), C), length(C, NC),
          aggregate_all(sum(A), age(_, A), SumA),
          atom_codes(A1, "r"), atom_concat(A1, R, Tag),
          format("~w best ~w cousins ~w ages ~w~n", [Tag, Best, NC, SumA]), retractall(memo(_, _)).
main :- forall(between(1, {params['rounds']}, R), run(R)).
:- initialization(main, main).
"""
    return {"family.pl": src.encode()}
