"""Exact offsets in the one preallocated region, and the byte cap.

Slots follow the variant's order (PreFix §2.1: "the objects will be placed in the
preallocated memory region in the same order as they appear in RHDSs", then the
singletons): each slot starts at the next multiple of `align` and is the profiled size
rounded up to `align` (so the next slot is aligned too; an empty object still gets `align`
bytes, as malloc(0) returns a unique pointer). A recycled context's N slots sit together
where its first object comes in the order.

The cap (`max_bytes`) drops the least accessed units until the region fits: a unit is one
id's slot, or a recycled context's N slots (charged once, with the accesses of all its hot
objects). Dropping keeps the order of what is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from .hot import ObjectKey

if TYPE_CHECKING:  # recycle.py sizes its slots with slot_bytes
    from .recycle import Recycled


@dataclass(frozen=True)
class Slot:
    context: int
    index: int  # the instance, or for a recycled context the slot number 0..N-1
    counter: int  # the counter the runtime increments for this context
    value: int  # the counter value that takes the slot; -1 for a recycled slot (value mod N)
    offset: int  # bytes from the region's start
    size: int  # bytes reserved: the profiled size rounded up to the alignment
    object_size: int  # the profiled size (the largest, for a recycled slot)
    recycled: bool = False


def slot_bytes(size: int, align: int) -> int:
    return max(align, -(-size // align) * align)


def apply_cap(order: Sequence[ObjectKey], sizes: dict[ObjectKey, int], accesses: dict[ObjectKey, int],
              recycled: dict[int, Recycled], max_bytes: int | None, align: int) -> tuple[list[ObjectKey], dict[int, Recycled]]:
    """The order and recycled contexts that fit in `max_bytes` (module doc)."""
    if max_bytes is None:
        return list(order), dict(recycled)
    units: list[tuple[int, int, object]] = []  # (accesses, position, unit)
    seen: set[int] = set()
    for pos, key in enumerate(order):
        c = key[0]
        if c in recycled:
            if c not in seen:
                seen.add(c)
                r = recycled[c]
                units.append((r.accesses, pos, ("r", c, r.slots * slot_bytes(r.slot_size, align))))
        else:
            units.append((accesses[key], pos, ("o", key, slot_bytes(sizes[key], align))))
    units.sort(key=lambda u: (-u[0], u[1]))
    used = 0
    kept_keys: set[ObjectKey] = set()
    kept_recycled: set[int] = set()
    for _, _, unit in units:
        kind, what, cost = unit  # type: ignore[misc]
        if used + cost > max_bytes:
            continue
        used += cost
        if kind == "r":
            kept_recycled.add(what)  # type: ignore[arg-type]
        else:
            kept_keys.add(what)  # type: ignore[arg-type]
    new_order = [k for k in order if (k[0] in kept_recycled if k[0] in recycled else k in kept_keys)]
    return new_order, {c: r for c, r in recycled.items() if c in kept_recycled}


def place(order: Sequence[ObjectKey], sizes: dict[ObjectKey, int], recycled: dict[int, Recycled],
          counter_of: dict[int, int], value_of: dict[ObjectKey, int], align: int) -> tuple[list[Slot], int]:
    """The slots in region order and the region's size in bytes."""
    slots: list[Slot] = []
    offset = 0
    done: set[int] = set()
    for key in order:
        c, inst = key
        if c in recycled:
            if c in done:
                continue
            done.add(c)
            r = recycled[c]
            size = slot_bytes(r.slot_size, align)
            for n in range(r.slots):
                slots.append(Slot(c, n, counter_of[c], -1, offset, size, r.slot_size, True))
                offset += size
            continue
        size = slot_bytes(sizes[key], align)
        slots.append(Slot(c, inst, counter_of[c], value_of[key], offset, size, sizes[key]))
        offset += size
    return slots, offset
