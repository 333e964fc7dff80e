"""Small facts about ELF binaries: the GNU build-id (read directly from the file) and the
return addresses of call instructions (from objdump's disassembly).

Used to write plans by hand in tests and benchmarks, and to check a plan against a binary.
"""

from __future__ import annotations

import os
import re
import stat
import struct
import subprocess
from pathlib import Path

NT_GNU_BUILD_ID = 3


def build_id(path: Path) -> str | None:
    """The GNU build-id of a 64-bit little-endian ELF file as lowercase hex, or None."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    for i in range(e_shnum):
        sh_type, = struct.unpack_from("<I", data, e_shoff + i * e_shentsize + 4)
        if sh_type != 7:  # SHT_NOTE
            continue
        sh_offset, sh_size = struct.unpack_from("<QQ", data, e_shoff + i * e_shentsize + 0x18)
        pos, end = sh_offset, sh_offset + sh_size
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name_at = pos + 12
            desc_at = name_at + ((namesz + 3) & ~3)
            if ntype == NT_GNU_BUILD_ID and data[name_at:name_at + namesz] == b"GNU\x00":
                return data[desc_at:desc_at + descsz].hex()
            pos = desc_at + ((descsz + 3) & ~3)
    return None


def is_elf(path: Path) -> bool:
    """The file starts with the ELF magic (not a script, not missing)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


EM_X86_64 = 62


def foreign_executable(path: Path) -> str | None:
    """What keeps an x86-64 library from loading into the ELF executable at `path` ("a 32-bit
    program", "a program for another machine (e_machine 183)"), or None: an x86-64 program,
    not ELF, or unreadable. The loader of such a program ignores an x86-64 LD_PRELOAD with an
    "ERROR: ld.so: ... wrong ELF class" line on stderr, which the program alone never prints."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    if head[4] != 2:
        return "a 32-bit program"
    byteorder = "little" if head[5] == 1 else "big"
    machine = int.from_bytes(head[18:20], byteorder)
    return None if machine == EM_X86_64 and head[5] == 1 else f"a program for another machine (e_machine {machine})"


def is_static_executable(path: Path) -> bool:
    """True for an ELF executable without a program interpreter (PT_INTERP): the dynamic
    loader never runs for it, so LD_PRELOAD, and with it our runtime, has no effect.
    False for anything else (dynamic executables, scripts, files we cannot read)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return False
            (e_phoff,) = struct.unpack_from("<Q", head, 0x20)
            e_phentsize, e_phnum = struct.unpack_from("<HH", head, 0x36)
            f.seek(e_phoff)
            table = f.read(e_phentsize * e_phnum)
    except OSError:
        return False
    if e_phentsize < 4 or len(table) < e_phentsize * e_phnum:
        return False
    types = [struct.unpack_from("<I", table, i * e_phentsize)[0] for i in range(e_phnum)]
    return 3 not in types  # PT_INTERP


def secure_exec(path: Path) -> str | None:
    """What makes the kernel start `path` for this user in secure-execution mode (AT_SECURE),
    or None: a set-user-ID file owned by another user, a set-group-ID file of another group,
    or (for a user other than root) file capabilities, on a file system that honours them.
    The loader then ignores an LD_PRELOAD path (and the runtime the environment), so the
    program runs without the runtime."""
    try:
        st = os.stat(path)
        if os.statvfs(path).f_flag & os.ST_NOSUID:
            return None
    except OSError:
        return None
    if st.st_mode & stat.S_ISUID and st.st_uid != os.getuid():
        return "set-user-ID"
    if st.st_mode & stat.S_ISGID and st.st_gid != os.getgid():
        return "set-group-ID"
    if os.getuid() != 0:
        try:
            os.getxattr(path, "security.capability")
            return "given file capabilities"
        except OSError:
            pass
    return None


# Sanitizers that bring their own allocator, by the library gcc links (libasan.so.8) and by
# the entry point clang links into the executable (__asan_init).
SANITIZERS = {"asan": "AddressSanitizer", "hwasan": "HWAddressSanitizer", "tsan": "ThreadSanitizer",
              "msan": "MemorySanitizer", "lsan": "LeakSanitizer"}
SHT_DYNAMIC, DT_NEEDED = 6, 1


def needed_libraries(data: bytes) -> list[str]:
    """The DT_NEEDED names of the 64-bit little-endian ELF image `data` (its .dynamic
    section, found through the section headers)."""
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    names = []
    for i in range(e_shnum):
        base = e_shoff + i * e_shentsize
        if struct.unpack_from("<I", data, base + 4)[0] != SHT_DYNAMIC:
            continue
        sh_offset, sh_size, sh_link = struct.unpack_from("<QQI", data, base + 0x18)
        (str_off,) = struct.unpack_from("<Q", data, e_shoff + sh_link * e_shentsize + 0x18)
        for at in range(sh_offset, sh_offset + sh_size - 15, 16):
            tag, val = struct.unpack_from("<qQ", data, at)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                names.append(data[str_off + val:data.index(b"\x00", str_off + val)].decode(errors="replace"))
    return names


def sanitizer(path: Path) -> str | None:
    """The name of the sanitizer whose runtime (and allocator) the executable carries, or
    None: gcc links the runtime as a library (libasan.so.8), clang into the executable, which
    then defines its init function. With either, the sanitizer's malloc serves the program
    (a dynamic runtime also insists on coming first, and exits when something is preloaded
    before it) and Valgrind cannot run it."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    from heaplayout.shared_object import defined_symbols  # it imports nothing of ours
    try:
        for lib in needed_libraries(data):
            m = re.match(r"lib(asan|hwasan|tsan|msan|lsan)\.so", lib)
            if m:
                return SANITIZERS[m.group(1)]
        inits = defined_symbols(data, {f"__{k}_init" for k in SANITIZERS})
    except (struct.error, ValueError, IndexError):
        return None
    for key, name in SANITIZERS.items():
        if f"__{key}_init" in inits:
            return name
    return None


PT_GNU_EH_FRAME = 0x6474E550
DW_EH_PE_DATAREL_SDATA4 = 0x3B  # what binutils' and lld's .eh_frame_hdr tables use


def function_starts(path: Path) -> list[int]:
    """Sorted start addresses (ELF virtual addresses) of the functions that have unwind
    information, from the binary-search table of .eh_frame_hdr: one entry per FDE, and
    last the end of the code segment, where the last function ends. Every
    x86-64 binary has it (it is what unwinding and C++ exceptions use), stripped or not, and
    the runtime's unwinder reads the same table, so both sides agree on what a function is.
    Raises ValueError when the file has no such table in the usual encoding."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    (e_phoff,) = struct.unpack_from("<Q", data, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 0x36)
    headers = [struct.unpack_from("<IIQQQQQ", data, e_phoff + i * e_phentsize) for i in range(e_phnum)]
    code_ends = [vaddr + memsz for (kind, flags, _o, vaddr, _p, _f, memsz) in headers if kind == 1 and flags & 1]
    for p_type, _flags, p_offset, p_vaddr, _paddr, _filesz, _memsz in headers:
        if p_type != PT_GNU_EH_FRAME:
            continue
        version, ptr_enc, count_enc, table_enc = data[p_offset:p_offset + 4]
        if version != 1 or count_enc != 0x03 or table_enc != DW_EH_PE_DATAREL_SDATA4 or ptr_enc & 0x0F != 0x0B:
            raise ValueError(f"{path}: .eh_frame_hdr in an unusual encoding")
        (count,) = struct.unpack_from("<I", data, p_offset + 8)
        table = p_offset + 12
        if table + 8 * count > len(data):
            raise ValueError(f"{path}: .eh_frame_hdr table runs past the end of the file")
        starts = sorted(p_vaddr + struct.unpack_from("<i", data, table + 8 * k)[0] for k in range(count))
        if starts:  # the last function ends with its code segment
            starts.append(min((e for e in code_ends if e > starts[-1]), default=starts[-1] + 1))
        return starts
    raise ValueError(f"{path}: no .eh_frame_hdr")


def comments(path: Path) -> list[str]:
    """The strings of the ELF file's .comment section: one per compiler that built part of
    it ("GCC: (Debian 12.2.0-14) 12.2.0", "clang version 16.0.6"); [] when it has none."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not e_shoff or e_shstrndx >= e_shnum:
        return []
    names_off, = struct.unpack_from("<Q", data, e_shoff + e_shstrndx * e_shentsize + 0x18)
    for i in range(e_shnum):
        base = e_shoff + i * e_shentsize
        name_at, = struct.unpack_from("<I", data, base)
        end = data.index(b"\x00", names_off + name_at)
        if data[names_off + name_at:end] != b".comment":
            continue
        off, size = struct.unpack_from("<QQ", data, base + 0x18)
        return [s.decode(errors="replace") for s in data[off:off + size].split(b"\x00") if s]
    return []


def call_return_addresses(binary: Path, function: str, callee: str) -> list[int]:
    """Offsets of the instructions right after each call from `function` to `callee`
    (the return addresses the runtime sees), from `objdump -d`."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    # gcc may clone a function under a suffixed name (xmalloc.constprop.0, f.isra.0, f.part.0)
    body = re.search(rf"^[0-9a-f]+ <{re.escape(function)}(?:\.[a-z]+\.\d+)*>:\n(.*?)\n\n", out, re.S | re.M)
    if body is None:
        raise ValueError(f"{binary}: no function {function!r} in the disassembly")
    lines = [ln for ln in body.group(1).splitlines() if re.match(r"\s+[0-9a-f]+:", ln)]
    found = [int(lines[i + 1].split(":")[0], 16) for i, ln in enumerate(lines[:-1])
             if re.search(rf"call\s.*<{re.escape(callee)}(?:\.[a-z]+\.\d+)*(@plt)?>", ln)]
    if not found:
        raise ValueError(f"{binary}: {function} makes no call to {callee}")
    return found
