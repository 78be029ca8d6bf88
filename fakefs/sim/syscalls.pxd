# The machine's system calls as C structs (an augmenting .pxd: syscalls.py
# stays the one source; docs/data-plane.md "Typed fields").
cimport cython

cdef class CallSpec:
    cdef public object name, nr, ret, timeout_arg
    cdef public list args


cdef class ProfileCalls:
    cdef public CallSpec block
    cdef public long long every_ns
    cdef public list calls, cum
    cdef public tuple startup

    @cython.locals(i=Py_ssize_t)
    cpdef CallSpec pick(self, double x)


cdef class Syscalls:
    cdef public object rng
    cdef public dict calls, profiles
    cdef public CallSpec clone, wait4, execve, exit_group
    cdef public list paths

    cpdef long long gap(self, ProfileCalls prof) except? -1
    cpdef CallSpec next_call(self, ProfileCalls prof)
    cpdef _value(self, tc, sym)
    cpdef tuple values(self, tc, CallSpec call, child=*)
