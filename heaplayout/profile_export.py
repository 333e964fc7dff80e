"""A heaplayout profile in the formats other heap tools read: pprof's profile.proto and
folded stacks (flamegraph.pl, speedscope, inferno).

One pprof sample per allocation context, with three values: objects, bytes and heap
accesses (loads + stores), the context's frames as locations (innermost first, as pprof
wants), symbolized by the function, file and line the profiler recorded (`Y` records), so
`pprof` needs neither the binaries nor a symbolizer. Addresses are the profiled run's:
module load bias + offset, and every frame is a return address - 1 (docs/profile-format.md),
which pprof, like the profiler, reads as the call instruction.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

from .profile_model import Context, Profile
from .protobuf_wire import Message

# The sample types, in the order of each sample's values; pprof shows the last by default
# unless default_sample_type says otherwise.
SAMPLE_TYPES = (("objects", "count"), ("bytes", "bytes"), ("accesses", "count"))
DEFAULT_SAMPLE_TYPE = "accesses"
FOLDED_VALUES = ("objects", "bytes", "accesses")
PAGE = 4096


def context_values(ctx: Context) -> tuple[int, int, int]:
    """The sample values of a context, in SAMPLE_TYPES order."""
    return (ctx.objects, ctx.bytes, ctx.accesses)


class _Strings:
    """pprof's string table: index 0 is the empty string."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}

    def __call__(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.index)
        return i

    def table(self) -> list[str]:
        return list(self.index)


@dataclass(frozen=True)
class FrameName:
    function: str  # the symbol, or module+0xoffset without one
    file: str
    line: int


def frame_name(profile: Profile, module: int, offset: int) -> FrameName:
    sym = profile.frame_symbol(module, offset)
    mod = profile.modules.get(module)
    fallback = f"{Path(mod.path).name if mod else f'module{module}'}+0x{offset:x}"
    if sym is None:
        return FrameName(fallback, "", 0)
    return FrameName(sym.function or fallback, sym.file or "", sym.line)


def pprof_bytes(profile: Profile) -> bytes:
    """The profile as an uncompressed perftools.profiles.Profile message."""
    s = _Strings()
    msg = Message()
    for name, unit in SAMPLE_TYPES:
        msg.message(1, Message().int(1, s(name)).int(2, s(unit)))

    # mappings: one per module that a context names; ids from 1
    used_offsets: dict[int, int] = {}
    for ctx in profile.contexts.values():
        for m, off in ctx.frames:
            used_offsets[m] = max(used_offsets.get(m, 0), off)
    mapping_id = {m: i + 1 for i, m in enumerate(sorted(used_offsets))}
    symbolized = {m for (m, _off), sym in profile.symbols.items() if sym.function}
    with_lines = {m for (m, _off), sym in profile.symbols.items() if sym.file and sym.line}

    locations: dict[tuple[int, int], int] = {}
    functions: dict[FrameName, int] = {}
    loc_msgs: list[Message] = []
    fn_msgs: list[Message] = []

    def location(m: int, off: int) -> int:
        lid = locations.get((m, off))
        if lid is not None:
            return lid
        fname = frame_name(profile, m, off)
        fkey = FrameName(fname.function, fname.file, 0)
        fid = functions.get(fkey)
        if fid is None:
            fid = functions[fkey] = len(functions) + 1
            fn_msgs.append(Message().int(1, fid).int(2, s(fname.function)).int(3, s(fname.function))
                           .int(4, s(fname.file)))
        lid = locations[(m, off)] = len(locations) + 1
        mod = profile.modules.get(m)
        bias = mod.bias if mod else 0
        loc_msgs.append(Message().int(1, lid).int(2, mapping_id[m]).int(3, bias + off)
                        .message(4, Message().int(1, fid).int(2, fname.line)))
        return lid

    for ctx in sorted(profile.contexts.values(), key=lambda c: c.id):
        sample = Message()
        sample.packed(1, [location(m, off) for m, off in ctx.frames])
        sample.packed(2, context_values(ctx))
        sample.message(3, Message().int(1, s("context")).int(3, ctx.id))
        sample.message(3, Message().int(1, s("kind")).int(2, s(ctx.kind)))
        msg.message(2, sample)

    for m, mid in mapping_id.items():
        mod = profile.modules.get(m)
        start = mod.bias if mod else 0
        limit = start + (used_offsets[m] // PAGE + 1) * PAGE
        mm = Message().int(1, mid).int(2, start).int(3, limit).int(4, 0)
        mm.int(5, s(mod.path if mod else f"module{m}")).int(6, s((mod.build_id or "") if mod else ""))
        mm.int(7, int(m in symbolized)).int(8, int(m in with_lines)).int(9, int(m in with_lines))
        msg.message(3, mm)
    for lm in loc_msgs:
        msg.message(4, lm)
    for fm in fn_msgs:
        msg.message(5, fm)
    # string indices used below must exist before the table is written
    comment = s(f"heaplayout profile of {profile.header.get('exe', '?')}"
                + "".join(f" {a}" for a in profile.args))
    period_type = Message().int(1, s("objects")).int(2, s("count"))
    default_type = s(DEFAULT_SAMPLE_TYPE)
    for text in s.table():
        msg.string(6, text)
    msg.message(11, period_type)
    msg.int(12, 1)
    msg.packed(13, [comment])
    msg.int(14, default_type)
    return msg.encode()


def write_pprof(profile: Profile, path: str | Path) -> None:
    """gzip-compressed, as `pprof` and the tools that take its files expect."""
    data = gzip.compress(pprof_bytes(profile), mtime=0)
    Path(path).write_bytes(data)


def folded_frame(profile: Profile, module: int, offset: int) -> str:
    """function:line (the line of the call), without the characters the format reserves."""
    f = frame_name(profile, module, offset)
    text = f"{f.function}:{f.line}" if f.line else f.function
    return text.replace(";", ",").replace("\n", " ")


def folded_lines(profile: Profile, value: str = "bytes") -> list[str]:
    """`outermost;...;innermost VALUE`, one line per distinct stack (contexts whose frames
    print the same are added), stacks with a zero value left out."""
    if value not in FOLDED_VALUES:
        raise ValueError(f"folded value {value!r}: expected one of {', '.join(FOLDED_VALUES)}")
    index = FOLDED_VALUES.index(value)
    totals: dict[str, int] = {}
    for ctx in profile.contexts.values():
        v = context_values(ctx)[index]
        if v <= 0:
            continue
        stack = ";".join(folded_frame(profile, m, off) for m, off in reversed(ctx.frames)) or "(no frames)"
        totals[stack] = totals.get(stack, 0) + v
    return [f"{stack} {v}" for stack, v in sorted(totals.items())]


def write_folded(profile: Profile, path: str | Path, value: str = "bytes") -> None:
    lines = folded_lines(profile, value)
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
