"""Writing a heap profile (docs/profile-format.md) back as text, with the END record's
checksum: used by `profile merge`, and by tests that build profiles by hand.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import IO

from .profile_model import FORMAT_NAME, Profile, escape


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
