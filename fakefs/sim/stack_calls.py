"""The calls the machine makes, as the stack tracer measures them
(``kernel.stack_tracer``'s ``check_stack()``: kernel/trace/trace_stack.c's
``stack_trace_call()`` at each).

Calls are not measured one by one: when someone looks (the tracer's
``settle()``: a read of either of its files, a change of its filter or of
its switch), the stretch since the last look is drawn as up to
``DRAWS_MAX`` calls of the walk made on the side (``Workload.calls_aside()``:
the machine left as it was), as many as the functions the filter takes get
at the function tracer's rate (``fn_rate`` for the time the CPUs were
awake, their share of ``Workload.call_profile()``); the deepest is the
maximum the kernel would have found.  The draws are the ``stack-tracer``
RNG's.
"""

from __future__ import annotations

import math

from .call_rates import CALL_PRIOR, CALL_PROFILE_N, fn_rate
from .function_calls import CallsSince

DRAWS_MAX = 1000          # calls measured per look at most


class StackCalls(CallsSince):
    """``stack_tracer.counter``: the machine's calls the tracer measures."""

    __slots__ = ("tracer",)

    def __init__(self, kernel, tracer):
        super().__init__(kernel, "stack-tracer")
        self.tracer = tracer

    def count_until(self, t: int) -> None:
        """Measure the calls made up to ``t``."""
        st = self.tracer
        if not st.registered or t <= self.since:
            self.since = max(self.since, t)
            return
        dt = sum(self._seconds_to(t)) * 1e9
        wl = self.kernel.workload
        if wl is None or dt <= 0:
            return
        targets = st.targets(wl)
        if targets is not None and not targets:
            return
        calls = fn_rate(self.kernel) * dt / 1e9 * _share(wl, targets)
        n = min(DRAWS_MAX, math.ceil(calls))
        for fr in wl.calls_aside(self.rng, n, targets):
            st.check_stack(wl, fr)


def _share(wl, targets) -> float:
    """The share of all traced calls that go to ``targets``."""
    if targets is None:
        return 1.0
    counts, n = wl.call_profile(CALL_PROFILE_N)
    return sum(sum(c.get(i, 0) + CALL_PRIOR for i in targets) for c in counts) / (n * len(counts))


def start(kernel) -> StackCalls | None:
    """The calls measured for a kernel's stack tracer, from now on (from
    the machine's start if boot registered it: ``stacktrace``)."""
    st = kernel.stack_tracer
    if st is None:
        return None
    calls = st.counter = StackCalls(kernel, st)
    if st.registered:
        calls.started(kernel.sim_time)
    return calls
