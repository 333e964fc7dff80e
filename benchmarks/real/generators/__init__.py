"""Input generators of the real-program corpus: one module per input language.

Every module has `generate(params: dict, rng: random.Random) -> dict[str, bytes]`, the files
of one input (name -> content). Everything is derived from `rng` (seeded from the manifest)
and `params`, never from the clock or the environment, so one seed always gives the same
bytes; the inputs are written by our scripts, nothing is downloaded.
"""

from __future__ import annotations

import importlib
import random
from typing import Callable

Generator = Callable[[dict, random.Random], dict[str, bytes]]


def load(name: str) -> Generator:
    """The `generate` function of generator module `name`; ValueError if there is none."""
    if not name.isidentifier():
        raise ValueError(f"generator name {name!r} is not a module name")
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        raise ValueError(f"no input generator {name!r} in benchmarks/real/generators") from None
    gen = getattr(module, "generate", None)
    if not callable(gen):
        raise ValueError(f"generator module {name!r} has no generate(params, rng)")
    return gen


def words(rng: random.Random, n: int, alphabet: str = "abcdefghijklmnopqrstuvwxyz", lo: int = 3,
          hi: int = 10) -> list[str]:
    """n pseudo-words (shared by generators that need names and text)."""
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi))) for _ in range(n)]
