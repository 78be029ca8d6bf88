"""The kernel stacks the walk has been through, as a tree of frames.

A ``Frame`` (``_frames.pyx``: the compiled walk and tracers read its fields) is one
distinct stack: a function, the frame it was called from, and the stack
tuple (return addresses, innermost first, as ``stack_trace_save()`` stores
them), made the first time it is asked for from the function's entry and
the return address into the caller.  ``Frames`` makes them on demand and
keeps them: the frame of a call is the caller's ``kids[callee]``, so a
given path is always the same frame and the same tuple.
``restart()`` forgets them all to bound memory; tasks keep the frames they
are in.
"""

from __future__ import annotations

from ._frames import Frame
from .walkgraph import IDLE, KMODE, UMODE, call_off, callee_mode, inner_context, irq_off, tp_off

# where in its frame a task is (its phase)
ENTER = 0          # the frame's function was just called
RESUME = 1         # a callee (or interrupt) just returned into it


def interrupted(fr):
    """What frame ``fr`` is in task context: ``fr`` itself, or the frame an
    interrupt (and any nested in it) arrived on; None when that was user mode."""
    while fr is not None and fr.irq:
        fr = fr.parent
    return fr


def still_open(frames: list, fr, inside: bool = False) -> int:
    """How many of a task's open ``frames`` (outermost first, each called
    from the one before it or below) are still open when the task calls from
    ``fr``'s parent (``inside``: while it is in ``fr``, as a task switched
    out there): those it runs below; the rest returned before.  (A frame's
    ``depth`` is its caller's plus one: one climb from ``fr`` answers.)"""
    k = len(frames)
    f = fr if inside else fr.parent
    while k and f is not None:
        e = frames[k - 1]
        d = e.depth
        while f is not None and f.depth > d:
            f = f.parent
        if f is e:
            return k
        k -= 1
    return 0


class Frames:
    """The frames of the resolved graph ``wg`` made so far (``count``)."""

    def __init__(self, wg):
        self.flags = wg.flags
        self.site = wg.site
        self.addr = wg.addr
        self.names = wg.names
        self.size = wg.size
        self.entry = wg.entry
        self.fctx = wg.fctx
        self.count = 0
        self.generation = 0             # restarts so far (a cache keyed by frames follows it)
        self._roots: dict = {}
        self._user_irq: dict = {}
        self._kept: list = []           # the frames restart() kept, and those below them

    def child(self, fr, g):
        """The frame for ``fr`` calling ``g``, made on first use (False if
        it cannot here)."""
        k = fr.kid(g)
        if k is not None:
            return k
        mode = callee_mode(self.flags[g], fr.mode)
        if mode < 0:
            fr.set_kid(g, False)
            return False
        k = Frame(g, fr, self.entry[g], self.site_of(fr.fn, g), fr.irq, mode,
                  inner_context(self.fctx[g], fr.ctx))
        fr.set_kid(g, k)
        self.count += 1
        return k

    def site_of(self, f, g):
        """The return address of ``f``'s call of ``g`` (the compiled walk
        makes its frames' kids itself, asking this for the address)."""
        site = self.site.get((f, g))
        if site is None:
            site = self.addr[f] + call_off(self.names[f], self.names[g], 0, 1, self.size[f])
        return site

    def irq_child(self, fr, root):
        """An interrupt entry ``root`` arriving while ``fr`` runs (or in user
        mode when ``fr`` is None)."""
        if fr is None:
            k = self._user_irq.get(root)
            if k is None:
                k = self._user_irq[root] = Frame(root, None, self.entry[root], 0, True, UMODE,
                                                 self.fctx[root])
                self.count += 1
            return k
        key = -1 - root                 # (a call's kid is keyed by the callee's id)
        k = fr.kid(key)
        if k is None:
            f = fr.fn
            ret = self.addr[f] + irq_off(self.names[f], self.size[f])
            k = Frame(root, fr, self.entry[root], ret, True, IDLE if fr.mode == IDLE else KMODE,
                      inner_context(self.fctx[root], fr.ctx))
            fr.set_kid(key, k)
            self.count += 1
        return k

    def root(self, fn, mode=UMODE):
        """The outermost frame of an entry ``fn`` (a task's first)."""
        k = self._roots.get((fn, mode))
        if k is None:
            k = self._roots[(fn, mode)] = Frame(fn, None, self.entry[fn], 0, False, mode,
                                                self.fctx[fn])
            self.count += 1
        return k

    def tp_stack(self, fr):
        """The stack a tracepoint in ``fr``'s function sees."""
        t = fr.tp
        if t is None:
            f = fr.fn
            t = fr.tp = ((self.addr[f] + tp_off(self.names[f], self.size[f]),)
                         + fr.stack[1:])
        return t

    def restart(self, kept):
        """Forget every frame but the ``kept`` ones (and the frames below
        them), which forget their kids.  Every frame forgets its kids: a
        frame and its caller refer to each other, so the old tree would wait
        for the cycle collector (a long pause, in the middle of a catch-up);
        this way it goes as soon as nothing holds it."""
        # (the frames kept last time, and what was called from them since,
        # hang from no root of this generation)
        todo = [*self._roots.values(), *self._user_irq.values(), *self._kept]
        while todo:
            fr = todo.pop()
            kids = fr.kids
            if kids:
                fr.forget_kids()
                todo.extend(k for k in kids.values() if k)
        self._roots = {}
        self._user_irq = {}
        self.count = 0
        self.generation += 1
        self._kept = []
        for fr in kept:
            while fr is not None:
                fr.forget_kids()
                fr.visits = 0           # (what it called is forgotten with its kids)
                self._kept.append(fr)
                fr = fr.parent
