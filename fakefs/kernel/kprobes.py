"""Kprobes (kernel/kprobes.c, arch/x86/kernel/kprobes/).

A :class:`Kprobe` sits on an instruction of kernel text.  Registration
follows the kernel's checks: the address must be kernel text in a function
ftrace can see (probes on notrace functions are refused by the probe
events, ``within_notrace_func``), at an instruction boundary (``EILSEQ``
otherwise, ``can_probe()``).  A probe on a function's ``__fentry__`` call
is ftrace-based (``[FTRACE]``); one elsewhere on an instruction that a
5-byte jump can replace is optimized ``OPTIMIZE_DELAY`` jiffies after it
was armed, while ``/proc/sys/debug/kprobes-optimization`` is 1.

Functions are laid out as x86 code: ``endbr64`` (4 bytes; absent in local
functions whose address is never taken: the compiler leaves it out), the
``call __fentry__`` (5 bytes) in traceable functions, then the body, a
sequence of instructions whose lengths are drawn, deterministically per
function name, from the distribution of x86-64 kernel code.  ``__pfx_``
padding is one-byte NOPs.

``/sys/kernel/debug/kprobes/list`` shows the registered probes.  Enabled
probes with a handler get the calls of their function from the activity
generator (``call_targets()``, ``after_call()``), like ftrace_ops.
"""

from __future__ import annotations

import errno
import random
import zlib

from .fs.pseudo import FileOperations, KernelError
from .fs.proc.base import CtlTable, register_sysctl
from .kallsyms import PFX, AddressesOps
from .timer import HZ
from .trace.ftrace_ops_list import ftrace_ops_update
from .trace.ftrace_records import ftrace_records

OPTIMIZE_DELAY = 5                       # jiffies
OPTIMIZE_DELAY_NS = OPTIMIZE_DELAY * 1_000_000_000 // HZ
KPROBE_TABLE_SIZE = 64
GOLDEN_RATIO_64 = 0x61C8864680B583EB
ENDBR_LEN = 4
FENTRY_CALL_LEN = 5
JMP32_INSN_SIZE = 5
# lengths of x86-64 kernel instructions and how common they are (in %)
INSN_LENGTHS = ((1, 9), (2, 12), (3, 21), (4, 17), (5, 14), (6, 6), (7, 11), (8, 5),
                (9, 2), (10, 2), (11, 1))
RELOCATABLE = 0.85                       # instructions an optimized probe can copy


class FuncLayout:
    """The instructions of one function: their offsets (boundaries), which
    can be copied out for a jump, where the ``__fentry__`` call is."""

    __slots__ = ("size", "starts", "copyable", "fentry", "endbr")

    def __init__(self, name: str, size: int, endbr: bool, traceable: bool):
        self.size = size
        self.endbr = endbr
        self.starts: list[int] = []
        self.copyable: list[bool] = []
        self.fentry = None
        if name.startswith(PFX):
            self.starts = list(range(size))
            self.copyable = [True] * size
            return
        rng = random.Random(zlib.crc32(name.encode()))
        off = 0
        if endbr:
            self._add(0, False)
            off = ENDBR_LEN
        if traceable:
            self.fentry = off
            self._add(off, False)
            off += FENTRY_CALL_LEN
        lens = [n for n, _w in INSN_LENGTHS]
        weights = [w for _n, w in INSN_LENGTHS]
        while off < size:
            self._add(off, rng.random() < RELOCATABLE)
            off += rng.choices(lens, weights)[0]

    def _add(self, off: int, copyable: bool) -> None:
        self.starts.append(off)
        self.copyable.append(copyable)

    def boundary(self, off: int) -> bool:
        return off in self.starts

    def optimizable(self, off: int) -> bool:
        """An optimized probe replaces the instructions under a 5-byte jump:
        they must all be copyable and lie within the function."""
        if off + JMP32_INSN_SIZE > self.size or off == self.fentry:
            return False
        i = self.starts.index(off)
        while i < len(self.starts) and self.starts[i] < off + JMP32_INSN_SIZE:
            if not self.copyable[i]:
                return False
            i += 1
        return True


class Kprobe:
    """``struct kprobe``: where it is, its handler, its state."""

    def __init__(self, addr: int | None, symbol: str | None, offset: int, is_ret: bool,
                 handler=None, owner=None):
        self.addr = addr                  # given address, then the probed one
        self.symbol = symbol
        self.offset = offset
        self.is_ret = is_ret              # pre_handler_kretprobe
        self.handler = handler            # handler(kp, cpu, ts, stack, task)
        self.owner = owner                # what registered it (a trace_kprobe)
        self.func = 0                     # start of the function probed
        self.func_name = ""
        self.func_offset = 0
        self.disabled = True
        self.ftrace = False
        self.optready = False
        self.opt_flag = False             # KPROBE_FLAG_OPTIMIZED
        self.opt_at: int | None = None    # when the jump is in place
        self.unopt_at: int | None = None  # when the unoptimizer clears the flag
        self.registered = False
        self.nmissed = 0
        # in /sys/kernel/debug/kprobes/list: an fprobe's entry and exit
        # handlers sit on the function's ftrace site, not in kprobe_table
        self.listed = True


class Kprobes:
    """Every registered kprobe of the kernel (``kprobe_table``)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.probes: list[Kprobe] = []    # registration order
        self.optimization = 1             # kprobes_allow_optimization
        self._layouts: dict[int, FuncLayout] = {}
        self._by_func: dict[int, list[Kprobe]] | None = None
        self._local: set[str] | None = None    # names of local (``t``) functions
        self._targets: frozenset | None = None
        self._opt_work: int | None = None       # when the optimizer's work runs

    # --- addresses ---------------------------------------------------------------
    def layout(self, func: int) -> FuncLayout | None:
        lay = self._layouts.get(func)
        if lay is None:
            hit = self.kernel.kallsyms.lookup(func)
            if hit is None or hit[1]:
                return None
            name, _off, size, _mod = hit
            traceable = func in ftrace_records(self.kernel).by_addr
            lay = self._layouts[func] = FuncLayout(name, size, self._has_endbr(func, name), traceable)
        return lay

    def _has_endbr(self, func: int, name: str) -> bool:
        """Global functions and most local ones start with ``endbr64``; a
        third of the local ones (never called indirectly) do not."""
        if name.startswith(PFX):
            return False
        if self._local is None:
            self._local = {n for _a, t, n, _m in self.kernel.kallsyms.symbols() if t == "t"}
        return name not in self._local or zlib.crc32(b"endbr:" + name.encode()) % 3 != 0

    def kprobe_addr(self, addr: int | None, symbol: str | None, offset: int):
        """``_kprobe_addr()``: (probed address, function start, on entry);
        raises EINVAL with neither an address nor a symbol (address 0), ENOENT for
        an unknown symbol or an address outside any symbol."""
        ks = self.kernel.kallsyms
        if symbol is None and not addr:
            raise KernelError(errno.EINVAL)          # neither (a symbol's probe
                                                     # keeps its last address)
        if symbol is not None:
            base = self._lookup_name(symbol)
            if base is None:
                raise KernelError(errno.ENOENT)
            addr = base
        addr = (addr or 0) + offset
        hit = ks.lookup(addr)
        if hit is None:
            raise KernelError(errno.ENOENT)
        func, off = addr - hit[1], hit[1]
        lay = self.layout(func)
        if lay is not None and lay.endbr:
            entry = off in (0, ENDBR_LEN)
            if entry:
                off = ENDBR_LEN
        else:
            entry = off == 0
        return func + off, func, entry

    def _lookup_name(self, symbol: str):
        mod, sep, name = symbol.partition(":")
        ks = self.kernel.kallsyms
        if not sep:
            return ks.addr_of(symbol)
        for a, _t, n, m in ks.symbols():
            if m == mod and n == name:
                return a
        return None

    def on_func_entry(self, symbol: str, offset: int) -> int:
        """``kprobe_on_func_entry()``: 0, -ENOENT or -EINVAL."""
        try:
            _addr, _func, entry = self.kprobe_addr(None, symbol, offset)
        except KernelError as e:
            return -e.errno
        return 0 if entry else -errno.EINVAL

    def notrace(self, addr: int) -> bool:
        """``__within_notrace_func()``: no ftrace location in the function."""
        hit = self.kernel.kallsyms.lookup(addr)
        return hit is None or addr - hit[1] not in ftrace_records(self.kernel).by_addr

    # --- registration -------------------------------------------------------------
    def register(self, kp: Kprobe) -> None:
        """``register_kprobe()``: raises KernelError on failure."""
        addr, func, _entry = self.kprobe_addr(kp.addr, kp.symbol, kp.offset)
        lay = self.layout(func)
        off = addr - func
        if lay is None or not lay.boundary(off):
            raise KernelError(errno.EILSEQ)
        hit = self.kernel.kallsyms.lookup(func)
        kp.addr, kp.func, kp.func_name, kp.func_offset = addr, func, hit[0], off
        kp.ftrace = off == lay.fentry
        kp.optready = not kp.ftrace and not kp.is_ret and lay.optimizable(off)
        kp.registered = True
        self.probes.append(kp)
        self._by_func = None
        if not kp.disabled:
            self._arm(kp)
        self._ftrace_changed(kp)

    def unregister(self, kp: Kprobe) -> None:
        if kp.registered:
            self.probes.remove(kp)
            kp.registered = False
            self._unoptimized(kp)
            self._by_func = None
            self._ftrace_changed(kp)

    def enable(self, kp: Kprobe) -> None:
        if kp.disabled:
            kp.disabled = False
            if kp.registered:
                self._arm(kp)
            self._by_func = None
            self._ftrace_changed(kp)

    def disable(self, kp: Kprobe) -> None:
        """``disarm_kprobe()``: a probe still queued for optimization leaves
        the queue at once; an optimized one is queued for unoptimization and
        shows OPTIMIZED until the optimizer's work has run."""
        if not kp.disabled:
            kp.disabled = True
            if kp.opt_flag:
                now = self.kernel.now
                if kp.opt_at is not None and now >= kp.opt_at:
                    kp.unopt_at = self._kick(now)
                else:
                    self._unoptimized(kp)
            self._by_func = None
            self._ftrace_changed(kp)

    def _ftrace_changed(self, kp: Kprobe) -> None:
        """A probe on a ``__fentry__`` site is armed through
        ``kprobe_ftrace_ops`` (``arm_kprobe_ftrace()``)."""
        if kp.ftrace:
            ftrace_ops_update(self.kernel)

    def _kick(self, now: int) -> int:
        """``kick_kprobe_optimizer()``: the delayed work runs OPTIMIZE_DELAY
        after a kick, unless it is pending already; returns when it runs."""
        if self._opt_work is None or self._opt_work <= now:
            self._opt_work = now + OPTIMIZE_DELAY_NS
        return self._opt_work

    @staticmethod
    def _unoptimized(kp: Kprobe) -> None:
        kp.opt_flag = False
        kp.opt_at = kp.unopt_at = None

    def _arm(self, kp: Kprobe) -> None:
        """``arm_kprobe()`` and ``optimize_kprobe()``: the probe is marked
        OPTIMIZED and queued; the optimizer's work puts the jump in."""
        if kp.optready and self.optimization:
            if any(o is not kp and kp.addr < o.addr < kp.addr + JMP32_INSN_SIZE
                   for o in self.probes):
                return                        # arch_check_optimized_kprobe()
            if self.optimized(kp) and kp.unopt_at is not None:
                kp.unopt_at = None            # taken off the unoptimizing queue
                return
            kp.opt_flag = True
            kp.opt_at = self._kick(self.kernel.now)

    def optimized(self, kp: Kprobe) -> bool:
        """KPROBE_FLAG_OPTIMIZED: set while queued, kept while waiting to
        be unoptimized."""
        if kp.opt_flag and kp.unopt_at is not None and self.kernel.now >= kp.unopt_at:
            self._unoptimized(kp)
        return kp.opt_flag

    def set_optimization(self, val: int) -> None:
        """The sysctl: 0 unoptimizes every probe (and waits for that), 1
        optimizes the armed ones again."""
        if val == self.optimization:
            return
        self.optimization = val
        for kp in self.probes:
            if val and not kp.disabled:
                self._arm(kp)
            elif not val:
                self._unoptimized(kp)

    # --- hits --------------------------------------------------------------------------
    def _armed(self) -> dict:
        by = self._by_func
        if by is None:
            self._targets = None
            by = self._by_func = {}
            for kp in self.probes:
                if not kp.disabled and kp.handler is not None:
                    by.setdefault(kp.func, []).append(kp)
        return by

    def call_targets(self) -> frozenset:
        """Start addresses of the functions an enabled probe is in."""
        by = self._armed()
        if self._targets is None:
            self._targets = frozenset(by)
        return self._targets

    def after_call(self, cpu: int, ts: int, ip: int, stack: tuple, task) -> None:
        """A call of the function holding ``ip`` runs its probes."""
        by = self._armed()
        if not by:
            return
        hit = self.kernel.kallsyms.lookup(ip)
        if hit is None:
            return
        for kp in by.get(ip - hit[1], ()):
            kp.handler(kp, cpu, ts, stack, task)

    def armed_on(self, func_name: str) -> list:
        """The enabled probes in the function ``func_name``."""
        by = self._armed()
        if not by:
            return []
        func = self.kernel.kallsyms.addr_of(func_name)
        return by.get(func, []) if func is not None else []

    def fire(self, func_name: str, callers: tuple, cpu: int, task, call) -> None:
        """The model itself calls ``func_name`` (from ``callers``, innermost
        first) with the arguments and memory of ``call``: its probes run."""
        kps = self.armed_on(func_name)
        if not kps:
            return
        ks = self.kernel.kallsyms
        func = ks.addr_of(func_name)
        stack = [func + ENDBR_LEN + FENTRY_CALL_LEN]
        for name in callers:
            a = ks.addr_of(name)
            if a is not None:
                stack.append(a + 0x20 + zlib.crc32(name.encode()) % 0x60)
        ts = self.kernel.now
        for kp in kps:
            kp.handler(kp, cpu, ts, tuple(stack), task, call)

    # --- debugfs ----------------------------------------------------------------------
    def list_text(self, show_value: bool = True) -> str:
        """``show_kprobe_addr()``: hash buckets in order, the newest address
        first in each; probes at one address (an aggregate) in the order
        they came.  Addresses are zero for a reader that may not see them
        (``kallsyms_show_value()``)."""
        buckets: list[list[list[Kprobe]]] = [[] for _ in range(KPROBE_TABLE_SIZE)]
        for kp in self.probes:
            if not kp.listed:
                continue
            b = buckets[((kp.addr * GOLDEN_RATIO_64) & (1 << 64) - 1) >> 58]
            same = next((g for g in b if g[0].addr == kp.addr), None)
            if same is None:
                b.insert(0, [kp])
            else:
                same.append(kp)
        out = []
        ks = self.kernel.kallsyms
        for b in buckets:
            for group in b:
                for kp in group:
                    hit = ks.lookup(kp.addr)
                    mod = hit[3] if hit and hit[3] else " "
                    out.append("%016x  %s  %s+0x%x  %s %s%s%s\n" % (
                        kp.addr if show_value else 0, "r" if kp.is_ret else "k", kp.func_name, kp.func_offset, mod,
                        "[DISABLED]" if kp.disabled else "",
                        "[OPTIMIZED]" if self.optimized(kp) else "",
                        "[FTRACE]" if kp.ftrace else ""))
        return "".join(out)


class KprobesListOps(AddressesOps):
    """/sys/kernel/debug/kprobes/list (addresses as ``kprobes_open()``
    decides)"""

    def show(self, f):
        return f.data.list_text(f.private)


def kprobes_init(kernel) -> None:
    """``init_kprobes()``, ``debugfs_kprobe_init()`` and the sysctl."""
    if not kernel.config.enabled("KPROBES"):
        return
    kp = kernel.kprobes = Kprobes(kernel)

    def show():
        return "%d\n" % kp.optimization

    def store(text):
        try:
            val = int(text.strip(), 10)
        except ValueError:
            raise KernelError(errno.EINVAL)
        if val not in (0, 1):
            raise KernelError(errno.EINVAL)
        kp.set_optimization(val)

    register_sysctl(kernel, "debug", [CtlTable("kprobes-optimization", 0o644, show, store)])
    debugfs = kernel.tree.makedirs("sys/kernel/debug", 0o700)      # debugfs' root
    d = debugfs.children.get("kprobes") or kernel.tree.create_dir("kprobes", debugfs, 0o755)
    kernel.tree.create_file("list", 0o400, d, kp, KprobesListOps(kernel))
