# cython: language_level=3, boundscheck=False, wraparound=False
"""The stacks of events, compiled where the memo has them (the data plane:
docs/data-plane.md).

``Workload.event_stack()`` and ``Workload.switch_path()`` (workload.py)
draw a path to an event's sites from where the running task is, sampled
``EVENT_MEMO`` times per (frame, kind) and then drawn from those samples.
Once a key has its samples (most hits: the paths repeat), the answer is
one draw and the frame's tracepoint stack (``Frame.tp``), which these
functions give with no Python frame, as they give an event with no site in
the graph the stack where the task is.  A switch's new samples are drawn
here too (most switches find a frame with fewer than ``EVENT_MEMO``: the
function tracer's walk leaves the tasks in many frames), by the path's
compiled walk (``Reach.path``) and the frames entered on the way.  An
event's first samples and a memo restart go the Python way:
``Workload._event_stack`` and ``Workload._switch_path_memo``, the whole of
each and its specification (the same draws in the same order, the same
task state, the same memo: tests/sim/test_workload_compiled.py).
"""

from fakefs.kernel._frames cimport Frame
from fakefs.kernel.lib._mt cimport direct, fakefs_mt_t, mt_random

from fakefs.kernel.walkgraph import F_TRACE as _F_TRACE

cdef int ENTER = 0, RESUME = 1
cdef int F_TRACE = _F_TRACE
SWITCH_KEY = "\0switch"


cdef inline double _draw(rng, fakefs_mt_t *mt) except? -1.0:
    return mt_random(mt) if mt != NULL else <double> rng.random()


cdef inline object _tp(frames, Frame n):
    """``frames.tp_stack(n)``: the frame's own when made."""
    t = n.tp
    return t if t is not None else frames.tp_stack(n)


def event_stack(wl, rng, int cpu, kind, bint task_only, long frame_cap, long memo):
    """``wl._event_stack(rng, cpu, kind, task_only)`` (``wl`` a
    ``Workload``) with the limits ``FRAME_CAP`` and ``EVENT_MEMO`` given
    (as they are now)."""
    frames = wl.frames
    if frames.count > frame_cap:
        return wl._event_stack(rng, cpu, kind, task_only)
    c = wl.walk.cpus[cpu]
    ts = c.ts
    if wl.wg.events.get(kind) is None:     # no path in the graph: where the task is
        fr = ts.frame or c.halt
        return (<Frame> fr).make_stack() if fr is not None else ()
    seen = (<dict> wl._event_memo).get((ts.frame, ts is c.idle, kind, task_only))
    if seen is None or len(<list> seen) < memo:
        return wl._event_stack(rng, cpu, kind, task_only)
    n = (<list> seen)[<Py_ssize_t> (_draw(rng, direct(rng)) * len(<list> seen))]
    if n is not None:
        ts.frame, ts.phase = n, ENTER
        return _tp(frames, <Frame> n)
    fr = ts.frame or c.halt
    if task_only:
        while fr is not None and (<Frame> fr).irq:
            fr = (<Frame> fr).parent
    return (<Frame> fr).make_stack() if fr is not None else ()


cdef tuple _entered(reach, list flags, Frame f):
    """``Workload._entered(f)``: the frames of the traced functions from
    ``f`` up to the last path's turn, outermost first."""
    turn = reach.turn
    cdef bint turn_entered = reach.turn_entered
    cdef list out = []
    while f is not None:
        if f is turn and not turn_entered:
            break
        if <int> flags[f.fn] & F_TRACE:
            out.append(f)
        if f is turn:
            break
        f = f.parent
    out.reverse()
    return tuple(out)


def switch_path(wl, rng, int cpu, long frame_cap, long memo, long memo_keys):
    """``wl._switch_path_memo(rng, cpu)`` with the limits given
    (``FRAME_CAP``, ``EVENT_MEMO``, ``EVENT_MEMO_KEYS``)."""
    frames = wl.frames
    if frames.count > frame_cap:
        return wl._switch_path_memo(rng, cpu)
    c = wl.walk.cpus[cpu]
    ts = c.ts
    key = (ts.frame, ts is c.idle, SWITCH_KEY)
    cdef dict memo_d = wl._event_memo
    seen = memo_d.get(key)
    if seen is None or len(<list> seen) < memo:
        # a new sample: the path drawn in full (``Reach.path``), the
        # frames entered on the way (``Workload._entered``)
        reach = wl.reach
        n = reach.path(c, rng, "sched_switch", wl.wg.events["sched_switch"])
        got = None
        if n is not None:
            got = (n, _entered(reach, wl.wg.flags, <Frame> n))
            ts.frame, ts.phase = n, RESUME
        if len(memo_d) > memo_keys:
            memo_d.clear()
        memo_d.setdefault(key, []).append(got)
        if got is None:
            return (), ()
        return _tp(frames, <Frame> n), (<tuple> got)[1]
    got = (<list> seen)[<Py_ssize_t> (_draw(rng, direct(rng)) * len(<list> seen))]
    if got is None:
        return (), ()
    n, entered = <tuple> got
    ts.frame, ts.phase = n, RESUME
    return _tp(frames, <Frame> n), entered
