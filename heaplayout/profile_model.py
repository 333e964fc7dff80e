"""The heap profile written by `heaplayout profile` (the hlprof Valgrind tool): its data model.

Plain text, one record per line, the record type in the first field; see
docs/profile-format.md. This module holds what a profile is once read: typed dataclasses
for its records, the format's name and version, and the escaping of text fields that the
reader (profile_reader) undoes and the writer (profile_writer) applies; profile_merge
merges profiles of the same binary. All of it needs nothing but the standard library, so a
profile can be analysed without the tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FORMAT_NAME = "hlprof"
FORMAT_VERSION = 1

_ESC = re.compile(r"%([0-9A-Fa-f]{2})")


def unescape(s: str) -> str:
    """Undo the tool's escaping of space, %, newline and other control bytes as %XX."""
    if "%" not in s:
        return s
    return _ESC.sub(lambda m: chr(int(m.group(1), 16)), s)


def escape(s: str) -> str:
    return "".join(f"%{ord(c):02X}" if (ord(c) <= 0x20 or c == "%" or c == "\x7f") else c for c in s)


@dataclass(slots=True)
class Module:
    id: int
    build_id: str | None  # GNU build-id in hex, None when the file has none
    bias: int  # load bias in the profiled run (offset = address - bias)
    system: bool  # frames in it are trimmed from contexts (libc, libstdc++, the preload)
    path: str

    @property
    def key(self) -> tuple[str, str]:
        """Identity across runs: the build-id when there is one, else the path."""
        return (self.build_id or "", self.path if not self.build_id else "")


@dataclass(slots=True)
class Symbol:
    function: str | None
    file: str | None
    line: int  # 0 when unknown


@dataclass(slots=True)
class Context:
    id: int
    kind: str  # m malloc, c calloc, r realloc, n new, N new[], a aligned (first object's)
    frames: list[tuple[int, int]]  # (module id, offset), innermost first
    objects: int = 0
    bytes: int = 0
    max_live: int = 0
    loads: int = 0
    stores: int = 0
    load_bytes: int = 0
    store_bytes: int = 0

    @property
    def accesses(self) -> int:
        return self.loads + self.stores


@dataclass(slots=True)
class Object:
    id: int  # global allocation sequence number in its run, from 1
    context: int
    instance: int  # n-th object allocated from its context, from 0 (PreFix's object id)
    size: int
    alloc_time: int  # heap-access clock
    free_time: int | None  # None: still live at exit
    tid: int
    loads: int
    stores: int
    load_bytes: int
    store_bytes: int
    run: int = 0  # which merged run the object comes from

    @property
    def accesses(self) -> int:
        return self.loads + self.stores


@dataclass
class Profile:
    version: int = FORMAT_VERSION
    header: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    modules: dict[int, Module] = field(default_factory=dict)
    symbols: dict[tuple[int, int], Symbol] = field(default_factory=dict)
    contexts: dict[int, Context] = field(default_factory=dict)
    objects: list[Object] = field(default_factory=list)
    affinity: dict[tuple[int, int], int] = field(default_factory=dict)  # (cx <= cy) -> weight
    # ctx -> pairs of its own objects affine but not co-allocatable (R records): its walk weight
    walk: dict[int, int] = field(default_factory=dict)
    pointer_edges: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (from ctx, offset, to ctx) -> stores
    # of those stores, the ones whose two objects were co-allocatable (a trailing P field that
    # older profiles lack: has_adjacent_links says whether the counts are known)
    adjacent_links: dict[tuple[int, int, int], int] = field(default_factory=dict)
    has_adjacent_links: bool = False
    # (a, b) -> how often an object of b was the next allocation after one of a in the same
    # thread (N records; older profiles lack them: has_neighbours)
    neighbours: dict[tuple[int, int], int] = field(default_factory=dict)
    has_neighbours: bool = False
    stream: list[int] = field(default_factory=list)  # object ids
    stream_truncated: bool = False
    summary: dict[str, int] = field(default_factory=dict)
    complete: bool = False  # the END line was seen
    has_totals: bool = False  # X records were seen (else context totals come from objects)

    def header_int(self, key: str, default: int = 0) -> int:
        try:
            return int(self.header.get(key, default))
        except ValueError:
            return default

    def frame_symbol(self, module: int, offset: int) -> Symbol | None:
        return self.symbols.get((module, offset))

    def describe_frame(self, module: int, offset: int) -> str:
        mod = self.modules.get(module)
        name = Path(mod.path).name if mod else f"module{module}"
        sym = self.symbols.get((module, offset))
        where = f"{name}+0x{offset:x}"
        if sym is None:
            return where
        text = sym.function or "??"
        if sym.file:
            text += f" ({sym.file}:{sym.line})"
        return f"{text} [{where}]"

    def context_key(self, ctx: Context) -> tuple:
        """A run-independent identity for a context: its frames as (module key, offset)."""
        return tuple((self.modules[m].key if m in self.modules else ("?", str(m)), off) for m, off in ctx.frames)

    @property
    def heap_accesses(self) -> int:
        return self.summary.get("heap_accesses", sum(c.accesses for c in self.contexts.values()))
