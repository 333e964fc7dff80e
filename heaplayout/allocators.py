"""The general-purpose allocators users would otherwise pick, and how to load them.

glibc is the default (nothing preloaded). The others are Debian packages whose shared
objects are preloaded; heaplayout's runtime stacks on top of any of them by coming first in
LD_PRELOAD (it finds the next allocator with dlsym(RTLD_NEXT)).

Any other allocator can be given by the path of its shared library (`/opt/lib/libfoo.so`):
everywhere an allocator name is accepted, a value with a `/` (or ending in `.so`, or with
`.so.` in it) is such a path. It is checked before use (shared_object.py), since the
dynamic loader would silently ignore a file it cannot preload.
"""

from __future__ import annotations

import os
from pathlib import Path

from .shared_object import malloc_library_problem

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


def is_library_path(name: str) -> bool:
    """Whether an allocator value names a shared library by path rather than a built-in name."""
    return "/" in name or name.endswith(".so") or ".so." in name


def display_name(name: str) -> str:
    """A short name for tables: the built-in name, or the library's file name."""
    return Path(name).name if is_library_path(name) else name


def library_by_path(path: str) -> Path:
    """The absolute path of an allocator library given by path, after checking that the
    loader can preload it and that it defines malloc; UnknownAllocator otherwise."""
    p = Path(path).expanduser()
    if not p.exists():
        raise UnknownAllocator(f"allocator library not found: {path}")
    if not p.is_file():
        raise UnknownAllocator(f"allocator library {path} is not a file")
    problem = malloc_library_problem(p)
    if problem:
        raise UnknownAllocator(f"allocator library {path} {problem}")
    return Path(os.path.abspath(p))  # absolute, as named: the loader may run in another directory


def allocator_library(name: str) -> Path | None:
    """The shared object to preload for allocator `name` (None for glibc): a built-in name,
    or a library path (is_library_path).

    Raises UnknownAllocator with an install hint when the name is unknown or the package
    is missing, and with the reason when a library path cannot serve as malloc.
    """
    if is_library_path(name):
        return library_by_path(name)
    if name not in ALLOCATORS:
        raise UnknownAllocator(f"unknown allocator {name!r}; choose one of: {', '.join(ALLOCATORS)}, "
                               "or the path of a shared library that defines malloc")
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


# name -> (variable, value) that makes the allocator itself ask for transparent huge pages
# (madvise MADV_HUGEPAGE on its heap), as a user could set it without us. tcmalloc's Debian
# build has no such setting; a library given by path is unknown.
HUGE_PAGE_SETTINGS: dict[str, tuple[str, str]] = {
    "glibc": ("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1"),  # glibc 2.35 and later
    "jemalloc": ("MALLOC_CONF", "thp:always"),
    "mimalloc": ("MIMALLOC_LARGE_OS_PAGES", "1"),  # mimalloc 2.0's name (2.1: ALLOW_LARGE_OS_PAGES)
}

# Variables that hold a list of settings: a value we add joins the user's with this separator
# (ours last, so ours wins where both name one setting) instead of replacing it.
LIST_VARIABLES: dict[str, str] = {"GLIBC_TUNABLES": ":", "MALLOC_CONF": ","}


def huge_page_env(name: str) -> dict[str, str]:
    """The variables that turn huge pages on in allocator `name`; UnknownAllocator if it has
    no such setting."""
    if name not in HUGE_PAGE_SETTINGS:
        raise UnknownAllocator(f"allocator {display_name(name)!r} has no setting for transparent huge pages "
                               f"(known: {', '.join(HUGE_PAGE_SETTINGS)}); our runtime's huge_pages=1 on it "
                               "puts only our pools on them")
    var, value = HUGE_PAGE_SETTINGS[name]
    return {var: value}


def merge_settings(base: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """`extra` with each list variable (LIST_VARIABLES) that `base` also sets joined to
    base's value: the user's GLIBC_TUNABLES or MALLOC_CONF stay in force beside ours."""
    out = dict(extra)
    for var, sep in LIST_VARIABLES.items():
        if var in extra and base.get(var):
            out[var] = f"{base[var]}{sep}{extra[var]}"
    return out
