"""The corpus programs that have a training profile, for the scripts that plan anew from it
(coverage.py, prefix_check.py): one command line and one loop, so both read the same
programs the same way."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from . import corpus


@dataclass(frozen=True)
class Profiled:
    program: corpus.Program
    dest: Path  # OUT/<program>/: the plans stage's outputs, and where the scripts write
    profile: Path  # OUT/<program>/train.prof
    inputs: dict[str, Path]  # "train"/"measure" -> the input's directory


def arguments(prog: str, doc: str | None, argv: list[str] | None,
              extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/real", help="the corpus output directory (default build/real)")
    ap.add_argument("--programs", metavar="A,B", help="only these programs")
    if extra is not None:
        extra(ap)
    return ap.parse_args(argv)


def profiled_programs(args: argparse.Namespace, say: Callable[[str], None], tag: str) -> Iterator[Profiled]:
    """Each selected program with OUT/<program>/train.prof, its inputs written; the others
    are skipped with a line saying so."""
    out = Path(args.out).resolve()
    for p in corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None):
        dest = out / p.name
        prof = dest / "train.prof"
        if not prof.exists():
            say(f"[{tag}] {p.name}: no {prof} (run the plans stage first); skipped")
            continue
        yield Profiled(p, dest, prof, {which: corpus.write_input(p, which, out / "inputs") for which in corpus.INPUTS})
