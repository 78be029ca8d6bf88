# cython: language_level=3, boundscheck=False, wraparound=False
"""The function graph tracer's hooks, compiled (the data plane: docs/data-plane.md).

``GraphCore`` holds an array's return stacks (``Pushed``: C fields) and is
``GraphTracer``'s hooks: ``take()`` (a stretch of the walk's calls on a
CPU: each run's task traced call by call, or only its switch), ``call()``,
``ran()``, the exits of what returned (``_returns()``, with the return
register of ``retval()``) and ``_enter()``.  trace_functions_graph.py says
what they do; ``trace_functions_graph_reference.py`` is the same in plain
Python, and the tests hold both to the same bytes under every setting
(tests/kernel/trace/test_trace_functions_graph_compiled.py).

A stretch's settings (the ops and its pid lists, the graph hashes,
``max_graph_depth``, ``funcgraph-irqs``, ``sleep-time``,
``tracing_thresh``) are read once, by ``settings()`` (``begin()`` calls
it): nothing changes them while calls are made.  ``raw``: the stretch's
records go straight into the CPU buffer's raw sub-buffers, in their bytes
(``PageWriter.graph_ent``/``graph_ret``: no tuple per record), and the
tasks that wrote are noted at ``finish()``; else they are tuples, kept in
``_out`` for one ``write_entries()`` at the end, or written one by one.
"""

cimport cython

from fakefs.kernel._frames cimport Frame
from fakefs.kernel.trace._ring_buffer cimport CpuBufferCore, PageWriter

from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace.fgraph_retval import DIRECT_MAP, ERRORS, KINDS, ULONG_MASK
from fakefs.kernel.trace.ring_buffer import event_length

# what a function on a task's return stack is, for one array
RECORDED = 0        # its entry was written (or, with tracing_thresh, would have been)
NOTRACE = 1         # in set_graph_notrace: pushed, nothing below it is

cdef int _RECORDED = RECORDED, _NOTRACE = NOTRACE
cdef object GRAPH_RET = te.TRACE_GRAPH_RET, GRAPH_ENT = te.TRACE_GRAPH_ENT
cdef int HARDIRQ = te.TRACE_FLAG_HARDIRQ
cdef object ENT_PAYLOAD = te.GRAPH_ENT_PAYLOAD
GRAPH_LENGTHS = {p: event_length(p) for p in (te.GRAPH_ENT_PAYLOAD, te.GRAPH_RET_PAYLOAD,
                                              te.GRAPH_RET_RETVAL_PAYLOAD)}
cdef object ENT_LENGTH = GRAPH_LENGTHS[te.GRAPH_ENT_PAYLOAD]
cdef int ENT_LEN = ENT_LENGTH

# the kinds of return value (fgraph_retval.KINDS) as codes
cdef dict KIND_CODES = {k: i for i, k in enumerate(KINDS)}
cdef int VOID = KIND_CODES["void"], BOOL = KIND_CODES["bool"], INT = KIND_CODES["int"]
cdef int ULONG = KIND_CODES["ulong"], POINTER = KIND_CODES["pointer"]
cdef tuple _ERRORS = tuple(ERRORS)
cdef unsigned long long _DIRECT_MAP = DIRECT_MAP


cpdef object retval(int code, func, calltime, rax):
    """``fgraph_retval.retval_of()`` of a kind given by its code (KINDS'
    index): the same values (the same hash of (func, calltime))."""
    if code == VOID:
        return rax
    cdef Py_hash_t h = hash((func, calltime))
    cdef long long roll = h & 63, value
    if code == BOOL:
        return roll & 1
    if code == POINTER:
        return 0 if roll == 0 else _DIRECT_MAP + <unsigned long long> ((h >> 8) & 0x3fffffff) * 64
    if code == ULONG:
        return 0 if roll < 40 else (h >> 8) & 0xfff
    if roll >= 6:
        return 0
    if roll:
        value = 1 + ((h >> 8) & 63)
    else:
        value = -<long long> _ERRORS[((h >> 8) & 0xff) % len(_ERRORS)]
    if code == INT:
        return <unsigned long long> value & 0xffffffffULL
    return <unsigned long long> value


@cython.final
@cython.freelist(1024)
cdef class Pushed:
    """One function on a task's return stack (``struct ftrace_ret_stack``
    with the array's view of it)."""

    cdef public object frame, func, rax
    cdef public int depth, state, flags, pc
    cdef public long long calltime
    cdef public bint sets_fl        # it set TRACE_GRAPH_FL (a set_graph_function entry)

    def __init__(self, frame, func, int depth, long long calltime, int state, bint sets_fl,
                 int flags, int pc):
        self.frame = frame
        self.func = func
        self.depth = depth
        self.calltime = calltime
        self.state = state
        self.sets_fl = sets_fl
        self.flags = flags
        self.pc = pc
        self.rax = 0                    # what its last callee returned


cdef inline Pushed pushed(frame, func, int depth, long long calltime, int state, bint sets_fl,
                          int flags, int pc):
    """``Pushed(...)`` without the call's arguments parsed."""
    cdef Pushed p = Pushed.__new__(Pushed)
    p.frame = frame
    p.func = func
    p.depth = depth
    p.calltime = calltime
    p.state = state
    p.sets_fl = sets_fl
    p.flags = flags
    p.pc = pc
    p.rax = 0
    return p


cdef Py_ssize_t still_open(list stack, Frame fr, bint inside):
    """``frames.still_open()`` of the frames of ``stack`` (walk frames)."""
    cdef Py_ssize_t k = len(stack)
    cdef Frame f = fr if inside else fr.parent
    cdef Frame e
    cdef int d
    while k and f is not None:
        e = <Frame?> (<Pushed> stack[k - 1]).frame
        d = e.depth
        while f is not None and f.depth > d:
            f = f.parent
        if f is e:
            return k
        k -= 1
    return 0


cdef class GraphCore:
    """An array's return stacks and the graph tracer's hooks (see the
    module's doc); ``GraphTracer`` is the rest."""

    # per task, by its walk state (each CPU's idle task is one, all pid 0):
    # its return stack, when it was switched out (sleep-time off); per CPU
    # the task that called there last
    cdef public dict stacks, left
    cdef public list last_task
    # a stretch's records, written in one go at its end (``begin()``)
    cdef public object _out, _lengths
    # function id -> whether and how the array hooks it (``_hook()``),
    # valid while the filters stay as they were (``_key``)
    cdef public dict _hooks
    cdef public object _hooks_key
    cdef public object hashes, retvals
    cdef public object ret_payload
    # the stretch's settings (``settings()``)
    cdef object ops, ret_length
    cdef long long thresh, max_depth
    cdef bint g_funcs, skip_irqs, sleep_time
    # the raw writer of the stretch (``raw``), begun on its CPU's buffer at
    # the first record; the pids of the records' runs
    cdef bint raw, with_retval
    cdef PageWriter pw
    cdef int pw_cpu, ret_len
    cdef list pids
    # the hooks by function id (the walk's frames), while ``_hooks`` is the
    # dict they came from (``_key`` replaces it when the filters change)
    cdef list hook_list
    cdef object hooks_seen
    # per CPU the return stack of the task that called there last (None:
    # look it up), and per function id its return value's kind code (-1:
    # not looked up yet)
    cdef list cur_stacks, code_list
    cdef long last_writer_pid
    cdef long last_pid              # the pid lists' last answer, for that pid
    cdef bint last_ok, pid_known

    def __cinit__(self, *args, **kwargs):
        self.pw_cpu = -1                # no raw writer begun

    cpdef settings(self, tr, bint raw=False):
        """Read what the stretch's calls go by; ``raw``: they are written
        in the raw sub-buffers (see the module's doc)."""
        g = self.hashes
        if self.pw is not None and self.pw_cpu >= 0:
            self.pw._done()             # (a stretch cut short: what it wrote is counted)
        self.raw = raw
        self.with_retval = self.retvals is not None
        self.pw_cpu = -1
        self.pids = []
        self.ops = tr.ftrace_ops
        self.thresh = tr.tracing.tracing_thresh
        self.g_funcs = bool(g.funcs)
        self.max_depth = g.max_depth
        self.skip_irqs = g.skip_irqs
        self.sleep_time = g.sleep_time
        self.ret_length = GRAPH_LENGTHS[self.ret_payload]
        self.ret_len = self.ret_length
        self.pid_known = False
        if self._hooks is not self.hooks_seen:
            self.hooks_seen = self._hooks
            wl = tr.kernel.workload
            self.hook_list = [None] * (len(wl.wg.names) if wl is not None else 0)
        if self.code_list is None or len(self.code_list) != len(self.hook_list):
            self.code_list = [-1] * len(self.hook_list)
        self.cur_stacks = [None] * len(self.last_task)

    cdef object _hook_of(self, tr, Frame fr):
        """``_hooks.get(fr.fn)``, else ``_hook()``: by the frame's id."""
        cdef list hl = self.hook_list
        cdef int f = fr.fn
        cdef bint listed = hl is not None and 0 <= f < len(hl)
        if listed:
            hook = hl[f]
            if hook is not None:
                return hook
        hook = self._hooks.get(f)
        if hook is None:
            hook = self._hook(tr, fr)
        if listed:
            hl[f] = hook
        return hook

    cdef PageWriter _writer(self, tr, int cpu, long pid):
        """The raw writer on ``cpu``'s buffer, for a record of ``pid``."""
        cdef list pids = self.pids
        if self.pw_cpu != cpu:
            if self.pw_cpu >= 0:
                self.finish(tr, self.pw_cpu)
            if self.pw is None:
                self.pw = PageWriter()
            self.pw._begin(<CpuBufferCore> tr.buffer.cpus[cpu], True, ENT_LEN)
            self.pw_cpu = cpu
        if not pids or self.last_writer_pid != pid:
            pids.append(pid)
            self.last_writer_pid = pid
        return self.pw

    cpdef finish(self, tr, int cpu):
        """The raw writer's records are the buffer's; the tasks that wrote
        them are noted (``write_entries()``'s ``_task_info``)."""
        if self.pw_cpu < 0:
            return
        self.pw._done()
        self.pw_cpu = -1
        pids, self.pids = self.pids, []
        for pid in pids:
            tr._task_info(cpu, pid)

    cdef bint _pid_ok(self, long pid) except -1:
        """May the array push a call of ``pid``: the ops' pid lists (the last
        pid's answer kept; the reference's ``traces_pid()``)."""
        if self.ops is None:
            return True
        if not self.pid_known or pid != self.last_pid:
            self.last_ok = self.ops.match_pid(pid)
            self.last_pid = pid
            self.pid_known = True
        return self.last_ok

    cpdef take(self, tr, int cpu, list runs, times, dict states, idle, context):
        """The calls ``runs`` ([(task, [frame, ...])]) made at ``times`` on
        ``cpu``: a task the array may trace (and the walk has a state for)
        call by call, any other only as a switch (``ran()``)."""
        cdef Py_ssize_t i = 0, j
        cdef list frames
        for task, frs in runs:
            frames = <list> frs
            pid = task.pid
            state = states.get(pid) if pid else idle
            if state is None or not self._pid_ok(pid):
                self.ran(tr, cpu, state, times[i])
            else:
                for j in range(len(frames)):
                    self._call(tr, cpu, state, pid, <Frame> frames[j], times[i + j], context)
            i += len(frames)

    cpdef ran(self, tr, int cpu, state, long long t0):
        """A task the array does not trace (or one the walk has no state
        for) ran on ``cpu`` from ``t0`` on: only the switch counts."""
        last = self.last_task[cpu]
        if last is not state:
            self.last_task[cpu] = state
            if self.cur_stacks is not None:
                self.cur_stacks[cpu] = None
            if last is not None:
                self._switched_out(tr, cpu, last, t0)

    cpdef call(self, tr, int cpu, state, Frame fr, long long t, context):
        """A call at frame ``fr`` and instant ``t`` on ``cpu`` by the task
        whose walk state is ``state``: the exits of what returned before it
        (and, when another task ran last here, of what that task left before
        it was switched out), then its entry."""
        self._call(tr, cpu, state, state.task.pid, fr, t, context)

    cdef _call(self, tr, int cpu, state, pid, Frame fr, long long t, context):
        """``call()`` by the task ``pid`` (its state's)."""
        cdef list stack
        cdef Pushed p
        cdef Py_ssize_t k
        cdef long long since
        cdef list cur = self.cur_stacks
        last = self.last_task[cpu]
        got = None
        if last is not state:
            self.last_task[cpu] = state
            if last is not None:
                self._switched_out(tr, cpu, last, t)
            left = self.left.pop(state, None)
            got = self.stacks.get(state)
            if left is not None and got and not self.sleep_time:
                since = left
                for x in <list> got:       # ftrace_graph_sleep_time_control(): off
                    p = <Pushed> x
                    p.calltime += t - since
            if got is None:
                got = self.stacks[state] = []
            cur[cpu] = got
        else:
            got = cur[cpu]
            if got is None:
                got = self.stacks.get(state)
                if got is None:
                    got = self.stacks[state] = []
                cur[cpu] = got
        stack = <list> got
        k = len(stack)
        if k and fr.parent is not (<Pushed> stack[k - 1]).frame:   # (from the innermost: none returned)
            k = still_open(stack, fr, False)
            if k < len(stack):
                self._returns(tr, cpu, pid, stack, k, t)
        hook = self._hook_of(tr, fr)
        if hook is not False:
            self._enter(tr, cpu, pid, fr, t, stack, context, hook)

    cpdef _switched_out(self, tr, int cpu, state, long long t):
        """The task of ``state`` left the CPU (it sleeps in ``state.frame``,
        or runs elsewhere now): what it called there and left returned
        before the switch, which came before ``t``."""
        cdef Py_ssize_t k
        got = self.stacks.get(state)
        if got:
            frame = state.frame
            if frame is not None:
                k = still_open(<list> got, <Frame?> frame, True)
                if k < len(<list> got):
                    self._returns(tr, cpu, state.task.pid, <list> got, k, t)
        self.left[state] = t

    cpdef _returns(self, tr, int cpu, pid, list stack, Py_ssize_t k, long long t):
        """The functions ``stack[k:]`` return, innermost first, at ``t``
        (the instant of the task's next call, which is written after them).
        One called later than ``t`` is not written: its exit would come
        before its entry."""
        cdef Pushed p
        cdef Py_ssize_t n = len(stack) - k, _j
        cdef long long thresh = self.thresh
        cdef bint has_rax = False, listed
        cdef int c
        cdef list code_list = self.code_list
        retvals = self.retvals
        out, lengths = self._out, self._lengths
        rax = None
        tt = t
        for _j in range(n):
            p = <Pushed> stack.pop()
            if has_rax:
                p.rax = rax
            if retvals is None:
                rax = 0
            else:                                    # the kind once per function
                c = -1                               # (a request's frame: looked up)
                f = p.frame
                listed = type(f) is Frame and 0 <= (<Frame> f).fn < len(code_list)
                if listed:
                    c = code_list[(<Frame> f).fn]
                if c < 0:
                    c = KIND_CODES[retvals.kinds.get(p.func) or retvals.kind(p.func)]
                    if listed:
                        code_list[(<Frame> f).fn] = c
                rax = retval(c, p.func, p.calltime, p.rax)
            has_rax = True
            if p.state != _RECORDED or p.calltime > t:
                continue
            if thresh and t - p.calltime < thresh:
                continue
            if self.raw:
                self._writer(tr, cpu, pid).graph_ret(t, pid, p.flags, p.pc, p.func, p.depth,
                                                     p.calltime, rax, self.with_retval,
                                                     self.ret_len)
                continue
            entry = (tt, GRAPH_RET, pid, p.flags, p.pc, (p.func, p.depth, 0, p.calltime, tt, rax), None)
            if out is not None:
                (<list> out).append(entry)
                (<list> lengths).append(self.ret_length)
            else:
                tr.write_entry(cpu, entry, self.ret_payload)
        if stack and has_rax:
            (<Pushed> stack[len(stack) - 1]).rax = rax

    cpdef _enter(self, tr, int cpu, pid, fr, long long t, list stack, context, tuple hook):
        """``function_graph_enter()`` with this array's ``trace_graph_entry()``
        for a function its ops hooks (``hook``: see ``_hook()``)."""
        cdef Py_ssize_t depth = len(stack)
        cdef bint inside = False, sets_fl = False
        cdef int flags, pc
        if depth and (<Pushed> stack[depth - 1]).state == _NOTRACE:
            return                                   # TRACE_GRAPH_NOTRACE
        if not self._pid_ok(pid):
            return
        func, notrace, in_graph = hook
        if type(fr) is Frame and type(context) is tuple:
            fp = <tuple> (<tuple> context)[(<Frame> fr).ctx]
        else:
            fp = <tuple> context[fr.ctx]
        flags, pc = fp[0], fp[1]
        if notrace:
            stack.append(pushed(fr, func, depth, t, _NOTRACE, False, flags, pc))
            return
        if self.g_funcs:
            for x in stack:
                if (<Pushed> x).sets_fl:
                    inside = True
                    break
            if not inside:
                if not in_graph:
                    return
                sets_fl = True
        if self.max_depth and depth >= self.max_depth:
            return
        if self.skip_irqs and flags & HARDIRQ and not (inside or sets_fl):
            return
        if not self.thresh:
            if self.raw:
                if not self._writer(tr, cpu, pid).graph_ent(t, pid, flags, pc, func, depth,
                                                           ENT_LEN):
                    return
                stack.append(pushed(fr, func, depth, t, _RECORDED, sets_fl, flags, pc))
                return
            entry = (t, GRAPH_ENT, pid, flags, pc, func, depth)
            out = self._out
            if out is None:
                if not tr.write_entry(cpu, entry, ENT_PAYLOAD):
                    return                           # no event reserved: not pushed
            else:
                (<list> out).append(entry)
                (<list> self._lengths).append(ENT_LENGTH)
        stack.append(pushed(fr, func, depth, t, _RECORDED, sets_fl, flags, pc))
