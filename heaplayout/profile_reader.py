"""Reading a heap profile (docs/profile-format.md) into the data model of profile_model:
the records parsed, the END record's checksum verified, and the records checked against
each other, so that a damaged profile is refused rather than planned.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterable

from .profile_model import FORMAT_NAME, FORMAT_VERSION, Context, Module, Object, Profile, Symbol, unescape


class ProfileError(ValueError):
    pass


def _opt_int(s: str) -> int | None:
    return None if s == "-" else int(s)


def read_header(path: str | Path, max_lines: int = 256) -> dict[str, str]:
    """The `H` records at the start of a profile (without `arg`), read without the rest of
    the file: a large profile's header in microseconds. {} for a file that is not one."""
    out: dict[str, str] = {}
    try:
        with open(path, "rb") as fh:
            for _ in range(max_lines):
                line = fh.readline()
                if not line:
                    break
                f = line.decode("utf-8", "replace").rstrip("\n").split(" ")
                if f[0] != "H":
                    if out:
                        break
                    continue
                if len(f) > 1 and f[1] != "arg":
                    out[f[1]] = " ".join(f[2:]) if f[1] == "tool" else (unescape(f[2]) if len(f) > 2 else "")
    except OSError:
        pass
    return out


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
