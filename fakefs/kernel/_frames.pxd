# A kernel stack frame as compiled modules use it (_frames.pyx): the
# tracers (_trace_function, _trace_functions_graph) read a call's fields
# from it, the machine's walk (_walk.pyx, _reach.pyx) makes and links them.

from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject

cdef class Frame:
    # (the fields by size, pointers first: the struct packs with no holes,
    # ~160 bytes a frame with its collector header; it was ~200)
    cdef public Frame parent
    # its kids: the frames of the calls (key: the callee's id) and the
    # interrupts (key: -1 - the entry's id) made from it, or False where
    # that call cannot be made; the first kept in ``k1key``/``k1``, the
    # rest in a dict (most frames have one kid or none: a dict each was
    # ~180 bytes a frame, measured at 58k frames; now ~47 with the fields)
    cdef object k1
    cdef dict more
    cdef public object tp         # stack as seen by a tracepoint in fn
    # what a function tracer's entry of a call here records besides its
    # time and task (context flags, preempt depth, ip, parent ip): see
    # TraceActivity.call_fields()
    cdef public tuple call
    # its stack's place in a stackmap (``_trace_function.StackIds``): the
    # map's ``_stored`` it was found in, the slot (-ENOSPC: not held, no
    # slot left), the element, and the uses counted here not yet added to
    # the element's ref_count
    cdef object sid_stored, sid_elt
    # the function's entry ip, and (with a parent) the return address into
    # the parent: the stack (entry ip,) + the return addresses below is made
    # from them and the frames below when asked for (``stack``,
    # ``frame_ips``), not kept: a tuple a frame was ~280 of its ~520 bytes
    # with everything traced, and each is needed about once (the stackmap's
    # answer is kept instead: ``sid_*``)
    cdef public unsigned long long entry, site
    # how many calls the walk made from it, and whether the walk made the
    # call of it from its parent (walkgraph: a frame repeats what it did;
    # a walk on the side changes neither)
    cdef public long long visits
    cdef public bint called
    cdef public int fn
    cdef int k1key
    cdef public int depth
    cdef public bint irq          # inside an interrupt
    cdef public int mode          # entered from user mode, in a kthread, idle
    # its context as the frames up from it say it (walkgraph.inner_context:
    # the innermost interrupt entry's, and whether the idle loop is below),
    # made with it
    cdef public int ctx
    cdef int sid_slot, sid_pending

    cdef tuple make_stack(self)


cdef enum:
    NO_KID = -2147483647 - 1        # k1key while a frame has no kid


cdef inline int frame_ips(Frame fr, unsigned long long *out, int cap) noexcept:
    """``fr.stack`` into ``out`` (at most ``cap`` addresses, ``cap`` >= 1):
    the entry ip, then the return address into each caller, innermost
    first; how many were written."""
    cdef int i = 1
    out[0] = fr.entry
    while fr.parent is not None and i < cap:
        out[i] = fr.site
        i += 1
        fr = fr.parent
    return i


cdef extern from "Python.h":
    # (borrowed dict, key and result: no reference taken or dropped)
    PyObject *dict_get "PyDict_GetItem"(PyObject *d, PyObject *key)


cdef inline PyObject *frame_kid(Frame fr, int key, PyObject *keyobj=NULL):
    """The kid of ``fr`` under ``key`` (borrowed), NULL when none;
    ``keyobj``: ``key`` as a Python int if the caller has one (borrowed)."""
    if fr.k1key == key:
        return <PyObject *> fr.k1
    if fr.more is None:
        return NULL
    if keyobj != NULL:
        return dict_get(<PyObject *> fr.more, keyobj)
    return PyDict_GetItem(fr.more, key)


cdef inline void frame_put_kid(Frame fr, int key, object kid, object keyobj=None):
    """``kid`` under ``key`` (``keyobj``: the same as a Python int, to keep
    as the dict's key rather than a new one)."""
    if fr.k1key == NO_KID or fr.k1key == key:
        fr.k1key = key
        fr.k1 = kid
    else:
        if fr.more is None:
            fr.more = {}
        if keyobj is None:
            fr.more[key] = kid
        else:
            fr.more[keyobj] = kid
