"""Whether a file can stand in for malloc when preloaded: an ELF shared object for this
machine whose dynamic symbol table defines `malloc`.

The dynamic loader does not fail when LD_PRELOAD names something it cannot use: it prints
"cannot be preloaded ... ignored" (or nothing, for a library without malloc) and the program
runs on glibc's malloc. A measurement would then silently compare glibc with glibc, so a
library given by path is checked here, before any run, from the file's own headers.
"""

from __future__ import annotations

import platform
import struct
from pathlib import Path

ET_DYN = 3
SHT_DYNSYM = 11
SHN_UNDEF = 0
STT_FUNC, STT_GNU_IFUNC = 2, 10
STB_GLOBAL, STB_WEAK = 1, 2
# e_machine of the machines we know the number for; others are not checked
MACHINES = {"x86_64": 62, "aarch64": 183, "riscv64": 243, "ppc64le": 21, "s390x": 22}


def defined_symbols(data: bytes, names: set[str]) -> set[str]:
    """Which of `names` the 64-bit little-endian ELF image `data` defines as global or weak
    functions in its dynamic symbol table (.dynsym, found through the section headers)."""
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    found: set[str] = set()
    wanted = {n.encode() for n in names}
    for i in range(e_shnum):
        base = e_shoff + i * e_shentsize
        sh_type, = struct.unpack_from("<I", data, base + 4)
        if sh_type != SHT_DYNSYM:
            continue
        sh_offset, sh_size, sh_link, _info, _align, sh_entsize = struct.unpack_from("<QQIIQQ", data, base + 0x18)
        str_off, = struct.unpack_from("<Q", data, e_shoff + sh_link * e_shentsize + 0x18)
        for at in range(sh_offset, sh_offset + sh_size, sh_entsize or 24):
            st_name, st_info, _other, st_shndx = struct.unpack_from("<IBBH", data, at)
            if st_shndx == SHN_UNDEF or (st_info & 0xF) not in (STT_FUNC, STT_GNU_IFUNC):
                continue
            if (st_info >> 4) not in (STB_GLOBAL, STB_WEAK):
                continue
            end = data.index(b"\x00", str_off + st_name)
            name = data[str_off + st_name:end]
            if name in wanted:
                found.add(name.decode())
    return found


def malloc_library_problem(path: Path) -> str | None:
    """None when `path` is a shared object that can replace malloc here, else what is wrong
    with it, in words fit for a one-line error message."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    if data[:4] != b"\x7fELF":
        return "is not an ELF shared library"
    if data[4] != 2 or data[5] != 1:
        return "is not a 64-bit little-endian ELF library (the loader would ignore it)"
    e_type, e_machine = struct.unpack_from("<HH", data, 0x10)
    if e_type != ET_DYN:
        return "is an ELF file but not a shared library"
    host = MACHINES.get(platform.machine())
    if host is not None and e_machine != host:
        return f"is built for another machine (ELF machine {e_machine}, this one is {platform.machine()})"
    try:
        has_sections = struct.unpack_from("<H", data, 0x3C)[0] > 0
        if has_sections and "malloc" not in defined_symbols(data, {"malloc"}):
            return "does not define malloc (it would not replace the allocator)"
    except (struct.error, ValueError):
        return "has a damaged ELF symbol table"
    return None
