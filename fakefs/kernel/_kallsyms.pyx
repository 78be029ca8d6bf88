# cython: boundscheck=False, wraparound=False, initializedcheck=False
"""The symbol table's names, held the way kallsyms holds them: packed.

A host's ``/proc/kallsyms`` has ~120,000 text symbols.  A list of their
names as Python strings costs ~75 bytes a name, and a dict from name to
address another ~65 (the dict's slot and an int object for the address):
~17 MB of the daemon's memory for a table that never changes.  Here the
names are one UTF-8 buffer (a name, then ``\\n``; ~25 bytes a name), their
starts an array of 32-bit offsets, and the lookup by name an open-addressed
hash table of 32-bit slots (FNV-1a of the name's bytes, linear probing):
~30 bytes a name in all.  A name is decoded when asked for.

``NameTable(names)``: ``t[i]`` (the i-th name), ``len(t)``, ``iter(t)``;
``t.index(name)`` (its first position, or -1) and ``t.positions(name)``
(every position holding it, in table order), the hash table made on the
first lookup.  The table is immutable (a table relocated elsewhere shares it).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr, memcmp


cdef inline uint64_t fnv1a(const char *p, Py_ssize_t n) noexcept:
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ <unsigned char> p[i]) * 1099511628211ULL
    return h


cdef class NameTable:
    cdef bytes blob                 # every name followed by "\n"
    cdef uint32_t *off              # n + 1 starts (the last: the blob's length)
    cdef Py_ssize_t n
    cdef int32_t *slots             # position + 1 of a name, 0 where empty
    cdef uint64_t mask

    def __cinit__(self, names):
        cdef const char *p
        cdef const char *e
        cdef const char *q
        cdef Py_ssize_t i = 0, size
        names = list(names)
        for s in names:
            if "\n" in s:
                raise ValueError("a symbol name with a newline: %r" % (s,))
        self.n = len(names)
        self.blob = ("\n".join(names) + ("\n" if names else "")).encode("utf-8")
        size = PyBytes_GET_SIZE(self.blob)
        if size >= 0xffffffff:
            raise ValueError("names too long for 32-bit offsets")
        self.off = <uint32_t *> malloc((self.n + 1) * sizeof(uint32_t))
        if self.off == NULL:
            raise MemoryError()
        p = PyBytes_AS_STRING(self.blob)
        e = p + size
        q = p
        while i < self.n:
            self.off[i] = <uint32_t> (q - p)
            q = <const char *> memchr(q, 10, e - q) + 1
            i += 1
        self.off[self.n] = <uint32_t> size
        self.slots = NULL

    def __dealloc__(self):
        free(self.off)
        free(self.slots)

    def __len__(self):
        return self.n

    def __getitem__(self, Py_ssize_t i):
        if i < 0:
            i += self.n
        if i < 0 or i >= self.n:
            raise IndexError(i)
        return self.name(i)

    cdef inline str name(self, Py_ssize_t i):
        cdef const char *p = PyBytes_AS_STRING(self.blob)
        return PyUnicode_DecodeUTF8(p + self.off[i], self.off[i + 1] - self.off[i] - 1, NULL)

    def __iter__(self):
        cdef Py_ssize_t i
        for i in range(self.n):
            yield self.name(i)

    cdef int _hash_all(self) except -1:
        cdef uint64_t size = 16, h
        cdef Py_ssize_t i
        cdef const char *p = PyBytes_AS_STRING(self.blob)
        while size < <uint64_t> (2 * self.n):
            size <<= 1
        self.slots = <int32_t *> malloc(size * sizeof(int32_t))
        if self.slots == NULL:
            raise MemoryError()
        for i in range(<Py_ssize_t> size):
            self.slots[i] = 0
        self.mask = size - 1
        for i in range(self.n):          # in table order: equal names probe in that order
            h = fnv1a(p + self.off[i], self.off[i + 1] - self.off[i] - 1) & self.mask
            while self.slots[h]:
                h = (h + 1) & self.mask
            self.slots[h] = <int32_t> (i + 1)
        return 0

    cdef Py_ssize_t _find(self, bytes key, Py_ssize_t after) except -2:
        """The first position past ``after`` in probe order holding ``key``."""
        cdef const char *k = PyBytes_AS_STRING(key)
        cdef Py_ssize_t kn = PyBytes_GET_SIZE(key), i
        cdef const char *p = PyBytes_AS_STRING(self.blob)
        cdef uint64_t h
        cdef int32_t s
        cdef bint passed = after < 0
        if self.slots == NULL:
            self._hash_all()
        h = fnv1a(k, kn) & self.mask
        while True:
            s = self.slots[h]
            if s == 0:
                return -1
            i = s - 1
            if (self.off[i + 1] - self.off[i] - 1 == <uint32_t> kn
                    and memcmp(p + self.off[i], k, kn) == 0):
                if passed:
                    return i
                if i == after:
                    passed = True
            h = (h + 1) & self.mask

    def index(self, str name):
        """The first position of ``name``, or -1."""
        return self._find(name.encode("utf-8", "surrogatepass"), -1)

    def positions(self, str name):
        """Every position of ``name``, in table order."""
        cdef bytes key = name.encode("utf-8", "surrogatepass")
        cdef Py_ssize_t i = self._find(key, -1)
        out = []
        while i >= 0:
            out.append(i)
            i = self._find(key, i)
        return out
