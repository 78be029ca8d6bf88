"""The machine's tracepoint hits as the trace arrays see them (a part of
``TraceActivity``, trace_activity.py, which replays them in time order
among the other occurrences of a window).

A hit of a tracepoint the machine fires (a switch, a wakeup, a fork, a
system call's entry and exit, an allocation) is recorded by the events
enabled on it, with the stack of the task running there.  A switch, a fork
and an exec are also the calls the task made on its way to them (the
switch's schedule() and __schedule(), kernel_clone(), exec_binprm()), and
a system call's entry, while a filtered function tracer or a probe waits
for functions, the calls its work goes through (``read()``: ksys_read(),
vfs_read() ...): the function arrays and probes see those calls.
"""

from __future__ import annotations

from ..kernel.entry_common import syscall_work
from ._trace_machine_hits import SYS_WORK, SYSCALL_TRACEPOINTS, allocator_stack, at_call_site
from ..kernel.trace.ftrace_sysctl import ftrace_calls_enabled
from ..kernel.trace.trace_context import CALL_CONTEXT
from ..kernel.trace.trace_events_commit import PLAIN, commit_way, trace_event_commit
from ..kernel.trace.trace_hits import CODE_PATHS, FOLLOWED
from ..kernel.tracepoint import TracepointHooks
from ..kernel.trace.trace_syscalls import SyscallEvent


def recorders_key(trs) -> tuple:
    """Everything ``_recorders_of`` reads of the arrays ``trs`` besides the
    events themselves (which machine tracepoints fire is fixed): the
    recorders made for one key serve every window while it holds (a window
    is a request's catch-up: many a second while tools read), and a window
    where something acts on its own array asks each time."""
    return tuple((tr, tr.enabled_events.version, tr.soft_disabled.version, tr.cpumask,
                  tuple(tr.event_triggers), tuple(tr.event_filters), tr.event_pids.pids,
                  tr.event_pids.no_pids, tr.flags.get("stacktrace"), tr.flags.get("userstacktrace"))
                 for tr in trs)


class MachineHits:
    """``TraceActivity``'s replay of the machine's hits (see the module's doc)."""

    def _follow(self, wl, cpu, hit) -> None:
        if hit[1] == "sched_switch":
            self.curr[cpu] = hit[6]
            wl.follow(cpu, hit[6])
            # (tracing_record_taskinfo_sched_switch(): the task going off a
            # CPU it committed on last has its comm saved again: an exec's)
            tracing = self.kernel.tracing
            prev = hit[5]
            if tracing.taskinfo_pid[cpu] == prev[1]:
                tracing.savedcmd.save(prev[1], prev[0])
        elif hit[1] == "sched_process_exec":     # its kernel paths are the program's now
            wl.exec_program(self.curr[cpu], hit[5][0].rsplit("/", 1)[-1])

    def _machine_hit(self, hit, trs, ftrs, probe_trs, wl, rng, cpu, graph=(),
                     filtered=()) -> None:
        """A hit of one of the scheduler's tracepoints, traced where enabled
        (the stack is the running task's, before a switch takes it off).
        A switch is also the calls the task going to sleep made on its way
        to __schedule() (schedule(), ...), a fork those on its way to
        kernel_clone(), an exec to exec_binprm(): function tracers,
        function_graph tracers and probes see them."""
        ts, name, pid, flags, pc, args, _after = hit
        if pid is None:
            self._unattributed_hit(hit, trs, wl, rng, cpu)
            return
        if name == SYS_WORK:
            if filtered or probe_trs or graph or self._kprobed():
                self._syscall_work(wl, rng, cpu, ts, pid, args[0], filtered, probe_trs, graph)
            return
        recorders = self._recorders_of(name, args, trs, cpu)
        stack = None
        if name in CODE_PATHS:
            kprobed = self._kprobed()
            if recorders or ftrs or probe_trs or kprobed or graph:
                state = wl.walk.cpus[cpu].ts        # (the task going there, before any switch)
                if name == "sched_switch":          # (an exiting task's last: prev_state Z)
                    stack, entered = (wl.exit_switch_path if args[3] == "Z" else wl.switch_path)(rng, cpu)
                else:
                    stack, entered = wl.code_path(rng, cpu, name)
                self._entered_calls(wl, cpu, ts, state, entered, ftrs, probe_trs, graph,
                                    ftrs or probe_trs or kprobed)
        for ev, conv, etrs, way in recorders:
            entry = (ts, ev.id, pid, flags, pc, args if conv is None else conv(args), None)
            stack = trace_event_commit(etrs, ev, cpu, entry, ev.record_size(entry[5]),
                                       stack if stack is not None or way == PLAIN
                                       else lambda: wl.event_stack(rng, cpu, ev.kind), way)
        hooks = self.tp_hooks.get(name)
        if hooks:
            evd = self._event_def(name)
            kind = evd.kind if evd is not None else None
            task = (self.kernel.sched.find(pid) if pid else None) or self.curr[cpu]
            TracepointHooks.run(hooks, cpu, ts, task, flags, pc, args,
                                stack if stack is not None else lambda: wl.event_stack(rng, cpu, kind))
        if name in FOLLOWED:
            self._follow(wl, cpu, hit)

    def _recorders_of(self, name, args, trs, cpu) -> list:
        """The events recording a hit of ``name`` on ``cpu``: (event, its
        fields from the hit's, the arrays that see it, how they commit it:
        their least ``commit_way()``), kept while ``recorders_key`` holds."""
        cache = self._recorders
        key = (cpu, name, args[0]) if name in SYSCALL_TRACEPOINTS else (cpu, name)
        recorders = cache.get(key) if cache is not None else None
        if recorders is None:
            recorders = []
            for ev, conv in self._hit_events(name, args):
                etrs = [tr for tr in trs if (tr.event_recording(ev) and tr.cpumask >> cpu & 1)
                        or ev in tr.event_triggers]
                if etrs:
                    recorders.append((ev, conv, etrs, min(commit_way(tr, ev) for tr in etrs)))
            if cache is not None:
                cache[key] = recorders
        return recorders

    def _unattributed_hit(self, hit, trs, wl, rng, cpu) -> None:
        """A hit of code that does not know who runs (the allocators): it
        is the task running on ``cpu`` now, or an interrupt on top of it,
        as the walk finds its way to the event's function; the context
        comes from that stack.  An allocation's call site is its tag's
        function (the stack goes through it); a free's is the stack's."""
        ts, name, _pid, _flags, _pc, args, _after = hit
        recorders = self._recorders_of(name, args, trs, cpu)
        hooks = self.tp_hooks.get(name)
        if not recorders and not hooks:
            return
        ev = recorders[0][0] if recorders else self._event_def(name)
        if self.kernel.driver is not None:
            task, stack = allocator_stack(self, name, args, ev, wl, rng, cpu)
        else:
            try:
                task, stack = wl.stacks_for_event(rng, cpu, ev.kind)
            except ValueError:               # no path to it: where the task is
                task, stack = wl.sample(rng, cpu)
        args, stack = at_call_site(name, args, stack)
        flags, pc = self.context_flags(stack)
        pid = task.pid
        for ev, _conv, etrs, way in recorders:
            trace_event_commit(etrs, ev, cpu, (ts, ev.id, pid, flags, pc, args, None),
                               ev.record_size(args), stack, way)
        if hooks:
            TracepointHooks.run(hooks, cpu, ts, task, flags, pc, args, stack)

    def _hit_events(self, name, args) -> list:
        """The events recording a hit of tracepoint ``name``, each with the
        function making its fields from the hit's (None: the same): its
        own, and for the syscall tracepoints the called system call's."""
        out = []
        ev = self._event_def(name)
        if ev is not None:
            out.append((ev, None))
        if name in SYSCALL_TRACEPOINTS:
            d = self._syscall_events
            if not d:
                d.update(((ev.tracepoint, ev.nr), ev) for ev in self.kernel.tracing.events
                         if isinstance(ev, SyscallEvent))
            sev = d.get((name, args[0]))
            if sev is not None:
                out.append((sev, sev.from_raw))
        return out

    def wants_work(self) -> bool:
        """A filtered function tracer, a function_graph tracer or a probe
        waits for functions: the real processes the model knows make their
        system calls, whose work is calls (asked by the machine at each of
        their bursts: ``SyscallEntry.work_wanted``)."""
        k = self.kernel
        if k.driver is None or not ftrace_calls_enabled(k):
            return False
        for tr in k.tracing.arrays():
            ops = tr.ftrace_ops
            if tr.current.name == "function_graph" or ops is not None and (
                    ops.probes or (ops.filtering() and tr.current.takes_calls(tr))):
                return True
        kp = k.kprobes
        return kp is not None and bool(kp.probes) and bool(kp.call_targets())

    def _syscall_work(self, wl, rng, cpu, ts, pid, nr, trs, probe_trs, graph=()) -> None:
        """System call ``nr`` of the real process ``pid`` goes into its work: the calls
        of the traced functions on its way from the entry to x64_sys_call(),
        then its handler and what that calls on the way to its work
        (``entry_common.SYSCALL_WORK``: a read's ksys_read(), vfs_read()), for
        the filtered function tracers ``trs``, the probes and the
        function_graph arrays ``graph``, at the
        entry's instant (after its ``sys_enter``).  (The unfiltered function
        tracer takes the walk's calls, and the filtered one the walk's at
        their rates: the simulated tasks' calls are in those already.)"""
        task = self.curr[cpu]
        if task.pid != pid:
            return
        work = self._work_targets.get(nr)
        if work is None:
            ids = []
            for name in syscall_work(nr):       # (as far as the walk knows them)
                fid = wl.wg.ids.get(name)
                if fid is None:
                    break
                ids.append(fid)
            work = self._work_targets[nr] = tuple(ids)
        state = wl.walk.cpus[cpu].ts
        self._entered_calls(wl, cpu, ts, state, wl.work_path(rng, cpu, work), trs, probe_trs,
                            graph, True)

    def _entered_calls(self, wl, cpu, ts, state, entered, trs, probe_trs, graph, calls) -> None:
        """The task running on ``cpu`` (walk state ``state``) entered the
        frames ``entered`` at ``ts``: calls for the function arrays ``trs``
        and the probes (when ``calls``), entries for the function_graph
        arrays (returned by the task's next calls)."""
        if calls:
            task = self.curr[cpu]
            if entered and (probe_trs or self._kprobed()
                            or not self._write_entered(trs, wl, cpu, ts, task.pid, entered)):
                for fr in entered:
                    st = fr.stack
                    self._record_call(trs, task, st, cpu, ts, wl.function_ip(st), probe_trs)
        for tr in graph:
            tr.current.path(tr, cpu, state, entered, ts, CALL_CONTEXT)
