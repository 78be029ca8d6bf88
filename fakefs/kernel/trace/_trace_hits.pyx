# cython: language_level=3
"""The trace event code's probe on a machine's tracepoint, compiled (the
data plane: docs/data-plane.md; ``TraceHits.probe`` in trace_hits.py makes
them)."""

cimport cython


@cython.final
cdef class HitProbe:
    """The trace event code's probe on tracepoint ``name``: a hit is queued
    on its CPU's list in ``pending`` as (ts, name, pid, flags,
    preempt_count, args, the task running there after it, from ``curr``),
    for the machine's trace activity to write after the step; no Python
    frame per hit."""
    cdef object name
    cdef list pending, curr

    def __cinit__(self, name, list pending, list curr):
        self.name, self.pending, self.curr = name, pending, curr

    def __call__(self, int cpu, ts, pid, flags, pc, args):
        (<list> self.pending[cpu]).append((ts, self.name, pid, flags, pc, args, self.curr[cpu]))
