"""The general-purpose allocators users would otherwise pick, and how to load them.

glibc is the default (nothing preloaded). The others are Debian packages whose shared
objects are preloaded; heaplayout's runtime stacks on top of any of them by coming first in
LD_PRELOAD (it finds the next allocator with dlsym(RTLD_NEXT)).
"""

from __future__ import annotations

from pathlib import Path

_LIBDIR = Path("/usr/lib/x86_64-linux-gnu")

# name -> (shared object to preload or None for glibc, Debian package that provides it)
ALLOCATORS: dict[str, tuple[str | None, str | None]] = {
    "glibc": (None, None),
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
    "mimalloc": ("libmimalloc.so.2", "libmimalloc2.0"),
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
}


class UnknownAllocator(ValueError):
    pass


def allocator_library(name: str) -> Path | None:
    """The shared object to preload for allocator `name` (None for glibc).

    Raises UnknownAllocator with an install hint when the name is unknown or the package
    is missing.
    """
    if name not in ALLOCATORS:
        raise UnknownAllocator(f"unknown allocator {name!r}; choose one of: {', '.join(ALLOCATORS)}")
    soname, package = ALLOCATORS[name]
    if soname is None:
        return None
    path = _LIBDIR / soname
    if not path.exists():
        raise UnknownAllocator(f"allocator {name!r} needs {path}; install it with: apt-get install {package}")
    return path


def available_allocators() -> list[str]:
    names = []
    for name in ALLOCATORS:
        try:
            allocator_library(name)
        except UnknownAllocator:
            continue
        names.append(name)
    return names
