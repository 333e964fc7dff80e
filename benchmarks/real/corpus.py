"""The corpus manifest (corpus.toml): programs, their inputs, and how to run them.

Each `[[program]]` names a Debian-packaged executable, the generator that writes its
inputs (benchmarks/real/generators/), a training input (small: it is profiled under
Valgrind) and a measuring input (2-10 s natively), the argument template, an optional
stdin file, extra environment, and the regular expressions whose matches are the only
parts of stdout allowed to differ between runs. This module reads and checks the manifest
and writes inputs; it runs no program.
"""

from __future__ import annotations

import random
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import generators

MANIFEST = Path(__file__).resolve().parent / "corpus.toml"
INPUTS = ("train", "measure")
KINDS = ("interpreter", "compiler", "analyzer", "database", "solver", "graph", "document", "xml", "json", "text",
         "synthesis")
LANGUAGES = ("C", "C++")

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_PROGRAM_KEYS = {"name", "kind", "language", "packages", "exe", "threads", "why", "generator", "args", "stdin",
                 "env", "normalize", "timeout", "train", "measure"}
_INPUT_KEYS = {"seed", "params"}


class ManifestError(ValueError):
    pass


@dataclass(frozen=True)
class Input:
    """One input of a program: the generator's seed and parameters."""

    seed: int
    params: dict[str, Any]


@dataclass(frozen=True)
class Program:
    name: str
    kind: str
    language: str  # the language the program is written in (C or C++)
    packages: tuple[str, ...]  # Debian packages that install it
    exe: str  # absolute path of the ELF executable that allocates (not a wrapper script)
    why: str
    generator: str
    args: tuple[str, ...]  # arguments; "{dir}" is the input's directory
    train: Input
    measure: Input
    threads: int = 1  # threads that allocate concurrently
    stdin: str | None = None  # file of the input directory fed on standard input
    env: dict[str, str] = field(default_factory=dict)
    normalize: tuple[str, ...] = ()  # regexes: matches in stdout may differ between runs
    timeout: float = 120.0  # seconds for one native run of the measuring input

    def input(self, which: str) -> Input:
        if which not in INPUTS:
            raise ValueError(f"unknown input {which!r}; choose one of: {', '.join(INPUTS)}")
        return self.train if which == "train" else self.measure

    def argv(self, input_dir: Path) -> list[str]:
        """The command line for the input written into `input_dir`."""
        return [self.exe, *(a.replace("{dir}", str(input_dir)) for a in self.args)]

    def stdin_path(self, input_dir: Path) -> Path | None:
        return input_dir / self.stdin if self.stdin else None


def _fail(where: str, problem: str) -> ManifestError:
    return ManifestError(f"malformed corpus manifest: {where}: {problem}")


def _str_list(value: Any, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(where, f"{key} must be a list of strings, got {value!r}")
    return tuple(value)


def _parse_input(value: Any, where: str) -> Input:
    if not isinstance(value, dict):
        raise _fail(where, f"expected a table, got {value!r}")
    unknown = sorted(set(value) - _INPUT_KEYS)
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)}")
    seed, params = value.get("seed"), value.get("params")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _fail(where, f"seed must be an integer, got {seed!r}")
    if not isinstance(params, dict):
        raise _fail(where, f"params must be a table, got {params!r}")
    return Input(seed=seed, params=params)


def _parse_program(entry: Any, index: int) -> Program:
    where = f"[[program]] #{index + 1}"
    if not isinstance(entry, dict):
        raise _fail(where, "expected a table")
    if isinstance(entry.get("name"), str):
        where += f" ({entry['name']})"
    unknown = sorted(set(entry) - _PROGRAM_KEYS)
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_PROGRAM_KEYS))}")
    missing = sorted({"name", "kind", "language", "packages", "exe", "why", "generator", "args", "train",
                      "measure"} - set(entry))
    if missing:
        raise _fail(where, f"missing key(s) {', '.join(missing)}")
    for key in ("name", "kind", "language", "exe", "why", "generator"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise _fail(where, f"{key} must be a non-empty string")
    if not _NAME_RE.match(entry["name"]):
        raise _fail(where, "name must be lower-case letters, digits, '_', '.', '-'")
    if entry["kind"] not in KINDS:
        raise _fail(where, f"kind {entry['kind']!r} is not one of {', '.join(KINDS)}")
    if entry["language"] not in LANGUAGES:
        raise _fail(where, f"language {entry['language']!r} is not one of {', '.join(LANGUAGES)}")
    if not entry["exe"].startswith("/"):
        raise _fail(where, "exe must be an absolute path (the ELF binary that allocates, not a wrapper)")
    try:
        generators.load(entry["generator"])
    except ValueError as err:
        raise _fail(where, str(err)) from None
    args = _str_list(entry["args"], where, "args")
    if entry.get("stdin") is None and not any("{dir}" in a for a in args):
        raise _fail(where, "neither args (no {dir}) nor stdin give the program its input")
    packages = _str_list(entry["packages"], where, "packages")
    if not packages:
        raise _fail(where, "packages must name at least one Debian package")
    normalize = _str_list(entry.get("normalize", []), where, "normalize")
    for pattern in normalize:
        try:
            re.compile(pattern.encode())
        except re.error as err:
            raise _fail(where, f"normalize pattern {pattern!r} does not compile: {err}") from None
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise _fail(where, "env must be a table of strings")
    threads = entry.get("threads", 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise _fail(where, f"threads must be an integer >= 1, got {threads!r}")
    stdin = entry.get("stdin")
    if stdin is not None and (not isinstance(stdin, str) or "/" in stdin or not stdin):
        raise _fail(where, f"stdin must be a file name of the input directory, got {stdin!r}")
    timeout = entry.get("timeout", 120.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise _fail(where, f"timeout must be a positive number of seconds, got {timeout!r}")
    return Program(
        name=entry["name"], kind=entry["kind"], language=entry["language"], packages=packages, exe=entry["exe"],
        why=entry["why"], generator=entry["generator"], args=args,
        train=_parse_input(entry["train"], f"{where} train"), measure=_parse_input(entry["measure"], f"{where} measure"),
        threads=threads, stdin=stdin, env=dict(env), normalize=normalize, timeout=float(timeout))


def parse_corpus(text: str) -> list[Program]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ManifestError(f"malformed corpus manifest: not valid TOML: {err}") from None
    extra = sorted(set(data) - {"program"})
    if extra:
        raise _fail("top level", f"unknown key(s) {', '.join(extra)}; only [[program]] tables")
    entries = data.get("program")
    if not isinstance(entries, list) or not entries:
        raise _fail("top level", "no [[program]] table")
    programs = [_parse_program(e, i) for i, e in enumerate(entries)]
    names = [p.name for p in programs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise _fail("top level", f"duplicate program name(s) {', '.join(dupes)}")
    return programs


def load_corpus(path: Path = MANIFEST) -> list[Program]:
    return parse_corpus(Path(path).read_text(encoding="utf-8"))


def select(programs: list[Program], names: list[str] | None) -> list[Program]:
    """The programs named (all when None), in manifest order; ValueError on unknown names."""
    if not names:
        return programs
    known = {p.name for p in programs}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown program(s) {', '.join(unknown)}; the corpus has: {', '.join(sorted(known))}")
    return [p for p in programs if p.name in names]


def generate_input(program: Program, which: str) -> dict[str, bytes]:
    """The files of one input, from its seed and parameters (no disk access)."""
    spec = program.input(which)
    return generators.load(program.generator)(dict(spec.params), random.Random(spec.seed))


def write_input(program: Program, which: str, root: Path) -> Path:
    """Write one input into root/<program>/<which>/ (rewritten only when its bytes change)
    and return that directory."""
    dest = root / program.name / which
    dest.mkdir(parents=True, exist_ok=True)
    files = generate_input(program, which)
    if program.stdin and program.stdin not in files:
        raise ManifestError(f"{program.name}: stdin file {program.stdin!r} is not written by generator "
                            f"{program.generator!r} (it writes {', '.join(sorted(files))})")
    for name, content in files.items():
        path = dest / name
        if not path.exists() or path.read_bytes() != content:
            path.write_bytes(content)
    return dest
