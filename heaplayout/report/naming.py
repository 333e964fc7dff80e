"""Names for allocation contexts that a reader recognises: `function:line` of the innermost
frames, as many as it takes to tell the context apart from the others (wrappers such as
xmalloc make the innermost frame the same for many contexts)."""

from __future__ import annotations

import re

from ..commands.plan import short_function
from ..profile_format import Profile
from .limits import NAME_MAX_FRAMES

# GCC's clone suffixes (xmalloc.constprop.0, f.isra.0, g.part.1, h.cold) name no source function
_CLONE = re.compile(r"(\.(constprop|isra|part|cold|lto_priv)(\.\d+)?)+$")


def frame_label(profile: Profile, module: int, offset: int) -> str:
    sym = profile.frame_symbol(module, offset)
    if sym is None or not sym.function:
        mod = profile.modules.get(module)
        name = mod.path.rsplit("/", 1)[-1] if mod else f"module{module}"
        return f"{name}+0x{offset:x}"
    name = _CLONE.sub("", short_function(sym.function))
    return f"{name}:{sym.line}" if sym.line else name


def context_names(profile: Profile) -> dict[int, str]:
    """context id -> `f:12 ← g:40`, innermost first, unique where NAME_MAX_FRAMES frames allow."""
    labels = {cid: [frame_label(profile, m, off) for m, off in c.frames] for cid, c in profile.contexts.items()}
    names: dict[int, str] = {}
    for cid, frames in labels.items():
        n = 1
        while n < min(NAME_MAX_FRAMES, len(frames)):
            prefix = frames[:n]
            if sum(1 for other, f in labels.items() if other != cid and f[:n] == prefix) == 0:
                break
            n += 1
        names[cid] = " ← ".join(frames[:n]) or f"context {cid}"
    return names


def full_chain(profile: Profile, cid: int) -> str:
    """Every frame, innermost first, with file names (for tooltips)."""
    return "\n".join(profile.describe_frame(m, off) for m, off in profile.contexts[cid].frames)
