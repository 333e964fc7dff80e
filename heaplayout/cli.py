"""The `heaplayout` command: one subcommand per module in heaplayout/commands/."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__

# Each module named here defines `add_parser(subparsers)`, which registers its subcommand
# and sets `func(args) -> int` as the parser default.
SUBCOMMANDS = ("run", "bench", "profile", "plan", "simulate", "optimize", "report", "cc")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="heaplayout",
        description="Heap-layout optimizer: profile a program's heap use, plan a layout, "
        "run the unmodified binary with a placing allocator, and measure the result.",
    )
    parser.add_argument("--version", action="version", version=f"heaplayout {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"heaplayout.commands.{name}").add_parser(sub)
    return parser


def split_program(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split at the first `--`: our options before it, the program and its arguments after."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["cc"]:  # a compiler driver: every later argument is the compiler's
        from .commands import cc

        return cc.run_driver(argv[1:])
    ours, program = split_program(argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(ours)
    tail = getattr(args, "positional_tail", None)
    if extra and tail and not any(e.startswith("-") for e in extra):
        # argparse gives a nargs='*'/'+' positional only the words before the first option, so
        # `profile show --top 3 P`, `plan show --profile P PLAN` and `profile merge -o C A B`
        # failed with "unrecognized arguments: P"; the words after the options belong to it too
        setattr(args, tail, list(getattr(args, tail) or []) + extra)
    elif extra:
        parser.parse_args(ours)  # argparse's own error for what is really unknown
    args.program = program
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("heaplayout: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`heaplayout profile show P | head`): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
