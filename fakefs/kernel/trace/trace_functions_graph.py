"""The function graph tracer (kernel/trace/trace_functions_graph.c, the
return hooks of kernel/trace/fgraph.c, ``set_graph_function`` and
``set_graph_notrace`` of kernel/trace/ftrace.c).

The tracer writes an entry (``funcgraph_entry``: the function, its depth)
when a traced function is called and an exit (``funcgraph_exit``: the
function, its depth, when it was called and when it returned) when it
returns.  Both come from the walk's calls: the calls of a CPU in a row
(``Workload.sample_runs()``, at the function tracer's rate and instants)
are what every task did, and each task's return stack is the chain of its
traced frames.  When a task's next call is made from a frame below the
ones it was last in, those returned in between: their exits are written on
the CPU the task runs on then, stamped with that call's instant and before
its entry, innermost first, so a parent's duration covers its children's
and every CPU's stamps go forward.  A function runs until the task's next
traced call.

Which calls are pushed on a task's return stack and recorded, per array,
follows ``function_graph_enter()`` / ``trace_graph_entry()``:
``set_ftrace_filter``/``set_ftrace_notrace``/pid lists (``ops.match()``)
decide whether the hook runs at all; a function in ``set_graph_notrace``
is pushed unrecorded and nothing below it is pushed; with
``set_graph_function`` set, only calls inside one of those functions are
(``TRACE_GRAPH_FL``); ``max_graph_depth`` bounds the depth; with
``funcgraph-irqs`` off hardirq calls are skipped; with ``tracing_thresh``
only exits at least that long are written; a call whose entry the buffer
does not take is not pushed.  Each array keeps its own return stacks (the
kernel's depth counts every ops' pushes on one stack: with several arrays
tracing, depths here count the array's own only).  Functions entered while
the array was not recording are not on its stacks (their exits are not
written), as the kernel's hooks find nothing pushed for them.

``sleep-time`` off takes the time a task was switched out off its open
calls (the calltime moves later by it).  No function of the model is in
``__irqentry_text`` (x86's interrupt entries are ``noinstr``), so the
``==========>`` markers never show.  With CONFIG_FUNCTION_GRAPH_RETVAL (on
in the persona, off in Debian's build) every exit holds what the function
left in ``rax`` (``fgraph_retval.py``), shown with ``funcgraph-retval``.
The text output is ``trace_functions_graph_output.py``.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import FileOperations, KernelError, TRACE_MODE_WRITE
from ..walkgraph import CALL_IP_OFF
from . import trace_entries as te
from ._trace_functions_graph import GRAPH_LENGTHS, RECORDED, GraphCore
from .ftrace import ALL_ENABLED, NONE_DISABLED
from .ftrace_files import FtraceRegexOps
from .ftrace_ops_list import ftrace_ops_update
from .fgraph_retval import ReturnValues
from .ftrace_records import ftrace_records
from .trace_functions_graph_output import GraphView
from .trace_nop import Tracer
from .trace_parser import user_ulong

TRACE_GRAPH_RET = te.TRACE_GRAPH_RET
GRAPH_RET_PAYLOAD, GRAPH_RET_RETVAL_PAYLOAD = te.GRAPH_RET_PAYLOAD, te.GRAPH_RET_RETVAL_PAYLOAD
# a stretch's records are written in the raw sub-buffers (``GraphCore.settings``;
# False: as tuples, which the tests compare them with)
RAW_WRITES = True


class RequestFrame:
    """A call of a request (not the walk's) where ``_enter()`` and
    ``_hook()`` take a frame: its hook is cached by its ip."""

    __slots__ = ("call", "fn", "entry", "ctx")

    def __init__(self, call):
        self.call = call
        self.fn = ("request", call.ip)
        self.entry = call.ip - CALL_IP_OFF
        self.ctx = 0


class GraphHashes:
    """``ftrace_graph_hash`` and ``ftrace_graph_notrace_hash`` (records of
    ``ftrace_records()``), and ``fgraph_max_depth``: global, one of each."""

    __slots__ = ("kernel", "funcs", "notrace", "max_depth", "skip_irqs", "sleep_time",
                 "graph_time", "generation")

    def __init__(self, kernel):
        self.kernel = kernel
        self.funcs: set[int] = set()
        self.notrace: set[int] = set()
        self.max_depth = 0
        # the options' globals: ftrace_graph_skip_irqs (funcgraph-irqs off),
        # fgraph_sleep_time, fgraph_graph_time (the profiler's)
        self.skip_irqs = False
        self.sleep_time = True
        self.graph_time = True
        self.generation = 0             # moves on with each change of a hash

    # --- set_graph_function / set_graph_notrace (FtraceRegexOps' owner) ----------
    def process_regex(self, word: str, enable: bool) -> None:
        """A word of ``ftrace_graph_write()``: a glob, no commands."""
        self.set_hash(self.funcs if enable else self.notrace, word)

    def clear_functions(self, notrace: bool) -> None:
        """An O_TRUNC open starts from an empty hash."""
        (self.notrace if notrace else self.funcs).clear()
        self.generation += 1

    def filter_text(self, notrace: bool) -> str:
        """``g_show()``"""
        hashed = self.notrace if notrace else self.funcs
        if not hashed:
            return NONE_DISABLED if notrace else ALL_ENABLED
        recs = ftrace_records(self.kernel)
        return "".join(recs.display(i) + "\n" for i in sorted(hashed))

    def set_hash(self, target: set, word: str) -> None:
        """``ftrace_graph_set_hash()``: a glob (``!`` removes); EINVAL when
        nothing matched (or, removing, nothing was there)."""
        recs, clear = ftrace_records(self.kernel).match(word, None)
        self.generation += 1
        if clear:
            there = target & set(recs)
            if not there:
                raise KernelError(errno.EINVAL)
            target.difference_update(there)
            return
        if not recs:
            raise KernelError(errno.EINVAL)
        target.update(recs)


def graph_hashes(kernel) -> GraphHashes:
    tracing = kernel.tracing
    h = tracing.graph
    if h is None:
        h = tracing.graph = GraphHashes(kernel)
    return h


class GraphTracer(GraphCore, Tracer):
    """The tracer: its options, files and state; its hooks on the walk's
    calls are ``GraphCore``'s (compiled: _trace_functions_graph.pyx)."""

    name = "function_graph"
    allow_instances = True

    def __init__(self, tr):
        super().__init__(tr)
        self.opts = self.tracer_options(tr.kernel.config)
        # per task, by its walk state (each CPU's idle task is one, all pid
        # 0): its return stack (this array's pushes), when it was switched
        # out (sleep-time off); per CPU the task that called there last
        self.stacks: dict = {}
        self.left: dict = {}
        self.last_task: list = [None] * tr.kernel.nr_cpus
        # a stretch's records, written in one go at its end (``begin()``)
        self._out: list | None = None
        self._lengths: list = []
        # function id -> whether and how the array hooks it (``_hook()``),
        # valid while the filters stay as they were (``_key()``)
        self._hooks: dict = {}
        self._hooks_key = None
        # with CONFIG_FUNCTION_GRAPH_RETVAL an exit holds the return register
        self.hashes: GraphHashes | None = None     # the kernel's (set at init())
        self.retvals = ReturnValues(tr.kernel) if tr.kernel.config.enabled(
            "FUNCTION_GRAPH_RETVAL") else None
        self.ret_payload = GRAPH_RET_PAYLOAD if self.retvals is None else GRAPH_RET_RETVAL_PAYLOAD

    @staticmethod
    def tracer_options(config) -> dict:
        """``trace_opts`` of 6.12 in order, with their defaults."""
        opts = {"funcgraph-overrun": False, "funcgraph-cpu": True, "funcgraph-overhead": True,
                "funcgraph-proc": False, "funcgraph-duration": True, "funcgraph-abstime": False,
                "funcgraph-irqs": True, "funcgraph-tail": False}
        if config.enabled("FUNCTION_GRAPH_RETVAL"):
            opts["funcgraph-retval"] = False
            opts["funcgraph-retval-hex"] = False
        opts["sleep-time"] = True
        if config.enabled("FUNCTION_PROFILER"):
            opts["graph-time"] = True
        return opts

    def text_view(self, tr, formatter, lat: bool):
        """``graph_trace_open()``: the reader's ``fgraph_data``."""
        return GraphView(tr, formatter, lat)

    def init(self, tr) -> None:
        """``graph_trace_init()``: ``register_ftrace_graph()`` of the array's ops."""
        self.hashes = graph_hashes(tr.kernel)
        if self.retvals is not None:
            self.retvals.load()
        self.forget()
        ftrace_ops_update(tr.kernel)

    def reset(self, tr) -> None:
        self.forget()
        ftrace_ops_update(tr.kernel)

    def forget(self) -> None:
        """Nothing is on the array's return stacks (not registered, or
        not recording: no hook pushed anything meanwhile)."""
        self.stacks.clear()
        self.left.clear()
        self.last_task = [None] * len(self.last_task)

    def set_flag(self, name: str, on: bool) -> None:
        """``func_graph_set_flag()``: ``funcgraph-irqs``, ``sleep-time`` and
        ``graph-time`` set globals (the profiler reads the last two)."""
        g = graph_hashes(self.tr.kernel)
        if name == "funcgraph-irqs":
            g.skip_irqs = not on
        elif name == "sleep-time":
            g.sleep_time = on
        elif name == "graph-time":
            g.graph_time = on
        super().set_flag(name, on)

    # --- the hooks -------------------------------------------------------------
    def begin(self, tr) -> None:
        """A stretch of calls with nothing else written between them: when
        every reserve succeeds (overwrite, recording) the records are kept
        and written at ``end()``, as one ``write_entries()``."""
        self._key(tr)                 # (the filters are as they were, or the hooks go)
        buf = tr.buffer
        kept = tr.flags["overwrite"] and tr.recording()
        raw = (RAW_WRITES and kept and tr.clock_reader is None and not buf.record_off
               and not buf.record_disabled)
        self.settings(tr, raw)
        if kept and not raw:
            self._out, self._lengths = [], []

    def end(self, tr, cpu: int) -> None:
        self.finish(tr, cpu)
        out = self._out
        if out:
            tr.write_entries(cpu, out, self._lengths)
        self._out = None

    def _write(self, tr, cpu, entry, payload) -> bool:
        out = self._out
        if out is None:
            return tr.write_entry(cpu, entry, payload)
        out.append(entry)
        self._lengths.append(GRAPH_LENGTHS[payload])
        return True

    def path(self, tr, cpu: int, state, frames, t: int, context) -> None:
        """The calls a task made at ``t`` on its way to a tracepoint the
        machine fired (a switch's __schedule(), a fork's kernel_clone()):
        ``frames``, outermost first."""
        self.begin(tr)
        for fr in frames:
            self.call(tr, cpu, state, fr, t, context)
        self.end(tr, cpu)

    def request_calls(self, tr, cpu: int, pid: int, calls, flags: int, pc: int) -> None:
        """A real process's request ran ``calls`` (``RequestCall``s of
        ftrace_requests.py, outermost first) in its task on ``cpu``: each
        is entered under this array's rules (``_enter()``) on a return stack
        of its own (the task has no other call open in the model), and
        returns what the request's code returned."""
        self.settings(tr)
        stack: list = []
        context = {0: (flags, pc)}
        for c in calls:
            fr = RequestFrame(c)
            hook = self._hooks.get(fr.fn)
            if hook is None:
                hook = self._hook(tr, fr)
            if hook is not False:
                self._enter(tr, cpu, pid, fr, c.calltime, stack, context, hook)
        thresh = tr.tracing.tracing_thresh
        for p in reversed(stack):
            c = p.frame.call
            if p.state != RECORDED or thresh and c.rettime - p.calltime < thresh:
                continue
            self._write(tr, cpu, (c.rettime, TRACE_GRAPH_RET, pid, p.flags, p.pc,
                                  (p.func, p.depth, 0, p.calltime, c.rettime, c.retval), None),
                        self.ret_payload)

    def _key(self, tr) -> None:
        """The hooks' answers hold while the array's ops, the graph hashes
        and the records stay as they were (their generations): else they go."""
        ops = tr.ftrace_ops
        key = (None if ops is None else ops.generation, graph_hashes(tr.kernel).generation,
               id(ftrace_records(tr.kernel)))
        if key != self._hooks_key:
            self._hooks_key = key
            self._hooks = {}

    def _hook(self, tr, fr):
        """For the function of ``fr``: False when the array's ops does not
        hook it (set_ftrace_filter/notrace), else (ip, in set_graph_notrace,
        in set_graph_function)."""
        func = fr.entry + CALL_IP_OFF
        ops = tr.ftrace_ops
        hook = False
        if ops is None or ops.match_function(func):
            g = graph_hashes(tr.kernel)
            rec = ftrace_records(tr.kernel).rec_of_ip(func) if g.notrace or g.funcs else None
            hook = (func, rec is not None and rec in g.notrace, rec is not None and rec in g.funcs)
        self._hooks[fr.fn] = hook
        return hook

# --------------------------------------------------------------------- files
class GraphFilterOps(FtraceRegexOps):
    """``set_graph_function`` / ``set_graph_notrace`` (``ftrace_graph_fops``):
    the globs go to the graph hashes (the kernel fills a copy and moves it
    in at the close; here each word counts at once, as the other filters)."""

    def owner(self, f):
        return graph_hashes(f.data)


class MaxGraphDepthOps(FileOperations):
    """``max_graph_depth`` (``graph_depth_fops``): an unsigned int, written
    as ``kstrtoul_from_user()`` base 10 reads it, shown with ``%d``."""

    def show(self, f):
        v = graph_hashes(f.data).max_depth
        return "%d\n" % (v - (1 << 32) if v >> 31 else v)

    def write(self, f, data):
        graph_hashes(f.data).max_depth = user_ulong(data) & 0xFFFFFFFF
        return len(data)


def graph_tracefs(kernel, d) -> None:
    """The top level's files of the graph tracer."""
    f = kernel.tree.create_file
    f("set_graph_function", TRACE_MODE_WRITE, d, kernel, GraphFilterOps(False))
    f("set_graph_notrace", TRACE_MODE_WRITE, d, kernel, GraphFilterOps(True))
    f("max_graph_depth", TRACE_MODE_WRITE, d, kernel, MaxGraphDepthOps())
