"""How long the walk's traced calls run (``Workload.duration_profile()``).

The calls of one CPU in a row, made ``rate`` a second with exponential
gaps, as the function graph tracer sees them (``trace_functions_graph.py``):
a call lasts until its task calls next from below it, and a task switched
out leaves what it called before the switch.  For each function, per
(graph-time, sleep-time) setting in ``DURATION_KEYS`` order, [calls, sum of
durations, sum of their squares]: with graph-time off a function's own time
(its callees' taken out), with sleep-time off the time its task was switched
out taken out too.  The function profiler draws its times from these.
"""

from __future__ import annotations

from ..kernel.frames import still_open
# duration_profile()'s settings: (graph-time, sleep-time)
DURATION_KEYS = ((True, True), (True, False), (False, True), (False, False))


def durations(walk, c, rng, rate: int, n: int) -> dict:
    """``duration_profile()`` of one CPU (as trace_functions_graph's
    ``GraphTracer.call()`` sees the calls: a task switched out leaves what
    it called before the switch)."""
    open_of: dict = {}          # task state -> [[frame, calltime, slept, [callees' time per key]]]
    off_at: dict = {}           # task state -> when it was switched out
    sums: dict = {}
    t = 0.0
    last = None

    def returns(st, k, t):
        while len(st) > k:
            fr, calltime, slept, child = st.pop()
            got = sums.get(fr.fn)
            if got is None:
                got = sums[fr.fn] = [[0, 0.0, 0.0] for _ in DURATION_KEYS]
            for j, (graph_time, sleep_time) in enumerate(DURATION_KEYS):
                d = t - calltime - (0.0 if sleep_time else slept)
                own = d if graph_time else d - child[j]
                g = got[j]
                g[0] += 1
                g[1] += own
                g[2] += own * own
                if st:
                    st[-1][3][j] += d

    for _ in range(n):
        t += rng.expovariate(rate) * 1e9
        _task, fr = walk.run(c, rng)
        state = c.ts
        if state is not last:
            if last is not None:
                st = open_of.get(last)
                if st and last.frame is not None:
                    returns(st, still_open([e[0] for e in st], last.frame, inside=True), t)
                off_at[last] = t
            since = off_at.pop(state, None)
            if since is not None:
                for e in open_of.get(state, ()):
                    e[2] += t - since
            last = state
        st = open_of.setdefault(state, [])
        returns(st, still_open([e[0] for e in st], fr), t)
        st.append([fr, t, 0.0, [0.0] * len(DURATION_KEYS)])
    return sums
