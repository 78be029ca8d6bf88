"""Direct calls (``register_ftrace_direct()`` of kernel/trace/ftrace.c,
CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS, as x86-64 has them).

A caller (the ftrace-direct sample modules) gives an ``ftrace_ops`` with a
filter of function addresses and the address of its trampoline.  6.12
refuses (EBUSY) a function that already has a direct trampoline (the
``direct_functions`` hash), keeps the new entries there, and registers
the ops with ``func`` = ``call_direct_funcs``, the flags ``DIRECT`` and
``SAVE_REGS`` (x86 has DYNAMIC_FTRACE_WITH_REGS: ``MULTI_FLAGS``), and
``ftrace_regs_caller`` as its trampoline.  The ops lives in the module's
data, not core kernel data: DYNAMIC.

What ``enabled_functions`` makes of it is ``ftrace_ops_list.py``'s (the
``D`` column, ``M`` once a direct call was patched in, the ``tramp:``
of ``ftrace_regs_caller`` while it is the function's only ops, and the
``direct-->`` line).  Other ops on the same function are fine in 6.12
(the site then calls the list function, which calls the direct ops'
``call_direct_funcs``, which sets the direct trampoline as the return):
every tracer can come and go around a direct call.

Each call of a function with a direct trampoline runs the trampoline's
handler at the instant of the call: the handler is ``fn(cpu, ts, stack,
task)`` (the calls reach it the way they reach a kprobe on the
function's ``__fentry__`` site: an unlisted probe on the call stream of
kprobes.py, so this needs CONFIG_KPROBES in the model).
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..kprobes import Kprobe
from .ftrace_ops_list import ftrace_ops_list, ftrace_ops_update

DIRECT_FUNC = "call_direct_funcs"
DIRECT_TRAMPOLINE = "ftrace_regs_caller"      # FTRACE_REGS_ADDR


class DirectOps:
    """An ``ftrace_ops`` given to ``register_ftrace_direct()``: the
    functions (start addresses) it filters on, its direct trampoline
    (``addr``) and what a call does there (``handler``)."""

    def __init__(self, funcs, handler):
        self.funcs = tuple(funcs)
        self.handler = handler
        self.addr = 0
        self.kps: list = []


def ftrace_direct_init(kernel) -> None:
    """While a direct call is registered, the machine's calls matter (the
    machine runs instead of standing still)."""
    kernel.add_machine_watcher(lambda: bool(ftrace_ops_list(kernel).direct))


def direct_functions(kernel) -> dict:
    """``direct_functions``: function start -> direct trampoline."""
    return {f: ops.addr for ops in ftrace_ops_list(kernel).direct for f in ops.funcs}


def register_ftrace_direct(kernel, ops: DirectOps, addr: int) -> None:
    """EINVAL for an empty filter or an ops registered already, EBUSY when a
    function has a direct trampoline already."""
    ol = ftrace_ops_list(kernel)
    if not ops.funcs or ops in ol.direct:
        raise KernelError(errno.EINVAL)
    taken = direct_functions(kernel)
    if any(f in taken for f in ops.funcs):
        raise KernelError(errno.EBUSY)
    ops.addr = addr
    ol.direct.append(ops)
    kps = kernel.kprobes
    if kps is not None:
        for func in ops.funcs:
            kp = Kprobe(func, None, 0, False, _handler(ops), ops)
            kp.listed = False           # (not a kprobe: the call stream only)
            kp.disabled = False
            kps.register(kp)
            ops.kps.append(kp)
    ftrace_ops_update(kernel)


def unregister_ftrace_direct(kernel, ops: DirectOps, addr: int) -> None:
    ol = ftrace_ops_list(kernel)
    if ops not in ol.direct or ops.addr != addr:
        raise KernelError(errno.EINVAL)
    ol.direct.remove(ops)
    for kp in ops.kps:
        kernel.kprobes.unregister(kp)
    ops.kps = []
    ops.addr = 0
    ftrace_ops_update(kernel)


def _handler(ops: DirectOps):
    def on_call(_kp, cpu, ts, stack, task, _call=None):
        ops.handler(cpu, ts, stack, task)
    return on_call
