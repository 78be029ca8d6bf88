"""Running a probe's fetch arguments (kernel/trace/trace_probe_tmpl.h,
trace_probe_kernel.h) and printing them (``trace_probe_print_args()``,
``__set_print_fmt()``, the event's fields).

A hit is a :class:`ProbeRegs`: the registers and stack of the probed
instruction, the current task's comm, the return value of a return probe
and the entry arguments it kept, and the machine's memory
(:class:`ProbeMemory`).  ``fetch_args()`` gives each argument's value:
an int (the type's size, unsigned), bytes for strings (None when the read
faulted), or a tuple for arrays.
"""

from __future__ import annotations

import errno

from ..mm.maccess import UserRegions
from .trace_probe import (FIELD_STRING_FUNC, FIELD_STRING_IP, FIELD_STRING_RETIP,
                          FAULT_STRING, MAX_STRING_SIZE, ProbeArg, split_symbol_offset)

KERNEL_SPACE = 0xffff800000000000
TASK_SIZE = 0x7ffffffff000          # x86-64, 4-level page tables: user space ends here
DIRECT_MAP = 0xffff888000000000
THREAD_SIZE = 16384
M64 = (1 << 64) - 1


def mix64(x: int) -> int:
    """splitmix64: a well-spread 64-bit value from ``x``."""
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def plausible_word(m: int, text_lo: int, text_hi: int) -> int:
    """What a kernel memory word or register holds, drawn from ``m``: zero,
    a small number, a pointer into the direct map or into kernel text."""
    kind = m & 7
    if kind < 2:
        return 0
    if kind < 4:
        return (m >> 40) & 0xffff
    if kind < 7:
        return DIRECT_MAP | ((m >> 8) & 0x3ffffffff8)
    return text_lo + ((m >> 16) % max(1, text_hi - text_lo))


class ProbeMemory(UserRegions):
    """Kernel memory as a probe reads it (``copy_from_kernel_nofault``):
    the regions a hit placed (strings, structures), the stack of the task,
    and elsewhere in kernel space plausible words that stay the same for
    the same address; unmapped addresses fault.  An address below
    TASK_SIZE is the current task's user memory (``umem``, x86's address
    spaces do not overlap: probe_mem_read() takes it from there), which
    faults when the task has none."""

    __slots__ = ("seed", "text", "stack", "umem")

    def __init__(self, seed: int, text: tuple[int, int], regions=None,
                 stack: tuple[int, list] | None = None, umem=None):
        super().__init__(regions)
        self.seed = seed
        self.text = text
        self.stack = stack                  # (sp, words)
        self.umem = umem

    def _byte(self, addr: int):
        addr &= M64                         # (a read past the top wraps)
        b = super()._byte(addr)
        if b is not None:
            return b
        if self.stack is not None:
            sp, words = self.stack
            if sp <= addr < sp + 8 * len(words):
                n, b = divmod(addr - sp, 8)
                return (words[n] >> (8 * b)) & 0xff
        if addr < KERNEL_SPACE:
            return None
        w = plausible_word(mix64(self.seed ^ (addr >> 3)), *self.text)
        return (w >> (8 * (addr & 7))) & 0xff

    def read(self, addr: int, size: int):
        """``size`` bytes at ``addr`` as a little-endian int, None on a fault."""
        if addr < TASK_SIZE:
            return self.umem.read(addr, size) if self.umem is not None else None
        return super().read(addr, size)

    def read_string(self, addr: int):
        if addr < TASK_SIZE:
            return self.umem.read_string(addr) if self.umem is not None else None
        return super().read_string(addr, MAX_STRING_SIZE - 1)


class ProbeRegs:
    """The state a probe sees: registers (x86_64 names), the stack words
    from ``sp`` up, the task's comm, the return value and entry data of a
    return probe, memory, and kallsyms for ``symstr``."""

    def __init__(self, regs: dict, stack: list, comm: str, mem: ProbeMemory, kallsyms,
                 retval: int = 0, edata=(), event_args=(), file_base: int = 0, umem=None):
        self.event_args = event_args       # an event probe: the attached event's record
        # the task's user memory (``Task.mm``: read/read_string as ProbeMemory's);
        # None: it has none (a kernel thread) or none is known, every read faults
        self.umem = umem
        self.file_base = file_base         # a uprobe: where its file's offset 0 is mapped
        self.regs = regs
        self.stack = stack
        self.comm = comm
        self.mem = mem
        self.kallsyms = kallsyms
        self.retval = retval
        self.edata = list(edata)

    def arg(self, n: int) -> int:
        """``regs_get_kernel_argument()``: di si dx cx r8 r9, then the stack."""
        order = ("di", "si", "dx", "cx", "r8", "r9")
        if n < len(order):
            return self.regs.get(order[n], 0)
        return self.stack_word(n - len(order) + 1)

    def stack_word(self, n: int) -> int:
        if n < len(self.stack):
            return self.stack[n]
        return self.mem.read(self.regs["sp"] + 8 * n, 8) or 0


def update_arg(parg: ProbeArg, lookup) -> int:
    """``traceprobe_update_arg()``: resolve ``@symbol[+-offs]`` with
    ``lookup(name)`` (None when unknown); 0 or a negative errno."""
    code = parg.code
    for i, op in enumerate(code):
        if op[0] == "symbol":
            try:
                sym, offset = split_symbol_offset(op[1])
            except ValueError:
                return -errno.EINVAL
            addr = lookup(sym)
            if not addr:
                return -errno.ENOENT
            code[i + 1] = ("imm", (addr + offset) & M64)
    return 0


def _fetch(parg: ProbeArg, r: ProbeRegs):
    """``process_fetch_insn()`` and its bottom half for one argument."""
    t = parg.type
    size = t.size
    val = 0
    data = None                    # $comm / immediate string
    for op in parg.code:
        kind = op[0]
        if kind == "reg":
            val = r.regs.get(op[1], 0)
        elif kind == "stack":
            val = r.stack_word(op[1])
        elif kind == "stackp":
            val = r.regs["sp"]
        elif kind == "retval":
            val = r.retval
        elif kind == "imm":
            val = op[1]
        elif kind == "foffs":          # translate_user_vaddr()
            val = (r.file_base + op[1]) & M64
        elif kind == "comm":
            data = r.comm.encode("latin-1")
        elif kind == "data":
            data = op[1].encode("latin-1")
        elif kind == "arg":
            val = r.arg(op[1])
        elif kind == "tp_arg":
            v = r.event_args[op[1]] if op[1] < len(r.event_args) else 0
            if op[2] is not None:
                v = op[2](v)
            if isinstance(v, str):     # a string field: the string in the record
                data = v.encode("latin-1")
            elif isinstance(v, bytes):
                data = v
            else:
                val = (v or 0) & M64
        elif kind == "edata":
            val = r.edata[op[1]] if op[1] < len(r.edata) else 0
        elif kind == "deref":
            val = r.mem.read((val + op[1]) & M64, 8)
            if val is None:
                return None
        elif kind == "uderef":
            val = r.umem.read((val + op[1]) & M64, 8) if r.umem is not None else None
            if val is None:
                return None
        elif kind == "st_raw":
            return _bits(parg, val & ((1 << 8 * size) - 1))
        elif kind == "st_mem":
            return _array(parg, r.umem if op[2] else r.mem, (val + op[1]) & M64)
        elif kind == "st_string_at":
            return _strings(parg, r, (val + op[1]) & M64, None, op[2])
        elif kind == "st_string":
            return _strings(parg, r, val, data, op[1])
        elif kind == "st_symstr":
            return r.kallsyms.sprint_symbol(val).encode("latin-1")
    return val


def _bits(parg: ProbeArg, v: int) -> int:
    if parg.bitfield is None:
        return v
    bw, bo = parg.bitfield
    return (v >> bo) & ((1 << bw) - 1)


def _array(parg: ProbeArg, mem, addr: int):
    """The value (or ``count`` of them) at ``addr`` of ``mem`` (kernel or
    user memory; None: a task without user memory, every read faults)."""
    size = parg.type.size
    read = mem.read if mem is not None else _fault
    if not parg.count:
        v = read(addr, size)
        return None if v is None else _bits(parg, v)
    out = []
    for i in range(parg.count):
        v = read(addr + i * size, size)
        out.append(None if v is None else _bits(parg, v))
    return tuple(out)


def _fault(_addr: int, _size: int = 0):
    return None


def _strings(parg: ProbeArg, r: ProbeRegs, addr: int, data, user: bool):
    """The string at ``addr`` (kernel memory, or the task's user memory for
    a ustring or a ``+u`` dereference); an array's strings through the
    pointers at ``addr``."""
    if data is not None:
        return data
    smem = r.umem if user else r.mem
    read_string = smem.read_string if smem is not None else _fault
    if not parg.count:
        return read_string(addr)
    out = []
    for i in range(parg.count):
        p = r.mem.read(addr + 8 * i, 8)
        out.append(None if p is None else read_string(p))
    return tuple(out)


def _stored(a: ProbeArg, v):
    """What the record holds, as filters compare it: strings as text,
    signed types as signed numbers."""
    if isinstance(v, tuple):
        return tuple(_stored(a, x) for x in v)
    if v is None:
        return None
    if isinstance(v, bytes):
        return v.decode("latin-1")
    t = a.type
    if t.signed and a.bitfield is None and v >> (8 * t.size - 1):
        return v - (1 << 8 * t.size)
    return v


def fetch_args(args: list[ProbeArg], r: ProbeRegs) -> tuple:
    return tuple(_stored(a, _fetch(a, r)) for a in args)


def data_size(args: list[ProbeArg], values: tuple) -> int:
    """The bytes an entry's arguments take (strings after the fixed part)."""
    n = 0
    for a, v in zip(args, values):
        n += a.size()
        if a.type.is_string:
            # (an array whose base could not be read: every item a fault)
            items = ((None,) * a.count if v is None else v) if a.count else (v,)
            for s in items:
                n += len(s) + 1 if s is not None else 0
    return n


def _one(a: ProbeArg, v, kallsyms) -> str:
    t = a.type
    if t.is_string:
        return FAULT_STRING if v is None else '"%s"' % v
    if v is None:
        v = 0
    name = t.name
    if name == "char":
        return "'%s'" % chr(v)
    if name == "symbol":
        return kallsyms.sprint_symbol(v)
    if name.startswith("x"):
        return "0x%x" % v
    return "%d" % v


def print_args(args: list[ProbeArg], values: tuple, kallsyms) -> str:
    """``trace_probe_print_args()``"""
    out = []
    for a, v in zip(args, values):
        if a.count:
            items = v if v is not None else (None,) * a.count
            out.append(" %s={%s}" % (a.name, ",".join(_one(a, x, kallsyms) for x in items)))
        else:
            out.append(" %s=%s" % (a.name, _one(a, v, kallsyms)))
    return "".join(out)


def print_fmt(args: list[ProbeArg], is_return: bool, event: bool = False) -> str:
    """``__set_print_fmt()`` (``event``: PROBE_PRINT_EVENT, no head)"""
    if event:
        out = ['"']
        tail = ""
    elif is_return:
        out = ['"(%lx <- %lx)']
        tail = ", REC->" + FIELD_STRING_FUNC + ", REC->" + FIELD_STRING_RETIP
    else:
        out = ['"(%lx)']
        tail = ", REC->" + FIELD_STRING_IP
    for a in args:
        out.append(" %s=" % a.name)
        if a.count:
            out.append("{" + ",".join([a.type.fmt] * a.count) + "}")
        else:
            out.append(a.type.fmt)
    out.append('"' + tail)
    for a in args:
        fmt = ", __get_str(%s)" if a.type.is_string else ", REC->%s"
        if a.count:
            fmt = ", __get_str(%s[%d])" if a.type.is_string else ", REC->%s[%d]"
            out.extend(fmt % (a.name, j) for j in range(a.count))
        else:
            out.append(fmt % a.name)
    return "".join(out)


def field_line(ftype: str, name: str, offset: int, size: int, signed: bool) -> str:
    """One field of an event's ``format`` (``f_show()``: an array's
    dimension follows the name)."""
    lb = ftype.find("[")
    if lb >= 0 and not ftype.startswith("__data_loc"):
        decl = "%s %s%s" % (ftype[:lb], name, ftype[lb:])
    else:
        decl = "%s %s" % (ftype, name)
    return "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n" % (decl, offset, size, int(signed))
