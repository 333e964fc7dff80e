"""The workload suite: heap-layout-sensitive programs described by workloads/manifest.toml.

Each `[[workload]]` table of the manifest names one program built by workloads/CMakeLists.txt
(as build/workloads/<variant>/<name>) and gives its small and reference arguments. This
module only reads and checks the manifest; it runs nothing.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import paths

INPUTS = ("small", "ref")
VARIANTS = ("fp", "nofp")

# manifest key -> expected Python type after parsing (lists are checked element-wise)
_STRING_KEYS = ("name", "source", "paper", "pattern", "why")
_LIST_KEYS = ("small", "ref")
_INT_KEYS = ("threads",)
_ALL_KEYS = frozenset(_STRING_KEYS + _LIST_KEYS + _INT_KEYS)

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Workload:
    """One program of the suite and how to run it."""

    name: str
    source: str  # path of its source, relative to workloads/
    paper: str  # which paper's pattern it shows, e.g. "Olden health / HALO, DPA"
    pattern: str  # short description of the allocation/access pattern
    why: str  # one line: why layout should matter
    small: tuple[str, ...]  # arguments of the small input
    ref: tuple[str, ...]  # arguments of the reference input
    threads: int = 1

    def binary(self, variant: str = "fp") -> Path:
        """The built executable; raises paths.MissingArtifact when it is not built."""
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose one of: {', '.join(VARIANTS)}")
        return paths.workload_binary(self.name, variant)

    def args(self, input: str) -> list[str]:  # noqa: A002 - the name the callers use
        """The program arguments for input 'small' or 'ref'."""
        if input == "small":
            return list(self.small)
        if input == "ref":
            return list(self.ref)
        raise ValueError(f"unknown input {input!r}; choose one of: {', '.join(INPUTS)}")

    def argv(self, input: str, variant: str = "fp") -> list[str]:
        """Binary and arguments, ready for subprocess."""
        return [str(self.binary(variant)), *self.args(input)]


def default_manifest() -> Path:
    return paths.REPO_ROOT / "workloads" / "manifest.toml"


def _fail(manifest: Path, where: str, problem: str) -> ValueError:
    return ValueError(f"malformed workload manifest {manifest}: {where}: {problem}")


def _parse_entry(manifest: Path, index: int, entry: Any) -> Workload:
    where = f"[[workload]] #{index + 1}"
    if not isinstance(entry, dict):
        raise _fail(manifest, where, f"expected a table, got {type(entry).__name__}")
    name = entry.get("name")
    if isinstance(name, str):
        where = f"[[workload]] #{index + 1} ({name!r})"
    unknown = sorted(set(entry) - _ALL_KEYS)
    if unknown:
        raise _fail(manifest, where, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_ALL_KEYS))}")
    missing = [k for k in _STRING_KEYS + _LIST_KEYS if k not in entry]
    if missing:
        raise _fail(manifest, where, f"missing key(s) {', '.join(missing)}")
    for key in _STRING_KEYS:
        value = entry[key]
        if not isinstance(value, str) or not value.strip():
            raise _fail(manifest, where, f"{key} must be a non-empty string, got {value!r}")
    if not _NAME_RE.match(entry["name"]):
        raise _fail(manifest, where, f"name {entry['name']!r} must be letters, digits, '_', '.', '-' (no path)")
    lists: dict[str, tuple[str, ...]] = {}
    for key in _LIST_KEYS:
        value = entry[key]
        if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
            raise _fail(manifest, where, f"{key} must be a list of argument strings, got {value!r}")
        lists[key] = tuple(value)
    threads = entry.get("threads", 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise _fail(manifest, where, f"threads must be an integer >= 1, got {threads!r}")
    return Workload(
        name=entry["name"],
        source=entry["source"],
        paper=entry["paper"],
        pattern=entry["pattern"],
        why=entry["why"],
        small=lists["small"],
        ref=lists["ref"],
        threads=threads,
    )


def parse_suite(text: str, manifest: Path) -> list[Workload]:
    """Parse manifest text (`manifest` is only used in error messages)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"malformed workload manifest {manifest}: not valid TOML: {err}") from None
    extra = sorted(set(data) - {"workload"})
    if extra:
        raise _fail(manifest, "top level", f"unknown key(s) {', '.join(extra)}; only [[workload]] tables are allowed")
    entries = data.get("workload")
    if not isinstance(entries, list) or not entries:
        raise _fail(manifest, "top level", "expected at least one [[workload]] table")
    suite = [_parse_entry(manifest, i, e) for i, e in enumerate(entries)]
    seen: set[str] = set()
    for w in suite:
        if w.name in seen:
            raise _fail(manifest, f"workload {w.name!r}", "duplicate name")
        seen.add(w.name)
    return suite


def load_suite(manifest: Path | None = None) -> list[Workload]:
    """All workloads of the manifest, in manifest order. ValueError when it is malformed."""
    path = Path(manifest) if manifest is not None else default_manifest()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read workload manifest {path}: {err.strerror or err}") from None
    return parse_suite(text, path)
