"""The stack tracer (kernel/trace/trace_stack.c, CONFIG_STACK_TRACER).

``/proc/sys/kernel/stack_tracer_enabled`` (or ``stacktrace`` on the command
line, ``stacktrace_filter=f1,f2`` with a filter) registers an ftrace_ops of
its own: at every call of a function its filter lets through
(``stack_trace_filter``, empty: every function) it measures how much of the
task's kernel stack is in use; a new maximum keeps that stack.
``stack_max_size`` shows the maximum (a write sets it: ``0`` starts over),
``stack_trace`` the stack it was found in, innermost first: ``Depth``, the
bytes in use below the slot of each return address, and ``Size``, each
function's share.

The model.  Stacks are the walk's (``Workload.calls_aside()``: calls made on
the side, the machine left as it was), measured as the machine makes them
(``counter``: :mod:`fakefs.sim.stack_calls`).  The depth of a call comes from
frame sizes the symbol table does not carry: each function gets one from
its name (saved registers and locals, ``frame_size()``), the entry code
has the ``pt_regs`` at the top of the stack.  As with ``-mfentry``, the
function called has not made its own frame yet (its ``Size`` is the
8 bytes of its return address).  Calls on the interrupt stacks (hardirq,
and softirqs run by ``do_softirq()``) are not measured, as
``check_stack()`` leaves them.  Calls are not measured one by one: when
someone looks (``settle()``: a read of either file, a change of the filter
or of the switch), the machine draws the stretch since the last look
(the deepest call is the maximum the kernel would have found).  A read of
``stack_trace`` measures the reader's own call of ``mutex_lock`` (see
READER_CALL): just after ``0 > stack_max_size`` that shallow stack is the
maximum, as on a kernel, even when no simulated time has passed.  While
``ftrace_enabled`` is 0 no call reaches the ops.  The ops (static,
``func`` = ``stack_trace_call``) is listed in ``enabled_functions`` with
the others (ftrace_ops_list.py).
"""

from __future__ import annotations

import errno
import zlib

from ..fs.pseudo import FileOperations, KernelError, TRACE_MODE_READ, TRACE_MODE_WRITE
from ..fs.proc.base import CtlTable, parse_dointvec_minmax, register_sysctl
from .ftrace import ALL_ENABLED
from .ftrace_files import FtraceRegexOps
from .ftrace_ops_list import ftrace_ops_update
from .ftrace_probes import PROBE_COMMANDS
from .ftrace_records import ftrace_records
from .ftrace_sysctl import ftrace_calls_enabled
from .trace_parser import user_ulong

THREAD_SIZE = 16384
STACK_TRACE_ENTRIES = 500
BOTTOM = 21 * 8 + 8       # pt_regs at the top of the stack, then the entry code's return address
SOFTIRQ_STACK = "__do_softirq"   # do_softirq_own_stack(): the rest runs on the irq stack
# A read of stack_trace is itself measured once: seq_read_iter() takes the
# seq_file's mutex before t_start() turns the tracer off on this CPU.
# (The reader's call, innermost first, as a read(2) of a seq_file reaches it.)
READER_CALL = ("mutex_lock", "seq_read_iter", "seq_read", "vfs_read", "ksys_read",
               "__x64_sys_read", "x64_sys_call", "do_syscall_64", "entry_SYSCALL_64_after_hwframe")
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
DISABLED = ("#\n"
            "#  Stack tracer disabled\n"
            "#\n"
            "# To enable the stack tracer, either add 'stacktrace' to the\n"
            "# kernel command line\n"
            "# or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n"
            "#\n")


def frame_size(name: str) -> int:
    """The bytes a call of ``name`` keeps on the stack while it calls on:
    its return address, the registers it saves and its locals (from the
    name, the same in every run)."""
    h = zlib.crc32(name.encode())
    saved = 1 + h % 6
    u = (h >> 8 & 0xFFFF) / 65536.0
    r = h >> 24
    if u < 0.45:
        slots = 0
    elif u < 0.80:
        slots = 1 + r % 8
    elif u < 0.95:
        slots = 8 + r % 24
    else:
        slots = 32 + r % 48
    return 8 * (1 + saved + slots)


class StackTracer:
    """The stack tracer of a kernel: the sysctl's value, the maximum and
    its stack, the filter (record indices)."""

    __slots__ = ("kernel", "value", "registered", "max_size", "entries", "filter",
                 "generation", "counter", "_depths", "_depths_gen")

    def __init__(self, kernel):
        self.kernel = kernel
        self.value = 0               # stack_tracer_enabled, as proc_dointvec stored it
        self.registered = False      # the ops is registered (!!value)
        self.max_size = 0            # stack_trace_max_size (unsigned long)
        self.entries: list[tuple[int, int]] = []     # (return address, depth) innermost first
        self.filter: set[int] = set()
        self.generation = 0          # moves on with each change of the filter
        # what makes the calls the tracer measures (the machine's:
        # fakefs.sim.stack_calls.StackCalls); None: nothing calls
        self.counter = None
        self._depths: dict = {}      # frame -> its entries, None when not measured
        self._depths_gen = None

    # --- the switch -------------------------------------------------------------
    def show_enabled(self) -> str:
        return "%d\n" % self.value

    def store_enabled(self, text: str) -> None:
        """``stack_trace_sysctl()``: any int is stored; a change of
        ``!!value`` registers or unregisters the ops."""
        value, _n = parse_dointvec_minmax(text.encode("latin-1"), INT_MIN, INT_MAX)
        self.settle()
        self.value = value
        self.set_registered(bool(value))

    def set_registered(self, on: bool) -> None:
        """``register_ftrace_function()`` / ``unregister_ftrace_function()``
        of the tracer's ops."""
        if on == self.registered:
            return
        if on and self.counter is not None:
            self.counter.started(self.kernel.sim_time)
        self.registered = on
        ftrace_ops_update(self.kernel)

    def set_max_size(self, val: int) -> None:
        """``stack_max_size_write()``: the maximum is set, the stack stays."""
        self.settle()
        self.max_size = val

    # --- the filter (ftrace_regex_open() on the tracer's ops, no trace array) ----
    def commands(self) -> set:
        cmds = {"mod"} | set(PROBE_COMMANDS)
        if not self.kernel.config.enabled("TRACER_SNAPSHOT"):
            cmds.discard("snapshot")
        return cmds

    def process_regex(self, word: str, enable: bool = True) -> None:
        """A word written to stack_trace_filter: a function glob (``!``
        removes); every ``func:command`` needs a trace array, which this
        ops has none of (ENODEV; EINVAL for a command that does not exist)."""
        func, sep, rest = word.partition(":")
        if sep:
            command = rest.partition(":")[0]
            raise KernelError(errno.ENODEV if command in self.commands() else errno.EINVAL)
        recs, clear = ftrace_records(self.kernel).match(func, None)
        if not recs:
            raise KernelError(errno.EINVAL)
        self.settle()
        if clear:
            self.filter.difference_update(recs)
        else:
            self.filter.update(recs)
        self._filter_changed()

    def clear_functions(self, notrace: bool = False) -> None:
        self.settle()
        self.filter = set()
        self._filter_changed()

    def _filter_changed(self) -> None:
        self.generation += 1
        ftrace_ops_update(self.kernel)     # the ops' hash changed

    def filter_text(self, notrace: bool = False) -> str:
        if not self.filter:
            return ALL_ENABLED
        recs = ftrace_records(self.kernel)
        return "".join(recs.display(i) + "\n" for i in sorted(self.filter))

    # --- time -------------------------------------------------------------------
    def settle(self) -> None:
        """The calls made up to the machine's present are measured (before
        a read of either file, a change of the filter or of the switch)."""
        if self.counter is not None:
            self.counter.count_until(self.kernel.sim_time)

    def targets(self, wl):
        """The graph's ids of the filtered functions (None: every one)."""
        if not self.filter:
            return None
        recs = ftrace_records(self.kernel)
        return wl.call_ids(recs.addrs[r] for r in self.filter)

    def check_stack(self, wl, fr) -> None:
        """``check_stack()`` at the call whose frame is ``fr``."""
        entries = self._entries_of(wl, fr)
        if entries is None or entries[0][1] <= self.max_size:
            return
        self.max_size = entries[0][1]
        self.entries = entries

    def reader_call(self) -> None:
        """The call of ``mutex_lock`` a read of ``stack_trace`` makes
        (READER_CALL), measured if the ops is on and its filter takes it."""
        wl = self.kernel.workload
        if not self.registered or wl is None or not ftrace_calls_enabled(self.kernel):
            return
        ids = [wl.wg.ids.get(name) for name in READER_CALL]
        if None in ids:
            return
        targets = self.targets(wl)
        if targets is not None and ids[0] not in targets:
            return
        site_of = wl.frames.site_of
        stack = (wl.wg.entry[ids[0]],) + tuple(site_of(f, g) for g, f in zip(ids, ids[1:]))
        entries = stack_entries([wl.wg.names[i] for i in ids], stack)
        if entries[0][1] > self.max_size:
            self.max_size = entries[0][1]
            self.entries = entries

    def _entries_of(self, wl, fr):
        """(return address, depth) of the stack of ``fr``, innermost first;
        None on an interrupt stack."""
        gen = wl.frames.generation
        if gen != self._depths_gen:
            self._depths, self._depths_gen = {}, gen
        got = self._depths.get(fr, False)
        if got is not False:
            return got
        names = wl.wg.names
        chain = []
        f = fr
        while f is not None:
            if f.irq or names[f.fn] == SOFTIRQ_STACK:
                chain = None
                break
            chain.append(names[f.fn])
            f = f.parent
        got = stack_entries(chain, fr.stack) if chain else None
        self._depths[fr] = got
        return got

    # --- the files --------------------------------------------------------------
    def trace_text(self) -> str:
        """``stack_trace``: the header, the disabled note, the entries."""
        out = ["        Depth    Size   Location    (%d entries)\n"
               "        -----    ----   --------\n" % len(self.entries)]
        if not self.value and not self.max_size:
            out.append(DISABLED)
        ks = self.kernel.kallsyms
        last = len(self.entries) - 1
        for i, (addr, depth) in enumerate(self.entries):
            size = depth if i == last else depth - self.entries[i + 1][1]
            out.append("%3d) %8d   %5d   %s\n" % (i, depth, size, ks.sprint_symbol(addr)))
        return "".join(out)

    def max_size_text(self) -> str:
        v = self.max_size
        return "%d\n" % (v - (1 << 64) if v >> 63 else v)     # %ld of an unsigned long


def stack_entries(chain: list, stack: tuple) -> list:
    """(return address, depth) of a stack: ``chain`` the function names,
    ``stack`` the return addresses (innermost first, the traced call's
    entry first)."""
    n = min(len(chain), len(stack), STACK_TRACE_ENTRIES - 1)
    depth = [0] * n
    depth[n - 1] = BOTTOM
    for i in range(n - 2, 0, -1):
        depth[i] = depth[i + 1] + frame_size(chain[i])
    if n > 1:
        depth[0] = depth[1] + 8       # traced at entry: only its return address
    return list(zip(stack[:n], depth))


# --------------------------------------------------------------------- files
class StackTraceOps(FileOperations):
    """stack_trace (``stack_trace_fops``)."""

    def show(self, f):
        f.data.settle()
        f.data.reader_call()
        return f.data.trace_text()


class StackMaxSizeOps(FileOperations):
    """stack_max_size (``stack_max_size_fops``)."""

    def show(self, f):
        f.data.settle()
        return f.data.max_size_text()

    def write(self, f, data):
        val = user_ulong(data)
        f.data.set_max_size(val)
        return len(data)


def register_params(kernel) -> None:
    """``__setup("stacktrace", ...)``: the bare word enables it,
    ``stacktrace_filter=`` also sets the filter."""
    def stacktrace(val):
        kernel.setup["stacktrace"] = True

    def stacktrace_filter(val):
        kernel.setup["stacktrace"] = True
        kernel.setup["stacktrace_filter"] = val or ""

    kernel.early_param("stacktrace", stacktrace)
    kernel.early_param("stacktrace_filter", stacktrace_filter)


def stack_trace_init(kernel) -> None:
    """``stack_trace_init()``: the files, the sysctl, the boot settings."""
    tracing = kernel.tracing
    cfg = kernel.config
    if tracing is None or not cfg.enabled("STACK_TRACER") or not cfg.enabled("FUNCTION_TRACER"):
        return
    st = kernel.stack_tracer = StackTracer(kernel)
    d = tracing.root
    kernel.tree.create_file("stack_max_size", TRACE_MODE_WRITE, d, st, StackMaxSizeOps())
    kernel.tree.create_file("stack_trace", TRACE_MODE_READ, d, st, StackTraceOps())
    if cfg.enabled("DYNAMIC_FTRACE"):
        kernel.tree.create_file("stack_trace_filter", TRACE_MODE_WRITE, d, st, FtraceRegexOps(False))
        for func in kernel.setup.get("stacktrace_filter", "").split(","):
            try:                 # ftrace_set_early_filter(): errors are ignored
                if func and ":" not in func:
                    st.process_regex(func)
            except KernelError:
                pass
    if kernel.setup.get("stacktrace"):
        st.value = 1
        st.set_registered(True)
    register_sysctl(kernel, "kernel", [CtlTable("stack_tracer_enabled", 0o644,
                                                st.show_enabled, st.store_enabled)])
    kernel.add_machine_watcher(lambda: st.registered)
