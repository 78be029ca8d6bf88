"""A little ELF64 reader for the tools (Python standard library only): what
``mkevents.py`` and ``mkprintkfmt.py`` read of a vmlinux and its modules."""

from __future__ import annotations

import struct

class Elf:
    """A little ELF64 little-endian reader: sections, symbols, memory at addresses.

    A relocatable object (.ko) gets its SHF_ALLOC sections laid out at made-up addresses
    and its R_X86_64_64 relocations applied, so that pointers read from it work the same
    way as in the linked vmlinux.  Undefined symbols get addresses in a region of their
    own, named in ``self.extern``."""

    EXTERN_BASE = 0x7F0000000000

    def __init__(self, path):
        with open(path, "rb") as fh:
            self.data = bytearray(fh.read())
        d = self.data
        assert d[:4] == b"\x7fELF" and d[4] == 2 and d[5] == 1, path
        (self.e_type, _m, _v, _entry, _phoff, shoff, _fl, _eh, _phes, _phn, shentsize, shnum,
         shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", d, 16)
        self.sections = []
        for i in range(shnum):
            (name, typ, flags, addr, off, size, link, info, align, entsize) = struct.unpack_from(
                "<IIQQQQIIQQ", d, shoff + i * shentsize)
            self.sections.append(dict(name=name, type=typ, flags=flags, addr=addr, off=off,
                                      size=size, link=link, info=info, align=align,
                                      entsize=entsize, idx=i))
        strtab = self.sections[shstrndx]
        for s in self.sections:
            s["name"] = self._cstr(strtab["off"] + s["name"])
        self.byname = {s["name"]: s for s in self.sections}
        self.extern = {}
        if self.e_type == 1:                      # ET_REL: lay out and relocate
            self._layout()
        self._read_symbols()
        if self.e_type == 1:
            self._relocate()
        # address -> (file offset, end address) ranges for reads
        self.ranges = sorted((s["addr"], s["addr"] + s["size"], s["off"]) for s in self.sections
                             if s["flags"] & 2 and s["type"] != 8 and s["size"])

    def _cstr(self, off):
        end = self.data.index(b"\0", off)
        return self.data[off:end].decode("latin-1")

    def _layout(self):
        addr = 0x10000
        for s in self.sections:
            if s["flags"] & 2:                    # SHF_ALLOC
                al = max(s["align"], 1)
                addr = (addr + al - 1) // al * al
                s["addr"] = addr
                addr += s["size"] + 0x1000

    def _read_symbols(self):
        symtab = next(s for s in self.sections if s["type"] == 2)
        strtab = self.sections[symtab["link"]]
        self.symbols = []                         # (name, value, size, info, shndx)
        names = self.data
        base = strtab["off"]
        for (name, info, _other, shndx, value, size) in struct.iter_unpack(
                "<IBBHQQ", self.data[symtab["off"]:symtab["off"] + symtab["size"]]):
            end = names.index(b"\0", base + name)
            nm = names[base + name:end].decode("latin-1")
            if self.e_type == 1:
                if shndx == 0 and nm:
                    value = self.extern.setdefault(nm, self.EXTERN_BASE + 16 * len(self.extern))
                elif 0 < shndx < 0xFF00:
                    value += self.sections[shndx]["addr"]
            self.symbols.append((nm, value, size, info, shndx))
        self.sym = {}
        for nm, value, size, info, shndx in self.symbols:
            if nm and shndx != 0:
                self.sym.setdefault(nm, value)
        self.extern_names = {v: k for k, v in self.extern.items()}

    def _relocate(self):
        for rs in self.sections:
            if rs["type"] != 4:                   # SHT_RELA
                continue
            target = self.sections[rs["info"]]
            if not target["flags"] & 2 or target["type"] == 8:
                continue
            for off, info, addend in struct.iter_unpack(
                    "<QQq", self.data[rs["off"]:rs["off"] + rs["size"]]):
                typ, symi = info & 0xFFFFFFFF, info >> 32
                if typ != 1:                      # R_X86_64_64: the only one data pointers use
                    continue
                val = (self.symbols[symi][1] + addend) & 0xFFFFFFFFFFFFFFFF
                struct.pack_into("<Q", self.data, target["off"] + off, val)

    def _off(self, addr, n=1):
        for lo, hi, off in self.ranges:
            if lo <= addr and addr + n <= hi:
                return off + addr - lo
        raise KeyError("address %#x not in a loaded section" % addr)

    def read(self, addr, n):
        o = self._off(addr, n)
        return bytes(self.data[o:o + n])

    def u64(self, addr):
        return struct.unpack_from("<Q", self.data, self._off(addr, 8))[0]

    def i32(self, addr):
        return struct.unpack_from("<i", self.data, self._off(addr, 4))[0]

    def u32(self, addr):
        return struct.unpack_from("<I", self.data, self._off(addr, 4))[0]

    def cstr(self, addr):
        o = self._off(addr)
        return self.data[o:self.data.index(b"\0", o)].decode("latin-1")

    def section_range(self, name):
        s = self.byname.get(name)
        if not s:
            return 0, 0
        return s["addr"], s["addr"] + s["size"]

    def func_name(self, addr):
        """Name of a function symbol at addr (or of the undefined symbol it stands for)."""
        if addr in self.extern_names:
            return self.extern_names[addr]
        if not hasattr(self, "_funcs"):
            self._funcs = {}
            for nm, value, size, info, shndx in self.symbols:
                if info & 0xF == 2 and shndx:
                    self._funcs.setdefault(value, nm)
        return self._funcs.get(addr)
