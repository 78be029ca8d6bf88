"""The kernel symbol table (kernel/kallsyms.c) and ``%pS`` printing.

The table holds text symbols (types t/T and weak w/W); a kernel built
with CONFIG_KALLSYMS_ALL also lists data symbols (``set_data()``: those
this model knows, in ``.rodata``/``.data`` after the text, with their
contents where the kernel's are known, e.g. the banners).  The table is the host's
``/proc/kallsyms`` when that is readable with real addresses, else a copy of
one shipped in ``data/kallsyms.gz`` (see ``write_bundled``).

Lookups follow the kernel: an address belongs to the last symbol at or below
it; among symbols sharing an address the first one in table order names it;
a symbol's size runs to the next symbol with a higher address, or to the end
of its text section (``_etext``/``_einittext``).  Module symbols are sized
within their module.  Addresses outside kernel and module text do not
resolve.
"""

from __future__ import annotations

import gzip
import os
import re
from array import array
from bisect import bisect_right
from itertools import chain, islice

from ._kallsyms import NameTable
from .fs.proc.inode import ProcOps
from .fs.pseudo import FileOperations
from .version import linux_banner, linux_proc_banner

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
BUNDLED_PATH = os.path.join(DATA_DIR, "kallsyms.gz")
HOST_PATH = "/proc/kallsyms"

TEXT_TYPES = frozenset("tTwW")
PFX = "__pfx_"
PFX_LEN = 16                      # function padding before every function
MODULE_PAGE = 4096

_CACHE: dict = {}

_SUFFIX_RE = re.compile(r"\.(isra|constprop|part|llvm|lto_priv)\.\d+")


def source_name(name: str) -> str:
    """The source function a symbol is compiled from (``x.isra.0``: ``x``;
    a name with more than one clone suffix is kept as it is)."""
    m = _SUFFIX_RE.search(name)
    return name[:m.start()] if m and m.end() == len(name) else name


class Kallsyms:
    """Text symbols sorted by address, with the kernel's lookup rules."""

    def __init__(self, core, modules=(), source: str = "bundled"):
        """``core``: (addr, type, name) of vmlinux text in table order;
        ``modules``: (addr, type, name, module) of module text."""
        core = list(core)
        self._setup([s[1] for s in core], [s[2] for s in core], [s[0] for s in core],
                    list(modules), source)

    def _setup(self, types, names, addrs, modules, source, shift=0, ordered=False):
        # (addresses in an array and the types in a string: a list of Python
        # ints costs 5x the table's 8 bytes a symbol, and a host table has
        # ~120k symbols.  A relocated table shares its original's array:
        # symbol i is at ``_addrs[i] + _shift``; ``ordered``: that array,
        # in address order already)
        if not ordered and any(x > y for x, y in zip(addrs, islice(addrs, 1, None))):
            order = sorted(range(len(addrs)), key=addrs.__getitem__)   # stable
            types = [types[i] for i in order]
            names = [names[i] for i in order]
            addrs = [addrs[i] for i in order]
        self.source = source
        self._addrs = addrs if isinstance(addrs, array) else array("Q", addrs)
        self._shift = shift
        self._types = types if isinstance(types, str) else "".join(types)
        # (packed: a list of ~120k names and a dict by name were 17 MB)
        self._names = names if isinstance(names, NameTable) else NameTable(names)
        mods = sorted(modules, key=lambda s: s[0])
        self._maddrs = array("Q", [s[0] for s in mods])
        self._mnames = [s[2] for s in mods]
        self._mmods = [s[3] for s in mods]
        self._mod_order = modules
        self.generation = 0
        self._by_name: dict[str, int] | None = None     # module and data symbols'
        self._by_base: dict[str, str] | None = None
        self.data: list[tuple[int, str, str]] = []     # (addr, type, name) of data symbols
        self.data_contents: dict[int, bytes] = {}      # what some of them hold
        self._text = (self._marker("_stext"), self._marker("_etext"))
        self._inittext = (self._marker("_sinittext"), self._marker("_einittext"))
        if self._text[0] is None or self._text[1] is None:
            # no section markers: everything up to the last symbol is text
            lo = addrs[0] + shift if addrs else 0
            hi = addrs[-1] + shift + PFX_LEN if addrs else 0
            self._text = (lo, hi)
        if self._inittext[0] is None or self._inittext[1] is None:
            self._inittext = (0, 0)

    def _marker(self, name):
        i = self._names.index(name)
        return self._addrs[i] + self._shift if i >= 0 else None

    # ------------------------------------------------------------ loading
    @classmethod
    def load(cls, host: bool = True) -> "Kallsyms":
        """The host's table if asked for and readable, else the bundled one.
        Tables are read once per process and shared (they never change)."""
        if host:
            ks = _CACHE.get("host", 0)
            if ks == 0:
                try:
                    with open(HOST_PATH, "r", encoding="ascii", errors="replace") as f:
                        text = f.read()
                except OSError:
                    text = ""
                ks = _CACHE["host"] = cls.from_proc_text(text, source="host") if text else None
            if ks is not None:
                return ks
        ks = _CACHE.get("bundled")
        if ks is None:
            ks = _CACHE["bundled"] = cls.load_bundled()
        return ks

    @classmethod
    def from_proc_text(cls, text: str, source: str = "host") -> "Kallsyms | None":
        """Parse /proc/kallsyms text; None when addresses are hidden."""
        # vmlinux lines come first, fixed width: "%016x %c %s".  Read a
        # piece at a time: a list of the ~120k lines made the boot's peak
        # (36 MB over the 4 MB kept)
        addrs, types, names, mods = array("Q"), [], [], []
        first = last = None
        for lines in _pieces(text):
            core = [ln for ln in lines if len(ln) > 19 and ln[17] in TEXT_TYPES and "\t" not in ln]
            if core:
                first = first or core[0]
                last = core[-1]
                addrs.extend(int(ln[:16], 16) for ln in core)
                types.extend(ln[17] for ln in core)
                names.extend(ln[19:] for ln in core)
            for ln in lines:
                if "\t" in ln:
                    m = _parse_line(ln)
                    if m is not None and m[3] is not None:
                        mods.append(m)
        if first is None or any(len(ln) < 20 or ln[16] != " " or ln[18] != " " for ln in (first, last)):
            return cls._from_proc_text_slow(text.splitlines(), source)
        if not addrs[-1]:
            return None
        ks = cls.__new__(cls)
        ks._setup("".join(types), names, addrs, mods, source)
        return ks

    @classmethod
    def _from_proc_text_slow(cls, lines, source):
        core, mods = [], []
        for ln in lines:
            m = _parse_line(ln)
            if m is None:
                continue
            if m[3] is None:
                core.append(m[:3])
            else:
                mods.append(m)
        if not core or not any(s[0] for s in core):
            return None
        return cls(core, mods, source=source)

    @classmethod
    def load_bundled(cls, path: str = BUNDLED_PATH) -> "Kallsyms":
        with gzip.open(path, "rt", encoding="ascii") as f:
            data = f.read()
        core = []
        mods = []
        addr = 0
        for line in data.splitlines():
            if not line or line[0] == "#":
                continue
            delta, kind, rest = line.split(" ", 2)
            addr += int(delta, 16)
            t = kind[0]
            if len(kind) > 1 and kind[1] == "+":
                # a function preceded by its __pfx_ padding symbol
                core.append((addr, t, PFX + rest))
                addr += PFX_LEN
                core.append((addr, t, rest))
                continue
            tab = rest.find("\t")
            if tab < 0:
                core.append((addr, t, rest))
            else:
                mods.append((addr, t, rest[:tab], rest[tab + 1:]))
        return cls(core, mods, source="bundled")

    def write_bundled(self, path: str = BUNDLED_PATH) -> None:
        """Store this table compactly (delta-coded addresses, padding
        symbols folded into the function that follows them)."""
        out = ["# kallsyms text symbols: <hex delta> <type>[+] <name>[\\t<module>]"]
        prev = 0
        a, t, n = self.core_addrs(), self._types, self._names
        i = 0
        while i < len(a):
            if (n[i].startswith(PFX) and i + 1 < len(a) and n[i + 1] == n[i][len(PFX):]
                    and a[i + 1] - a[i] == PFX_LEN and t[i + 1] == t[i]):
                out.append("%x %s+ %s" % (a[i] - prev, t[i], n[i + 1]))
                prev = a[i] + PFX_LEN
                i += 2
                continue
            out.append("%x %s %s" % (a[i] - prev, t[i], n[i]))
            prev = a[i]
            i += 1
        for addr, typ, name, mod in self._mod_order:
            out.append("%x %s %s\t%s" % (addr - prev, typ, name, mod))
            prev = addr
        blob = ("\n".join(out) + "\n").encode("ascii")
        with open(path, "wb") as f:
            f.write(gzip.compress(blob, 9, mtime=0))

    def relocated(self, text_base: int, module_base: int) -> "Kallsyms":
        """The same table loaded at other addresses: vmlinux text moved so
        that ``_stext`` (or the first symbol) lands at ``text_base``, module
        text so that the lowest module symbol lands at ``module_base``.
        Offsets within each piece are kept, so sizes and lookups are the
        same; what changes is what an address reveals."""
        start = self._marker("_stext")
        if start is None:
            start = self._addrs[0] + self._shift if self._addrs else text_base
        dt = text_base - start
        dm = (module_base - self._maddrs[0]) if self._maddrs else 0
        ks = Kallsyms.__new__(Kallsyms)
        ks._setup(self._types, self._names, self._addrs,
                  [(a + dm, t, n, m) for a, t, n, m in self._mod_order], self.source,
                  self._shift + dt, ordered=True)
        return ks

    # ------------------------------------------------------------ modules
    def add_module(self, name: str, syms) -> None:
        """A loaded module's text symbols, ``(addr, type, symbol)``, listed
        after those already there (``/proc/kallsyms`` walks the module list
        in load order)."""
        self._set_modules(self._mod_order + [(a, t, n, name) for a, t, n in syms])

    def remove_module(self, name: str, names=None) -> None:
        """The module's symbols go (those called ``names`` only: its init
        text, freed after its init ran)."""
        self._set_modules([s for s in self._mod_order
                           if s[3] != name or (names is not None and s[2] not in names)])

    def _set_modules(self, modules) -> None:
        mods = sorted(modules, key=lambda s: s[0])
        self._maddrs = array("Q", [s[0] for s in mods])
        self._mnames = [s[2] for s in mods]
        self._mmods = [s[3] for s in mods]
        self._mod_order = modules
        self._by_name = None
        self._by_base = None
        self.generation += 1          # what a module address names changed

    # ------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self._addrs) + len(self._maddrs)

    def _is_core_text(self, addr: int) -> bool:
        lo, hi = self._text
        if lo <= addr < hi:
            return True
        lo, hi = self._inittext
        return lo <= addr < hi

    def lookup(self, addr: int):
        """(name, offset, size, module) of the symbol holding ``addr``."""
        if self._is_core_text(addr):
            a, shift = self._addrs, self._shift
            i = bisect_right(a, addr - shift) - 1
            if i < 0:
                return None
            start = a[i]
            while i and a[i - 1] == start:
                i -= 1
            j = bisect_right(a, start)
            start += shift
            if j < len(a):
                end = a[j] + shift
            elif self._inittext[0] <= addr < self._inittext[1]:
                end = self._inittext[1]
            else:
                end = self._text[1]
            return (self._names[i], addr - start, end - start, None)
        m = self._maddrs
        if not m or addr < m[0]:
            return None
        i = bisect_right(m, addr) - 1
        start = m[i]
        while i and m[i - 1] == start:
            i -= 1
        mod = self._mmods[i]
        j = bisect_right(m, start)
        if j < len(m) and self._mmods[j] == mod:
            end = m[j]
        else:
            end = (start // MODULE_PAGE + 1) * MODULE_PAGE
        if addr >= end:
            return None
        return (self._mnames[i], addr - start, end - start, mod)

    def _others(self) -> dict:
        """Module and data symbols by name (the first of each name)."""
        if self._by_name is None:
            d: dict[str, int] = {}
            for n, a in zip(self._mnames, self._maddrs):
                if n not in d:
                    d[n] = a
            for a, _t, n in self.data:
                d.setdefault(n, a)
            self._by_name = d
        return self._by_name

    def addr_of(self, name: str) -> int | None:
        """The address of the first symbol called ``name`` (vmlinux's, then
        the modules', then the data symbols')."""
        i = self._names.index(name)
        if i >= 0:
            return self._addrs[i] + self._shift
        return self._others().get(name)

    def __contains__(self, name) -> bool:
        return self.addr_of(name) is not None

    def core_addrs(self) -> array:
        """The addresses of vmlinux's symbols, in table order (a new array
        for a relocated table: the table holds its original's)."""
        s = self._shift
        return array("Q", (a + s for a in self._addrs)) if s else self._addrs

    def core_names(self) -> NameTable:
        """The names of vmlinux's symbols, in table (address) order."""
        return self._names

    def core_table(self) -> tuple:
        """(addresses, shift, names) of vmlinux's symbols in table order:
        symbol i is at ``addresses[i] + shift``; every relocation of a
        table shares its addresses and names (the same objects)."""
        return self._addrs, self._shift, self._names

    def module_symbols(self) -> list:
        """(addr, type, name, module) of the modules' symbols, in
        /proc/kallsyms order (``symbols()`` after vmlinux's)."""
        return self._mod_order

    def resolve(self, name: str) -> str | None:
        """``name`` itself, else a compiler clone of it (``name.isra.0``,
        ``name.constprop.0``, ``name.part.0``); None when absent."""
        if name in self:
            return name
        if self._by_base is None:
            base: dict[str, str] = {}
            for n in chain(self._names, self._others()):
                if "." in n:
                    src = source_name(n)
                    if src != n:
                        base.setdefault(src, n)
            self._by_base = base
        return self._by_base.get(name)

    def functions(self):
        """Names of the functions (text symbols but padding), address order."""
        for n in self._names:
            if not n.startswith(PFX):
                yield n
        for n in self._mnames:
            if not n.startswith(PFX):
                yield n

    def symbols(self):
        """(addr, type, name, module) of every symbol, in /proc/kallsyms order."""
        shift = self._shift
        for a, t, n in zip(self._addrs, self._types, self._names):
            yield (a + shift, t, n, None)
        yield from self._mod_order

    # ------------------------------------------------------------ printing
    def sprint_symbol(self, addr: int) -> str:
        """``%pS``: name+0xoff/0xsize [module], or 0x<addr> if unknown."""
        hit = self.lookup(addr)
        if hit is None:
            return "0x%x" % addr
        name, off, size, mod = hit
        # the kernel's %#lx prints 0 as "0x0", as Python's does
        if mod is None:
            return "%s+%#x/%#x" % (name, off, size)
        return "%s+%#x/%#x [%s]" % (name, off, size, mod)

    def sprint_symbol_no_offset(self, addr: int) -> str:
        """``%ps``: the name (and [module]), or 0x<addr> if unknown."""
        hit = self.lookup(addr)
        if hit is None:
            return "0x%x" % addr
        if hit[3] is None:
            return hit[0]
        return "%s [%s]" % (hit[0], hit[3])

    def proc_text(self, show_value: bool = True) -> str:
        """/proc/kallsyms: ``%px %c %s`` per symbol, ``\\t[mod]`` for modules.
        Without ``show_value`` (kptr_restrict) addresses print as zeros."""
        out = []
        core = self.core_addrs()
        data = {bisect_right(core, a): [] for a, _t, _n in self.data}
        for a, t, n in self.data:          # in address order, among vmlinux's
            data[bisect_right(core, a)].append((a, t, n))
        if data:
            addrs, types, names = [], [], []
            for i, (a, t, n) in enumerate(zip(core, self._types, self._names)):
                for d in data.get(i, ()):
                    addrs.append(d[0]), types.append(d[1]), names.append(d[2])
                addrs.append(a), types.append(t), names.append(n)
            for d in data.get(len(core), ()):
                addrs.append(d[0]), types.append(d[1]), names.append(d[2])
        else:
            addrs, types, names = core, self._types, self._names
        if show_value:
            for a, t, n in zip(addrs, types, names):
                out.append("%016x %s %s\n" % (a, t, n))
            for a, t, n, m in self._mod_order:
                out.append("%016x %s %s\t[%s]\n" % (a, t, n, m))
        else:
            z = "0" * 16
            for t, n in zip(types, names):
                out.append("%s %s %s\n" % (z, t, n))
            for a, t, n, m in self._mod_order:
                out.append("%s %s %s\t[%s]\n" % (z, t, n, m))
        return "".join(out)


def _pieces(text: str, size: int = 1 << 16):
    """The lines of ``text`` (``splitlines()``), a list for each piece of
    about ``size`` characters (cut after a newline)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        yield text[start:end].splitlines()
        start = end


def _parse_line(line: str):
    """(addr, type, name, module-or-None) of a text symbol line, else None."""
    parts = line.split(None, 3)
    if len(parts) < 3 or parts[1] not in TEXT_TYPES:
        return None
    try:
        addr = int(parts[0], 16)
    except ValueError:
        return None
    mod = None
    if len(parts) == 4:
        mod = parts[3].strip()
        if mod.startswith("[") and mod.endswith("]"):
            mod = mod[1:-1]
    return (addr, parts[1], parts[2], mod)


# x86_64 layout: the kernel image's link address (what ``nokaslr`` keeps),
# the alignment and range KASLR picks its slide from, and the module area.
KERNEL_TEXT_BASE = 0xffffffff81000000
KASLR_ALIGN = 0x200000                 # CONFIG_PHYSICAL_ALIGN
KASLR_SLOTS = 480                      # slides within the 1 GiB kernel image area
MODULES_VADDR = 0xffffffffc0000000
MODULE_SLOTS = 1024                    # module_load_offset: 1..1024 pages


def kaslr_bases(kernel) -> tuple[int, int]:
    """Where this boot put kernel and module text.  The slide is the
    simulated machine's own (drawn from the boot seed, none with
    ``nokaslr``), so no address of the host's kernel shows through."""
    if kernel.cmdline.has("nokaslr") or not kernel.config.enabled("RANDOMIZE_BASE"):
        return KERNEL_TEXT_BASE, MODULES_VADDR
    rng = kernel.subsystem_rng("kaslr")
    return (KERNEL_TEXT_BASE + KASLR_ALIGN * rng.randrange(1, KASLR_SLOTS),
            MODULES_VADDR + MODULE_PAGE * rng.randrange(1, MODULE_SLOTS + 1))


# the tables the symbols may come from (boot parameter ``fakefs.kallsyms=``):
# this machine's /proc/kallsyms where readable (the default), or the one
# shipped with fakefs, the same on every host
KALLSYMS_TABLES = ("host", "bundled")


def uses_host_table(kernel) -> bool:
    return kernel.host_kallsyms and kernel.setup.get("fakefs.kallsyms", "host") == "host"


def register_params(kernel) -> None:
    kernel.early_param("nokaslr", lambda val: None)     # read by kaslr_bases()

    def table(val):
        if val in KALLSYMS_TABLES:
            kernel.setup["fakefs.kallsyms"] = val
        else:
            kernel.log.pr_warn("fakefs.kallsyms=%s: no such table (%s)"
                               % (val, ", ".join(KALLSYMS_TABLES)))

    kernel.early_param("fakefs.kallsyms", table)


def kallsyms_show_value(kernel, uid: int) -> bool:
    """``kallsyms_show_value()`` (kernel/ksyms_common.c) for an opener of
    simulated ``uid`` (0: CAP_SYSLOG): kptr_restrict 0 or 1 shows
    addresses to CAP_SYSLOG, 2 to nobody.  (With 0 the kernel shows them to
    everyone when perf_event_paranoid <= 1; Debian boots it at 3,
    CONFIG_SECURITY_PERF_EVENTS_RESTRICT, and the simulated kernel does not
    serve the sysctl.)  Before 2.6.38 (no kptr_restrict) every reader saw
    them."""
    if kernel.config.version < (2, 6, 38):
        return True
    return kernel.log.kptr_restrict <= 1 and uid == 0


class AddressesOps(FileOperations):
    """A file that lists kernel addresses, each zero for an opener that may
    not see them: its ``open()`` decides with the opener's credentials
    (``kallsyms_show_value()``) and leaves the answer in ``f.private`` for
    ``show()``."""

    def __init__(self, kernel):
        self.kernel = kernel

    def open(self, f):
        f.private = kallsyms_show_value(self.kernel, f.uid)


class ProcKallsymsOps(AddressesOps, ProcOps):
    """/proc/kallsyms (0444): the simulated boot's text symbols (the
    simulated machine's addresses, not the host's), as ``kallsyms_open()``
    shows them."""

    observes = False

    def show(self, f):
        return f.data.proc_text(f.private)


# CONFIG_KALLSYMS_ALL: the data symbols this kernel lists, (type, name,
# offset from the start of .rodata or .data): .rodata starts at the first
# 2 MiB boundary after the text, .data 8 MiB later
RODATA_SYMBOLS = (("R", "linux_banner", 0x140), ("R", "linux_proc_banner", 0x240))
DATA_SYMBOLS = (("D", "init_task", 0x12940), ("D", "init_mm", 0x2e1c0), ("D", "jiffies_64", 0x8c80),
                ("D", "jiffies", 0x8c80))
SECTION_ALIGN = 2 << 20
DATA_OFFSET = 8 << 20


def kallsyms_all(kernel, table: Kallsyms) -> None:
    """The data symbols of a CONFIG_KALLSYMS_ALL kernel and the contents
    known of them (the banners of init/version.c)."""
    etext = table._text[1]
    rodata = (etext + SECTION_ALIGN - 1) & ~(SECTION_ALIGN - 1)
    data = rodata + DATA_OFFSET
    syms = [(rodata + off, t, n) for t, n, off in RODATA_SYMBOLS]
    syms += [(data + off, t, n) for t, n, off in DATA_SYMBOLS]
    syms.sort(key=lambda s: s[0])
    table.data = syms
    table._by_name = None
    addr = {n: a for a, _t, n in syms}
    table.data_contents = {
        addr["linux_banner"]: linux_banner(kernel).encode("latin-1") + b"\0",
        addr["linux_proc_banner"]: linux_proc_banner(kernel).encode("latin-1") + b"\0",
    }


def kallsyms_init(kernel) -> None:
    table = Kallsyms.load(host=uses_host_table(kernel))
    kernel.kallsyms = table.relocated(*kaslr_bases(kernel))
    if kernel.config.enabled("KALLSYMS_ALL"):
        kallsyms_all(kernel, kernel.kallsyms)
    proc = kernel.tree.makedirs("proc")
    kernel.tree.create_file("kallsyms", 0o444, proc, kernel.kallsyms, ProcKallsymsOps(kernel))


if __name__ == "__main__":          # regenerate the bundled table from this host
    import sys
    ks = Kallsyms.load(host=True)
    if ks.source != "host":
        sys.exit("host /proc/kallsyms is not readable with addresses")
    ks.write_bundled(sys.argv[1] if len(sys.argv) > 1 else BUNDLED_PATH)
    print("wrote %d symbols" % len(ks))
