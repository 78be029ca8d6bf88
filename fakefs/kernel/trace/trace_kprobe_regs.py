"""The state a kprobe sees at a hit (``struct pt_regs`` and the stack).

The walk gives a call's stack of return addresses; the rest is drawn,
deterministically from the function and the instant, the way a kernel
looks: the argument registers hold pointers into the direct map and small
numbers, ``sp`` points into the task's 16 KiB kernel stack, whose words
are saved registers and locals between the return addresses of the
calls.  At the function's entry ``*sp`` is the return address (``$stack0``),
inside its body the registers it pushed come first.  A call the model
makes itself (``call``: arguments and memory regions, e.g. the name string
``eventfs_create_dir()`` gets) puts its own values in the argument
registers and memory.
"""

from __future__ import annotations

import zlib

from ..mm.maccess import UserRegions
from ..sched import Task
from .trace_btf import param_kinds, return_kind
from .trace_probe import REGISTERS
from .trace_probe_tmpl import (DIRECT_MAP, M64, THREAD_SIZE, ProbeMemory, ProbeRegs, mix64,
                               plausible_word)

STACK_AREA = 0xffffc90000000000          # vmalloc'ed kernel stacks
STACK_WORDS = 64                         # words of stack a probe can see here
ARG_REGS = ("di", "si", "dx", "cx", "r8", "r9")
AT_FDCWD = 0xffffff9c                    # (int)-100 as user space put it in the register
USER_AREA = 0x00007ffc00000000           # a user stack: where a path string is
# the argument registers of functions whose arguments are what every caller
# passes (not plausible words): "dfd" AT_FDCWD but for a call in ten with a
# directory's fd (openat(fd, name, ...)), "user" a user-space string,
# "kstack" a structure on the kernel stack
KNOWN_ARGS = {
    "do_sys_openat2": ("dfd", "user", "kstack"),
    "do_sys_open": ("dfd", "user"),
    "do_filp_open": ("dfd",),
}


class ModelCall:
    """A call the simulated kernel makes itself: argument values and the
    kernel memory they point to ({address: bytes}); ``user``: the caller's
    user memory known at the call ({address: bytes}, e.g. the name an
    open was passed), for a task whose memory the model cannot read."""

    def __init__(self, args=(), regions=None, user=None):
        self.args = tuple(args)
        self.regions = dict(regions or {})
        self.user = dict(user or {})


def caller_task(kernel, pid: int):
    """The task of a process using the files: the simulated one with that
    pid, else the host's process (its comm saved for the trace)."""
    task = kernel.sched.find(pid) if pid else None
    if task is None:
        lookup = kernel.host_comm
        task = Task(pid, (lookup(pid) if lookup and pid else None) or "<...>")
        if kernel.tracing is not None:
            kernel.tracing.save_cmdline(pid)
    return task


def _text(kernel) -> tuple[int, int]:
    ks = kernel.kallsyms
    lo = ks.addr_of("_stext") or 0xffffffff81000000
    hi = ks.addr_of("_etext") or lo + 0x1000000
    return lo, hi


def hit_regs(kernel, kp, cpu: int, ts: int, stack: tuple, task, call: ModelCall | None) -> ProbeRegs:
    """The registers, stack and memory at a hit of ``kp``."""
    text = _text(kernel)
    seed = mix64(zlib.crc32(kp.func_name.encode()) ^ (ts * 0x100 + cpu) ^ kernel.seed)
    regs = {}
    for i, name in enumerate(REGISTERS):
        regs[name] = plausible_word(mix64(seed + i), *text)
    regs.update(ip=kp.addr, flags=0x246, cs=0x10, ss=0x18, ds=0, es=0, fs=0, gs=0,
                orig_ax=M64)
    base = STACK_AREA | (mix64(task.pid ^ kernel.seed) & 0xffffff) << 14
    depth = min(len(stack), 40)
    sp = base + THREAD_SIZE - 8 * (STACK_WORDS + 6 * depth) - 8 * (mix64(seed) & 7)
    regs["sp"] = sp
    if call is not None:
        for name, val in zip(ARG_REGS, call.args):
            regs[name] = val & M64
    elif kp.func_name in KNOWN_ARGS:
        for i, (name, kind) in enumerate(zip(ARG_REGS, KNOWN_ARGS[kp.func_name])):
            regs[name] = _known_arg(kind, mix64(seed + 50 + i), sp, task.mm)
    elif kp.func_offset <= 4 or kp.ftrace:
        # at the entry the argument registers hold what the prototype says
        for i, (name, kind) in enumerate(zip(ARG_REGS, param_kinds(kp.func_name))):
            regs[name] = _typed(kind, mix64(seed + 50 + i), regs[name])
    regs["bp"] = sp + 8 * (4 + (mix64(seed ^ 1) & 7))
    words = _stack_words(kp, seed, stack, text)
    regions = dict(kernel.kallsyms.data_contents)       # the data the kernel's is known of
    if call is not None:
        regions.update(call.regions)
    umem = task.mm
    if umem is None and call is not None and call.user:
        umem = UserRegions(call.user)
    mem = ProbeMemory(kernel.seed, text, regions, (sp, words), umem=umem)
    comm = task.comm if task.pid else "swapper/%d" % cpu
    return ProbeRegs(regs, words, comm, mem, kernel.kallsyms, umem=umem)


def _typed(kind: str, m: int, word: int) -> int:
    """A value of a BTF kind (``trace_btf.kind_of``): a pointer into the
    direct map (now and then NULL), a bool, a small int or long (a count,
    an id, flags); other kinds keep the drawn ``word``."""
    if kind == "pointer":
        return 0 if m % 32 == 0 else DIRECT_MAP | ((m >> 8) & 0x3ffffffff8)
    if kind == "bool":
        return m >> 7 & 1
    if kind in ("int", "long", "ulong"):
        return 0 if m % 4 == 0 else (m >> 40) & (0xff if m & 8 else 0xffff)
    return word


def _known_arg(kind: str, m: int, sp: int, mm=None) -> int:
    if kind == "dfd":
        return AT_FDCWD if m % 10 else 3 + (m >> 8) % 29
    if kind == "user":
        # a name the task passes, where its user memory keeps one (a
        # simulated task's: ``TaskCalls.name_address``)
        at = getattr(mm, "name_address", None)
        addr = at(m) if at is not None else None
        return addr if addr is not None else USER_AREA | ((m >> 12) & 0x3fffff0)
    return sp + 8 * (4 + (m >> 16) % 24)          # kstack


def _stack_words(kp, seed: int, stack: tuple, text) -> list:
    """``$stack0..``: at the entry the return address first; in the body
    the registers the function pushed (one to four), then it; every few
    words further the return address of the next caller."""
    words = []
    entry = kp.func_offset <= 4 or kp.ftrace
    if not entry:
        pushes = 1 + zlib.crc32(kp.func_name.encode()) % 4
        words += [plausible_word(mix64(seed + 100 + i), *text) for i in range(pushes)]
    callers = list(stack[1:]) or [0]
    k = 0
    while len(words) < STACK_WORDS:
        words.append(callers[k] if k < len(callers) else plausible_word(mix64(seed + 200 + k), *text))
        k += 1
        gap = 1 + mix64(seed + 300 + k) % 6
        words += [plausible_word(mix64(seed + 400 + 8 * k + i), *text) for i in range(gap)]
    return words[:STACK_WORDS]


def return_regs(regs: ProbeRegs, entry_args: list, kp) -> ProbeRegs:
    """At the function's return: ``$retval`` in ax, the entry arguments a
    return probe kept (``$argN``), the caller's stack (past the return
    address)."""
    edata = [regs.arg(n) for n in entry_args]
    retval = _retval(kp, regs.regs["ax"])
    out = ProbeRegs(dict(regs.regs, ax=retval, sp=regs.regs["sp"] + 8), regs.stack[1:], regs.comm,
                    regs.mem, regs.kallsyms, retval, edata, umem=regs.umem)
    return out


def _retval(kp, ax: int) -> int:
    """By the function's return type (BTF): a bool 0 or 1; a pointer into
    the direct map, now and then NULL or an ERR_PTR; an integer mostly 0 or
    a small number (a count, an id), now and then a negative errno.
    Without BTF any of those."""
    m = mix64(ax)
    kind = m % 10
    rk = return_kind(kp.func_name) if kp.func_name else None
    if rk == "bool":
        return m >> 7 & 1
    if rk == "pointer":
        if kind == 0:
            return 0
        if kind == 9:
            return (-(1 + (m >> 20) % 40)) & M64
        return DIRECT_MAP | ((m >> 8) & 0x3ffffffff8)
    if rk == "ulong" and kind > 6:
        kind = 5                            # a count: no pointer, no errno
    elif rk in ("int", "long") and kind in (7, 8):
        kind = 5                            # no pointer
    if kind < 4:
        return 0
    if kind < 7:
        return (m >> 20) % 4096
    if kind < 9:
        return ax
    return (-(1 + (m >> 20) % 40)) & M64
