"""What an executable runs every time it starts (fs/binfmt_elf.c's view of an
ELF file, and the C runtime's first calls).

``load_elf_binary()`` maps an executable's ``PT_LOAD`` segments and starts it
at ``e_entry`` (after its interpreter, for a dynamic one); the C runtime's
start code then calls the executable's ``DT_INIT`` function (``_init``)
before ``main``.  Those two are code of the file that every run executes,
whatever the program does next: :func:`start_points` gives their offsets in
the file, as a uprobe names code (``PATH:OFFSET``).  Only the Python standard
library; ELF64 little-endian (x86_64) only.
"""

from __future__ import annotations

import os
import struct

PT_LOAD = 1
PT_DYNAMIC = 2
PT_INTERP = 3
DT_NULL = 0
DT_INIT = 12
ET_EXEC = 2
ET_DYN = 3
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
PHDR = struct.Struct("<IIQQQQQQ")
DYN = struct.Struct("<qQ")
MAX_PHNUM = 128
MAX_DYN = 512


class StartPoints:
    """An executable's start: the file offsets of its entry point and of
    its ``_init`` (None without one), whether it is position-independent
    (loaded at a random base) and whether it has an interpreter."""

    __slots__ = ("entry", "init", "pie", "interp", "entry_vaddr", "init_vaddr")

    def __init__(self, entry, init, pie, interp, entry_vaddr, init_vaddr):
        self.entry = entry
        self.init = init
        self.pie = pie
        self.interp = interp
        self.entry_vaddr = entry_vaddr
        self.init_vaddr = init_vaddr


def _file_offset(loads, vaddr: int):
    """The file offset of ``vaddr`` in the file's loaded segments (None if
    no segment's file part holds it)."""
    for off, va, filesz in loads:
        if va <= vaddr < va + filesz:
            return off + vaddr - va
    return None


def start_points(read) -> StartPoints | None:
    """``read(offset, size)`` -> bytes of the file; None when it is not an
    x86_64 ELF executable (or a shared object: also run as a program)."""
    head = read(0, EHDR.size)
    if len(head) < EHDR.size:
        return None
    (ident, e_type, e_machine, _v, e_entry, e_phoff, _sh, _fl, _eh, e_phentsize, e_phnum,
     _she, _shn, _shs) = EHDR.unpack(head)
    if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1 or e_machine != 62:
        return None
    if e_type not in (ET_EXEC, ET_DYN) or e_phentsize != PHDR.size or not 0 < e_phnum <= MAX_PHNUM:
        return None
    table = read(e_phoff, e_phnum * PHDR.size)
    if len(table) < e_phnum * PHDR.size:
        return None
    loads, dynamic, interp = [], None, False
    for i in range(e_phnum):
        p_type, _flags, p_offset, p_vaddr, _pa, p_filesz, _memsz, _al = PHDR.unpack_from(
            table, i * PHDR.size)
        if p_type == PT_LOAD:
            loads.append((p_offset, p_vaddr, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
        elif p_type == PT_INTERP:
            interp = True
    entry = _file_offset(loads, e_entry)
    if entry is None:
        return None
    init_vaddr = None
    if dynamic is not None:
        data = read(dynamic[0], min(dynamic[1], MAX_DYN * DYN.size))
        for j in range(len(data) // DYN.size):
            tag, val = DYN.unpack_from(data, j * DYN.size)
            if tag == DT_NULL:
                break
            if tag == DT_INIT:
                init_vaddr = val
    init = _file_offset(loads, init_vaddr) if init_vaddr is not None else None
    return StartPoints(entry, init, e_type == ET_DYN, interp, e_entry,
                       init_vaddr if init is not None else None)


def start_points_of_fd(fd: int) -> StartPoints | None:
    """:func:`start_points` of an open file (read with ``os.pread``)."""

    def read(offset, size):
        try:
            return os.pread(fd, size, offset)
        except OSError:
            return b""
    return start_points(read)
