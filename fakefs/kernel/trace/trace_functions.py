"""The function tracer (kernel/trace/trace_functions.c).

Selecting it makes every simulated CPU's traced calls land in the array's
buffer (see ``fakefs.sim.trace_activity`` for the rate and the stacks).  A stack
follows each call when the tracer option ``func_stack_trace`` is set or —
following the stackmap series, which documents it for this kernel persona —
when the ``stacktrace`` option is set.

``func-no-repeats`` (``function_no_repeats_trace_call()``): a call from the
same place to the same function as the CPU's last one is only counted
(up to U16_MAX), with the clock read at it; the next different call first
writes a ``func_repeats`` entry (the function, its caller, the count, and
how long before this entry the last repeat was), then its own.  The
counts stay per CPU until the next different call, across buffer resets.
"""

from __future__ import annotations

from . import trace_entries as te
from ..walkgraph import CALL_IP_OFF
from ._trace_function import FunctionWriter, stack_records
from .ftrace_ops_list import ftrace_ops_update
from .ring_buffer import event_length
from .trace_context import CALL_CONTEXT
from .trace_nop import Tracer
from .trace_stackmap import MAX_DEPTH

U16_MAX = 0xFFFF
FN_LENGTH = event_length(te.FN_PAYLOAD)
STACK_ID_LENGTH = event_length(te.STACK_ID_PAYLOAD)


class _StackLengths(dict):
    """A stack entry's length by its number of callers, made on first use."""

    def __missing__(self, nr: int) -> int:
        length = self[nr] = event_length(te.stack_payload(nr))
        return length


STACK_LENGTHS = _StackLengths()


class FunctionTracer(Tracer):
    name = "function"
    options = {"func_stack_trace": False, "func-no-repeats": False}
    allow_instances = True

    def __init__(self, tr):
        super().__init__(tr)
        # per CPU: [ip, parent_ip, count, stamp of the last repeat]
        # (struct trace_func_repeats), allocated when the option is first set
        self.last_repeats: list | None = None

    def takes_calls(self, tr) -> bool:
        return True

    def init(self, tr) -> None:
        """``function_trace_init()``: ``register_ftrace_function(tr->ops)``."""
        ftrace_ops_update(tr.kernel)

    def set_flag(self, name: str, on: bool) -> None:
        if name == "func-no-repeats" and on and self.last_repeats is None:
            self.last_repeats = [[0, 0, 0, 0] for _ in range(self.tr.kernel.nr_cpus)]
        super().set_flag(name, on)

    def call_writer(self, tr, cpu: int):
        """``function_trace_call()`` of this array's calls on ``cpu``,
        compiled (``_trace_function.FunctionWriter``: each call's entry,
        and with a stack option its stack's), as its settings are now; None
        where it cannot write them (a clock of the array's own stamps them,
        or a stack option without overwrite: the tuples' path)."""
        if tr.clock_reader is not None:
            return None
        stacks = bool(tr.flag("stacktrace") or self.opts.get("func_stack_trace"))
        if stacks and not tr.flag("overwrite"):
            return None
        return FunctionWriter(tr.flags["overwrite"], FN_LENGTH, CALL_CONTEXT, CALL_IP_OFF, cpu,
                              stacks, tr.stackmap if stacks and tr.flag("stackmap") else None,
                              STACK_ID_LENGTH, STACK_LENGTHS, MAX_DEPTH)

    def record_calls(self, tr, cpu: int, entries: list, frames: list) -> None:
        """``function_trace_call()`` (``function_stack_trace_call()`` with
        a stack option) of each of ``entries`` (TRACE_FN entries in time
        order with nothing recorded between them; ``frames[i]`` the i-th
        call's frame, whose stack the stack options take), for an array
        whose ops take every call and without ``func-no-repeats``: the
        entries one call at a time makes, written in one go."""
        buf = tr.buffer
        if buf.record_off or buf.record_disabled:
            return                               # no entry, so no stack either
        if not (tr.flag("stacktrace") or self.opts.get("func_stack_trace")):
            tr.write_entries(cpu, entries, FN_LENGTH)
            return
        if not tr.flag("overwrite"):             # a stack only after an entry taken
            for e, fr in zip(entries, frames):
                if tr.write_entry(cpu, e, te.FN_PAYLOAD):
                    tr.trace_stack(cpu, e[0], e[2], e[3], e[4], fr.stack)
            return
        smap = tr.stackmap if tr.flag("stackmap") else None
        out, lengths = stack_records(entries, frames, smap, cpu, te.TRACE_STACK_ID, te.TRACE_STACK,
                                     FN_LENGTH, STACK_ID_LENGTH, STACK_LENGTHS, MAX_DEPTH)
        tr.write_entries(cpu, out, lengths)

    def repeat(self, tr, cpu: int, entry) -> bool:
        """With func-no-repeats: True when the call (a TRACE_FN entry) only
        counts; else a pending count is written first."""
        last = self.last_repeats[cpu]
        ip, parent = entry[5], entry[6]
        if last[0] == ip and last[1] == parent and last[2] < U16_MAX:
            last[3] = tr.next_stamp(entry[0])    # ring_buffer_time_stamp()
            last[2] += 1
            return True
        if last[2]:
            delta = tr.next_stamp(entry[0]) - last[3]
            tr.write_entry(cpu, (entry[0], te.TRACE_FUNC_REPEATS, entry[2], entry[3], entry[4],
                                 (last[0], last[1], last[2]), delta), te.FUNC_REPEATS_PAYLOAD)
            last[2] = 0
        last[0], last[1] = ip, parent
        return False

