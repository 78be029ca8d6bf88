# cython: language_level=3, boundscheck=False, wraparound=False
"""The function tracer's entries, compiled (the data plane: docs/data-plane.md).

``function_entries()`` is what ``function_trace_call()`` fills for each of
a stretch of calls (``struct ftrace_entry``: ip and parent ip, with the
common fields), as the tuples the ring buffer holds; the calls' frames
beside them, whose stacks the stack options take (a frame makes its stack
only when asked).  The per-frame fields (context flags, preempt depth, ip,
parent ip) are the frame's ``call``, made by ``miss(fr)`` the first time a
frame is met.  ``stack_records()`` adds the stacks' records for the stack
options; ``call_instants()`` when a stretch's calls happen.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject
from libc.stdlib cimport free, malloc, qsort

from fakefs.kernel._walk cimport Frame
from fakefs.kernel.lib._mt cimport direct, fakefs_mt_t, mt_random


def function_entries(list runs, list times, miss, entry_type):
    """The TRACE_FN entries of the calls ``runs`` ([(task, [frame, ...])],
    as ``Walk.run_many()`` gives them) made at ``times``, in order, and
    their frames (whose stacks the stack options take): (entries, frames)."""
    cdef list entries = [], frames = []
    cdef Py_ssize_t i = 0, n = len(times)
    cdef Frame fr
    cdef tuple f
    for task, frs in runs:
        pid = task.pid
        for x in frs:
            if i >= n:
                return entries, frames
            fr = <Frame> x
            f = fr.call
            if f is None:
                f = miss(fr)
            entries.append((times[i], entry_type, pid, f[0], f[1], f[2], f[3]))
            frames.append(fr)
            i += 1
    return entries, frames


def stack_records(list entries, list frames, smap, int cpu, stack_id_type, full_type,
                  int fn_length, int stack_id_length, lengths_of, int max_depth):
    """``function_stack_trace_call()`` of each call in overwrite mode: its
    entry, then its stack's, the stack's id in the stackmap ``smap`` where
    it has one (``<stack_id N>``), else the stack in full: (records,
    lengths).  A stack the map holds already takes the map's first shortcut
    here (``FtraceStackMap.get_id``: the remembered slot, its count and the
    CPU's successes); any other goes through ``get_id``."""
    cdef list out = [], lengths = []
    cdef Py_ssize_t i, n = len(entries)
    cdef tuple e, stack
    cdef PyObject *hit
    cdef long long sid, found = 0
    cdef dict stored = None
    get_id = None
    if smap is not None:
        get_id = smap.get_id
        if not smap.resetting:
            stored = smap._stored
    for i in range(n):
        e = <tuple> entries[i]
        stack = <tuple> (<Frame> frames[i]).stack
        out.append(e)
        lengths.append(fn_length)
        sid = -1
        if get_id is not None:
            hit = NULL
            if stored is not None and len(stack) <= max_depth:
                hit = PyDict_GetItem(stored, stack)
            if hit is not NULL:
                slot, elt = <tuple> hit
                elt.ref_count = (elt.ref_count + 1) & 0xFFFFFFFF
                found += 1
                sid = slot
            else:
                sid = get_id(stack, cpu)
        if sid >= 0:
            out.append((e[0], stack_id_type, e[2], e[3], e[4], sid, None))
            lengths.append(stack_id_length)
        else:
            out.append((e[0], full_type, e[2], e[3], e[4], stack, None))
            lengths.append(lengths_of[len(stack)])
    if found:
        smap.successes[cpu] += found
    return out, lengths


cdef int cmp_i64(const void *a, const void *b) noexcept nogil:
    cdef long long x = (<const long long *> a)[0], y = (<const long long *> b)[0]
    return (x > y) - (x < y)


def call_instants(rng, long long t0, long long span, Py_ssize_t n):
    """``sorted(t0 + int(rng.random() * span) for _ in range(n))``: the
    instants of ``n`` calls spread uniformly over [t0, t0 + span), from
    ``n`` draws."""
    cdef long long *ts = <long long *> malloc(max(n, 1) * sizeof(long long))
    cdef Py_ssize_t i
    cdef double fspan = <double> span
    cdef fakefs_mt_t *mt = direct(rng)
    rnd = rng.random
    if ts == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            ts[i] = t0 + <long long> ((mt_random(mt) if mt != NULL else <double> rnd()) * fspan)
        qsort(ts, n, sizeof(long long), cmp_i64)
        return [ts[i] for i in range(n)]
    finally:
        free(ts)
