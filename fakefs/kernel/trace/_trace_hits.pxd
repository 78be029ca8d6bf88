cdef class HitSink:
    cdef int take(self, int cpu, tuple hit) except -1


cdef class HitProbe:
    cdef object name
    cdef list pending, curr, live
