"""How the traced function calls of a stretch are written (a part of
``TraceActivity``, trace_activity.py): a run every array takes as it comes
goes to the compiled writer kept for the CPU (``_writer_for``: raw
sub-buffers, ``_trace_calls.CallWriter``), the calls a switch enters to
theirs (``_entered_writer``), function_graph arrays take each call one at
a time (``_graph_calls``), and a call of a filtered or probed function
(a targeted one) or a call some array takes one at a time goes through
``_record_call``: the function entries, the stack options, the probes."""

from __future__ import annotations

from ..kernel.trace import trace_entries as te
from ..kernel.trace._trace_function import function_entries
from ..kernel.trace.trace_context import CALL_CONTEXT
from ..kernel.walkgraph import CALL_IP_OFF
from ._trace_calls import CallWriter

# plain function calls written by the compiled writer into raw sub-buffers
# (``_trace_calls.CallWriter``); tests set it False to compare the
# entries with the tuples' path
RAW_WRITES = True
ONE_BY_ONE = object()      # calls an array takes one at a time (``_writer_for``)


class CallWrites:
    """``TraceActivity``'s writing of function calls (its state is
    ``TraceActivity``'s: the kept writers, the kernel, the stack context)."""

    __slots__ = ()

    def _function_calls(self, trs, wl, rng, cpu, times, probe_trs, graph=(), lo=0, hi=None) -> None:
        """Function calls at ``times[lo:hi]`` with nothing else between them
        (the compiled writer takes the range, no copy of it).  When
        every array records each call as it comes (no pid list or notrace,
        no repeats check, no probe or kprobe on calls), their entries (and
        stacks) are made and written in one go: the same entries, in the
        same order, from the same draws as one ``_function_call()`` each.
        With ``graph`` arrays (function_graph) the calls are made in a row
        and each array takes them (and the function tracers one by one)."""
        kept = self._stretch_writers
        last = kept.get(cpu) if kept is not None else None
        if last is not None and last[0] is trs and last[1] is probe_trs and not graph:
            _trs, _probe_trs, how, tr = last   # (as the last stretch: the window's settings)
        else:
            given = trs
            trs = [tr for tr in trs if tr.current.calls_on(cpu)]
            if graph:
                self._graph_calls(trs, wl, rng, cpu, _part(times, lo, hi), probe_trs, graph)
                return
            if not trs:
                return
            how = ONE_BY_ONE if probe_trs or self._kprobed() else self._writer_for(trs, wl, cpu)
            tr = trs[0]
            if how is not ONE_BY_ONE and how is not None and kept is not None:
                kept[cpu] = (given, probe_trs, how, tr)
        if hi is None:
            hi = len(times)
        if how is not None and how is not ONE_BY_ONE:
            # the compiled writer: no object per call (the same entries)
            buf = tr.buffer
            cb = None if buf.record_off or buf.record_disabled else buf.cpus[cpu]
            pids = how.calls(times, cb, lo, hi)
            self.stack_context.follow_frames(wl)
            for pid in pids:
                tr._task_info(cpu, pid)
            return
        times = _part(times, lo, hi)
        if how is ONE_BY_ONE:
            for ts in times:
                self._function_call(trs, wl, rng, cpu, ts, probe_trs)
            return
        if how is None:
            runs = wl.sample_runs(rng, cpu, len(times))
            self.stack_context.follow_frames(wl)    # (the walk may have restarted them just now)
            entries, frames = function_entries(runs, times, self.call_fields, te.TRACE_FN)
            for tr in trs:
                tr.current.record_calls(tr, cpu, entries, frames)

    @staticmethod
    def _one_by_one(tr) -> bool:
        """Its calls are taken one at a time (its ops filter them, or it
        checks repeats)."""
        return tr.ftrace_ops is not None or bool(tr.current.opts.get("func-no-repeats"))

    def _writer_for(self, trs, wl, cpu: int):
        """How the calls of the arrays ``trs`` (nothing probed on calls:
        asked first) on ``cpu`` are written: ONE_BY_ONE (an array takes
        them ``_one_by_one``), by a ``CallWriter`` (the compiled writer:
        one array whose tracer gives its compiled ``call_writer()``: the
        entries, or with their stacks'), or None (the tuples' path);
        kept for the window (the settings hold)."""
        writers = self._call_writers
        key = (cpu, *trs)
        how = writers.get(key, False) if writers is not None else False
        if how is False:
            how = fw = None
            if any(self._one_by_one(tr) for tr in trs):
                how = ONE_BY_ONE
            elif RAW_WRITES and len(trs) == 1 and wl.walk.compiled():
                fw = trs[0].current.call_writer(trs[0], cpu)
            if fw is not None:
                walk, c = wl.stretch(cpu)
                how = CallWriter(walk, c, self.rng, fw)
            if writers is not None:
                writers[key] = how
        return how

    def _entered_writer(self, trs, wl, cpu):
        """Who writes the calls a task on ``cpu`` entered on its way to a
        hit (a switch's __schedule()) for the function arrays ``trs``
        (nothing probes calls: asked first): (the compiled writer, its
        array) where it does (``_writer_for``), True where the arrays take
        them otherwise, None where none takes calls on ``cpu``; as the
        stretches' writer, it holds for the window."""
        trs = [tr for tr in trs if tr.current.calls_on(cpu)]
        if not trs:
            return None
        how = self._writer_for(trs, wl, cpu)
        if how is None or how is ONE_BY_ONE:
            return True
        return how, trs[0]

    def _write_entered(self, trs, wl, cpu, ts, pid, frames) -> bool:
        """``_record_call()`` of each of ``frames`` (entered at ``ts`` by
        ``pid``) by the compiled writer where it may (``_writer_for``);
        False: not it."""
        way = self._entered_writer(trs, wl, cpu)
        if way is None:
            return True
        if way is True:
            return False
        how, tr = way
        buf = tr.buffer
        if buf.record_off or buf.record_disabled:
            return True                          # no entry, so no stack either
        if how.entered(frames, ts, pid, buf.cpus[cpu]):
            tr._task_info(cpu, pid)
        return True

    def _graph_calls(self, trs, wl, rng, cpu, times, probe_trs, graph) -> None:
        """The calls at ``times`` (made in a row) for function_graph arrays,
        which take the runs of the tasks they may trace call by call and of
        the others only the switch (``ran()``), and for function tracers
        beside them (the same calls, as ``_record_call()``)."""
        walk, c = wl.stretch(cpu)
        runs = walk.run_many(c, rng, len(times))
        self.stack_context.follow_frames(wl)
        for tr in graph:                 # (each array on its own: its stacks, its buffer)
            cur = tr.current
            cur.begin(tr)
            cur.take(tr, cpu, runs, times, walk.states, c.idle, CALL_CONTEXT)
            cur.end(tr, cpu)
        if trs:
            i = 0
            for task, frames in runs:
                for j, fr in enumerate(frames):
                    st = fr.stack
                    self._record_call(trs, task, st, cpu, times[i + j], wl.function_ip(st),
                                      probe_trs)
                i += len(frames)

    def call_fields(self, fr) -> tuple:
        """What a call at frame ``fr`` records besides its time and task:
        (context flags, preempt depth, ip, parent ip), kept in the frame
        (see CALL_CONTEXT: the compiled writer reads the same fields)."""
        f = fr.call = CALL_CONTEXT[fr.ctx] + (
            fr.entry + CALL_IP_OFF, fr.site if fr.parent is not None else 0)
        return f

    def _function_call(self, trs, wl, rng, cpu, ts, probe_trs=()) -> None:
        if not trs:
            return
        task, stack = wl.sample(rng, cpu)
        self._record_call(trs, task, stack, cpu, ts, wl.function_ip(stack), probe_trs)

    def _targeted_call(self, trs, wl, rng, cpu, ts, probe_trs, targets) -> None:
        """A call of one of the functions filtered on or probed, after the
        calls the task made on its way there (a filter on a caller and its
        callee sees the caller first)."""
        got = wl.calls_to(rng, cpu, targets)
        if got is not None:
            task, stack, entered = got
            for st in entered:
                self._record_call(trs, task, st, cpu, ts, wl.function_ip(st), probe_trs)
            self._record_call(trs, task, stack, cpu, ts, wl.function_ip(stack), probe_trs)

    def _record_call(self, trs, task, stack, cpu, ts, ip, probe_trs) -> None:
        flags, pc = self.context_flags(stack)
        pid = task.pid
        entry = (ts, te.TRACE_FN, pid, flags, pc, ip, stack[1] if len(stack) > 1 else 0)
        for tr in trs:
            ops = tr.ftrace_ops
            if ops is not None and not ops.match(ip, pid) or not tr.current.calls_on(cpu):
                continue
            cur = tr.current
            if cur.opts.get("func-no-repeats") and cur.repeat(tr, cpu, entry):
                continue
            if tr.write_entry(cpu, entry, te.FN_PAYLOAD) and (
                    tr.flag("stacktrace") or tr.current.opts.get("func_stack_trace")):
                tr.trace_stack(cpu, ts, pid, flags, pc, stack)
        for tr in probe_trs:
            tr.ftrace_ops.after_call(tr, cpu, ts, ip, stack)
        kprobes = self.kernel.kprobes
        if kprobes is not None:
            kprobes.after_call(cpu, ts, ip, stack, task)


def _part(times, lo: int, hi):
    """``times[lo:hi]`` (the whole of it without a copy)."""
    if lo == 0 and (hi is None or hi == len(times)):
        return times
    return times[lo:hi]
