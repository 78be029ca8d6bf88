# cython: language_level=3
"""The trace event code's probe on a machine's tracepoint, compiled (the
data plane: docs/data-plane.md; ``TraceHits.probe`` in trace_hits.py makes
them)."""

cimport cython


cdef class HitSink:
    """Where the machine's hits go while its trace activity writes as the
    machine runs (``TraceActivity``'s window: ``LiveSink``)."""

    cdef int take(self, int cpu, tuple hit) except -1:
        raise NotImplementedError


@cython.final
cdef class HitProbe:
    """The trace event code's probe on tracepoint ``name``: a hit, (ts,
    name, pid, flags, preempt_count, args, the task running there after
    it, from ``curr``), goes to the ``HitSink`` in ``live[0]`` while the
    machine's trace activity writes as the machine runs, else it is queued
    on its CPU's list in ``pending``, to be written when the activity gets
    there; no Python frame per hit."""

    def __cinit__(self, name, list pending, list curr, list live):
        self.name, self.pending, self.curr, self.live = name, pending, curr, live

    def __call__(self, int cpu, ts, pid, flags, pc, args):
        hit = (ts, self.name, pid, flags, pc, args, self.curr[cpu])
        sink = self.live[0]
        if sink is None:
            (<list> self.pending[cpu]).append(hit)
        else:
            (<HitSink> sink).take(cpu, hit)
