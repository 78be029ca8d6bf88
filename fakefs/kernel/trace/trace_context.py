"""The context a stack runs in, as a trace entry's common fields show it
(``tracing_gen_ctx()``: the irq/softirq flags and the preempt depth).

The innermost interrupt entry on the stack tells the context (a softirq
run on irq exit is softirq context even under the hardirq frames); the
preempt depth is ``preempt_count() & PREEMPT_MASK`` where the code runs,
the tracer's own preempt_disable() taken off: an interrupt adds to the
HARDIRQ/SOFTIRQ bits only, so the depth is the interrupted task's -- 1 for
the idle task (a stack through ``do_idle``), which runs with preemption
disabled (init_idle_preempt_count), else 0.
"""

from __future__ import annotations

from ..walkgraph import function_context
from . import trace_entries as te

FLAGS_CACHED = 1 << 13     # stacks whose context flags are kept
# (flags, preempt depth) of a context: the innermost interrupt entry's
# (2 hardirq, 1 softirq, 0 none), plus 4 with the idle loop below
CONTEXT_FLAGS = {ctx | idle: (flags, 1 if idle else 0)
                 for ctx, flags in ((0, 0), (1, te.TRACE_FLAG_SOFTIRQ),
                                    (2, te.TRACE_FLAG_HARDIRQ | te.TRACE_FLAG_IRQS_OFF))
                 for idle in (0, 4)}
# what a call at a frame records besides its time and task, from the
# frame's fields (both paths: TraceActivity's ``call_fields`` and the
# compiled writer): its context (Frame.ctx) -> (context flags, preempt
# depth), as a table; ftrace's ip is the entry ip (the return address of
# the __fentry__ call) plus CALL_IP_OFF; the parent ip is the return
# address into the caller
CALL_CONTEXT = tuple(CONTEXT_FLAGS.get(ctx, (0, 0)) for ctx in range(8))


class StackContext:
    """What stacks (tuples of return addresses) and the walk's frames imply,
    with the symbols of ``kernel.kallsyms``; cached per address, stack and frame."""

    def __init__(self, kernel):
        self.kernel = kernel
        self._addr_ctx: dict[int, int] = {}
        self._flags_cache: dict[tuple, tuple[int, int]] = {}
        self._frames_gen = 0            # the walk's frames' generation the cache holds

    def frame_context(self, ip: int) -> int:
        """2 for a hardirq entry frame, 1 for softirq, 4 for do_idle, else 0
        (``walkgraph.function_context`` of its symbol; cached)."""
        c = self._addr_ctx.get(ip)
        if c is None:
            hit = self.kernel.kallsyms.lookup(ip)
            c = self._addr_ctx[ip] = function_context(hit[0] if hit else "")
        return c

    def context_flags(self, stack: tuple) -> tuple[int, int]:
        """(irq/softirq flags, preempt depth) implied by the frames of ``stack``."""
        r = self._flags_cache.get(stack)
        if r is None:
            ctxs = [self.frame_context(ip) for ip in stack]
            r = CONTEXT_FLAGS[next((c for c in ctxs if c & 3), 0) | (4 if 4 in ctxs else 0)]
            if len(self._flags_cache) > FLAGS_CACHED:
                self._flags_cache.clear()
            self._flags_cache[stack] = r
        return r

    def follow_frames(self, wl) -> None:
        """The cache of what stacks imply forgets the stacks of the walk's
        older generations: no frame tree of theirs stays alive after a
        restart."""
        gen = wl.frames.generation
        if gen != self._frames_gen:
            self._frames_gen = gen
            self._flags_cache.clear()
