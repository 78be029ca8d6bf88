"""A held gap's window moved later (``Kernel.add_shift_hook``): what tracing
holds of it.

The entries at or after the window's start are stamped ``d`` later (in each
array's clock: a counter does not move), and so are the machine's hits not
yet written (``TraceActivity.pending``: a CPU busy past the window's end
leaves them for the next one) and the absolute times some
events carry in their fields: an hrtimer's expiry and the clock it fired at
(ns), a wheel timer's expiry and the jiffies it was armed or run at.  A
wheel timer's bucket is computed again where its expiry now falls
(``calc_wheel_index``), as ``mod_timer()`` there would have.  The pending
count of ``func-no-repeats`` keeps the stamp of its last repeat: it moves
too, and so does the end of the quiet stretch the backlog measured.  The
sub-buffers' entries move as they are taken (``BufferPage.move``): the
request that moves the window pays for the sub-buffers, not the entries.
"""

from __future__ import annotations

from functools import partial

from ..timer import JIFFY_NS, TIMER_ARRAYMASK, TIMER_ARRAYSHIFT, calc_wheel_index
from . import trace_entries as te
from .ring_buffer_bpage import Move
from .trace_events_filter_fields import parse_field_decl

# the fields that hold an absolute time: in ns ...
NS_FIELDS = {
    "hrtimer_start": ("expires", "softexpires"),
    "hrtimer_expire_entry": ("now",),
}
# ... and in jiffies (a wheel timer's bucket follows its expiry)
JIFFY_FIELDS = {
    "timer_start": ("expires", "now"),
    "timer_expire_entry": ("now", "baseclk"),
}


def _field_index(ev) -> dict[str, int]:
    return {parse_field_decl(line)[1]: i for i, line in enumerate(ev.fields)}


class ArgShifter:
    """How the field tuples of the events that hold a time move."""

    __slots__ = ("tracing", "_timed")

    def __init__(self, tracing):
        self.tracing = tracing
        self._timed: dict | None = None

    def timed(self) -> dict:
        """id -> how its fields move, of the registered events that hold a
        time (made once)."""
        if self._timed is None:
            self._timed = {ev.id: self._make(ev) for ev in self.tracing.events_by_id.values()
                           if ev.name in NS_FIELDS or ev.name in JIFFY_FIELDS}
        return self._timed

    @staticmethod
    def _make(ev):
        idx = _field_index(ev)
        ns = tuple(idx[n] for n in NS_FIELDS.get(ev.name, ()))
        jf = tuple(idx[n] for n in JIFFY_FIELDS.get(ev.name, ()))
        bucket = (idx["expires"], idx["now"], idx["bucket_expiry"], idx["flags"]) \
            if ev.name == "timer_start" else None

        def shift(args, d_ns: int, d_j: int):
            a = list(args)
            for i in ns:
                a[i] += d_ns
            for i in jf:
                a[i] = (a[i] + d_j) & 0xFFFFFFFFFFFFFFFF
            if bucket is not None:
                e, n, b, f = bucket
                wheel_idx, a[b] = calc_wheel_index(a[e], a[n])
                a[f] = (a[f] & ~TIMER_ARRAYMASK) | wheel_idx << TIMER_ARRAYSHIFT
            return tuple(a)
        return shift


def _graph_times(ret: tuple, since: int, d: int) -> tuple:
    func, depth, overrun, calltime, rettime, retval = ret
    return (func, depth, overrun, calltime + d if calltime >= since else calltime,
            rettime + d if rettime >= since else rettime, retval)


def _shift_pages(cb, since: int, du: int, args: dict) -> None:
    """Stamp ``du`` later every entry of ``cb`` from ``since`` on, and move
    the times in the fields of the events ``args`` holds (id: how): made as
    each sub-buffer's entries are taken (``BufferPage.move``), but for the
    one the writer fills."""
    move = Move(since, du, args)
    pages = cb.pages
    for page in pages:
        if len(page) and page.newest_ts() >= since:
            page.move(move)
    if pages:
        pages[-1].events                 # the writer appends to it as it is
    if cb.last_ts >= since:
        cb.last_ts += du


def shift_tracing(tracing, backlog, act=None):
    """The shift hook of ``tracing`` (and of its gap watcher ``backlog``,
    and the hits ``act``, its ``TraceActivity``, has yet to replay)."""
    args = ArgShifter(tracing)

    def shift(d: int, since: int) -> None:
        d_j = d // JIFFY_NS
        moved = {i: partial(fn, d_ns=d, d_j=d_j) for i, fn in args.timed().items()}
        if act is not None:
            act.shift_pending(since, d, moved)
        # a function graph exit's calltime and rettime (trace_clock_local(), ns)
        moved[te.TRACE_GRAPH_RET] = partial(_graph_times, since=since, d=d)
        for tr in tracing.arrays():
            reader = tr.clock_reader
            if reader is None:
                thr, du = since, d
            elif tr.clock == "counter":          # stamps do not move; what came after the skip
                thr, du = backlog.counter_before(since) + 1, 0
            else:
                thr = reader(since)
                du = reader(since + d) - thr
            for buf in (tr.buffer, tr.max_buffer):
                if buf is not None:
                    for cb in buf.cpus:
                        _shift_pages(cb, thr, du, moved)
            tr.current.shift(du, thr)
        backlog.shifted(d, since)
    return shift
