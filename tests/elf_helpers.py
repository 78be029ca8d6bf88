"""Tiny x86_64 ELF executables for the tests of what a program's start runs
(binfmt_elf, uprobes): headers only, the code bytes are zeros."""

import struct

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
PHDR = struct.Struct("<IIQQQQQQ")


def make_elf(path, entry=0x1040, init=0x1000, pie=True, interp=True, machine=62):
    """Write an executable whose code segment starts at file offset and
    address 0x1000 (0x401000 when not a PIE); ``init`` is DT_INIT's
    address (None: no DT_INIT); returns the path."""
    base = 0 if pie else 0x400000
    phdrs = [(6, 4, 64, base + 64, base + 64, 4 * PHDR.size, 4 * PHDR.size, 8),   # PT_PHDR
             (1, 4, 0, base, base, 0x1000, 0x1000, 0x1000),                        # R
             (1, 5, 0x1000, base + 0x1000, base + 0x1000, 0x1000, 0x1000, 0x1000),  # R E
             (2, 6, 0x2000, base + 0x2000, base + 0x2000, 0x40, 0x40, 8)]          # DYNAMIC
    if interp:
        phdrs.append((3, 4, 0x1f00, base + 0x1f00, base + 0x1f00, 28, 28, 1))
    head = EHDR.pack(b"\x7fELF\x02\x01\x01" + bytes(9), 3 if pie else 2, machine, 1,
                     base + entry, 64, 0, 0, 64, PHDR.size, len(phdrs), 64, 0, 0)
    data = bytearray(0x2040)
    data[:len(head)] = head
    for i, p in enumerate(phdrs):
        PHDR.pack_into(data, 64 + i * PHDR.size, *p)
    dyn = [] if init is None else [(12, base + init)]
    for i, (tag, val) in enumerate(dyn + [(0, 0)]):
        struct.pack_into("<qQ", data, 0x2000 + 16 * i, tag, val)
    with open(path, "wb") as fh:
        fh.write(bytes(data))
    return str(path)
