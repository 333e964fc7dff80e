"""Names for allocation contexts that a reader recognises: `function:line` of the innermost
frames, as many as it takes to tell the context apart from the others (wrappers such as
xmalloc make the innermost frame the same for many contexts)."""

from __future__ import annotations

import re

from ..commands.plan import short_function
from ..profile_model import Profile
from .limits import NAME_MAX_FRAMES

LIBRARY_NAMESPACES = ("std", "__gnu_cxx", "__cxx11", "__detail")
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".C", ".c++")
# GCC's clone suffixes (xmalloc.constprop.0, f.isra.0, g.part.1, h.cold) name no source function
_CLONE = re.compile(r"(\.(constprop|isra|part|cold|lto_priv)(\.\d+)?)+$")


def frame_label(profile: Profile, module: int, offset: int) -> str:
    sym = profile.frame_symbol(module, offset)
    if sym is None or not sym.function:
        mod = profile.modules.get(module)
        name = mod.path.rsplit("/", 1)[-1] if mod else f"module{module}"
        return f"{name}+0x{offset:x}"
    name = _CLONE.sub("", short_function(sym.function))
    if not sym.line:
        return name
    base = sym.file.rsplit("/", 1)[-1] if sym.file else ""
    if base and not base.endswith(SOURCE_SUFFIXES):
        # a line of a header inlined into `name` (stl_vector.h:1294 inside build): say whose line it is
        return f"{name} ({base}:{sym.line})"
    return f"{name}:{sym.line}"


def library_tag(label: str) -> str | None:
    """`vector` for a frame of the C++ library's code inlined into the program
    (std::vector::emplace_back:1287), None for the program's own code."""
    function = label.split(" (", 1)[0]
    head, _, line = function.rpartition(":")
    if line.isdigit():
        function = head
    parts = [p for p in function.split("::") if p]
    if not parts or parts[0] not in LIBRARY_NAMESPACES:
        return None
    rest = [p for p in parts[1:-1] if p not in LIBRARY_NAMESPACES]
    return rest[0] if rest else parts[-1]


def context_names(profile: Profile) -> dict[int, str]:
    """context id -> `f:12 ← g:40`, innermost first, unique where NAME_MAX_FRAMES frames allow.
    Frames of C++ library templates (std::, __gnu_cxx::) inlined at the innermost end are
    named by their class in brackets after the program's frames: `build:530 ← main:163 [_Rb_tree]`."""
    labels: dict[int, list[str]] = {}
    tags: dict[int, str] = {}
    for cid, c in profile.contexts.items():
        frames = [frame_label(profile, m, off).replace("(anon)::", "") for m, off in c.frames]
        k = 0
        while k < len(frames) - 1 and library_tag(frames[k]) is not None:
            k += 1
        if k:
            tags[cid] = f" [{library_tag(frames[0])}]"
        labels[cid] = frames[k:]
    names: dict[int, str] = {}
    for cid, frames in labels.items():
        n = 1
        while n < min(NAME_MAX_FRAMES, len(frames)):
            prefix = frames[:n]
            if not any(other != cid and f[:n] == prefix and tags.get(other) == tags.get(cid)
                       for other, f in labels.items()):
                break
            n += 1
        names[cid] = (" ← ".join(frames[:n]) or f"context {cid}") + tags.get(cid, "")
    return names


def full_chain(profile: Profile, cid: int) -> str:
    """Every frame, innermost first, with file names (for tooltips)."""
    return "\n".join(profile.describe_frame(m, off) for m, off in profile.contexts[cid].frames)
