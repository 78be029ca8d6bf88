"""Dynamic ftrace (kernel/trace/ftrace.c): what each trace array filters.

Per trace array, an :class:`FtraceOps`: the filter and notrace function
sets (``set_ftrace_filter``, ``set_ftrace_notrace``) with cached ``:mod:``
commands, the function probes registered through ``set_ftrace_filter``
(``ftrace_probes.py``) and the pid lists (``set_ftrace_pid``,
``set_ftrace_notrace_pid``; with ``function-fork`` a listed task's
children are listed as it forks them).  While any of that is set it
is the array's ``tr.ftrace_ops``: ``match(ip, pid)`` decides whether the
function tracer records a call, ``after_call()`` runs the probes of the
function called.  ``call_targets()`` tells the activity generator which
functions' calls matter now (see ``fakefs.sim.trace_activity``: a filtered tracer
or a probe sees every call of its functions, not a thinned sample).

The functions are the records of ``ftrace_records.py``; the files that set
all this are ``ftrace_files.py``.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from .ftrace_probes import (EventProbeData, FuncProbe, event_probe_command, fire_probe,
                            trace_probe_command, unregister_all)
from .ftrace_ops_list import ftrace_ops_update
from .ftrace_records import FtraceRecords, ftrace_records
from .trace_pid import add_remove_task, trace_pid_write
from .trace_pid import pids_text as pid_list_text


ALL_ENABLED = "#### all functions enabled ####\n"
NONE_DISABLED = "#### no functions disabled ####\n"
NO_PID = "no pid\n"


class FtraceOps:
    """Per trace array: function filters, probes and pid lists."""

    def __init__(self, tr):
        self.tr = tr
        self.kernel = tr.kernel
        self.filter: set[int] = set()
        self.notrace: set[int] = set()
        self.mod_trace: list[tuple[str, str]] = []      # newest first
        self.mod_notrace: list[tuple[str, str]] = []
        # hash entries of records a module took away, left matching nothing
        # (filter, notrace): see ftrace_module.py
        self.zeroed = [0, 0]
        self.pids: frozenset | None = None
        self.no_pids: frozenset | None = None
        self.probes: list[FuncProbe] = []               # newest first
        self._probe_index: dict | None = None
        self._targets_key = None
        self._targets = frozenset()
        # bumped by every change: the function profiler, which shares the
        # top level's filter, counts what came before under the old one
        self.generation = 0
        self._batch = 0                  # batch() depth: changed() waits for its end
        self._deferred = False           # a change came meanwhile

    @property
    def records(self) -> FtraceRecords:
        return ftrace_records(self.kernel)

    # --- state ------------------------------------------------------------
    def filtering(self) -> bool:
        """The filter hash is not empty (functions, or cached ``:mod:``)."""
        return bool(self.filter) or bool(self.mod_trace) or self.zeroed[0] > 0

    def batch(self):
        """``with ops.batch():`` the words of one write are one change: what
        ``changed()`` does (the ops' hashes re-read, O(set size)) is done
        once, at the end or at ``settle()``."""
        return _Batch(self)

    def settle(self) -> None:
        """Within a batch: the changes so far take effect now (the caller is
        about to let other work run)."""
        if self._deferred:
            self._deferred = False
            self._changed()

    def changed(self) -> None:
        """The hashes changed: their generation moves on now (readers of
        the ops see the new contents); within a batch, what follows from it
        waits for the batch's end."""
        self.generation += 1
        self._probe_index = None
        self._targets_key = None
        if self._batch:
            self._deferred = True
            return
        self._changed()

    def _changed(self) -> None:
        tr = self.tr
        active = (self.filtering() or self.notrace or self.pids is not None
                  or self.no_pids is not None or self.probes)
        tr.ftrace_ops = self if active else None
        if self.probes:
            tr.engage()
        ftrace_ops_update(self.kernel)     # the hashes of its ops changed

    def count_changed(self) -> None:
        """A probe's count went down: ``call_targets()`` looks again."""
        self._targets_key = None

    def clear_functions(self, notrace: bool) -> None:
        """O_TRUNC open of set_ftrace_filter/notrace: the functions and the
        cached module commands go, the probes stay."""
        if notrace:
            self.notrace = set()
            self.mod_notrace = []
        else:
            self.filter = set()
            self.mod_trace = []
        self.zeroed[notrace] = 0
        self.changed()

    def destroy(self) -> None:
        """The array goes away: drop every probe (and its event soft modes)."""
        for probe in list(self.probes):
            unregister_all(self, probe)
        self.filter, self.notrace = set(), set()
        self.mod_trace, self.mod_notrace = [], []
        self.zeroed = [0, 0]
        self.pids = self.no_pids = None
        self.changed()

    # --- the tracer's view -------------------------------------------------
    def match(self, ip: int, pid: int) -> bool:
        """Does the function tracer of this array record this call?"""
        return self.match_function(ip) and self.match_pid(pid)

    def match_function(self, ip: int) -> bool:
        """``match()`` by the function alone (the hashes)."""
        if self.filtering() or self.notrace:
            rec = self.records.rec_of_ip(ip)
            if self.filtering() and rec not in self.filter:
                return False
            if rec is not None and rec in self.notrace:
                return False
        return True

    def match_pid(self, pid: int) -> bool:
        """``match()`` by the pid lists alone."""
        if self.pids is not None and pid not in self.pids:
            return False
        return not (self.no_pids is not None and pid in self.no_pids)

    def _index(self) -> dict:
        idx = self._probe_index
        if idx is None:
            idx = {}
            for probe in self.probes:
                for rec in probe.entries:
                    idx.setdefault(rec, []).append(probe)
            self._probe_index = idx
        return idx

    def after_call(self, tr, cpu, ts, ip, stack) -> None:
        """Run the probes of the function just called."""
        if not self.probes:
            return
        rec = self.records.rec_of_ip(ip)
        probes = self._index().get(rec)
        if not probes:
            return
        for probe in probes:
            if rec in probe.entries:
                fire_probe(self, probe, rec, cpu, ts, stack)

    def call_targets(self, tracing_fn: bool) -> frozenset:
        """Addresses of the functions whose calls can make a difference now:
        the filtered functions when this array's function tracer records
        (``tracing_fn``), and the functions of probes that could act."""
        tr = self.tr
        on = tr.tracing_is_on()
        key = (tracing_fn, on)
        if key == self._targets_key:
            return self._targets
        recs = set()
        if tracing_fn and self.filter:
            recs |= self.filter - self.notrace
        kinds = {p.cmd for p in self.probes}
        can_on = "traceon" in kinds
        can_off = "traceoff" in kinds
        for probe in self.probes:
            cmd = probe.cmd
            if cmd == "traceon" and on and not can_off:
                continue
            if cmd == "traceoff" and not on and not can_on:
                continue
            if cmd == "stacktrace" and not on and not can_on:
                continue
            for rec, data in probe.entries.items():
                if probe.counted:
                    if isinstance(data, EventProbeData):
                        if not data.count:
                            continue
                    elif data is not None and data <= 0:
                        continue
                recs.add(rec)
        addrs = self.records.addrs
        self._targets = frozenset(addrs[r] for r in recs)
        self._targets_key = key
        return self._targets

    # --- writes ---------------------------------------------------------------
    def process_regex(self, word: str, enable: bool) -> None:
        """``ftrace_process_regex()`` for one word written to
        set_ftrace_filter (``enable``) or set_ftrace_notrace."""
        func, sep, rest = word.partition(":")
        if not sep:
            recs, clear = self.records.match(func, None)
            if not recs:
                raise KernelError(errno.EINVAL)
            self._enter(recs, clear, enable)
            return
        command, sep2, param = rest.partition(":")
        if not sep2:
            param = None
        if command == "mod":
            self._mod_command(func, param, enable)
        elif command in ("traceon", "traceoff", "stacktrace", "dump", "cpudump") or (
                command == "snapshot" and self.tr.max_buffer is not None):
            trace_probe_command(self, func, command, param, enable)
        elif command in ("enable_event", "disable_event"):
            event_probe_command(self, func, command, param, enable)
        else:
            raise KernelError(errno.EINVAL)

    def _enter(self, recs, clear, enable) -> None:
        target = self.filter if enable else self.notrace
        if clear:
            target.difference_update(recs)
        else:
            target.update(recs)
        self.changed()

    def _mod_command(self, func, module, enable) -> None:
        """``ftrace_mod_callback()``; a module not loaded is remembered."""
        recs, clear = self.records.match(func, module)
        if recs:
            self._enter(recs, clear, enable)
            return
        if module is None:
            raise KernelError(errno.EINVAL)
        head = self.mod_trace if enable else self.mod_notrace
        if func.startswith("!"):
            f = func[1:]
            keep = [(fn, m) for fn, m in head
                    if not (m == module and (f == "*" or fn == f))]
            if len(keep) == len(head):
                raise KernelError(errno.EINVAL)
            head[:] = keep
        else:
            if module in self.records.modules:
                raise KernelError(errno.EINVAL)
            head.insert(0, (func, module))
        self.changed()

    # --- listings ---------------------------------------------------------------
    def filter_text(self, notrace: bool) -> str:
        recs = self.records
        out = []
        funcs = self.notrace if notrace else self.filter
        mods = self.mod_notrace if notrace else self.mod_trace
        empty = not (funcs or self.zeroed[1]) if notrace else not self.filtering()
        if empty:
            out.append(NONE_DISABLED if notrace else ALL_ENABLED)
        else:
            out.extend(recs.display(i) + "\n" for i in sorted(funcs))
        out.extend("%s:mod:%s\n" % (fn, m) for fn, m in mods)
        if not notrace:
            for probe in self.probes:
                out.extend(probe.line(recs, rec) for rec in sorted(probe.entries))
        return "".join(out)

    def write_pids(self, text: str, notrace: bool) -> None:
        """``trace_pid_write()``: all or nothing; an empty result clears."""
        if notrace:
            self.no_pids = trace_pid_write(self.no_pids, text)
        else:
            self.pids = trace_pid_write(self.pids, text)
        self.changed()

    def follow_fork(self, parent: int | None, pid: int) -> None:
        """``ftrace_pid_follow_sched_process_fork``/``_exit`` (function-fork):
        a listed task's child is listed too; a freed task is unlisted."""
        pids = add_remove_task(self.pids, parent, pid)
        no_pids = add_remove_task(self.no_pids, parent, pid)
        if pids is not self.pids or no_pids is not self.no_pids:
            self.pids, self.no_pids = pids, no_pids
            self.changed()

    def clear_pids(self, notrace: bool) -> None:
        if notrace:
            self.no_pids = None
        else:
            self.pids = None
        self.changed()

    def pids_text(self, notrace: bool) -> str:
        pids = self.no_pids if notrace else self.pids
        if pids is None:
            return NO_PID
        return pid_list_text(pids)


class _Batch:
    __slots__ = ("ops",)

    def __init__(self, ops):
        self.ops = ops

    def __enter__(self):
        self.ops._batch += 1
        return self.ops

    def __exit__(self, *exc) -> None:
        ops = self.ops
        ops._batch -= 1
        if not ops._batch:
            ops.settle()


def ops_of(tr) -> FtraceOps:
    """The array's FtraceOps, made on first use."""
    ops = tr.ftrace
    if ops is None:
        ops = tr.ftrace = FtraceOps(tr)
    return ops
