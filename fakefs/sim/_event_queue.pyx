# cython: language_level=3, boundscheck=False, wraparound=False
"""The machine's one queue of events (the data plane: docs/data-plane.md):
a binary heap of ``(t, seq, kind, a, b)`` tuples ordered by ``(t, seq)``,
as ``heapq`` over a list of them was (``seq`` is unique: the order is
total, so the events come out in the same order whatever the heap's
shape); also the allocation workload's objects due (``Lifetimes``:
``(t, seq, fn, obj)``: any tuple that starts with its instant and
number).  The keys sit in a C array beside the tuples, so a comparison is
two integer compares instead of two tuples' rich comparisons: with every
event traced, those comparisons and heapq's sifts were ~8 % of perf's
samples (session 57: ``PyObject_RichCompare``, ``long_richcompare``,
``siftup``; after: the comparisons 1.1 %, this queue 1.6 %).

An instant must be an int (a float raises TypeError: nothing is rounded)."""

from cpython.long cimport PyLong_Check
from cpython.mem cimport PyMem_Realloc, PyMem_Free


cdef struct Key:
    long long t
    long long seq
    Py_ssize_t slot          # the tuple's place in ``objs``


cdef inline long long _ns(t) except? -1:
    """An instant as C: an int (Cython would truncate a float)."""
    if not PyLong_Check(t):
        raise TypeError("an instant is an int of ns, not %r" % (t,))
    return t


cdef inline bint _less(Key *a, Key *b) noexcept nogil:
    return a.t < b.t or (a.t == b.t and a.seq < b.seq)


cdef class EventQueue:
    """``push``/``pop_before`` are ``heapq.heappush``/``heappop`` on the
    machine's list; ``len()``, truth, iteration (the queued tuples, in no
    particular order) and ``clear()`` are the list's."""

    cdef Key *keys
    cdef Py_ssize_t n, cap
    cdef list objs               # slot -> its tuple, or None (free)
    cdef list free               # free slots

    def __cinit__(self):
        self.keys = NULL
        self.n = self.cap = 0
        self.objs = []
        self.free = []

    def __dealloc__(self):
        PyMem_Free(self.keys)

    def __len__(self):
        return self.n

    def __bool__(self):
        return self.n > 0

    def __iter__(self):
        cdef Py_ssize_t i
        return iter([self.objs[self.keys[i].slot] for i in range(self.n)])

    def clear(self) -> None:
        self.n = 0
        self.objs = []
        self.free = []

    cdef int _grow(self) except -1:
        cdef Py_ssize_t cap = self.cap * 2 if self.cap else 64
        cdef Key *k = <Key *> PyMem_Realloc(self.keys, cap * sizeof(Key))
        if k == NULL:
            raise MemoryError()
        self.keys, self.cap = k, cap
        return 0

    cpdef push(self, t, long long seq, kind, a, b):
        """Queue ``(t, seq, kind, a, b)``."""
        self._put((t, seq, kind, a, b), _ns(t), seq)

    cpdef push_entry(self, tuple e):
        """Queue ``e``, a tuple that starts with its instant and its number."""
        self._put(e, _ns(e[0]), e[1])

    cdef int _put(self, tuple e, long long t, long long seq) except -1:
        cdef Py_ssize_t slot, i, up
        cdef Key k
        if self.n == self.cap:
            self._grow()
        if self.free:
            slot = self.free.pop()
            self.objs[slot] = e
        else:
            slot = len(self.objs)
            self.objs.append(e)
        k.t, k.seq, k.slot = t, seq, slot
        i = self.n
        self.n += 1
        while i > 0:                       # sift up
            up = (i - 1) >> 1
            if not _less(&k, &self.keys[up]):
                break
            self.keys[i] = self.keys[up]
            i = up
        self.keys[i] = k
        return 0

    cpdef object pop_before(self, t1):
        """The first event if it comes before ``t1`` (taken from the
        queue), else None."""
        if self.n == 0 or self.keys[0].t >= _ns(t1):
            return None
        slot = self.keys[0].slot
        e = self.objs[slot]
        self.objs[slot] = None
        self.free.append(slot)
        self.n -= 1
        if self.n:
            self._sift_down(0, self.keys[self.n])
        return e

    cdef void _sift_down(self, Py_ssize_t i, Key k) noexcept:
        """Put ``k`` at ``i`` and move it down to its place."""
        cdef Py_ssize_t n = self.n, c
        cdef Key *keys = self.keys
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and _less(&keys[c + 1], &keys[c]):
                c += 1
            if not _less(&keys[c], &k):
                break
            keys[i] = keys[c]
            i = c
        keys[i] = k

    def first_time(self):
        """The first event's instant, or None."""
        return self.keys[0].t if self.n else None

    def retime(self, kind, t) -> bool:
        """The events of ``kind`` queued after ``t`` come at ``t``
        instead (their order among themselves kept by ``seq``); whether
        any moved."""
        cdef Py_ssize_t i
        cdef bint moved = False
        cdef long long tt = _ns(t)
        for i in range(self.n):
            e = <tuple> self.objs[self.keys[i].slot]
            if e[2] == kind and self.keys[i].t > tt:
                self.keys[i].t = tt
                self.objs[self.keys[i].slot] = (t,) + e[1:]
                moved = True
        if moved:
            for i in range(self.n // 2 - 1, -1, -1):
                self._sift_down(i, self.keys[i])
        return moved
