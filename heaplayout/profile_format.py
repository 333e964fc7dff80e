"""The heap profile written by `heaplayout profile` (the hlprof Valgrind tool).

Plain text, one record per line, the record type in the first field; see
docs/profile-format.md. This module reads it into typed dataclasses, writes it back (used by
`profile merge`), and merges profiles of the same binary. It needs nothing but the standard
library, so a profile can be analysed without the tool.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable

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


class ProfileError(ValueError):
    pass


def _opt_int(s: str) -> int | None:
    return None if s == "-" else int(s)


def read_profile(path: str | Path, *, with_objects: bool = True, with_stream: bool = True) -> Profile:
    """Read and check a profile; ProfileError (with the file name) when it is not one."""
    with open(path, "rb") as f:
        return parse_profile(f, with_objects=with_objects, with_stream=with_stream, name=str(path))


def parse_profile(lines: Iterable[str] | Iterable[bytes], *, with_objects: bool = True,
                  with_stream: bool = True, name: str = "<profile>") -> Profile:
    """Parse the records, verify the END record's checksum (of every byte before it), and
    check that the records agree with each other (check_profile)."""
    p = Profile()
    crc = 0
    it = iter(lines)

    def text(raw: str | bytes) -> str:
        nonlocal crc
        if isinstance(raw, bytes):
            crc = zlib.crc32(raw, crc)
            return raw.decode("utf-8", errors="replace")
        crc = zlib.crc32(raw.encode("utf-8"), crc)
        return raw

    first_line = text(next(it, ""))
    first = first_line.split()
    if len(first) != 2 or first[0] != FORMAT_NAME or not first[1].isdigit():
        raise ProfileError(f"{name}: not a heaplayout profile (first line must be 'hlprof <version>')")
    p.version = int(first[1])
    if p.version > FORMAT_VERSION:
        raise ProfileError(f"{name}: profile format version {p.version} is newer than this reader ({FORMAT_VERSION})")
    last_id = 0
    for lineno, raw in enumerate(it, start=2):
        crc_before = crc
        line = text(raw)
        if not line.endswith("\n"):
            break  # a line cut by a crash: ignore it
        if p.complete:
            raise ProfileError(f"{name}:{lineno}: records after END")
        # fields are separated by single ASCII spaces (str.split() would also split at
        # Unicode spaces such as U+0085 or U+00A0 inside a path or function name)
        f = line.rstrip("\n").split(" ")
        if f == [""]:
            continue
        t = f[0]
        try:
            if t == "O":
                if with_objects:
                    p.objects.append(Object(int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), _opt_int(f[6]),
                                            int(f[7]), int(f[8]), int(f[9]), int(f[10]), int(f[11]),
                                            int(f[12]) if len(f) > 12 else 0))
            elif t == "S":
                if with_stream:
                    for d in f[1:]:
                        last_id += int(d)
                        p.stream.append(last_id)
            elif t == "C":
                n = int(f[3])
                if n != len(f) - 4:
                    raise ValueError(f"{n} frames announced, {len(f) - 4} given")
                frames = []
                for fr in f[4:]:
                    m, off = fr.split(":")
                    frames.append((int(m), int(off, 16)))
                p.contexts[int(f[1])] = Context(int(f[1]), f[2], frames)
            elif t == "Y":
                p.symbols[(int(f[1]), int(f[2], 16))] = Symbol(
                    None if f[5] == "-" else unescape(f[5]), None if f[4] == "-" else unescape(f[4]), int(f[3]))
            elif t == "M":
                p.modules[int(f[1])] = Module(int(f[1]), None if f[2] == "-" else f[2], int(f[3], 16),
                                              f[4] == "1", unescape(f[5]))
            elif t == "X":
                c = p.contexts.get(int(f[1]))
                if c is None:
                    raise ValueError(f"totals of unknown context {f[1]}")
                (c.objects, c.bytes, c.max_live, c.loads, c.stores, c.load_bytes, c.store_bytes) = map(int, f[2:9])
                p.has_totals = True
            elif t == "A":
                x, y = int(f[1]), int(f[2])
                key = (min(x, y), max(x, y))
                p.affinity[key] = p.affinity.get(key, 0) + int(f[3])
            elif t == "R":
                p.walk[int(f[1])] = p.walk.get(int(f[1]), 0) + int(f[2])
            elif t == "P":
                key = (int(f[1]), int(f[2]), int(f[3]))
                p.pointer_edges[key] = p.pointer_edges.get(key, 0) + int(f[4])
                if len(f) > 5:
                    p.adjacent_links[key] = p.adjacent_links.get(key, 0) + int(f[5])
                    p.has_adjacent_links = True
            elif t == "N":
                key = (int(f[1]), int(f[2]))
                p.neighbours[key] = p.neighbours.get(key, 0) + int(f[3])
                p.has_neighbours = True
            elif t == "H":
                key = f[1]
                value = unescape(f[2]) if len(f) > 2 else ""
                if key == "arg":
                    p.args.append(value)
                else:
                    p.header[key] = " ".join(f[2:]) if key == "tool" else value
            elif t == "Z":
                p.summary[f[1]] = int(f[2])
            elif t == "W":
                if f[1] == "stream-truncated":
                    p.stream_truncated = True
            elif t == "END":
                if len(f) > 1 and f[1] != f"{crc_before:08x}":  # as written: 8 lower-case digits
                    raise ProfileError(f"{name}:{lineno}: checksum mismatch (END says {f[1]}, the records "
                                       f"before it give {crc_before:08x}): the file was changed or damaged "
                                       "after the profiler wrote it")
                p.complete = True
            # unknown record types are skipped: newer minor additions stay readable
        except (IndexError, ValueError) as err:
            if isinstance(err, ProfileError):
                raise
            raise ProfileError(f"{name}:{lineno}: bad {t} record: {err}") from None
    if p.summary.get("stream_truncated"):
        p.stream_truncated = True
    if not p.has_totals:
        _totals_from_objects(p)
    problems = check_profile(p)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ProfileError(f"{name}: inconsistent profile: {'; '.join(problems[:3])}{more}")
    return p


def check_profile(p: Profile) -> list[str]:
    """What makes the records disagree with each other or with what a run can produce:
    negative counts, references to modules, contexts or objects that are not there. A
    profile the planner reads passes; a damaged one (without END's checksum: cut, or
    older) is refused rather than planned."""
    bad: list[str] = []
    for m in p.modules.values():
        if m.id < 0 or m.bias < 0:
            bad.append(f"module {m.id}: negative id or bias")
    for (mid, off), _ in p.symbols.items():
        if mid not in p.modules or off < 0:
            bad.append(f"symbol at {mid}:{off:x}: unknown module or negative offset")
    for c in p.contexts.values():
        if c.id < 0:
            bad.append(f"context {c.id}: negative id")
        for m, off in c.frames:
            if m not in p.modules or off < 0:
                bad.append(f"context {c.id}: frame {m}:{off:x} names no module of the profile")
        counts = (c.objects, c.bytes, c.max_live, c.loads, c.stores, c.load_bytes, c.store_bytes)
        if min(counts) < 0:
            bad.append(f"context {c.id}: negative count")
        elif c.max_live > c.objects:
            bad.append(f"context {c.id}: more objects live at once ({c.max_live}) than allocated ({c.objects})")
    per_context: dict[int, int] = {}
    for o in p.objects:
        if o.context not in p.contexts:
            bad.append(f"object {o.id}: unknown context {o.context}")
        per_context[o.context] = per_context.get(o.context, 0) + 1
        if min(o.id, o.instance, o.size, o.alloc_time, o.tid, o.loads, o.stores, o.load_bytes, o.store_bytes,
               o.run) < 0 or (o.free_time is not None and o.free_time < o.alloc_time):
            bad.append(f"object {o.id}: negative count or freed before it was allocated")
    if p.has_totals:
        for cid, n in per_context.items():
            c = p.contexts.get(cid)
            if c is not None and n > c.objects:
                bad.append(f"context {cid}: {n} object records but {c.objects} objects in its totals")
    for (x, y), w in p.affinity.items():
        if x not in p.contexts or y not in p.contexts or w < 0:
            bad.append(f"affinity {x}-{y}: unknown context or negative weight")
    for x, w in p.walk.items():
        if x not in p.contexts or w < 0:
            bad.append(f"walk weight of {x}: unknown context or negative weight")
    for (a, off, b), n in p.pointer_edges.items():
        if a not in p.contexts or b not in p.contexts or n < 0 or off < -1 \
                or p.adjacent_links.get((a, off, b), 0) not in range(0, n + 1):
            bad.append(f"pointer edge {a}+{off}->{b}: unknown context or impossible count")
    for (a, b), n in p.neighbours.items():
        if a not in p.contexts or b not in p.contexts or n < 0:
            bad.append(f"neighbours {a}->{b}: unknown context or negative count")
    if any(v < 0 for v in p.summary.values()):
        bad.append("negative summary value")
    if p.complete and "contexts" in p.summary and p.summary["contexts"] != len(p.contexts):
        bad.append(f"the summary counts {p.summary['contexts']} contexts, the file holds {len(p.contexts)}")
    if p.stream and (min(p.stream) < 1):
        bad.append("the reference stream names object ids below 1")
    return bad


def _totals_from_objects(p: Profile) -> None:
    """A cut profile has no X records: rebuild what the freed objects tell."""
    for o in p.objects:
        c = p.contexts.get(o.context)
        if c is None:
            continue
        c.objects += 1
        c.bytes += o.size
        c.loads += o.loads
        c.stores += o.stores
        c.load_bytes += o.load_bytes
        c.store_bytes += o.store_bytes


def write_profile(p: Profile, out: str | Path | IO[str]) -> None:
    if isinstance(out, (str, Path)):
        with open(out, "w", encoding="utf-8") as f:
            write_profile(p, f)
        return
    crc = 0

    def w(text: str) -> None:
        nonlocal crc
        crc = zlib.crc32(text.encode("utf-8"), crc)
        out.write(text)

    w(f"{FORMAT_NAME} {p.version}\n")
    for k, v in p.header.items():
        if k == "exe":
            w(f"H exe {escape(v)}\n")
            for a in p.args:
                w(f"H arg {escape(a)}\n")
        else:
            w(f"H {k} {v if k == 'tool' else (escape(v) if v else '-')}\n")
    if "exe" not in p.header:
        for a in p.args:
            w(f"H arg {escape(a)}\n")
    for m in p.modules.values():
        w(f"M {m.id} {m.build_id or '-'} {m.bias:x} {1 if m.system else 0} {escape(m.path)}\n")
    for (mid, off), s in p.symbols.items():
        w(f"Y {mid} {off:x} {s.line} {escape(s.file) if s.file else '-'} {escape(s.function) if s.function else '-'}\n")
    for c in p.contexts.values():
        frames = " ".join(f"{m}:{off:x}" for m, off in c.frames)
        w(f"C {c.id} {c.kind} {len(c.frames)}{' ' if frames else ''}{frames}\n")
    prev = 0
    for i in range(0, len(p.stream), 512):
        chunk = p.stream[i : i + 512]
        deltas = []
        for oid in chunk:
            deltas.append(str(oid - prev))
            prev = oid
        w("S " + " ".join(deltas) + "\n")
    if p.stream_truncated:
        w(f"W stream-truncated {len(p.stream)}\n")
    for o in p.objects:
        free = "-" if o.free_time is None else str(o.free_time)
        run = f" {o.run}" if o.run else ""
        w(f"O {o.id} {o.context} {o.instance} {o.size} {o.alloc_time} {free} {o.tid} {o.loads} {o.stores} "
          f"{o.load_bytes} {o.store_bytes}{run}\n")
    for c in p.contexts.values():
        w(f"X {c.id} {c.objects} {c.bytes} {c.max_live} {c.loads} {c.stores} {c.load_bytes} {c.store_bytes}\n")
    for (x, y), n in p.affinity.items():
        w(f"A {x} {y} {n}\n")
    for x, n in p.walk.items():
        w(f"R {x} {n}\n")
    for (a, off, b), n in p.pointer_edges.items():
        adj = f" {p.adjacent_links.get((a, off, b), 0)}" if p.has_adjacent_links else ""
        w(f"P {a} {off} {b} {n}{adj}\n")
    for (a, b), n in p.neighbours.items():
        w(f"N {a} {b} {n}\n")
    for k, v in p.summary.items():
        w(f"Z {k} {v}\n")
    if p.complete:
        w(f"END {crc:08x}\n")


def main_module(p: Profile) -> Module | None:
    exe = p.header.get("exe", "")
    for m in p.modules.values():
        if not m.system and (m.path == exe or Path(m.path).name == Path(exe).name):
            return m
    return None


def merge_profiles(profiles: list[Profile], *, force: bool = False) -> Profile:
    """Combine runs of the same binary: contexts are matched by their frames (module
    build-id or path, offset); counts, affinity weights and pointer edges add up; objects
    keep their per-run ids, instance numbers and clock, tagged with their run; the reference
    streams are concatenated (ids of later runs shifted past the earlier ones)."""
    if not profiles:
        raise ValueError("nothing to merge")
    if not force:
        keys = {(main_module(p).key if main_module(p) else ("", Path(p.header.get("exe", "")).name)) for p in profiles}
        if len(keys) > 1:
            raise ValueError("profiles come from different binaries (use --force to merge anyway)")
    out = Profile()
    out.has_adjacent_links = all(p.has_adjacent_links or not p.pointer_edges for p in profiles)
    out.has_neighbours = all(p.has_neighbours for p in profiles)
    out.header = dict(profiles[0].header)
    out.args = list(profiles[0].args)
    out.complete = all(p.complete for p in profiles)
    out.has_totals = True
    mod_by_key: dict[tuple[str, str], int] = {}
    ctx_by_key: dict[tuple, int] = {}
    id_shift = 0
    run_base = 0
    for p in profiles:
        mod_map: dict[int, int] = {}
        for m in p.modules.values():
            k = m.key
            if k not in mod_by_key:
                mod_by_key[k] = len(mod_by_key)
                out.modules[mod_by_key[k]] = Module(mod_by_key[k], m.build_id, m.bias, m.system, m.path)
            mod_map[m.id] = mod_by_key[k]
        for (mid, off), s in p.symbols.items():
            if mid in mod_map:
                out.symbols.setdefault((mod_map[mid], off), s)
        ctx_map: dict[int, int] = {}
        for c in p.contexts.values():
            k = p.context_key(c)
            if k not in ctx_by_key:
                nid = len(ctx_by_key)
                ctx_by_key[k] = nid
                out.contexts[nid] = Context(nid, c.kind, [(mod_map.get(m, m), off) for m, off in c.frames])
            t = out.contexts[ctx_by_key[k]]
            ctx_map[c.id] = t.id
            t.objects += c.objects
            t.bytes += c.bytes
            t.max_live = max(t.max_live, c.max_live)
            t.loads += c.loads
            t.stores += c.stores
            t.load_bytes += c.load_bytes
            t.store_bytes += c.store_bytes
        runs = max(1, p.header_int("merged_runs", 1))
        for o in p.objects:
            out.objects.append(Object(o.id + id_shift, ctx_map[o.context], o.instance, o.size, o.alloc_time,
                                      o.free_time, o.tid, o.loads, o.stores, o.load_bytes, o.store_bytes,
                                      o.run + run_base))
        for (x, y), n in p.affinity.items():
            a, b = ctx_map[x], ctx_map[y]
            key = (min(a, b), max(a, b))
            out.affinity[key] = out.affinity.get(key, 0) + n
        for x, n in p.walk.items():
            out.walk[ctx_map[x]] = out.walk.get(ctx_map[x], 0) + n
        for (a, off, b), n in p.pointer_edges.items():
            key = (ctx_map[a], off, ctx_map[b])
            out.pointer_edges[key] = out.pointer_edges.get(key, 0) + n
            out.adjacent_links[key] = out.adjacent_links.get(key, 0) + p.adjacent_links.get((a, off, b), 0)
        for (a, b), n in p.neighbours.items():
            key = (ctx_map[a], ctx_map[b])
            out.neighbours[key] = out.neighbours.get(key, 0) + n
        out.stream.extend(oid + id_shift for oid in p.stream)
        out.stream_truncated |= p.stream_truncated
        for k, v in p.summary.items():
            out.summary[k] = max(out.summary.get(k, 0), v) if k == "stream_truncated" else out.summary.get(k, 0) + v
        id_shift += p.summary.get("objects", max((o.id for o in p.objects), default=0))
        run_base += runs
    out.header["merged_runs"] = str(run_base)
    periods = {p.header.get("sample_period", "1") for p in profiles}
    if len(periods) > 1:  # counts are estimates already scaled by each run's own period: they add up
        out.header["sample_period"] = "mixed"
        out.header.pop("sample_window", None)
        out.header.pop("sample_seed", None)
    if "contexts" in out.summary:
        out.summary["contexts"] = len(out.contexts)  # matched contexts are one
    return out
