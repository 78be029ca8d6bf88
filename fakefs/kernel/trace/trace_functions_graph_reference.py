"""The function graph tracer's hooks in plain Python: the specification of
the compiled ones (``_trace_functions_graph.GraphCore``), which
tests/kernel/trace/test_trace_functions_graph_compiled.py holds to the same
bytes.  ``GraphTracerReference`` is the tracer with these hooks."""

from __future__ import annotations

from ..frames import still_open
from . import trace_entries as te
from ._trace_functions_graph import GRAPH_LENGTHS, NOTRACE, RECORDED, Pushed
from .fgraph_retval import retval_of
from .trace_functions_graph import GraphTracer, graph_hashes

TRACE_GRAPH_RET, TRACE_GRAPH_ENT = te.TRACE_GRAPH_RET, te.TRACE_GRAPH_ENT
GRAPH_ENT_PAYLOAD = te.GRAPH_ENT_PAYLOAD


class GraphHooksReference:
    """``GraphCore``'s hooks, each as trace_functions_graph.py says."""

    def take(self, tr, cpu, runs, times, states, idle, context) -> None:
        """The calls ``runs`` made at ``times`` on ``cpu``."""
        i = 0
        for task, frames in runs:
            state = states.get(task.pid) if task.pid else idle
            if state is None or not self.traces_pid(tr, task.pid):
                self.ran(tr, cpu, state, times[i])
            else:
                for j, fr in enumerate(frames):
                    self.call(tr, cpu, state, fr, times[i + j], context)
            i += len(frames)

    @staticmethod
    def traces_pid(tr, pid: int) -> bool:
        """May the array push a call of ``pid`` (its pid lists)?"""
        ops = tr.ftrace_ops
        return ops is None or ops.match_pid(pid)

    def ran(self, tr, cpu: int, state, t0: int) -> None:
        """A task the array does not trace (or one the walk has no state
        for) ran on ``cpu`` from ``t0`` on: only the switch counts."""
        last = self.last_task[cpu]
        if last is not state:
            self.last_task[cpu] = state
            if last is not None:
                self._switched_out(tr, cpu, last, t0)

    def call(self, tr, cpu: int, state, fr, t: int, context) -> None:
        """A call at frame ``fr`` and instant ``t`` on ``cpu`` by the task
        whose walk state is ``state``: the exits of what returned before it
        (and, when another task ran last here, of what that task left before
        it was switched out), then its entry.  ``context[fr.ctx]`` is a
        frame's (flags, preempt count)."""
        stacks = self.stacks
        last = self.last_task[cpu]
        if last is not state:
            self.last_task[cpu] = state
            if last is not None:
                self._switched_out(tr, cpu, last, t)
            since = self.left.pop(state, None)
            stack = stacks.get(state)
            if since is not None and stack and not graph_hashes(tr.kernel).sleep_time:
                for p in stack:            # ftrace_graph_sleep_time_control(): off
                    p.calltime += t - since
        stack = stacks.get(state)
        if stack is None:
            stack = stacks[state] = []
        pid = state.task.pid
        if stack and fr.parent is not stack[-1].frame:      # (a call from the innermost: none returned)
            k = still_open([p.frame for p in stack], fr)
            if k < len(stack):
                self._returns(tr, cpu, pid, stack, k, t)
        hook = self._hooks.get(fr.fn)
        if hook is None:
            hook = self._hook(tr, fr)
        if hook is not False:
            self._enter(tr, cpu, pid, fr, t, stack, context, hook)

    def _switched_out(self, tr, cpu, state, t) -> None:
        """The task of ``state`` left the CPU (it sleeps in ``state.frame``,
        or runs elsewhere now): what it called there and left returned
        before the switch, which came before ``t``."""
        stack = self.stacks.get(state)
        if stack and state.frame is not None:
            k = still_open([p.frame for p in stack], state.frame, inside=True)
            if k < len(stack):
                self._returns(tr, cpu, state.task.pid, stack, k, t)
        self.left[state] = t

    def _returns(self, tr, cpu, pid, stack, k, t) -> None:
        """The functions ``stack[k:]`` return, innermost first, at ``t``
        (the instant of the task's next call, which is written after them).
        One called later than ``t`` (on another CPU, whose calls of the same
        stretch were made first) is not written: its exit would come before
        its entry."""
        thresh = tr.tracing.tracing_thresh
        retvals = self.retvals
        kinds = retvals.kinds if retvals is not None else None
        out, lengths, payload = self._out, self._lengths, self.ret_payload
        rax = None
        for _j in range(len(stack) - k):
            p = stack.pop()
            if rax is not None:
                p.rax = rax
            if kinds is None:
                rax = 0
            else:                                    # the kind once per function
                kind = kinds.get(p.func) or retvals.kind(p.func)
                rax = p.rax if kind == "void" else retval_of(kind, p.func, p.calltime, p.rax)
            if p.state != RECORDED or p.calltime > t:
                continue
            if thresh and t - p.calltime < thresh:
                continue
            entry = (t, TRACE_GRAPH_RET, pid, p.flags, p.pc,
                     (p.func, p.depth, 0, p.calltime, t, rax), None)
            if out is not None:                      # (_write(), inline)
                out.append(entry)
                lengths.append(GRAPH_LENGTHS[payload])
            else:
                tr.write_entry(cpu, entry, payload)
        if stack and rax is not None:
            stack[-1].rax = rax

    def _enter(self, tr, cpu, pid, fr, t, stack, context, hook) -> None:
        """``function_graph_enter()`` with this array's ``trace_graph_entry()``
        for a function its ops hooks (``hook``: see ``_hook()``)."""
        if stack and stack[-1].state == NOTRACE:
            return                                   # TRACE_GRAPH_NOTRACE
        ops = tr.ftrace_ops
        if ops is not None and not ops.match_pid(pid):
            return
        func, notrace, in_graph = hook
        flags, pc = context[fr.ctx]
        depth = len(stack)
        if notrace:
            stack.append(Pushed(fr, func, depth, t, NOTRACE, False, flags, pc))
            return
        g = self.hashes
        inside = sets_fl = False
        if g.funcs:
            inside = any(p.sets_fl for p in stack)
            if not inside:
                if not in_graph:
                    return
                sets_fl = True
        if g.max_depth and depth >= g.max_depth:
            return
        if g.skip_irqs and flags & te.TRACE_FLAG_HARDIRQ and not (inside or sets_fl):
            return
        if not tr.tracing.tracing_thresh:
            if not self._write(tr, cpu, (t, TRACE_GRAPH_ENT, pid, flags, pc, func, depth),
                               GRAPH_ENT_PAYLOAD):
                return                               # no event reserved: not pushed
        stack.append(Pushed(fr, func, depth, t, RECORDED, sets_fl, flags, pc))


class GraphTracerReference(GraphHooksReference, GraphTracer):
    """The function graph tracer with the hooks in plain Python."""
