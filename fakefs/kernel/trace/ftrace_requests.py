"""The kernel functions a request of a real process runs, as the function
tracers see them (the ``__fentry__`` calls of its system call's path).

A real process using the mount is asleep in the simulated kernel but for
its system calls into it.  When one runs a function of the model in the
caller's task — a write to a proc file without a write handler goes
through ``proc_reg_write()``, which answers -EIO — the traced functions on
its way are calls of that task on the CPU it runs on: ``function`` arrays
write their entries (the filters and pid lists of each array's ops, as for
any call), ``function_graph`` arrays an entry and an exit for each, with
what it returned (``GraphTracer.request_calls``).  The path is given
outermost first (from the system call's entry); functions that are not
traceable (``noinstr`` entry code, not in ``available_filter_functions``)
are left out, as ftrace has no site in them.
"""

from __future__ import annotations

import zlib

from ..fs.pseudo import later
from ..walkgraph import FENTRY_IP
from . import trace_entries as te

ULONG_MASK = (1 << 64) - 1
CALL_NS = 180            # from one function's entry to the next one's down the path


class RequestCall:
    """One traced function of a request's path: its ftrace ip, the return
    address in its caller, what it returns, its entry and return instants."""

    __slots__ = ("name", "ip", "parent_ip", "retval", "calltime", "rettime")

    def __init__(self, name, ip, parent_ip, retval, calltime, rettime):
        self.name = name
        self.ip = ip
        self.parent_ip = parent_ip
        self.retval = retval
        self.calltime = calltime
        self.rettime = rettime


def return_address(ks, name: str) -> int:
    """Where a call from function ``name`` returns to (inside it)."""
    a = ks.addr_of(name)
    if a is None:
        return 0
    sym = ks.lookup(a)
    size = sym[2] if sym is not None else 0x80
    # after a call instruction (5 bytes) past the function's entry (fentry's 9)
    return a + 14 + zlib.crc32(name.encode()) % max(1, size - 14)


def request_path(kernel, path: tuple, retval: int, t: int) -> list:
    """The traceable calls of ``path`` (outermost first) made from ``t``,
    each ``CALL_NS`` after its caller's and returning in reverse order;
    all of them return ``retval`` (the innermost's answer, passed up)."""
    ks = kernel.kallsyms
    recs = kernel.tracing.ftrace_records       # (built when a function tracer was set)
    if recs is None:
        return []
    calls = []
    n = len(path)
    for i, name in enumerate(path):
        addr = ks.addr_of(name)
        if addr is None or recs.rec_of_ip(addr + FENTRY_IP) is None:
            continue
        parent = return_address(ks, path[i - 1]) if i else 0
        calls.append(RequestCall(name, addr + FENTRY_IP, parent, retval,
                                 t + i * CALL_NS, t + (2 * n - i) * CALL_NS))
    return calls


def request_calls(kernel, pid: int, cpu: int, t: int, path: tuple, retval: int) -> int:
    """The request of task ``pid`` on ``cpu`` ran ``path`` from ``t``: its
    traced calls go into the arrays whose tracer records them.  Returns
    the instant the outermost call returned (the caller goes on from there)."""
    tracing = kernel.tracing
    n = len(path)
    end = t + 2 * n * CALL_NS
    if tracing is None:
        return end
    arrays = [tr for tr in tracing.arrays() if tr.current.name in ("function", "function_graph")
              and tr.recording() and tr.cpumask >> cpu & 1]
    if not arrays:
        return end
    calls = request_path(kernel, path, retval, t)
    flags, pc = 0, 0                     # task context, preemption and irqs on
    for tr in arrays:
        if tr.current.name == "function_graph":
            tr.current.request_calls(tr, cpu, pid, calls, flags, pc)
        else:
            _function_entries(tr, cpu, pid, calls, flags, pc)
    return end


def _function_entries(tr, cpu, pid, calls, flags, pc) -> None:
    """``function_trace_call()`` of each call the array's ops takes."""
    ops = tr.ftrace_ops
    stack = tuple(c.parent_ip for c in reversed(calls) if c.parent_ip)
    for i, c in enumerate(calls):
        if ops is not None and not ops.match(c.ip, pid):
            continue
        entry = (c.calltime, te.TRACE_FN, pid, flags, pc, c.ip, c.parent_ip)
        if tr.write_entry(cpu, entry, te.FN_PAYLOAD) and (
                tr.flag("stacktrace") or tr.current.opts.get("func_stack_trace")):
            tr.trace_stack(cpu, c.calltime, pid, flags, pc,
                           (c.ip - FENTRY_IP,) + stack[len(calls) - 1 - i:])


def request(kernel, f, path: tuple, retval: int):
    """The request on the open file ``f`` ran ``path`` (outermost first),
    which returned ``retval``: its calls are traced where an array records
    them, and the machine goes on after them (a ``Later`` for the instant
    after its last, or None)."""
    task = request_task(kernel, f)
    if task is None:
        return None
    pid, cpu, t = task
    end = request_calls(kernel, pid, cpu, t, path, retval & ULONG_MASK)
    return later(kernel, end + 1, lambda: None)


def request_task(kernel, f):
    """(pid, CPU, instant) of the task running the request on the open file
    ``f`` when some array would see its calls (as ``marker_writer()``: the
    real process runs its system call on a CPU of the machine, everything
    the machine did before is traced first); None when none would."""
    tracing = kernel.tracing
    if tracing is None or not any(tr.current.name in ("function", "function_graph")
                                  and tr.recording() for tr in tracing.arrays()):
        return None
    if kernel.driver is None or not f.pid:
        return f.pid, 0, kernel.sim_time
    return kernel.driver.host_task(f.pid, kernel.sim_time)
