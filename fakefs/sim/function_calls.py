"""The calls the machine makes, as the function profiler counts them
(``kernel.tracing.function_profiler``'s tables: kernel/trace/ftrace.c's
``function_profile_call()`` at each).

Calls are not made one by one: each function is called at the rate the
activity generator gives a filtered function tracer
(``call_rates.fn_rate()`` times its share in ``Workload.call_profile()``,
``CALL_PRIOR`` calls for one it never got to), so the profiler and a
tracer filtered on a function agree.  The counts of a stretch of time are
Poisson draws for the time each CPU was awake (``call_rates.call_seconds()``:
a halted CPU calls nothing), made when someone looks (the profiler's
``settle()``: a stat file is opened or read; it is turned off) and when the
global filter changes (the timer and skip hooks see its generation move
on: what was called before the change is counted under the old filter).
Skipped time counts like simulated time: each CPU awake its share of the
time simulated.  While ``ftrace_enabled`` was 0 for part of a stretch, the
stretch's awake time is counted in that proportion.

With the function graph tracer built in (CONFIG_FUNCTION_GRAPH_TRACER)
each function is also timed: Time, Avg and s^2 are drawn for its hits from
the calls of a side run of the walk (``Workload.duration_profile()``), or
like a typical function of its kind where no call of it returned there
(``measured_or_like``).  The order of the functions first called in a
stretch (a CPU's records are in that order) is drawn from their first
calls' instants.
"""

from __future__ import annotations

import math
import statistics

from ..kernel.trace.ftrace_records import ftrace_records
from .call_durations import DURATION_KEYS
from .call_rates import CALL_PRIOR, CALL_PROFILE_N, call_seconds, fn_rate

POISSON_INVERSION_MAX = 12     # below this mean: inversion; above: transformed rejection


def poisson(rng, mean: float) -> int:
    """A Poisson-distributed count of the given mean."""
    if mean <= 0:
        return 0
    if mean < POISSON_INVERSION_MAX:
        limit = math.exp(-mean)
        k, p = 0, rng.random()
        while p > limit:
            k += 1
            p *= rng.random()
        return k
    return _poisson_ptrs(rng, mean)


def _poisson_ptrs(rng, lam: float) -> int:
    """Hörmann's transformed rejection with squeeze (PTRS, 1993), for
    means of 10 and more."""
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = math.log(1.1239 + 1.1328 / (b - 3.4))
    v_r = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        if us <= 0 or v <= 0:
            continue
        k = math.floor((2 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= v_r:
            return k
        if k < 0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + log_inv_alpha - math.log(a / (us * us) + b)
                <= -lam + k * loglam - math.lgamma(k + 1)):
            return k


class CallsSince:
    """Calls drawn for an ftrace_ops from an instant on: by the seconds each
    CPU was awake since (``call_seconds``), from the RNG ``rng_name``."""

    __slots__ = ("kernel", "rng", "since", "_cpu_times")

    def __init__(self, kernel, rng_name: str):
        self.kernel = kernel
        self.rng = kernel.subsystem_rng(rng_name)
        self.since = 0              # calls are counted up to this instant
        self._cpu_times: list = []  # the CPUs' times then (``Scheduler.cpu_times``)

    def started(self, now: int) -> None:
        """The ops was registered at ``now``: calls count from there."""
        self.since = now
        self._cpu_times = self.kernel.sched.cpu_times(now)

    def _seconds_to(self, t: int) -> list[float]:
        """Per CPU, the seconds of [since, t) calls were made in; counted
        up to ``t`` from now on."""
        self._cpu_times, secs = call_seconds(self.kernel, self.since, self._cpu_times, t)
        self.since = t
        return secs


class FunctionCalls(CallsSince):
    """``profiler.counter``: the machine's calls into the profiler's tables."""

    __slots__ = ("prof", "_rates", "_generation")

    def __init__(self, kernel, prof):
        super().__init__(kernel, "ftrace-profile")
        self.prof = prof
        self._rates: list[tuple] = []    # per CPU: (ips, calls per second) under...
        self._generation = None     # ...this generation of the global filter

    # --- time -------------------------------------------------------------------
    def started(self, now: int) -> None:
        """The profiler was turned on at ``now`` (its tables emptied)."""
        super().started(now)
        self._take_filter()

    def run(self, t0: int, t1: int) -> None:
        """Timer and skip hook: when the global filter has changed, the
        calls made before are counted under the old one."""
        if self.prof.enabled and self._filter_generation() != self._generation:
            self.count_until(t0)
            self._take_filter()

    def settle(self) -> None:
        """Count the calls made up to the kernel's present."""
        self.run(self.kernel.sim_time, self.kernel.sim_time)
        self.count_until(self.kernel.sim_time)

    def count_until(self, t: int) -> None:
        """Draw the calls of [since, t) of every function on every CPU."""
        if not self.prof.enabled or t <= self.since:
            return
        dts = self._seconds_to(t)
        rng = self.rng
        key = self._duration_key()
        for st, (ips, rates, durations), dt in zip(self.prof.stats, self._rates, dts):
            new = []
            slot_of = st.slot_of
            for ip, rate, dur in zip(ips, rates, durations):
                n = poisson(rng, rate * dt)
                if not n:
                    continue
                time, time_sq = (0, 0) if dur is None else self._times(rng, dur[key], n)
                s = slot_of.get(ip)
                if s is None:
                    # when in the stretch it was first called
                    new.append((1.0 - (1.0 - rng.random()) ** (1.0 / n), ip, n, time, time_sq))
                else:
                    st.hits[s] += n
                    st.time[s] += time
                    st.time_sq[s] += time_sq
            new.sort()
            for _first, ip, n, time, time_sq in new:
                st.add(ip, n, time, time_sq)

    # --- the graph tracer's times ------------------------------------------------
    def _duration_key(self) -> int:
        """Which of ``Workload.duration_profile()``'s sums the options ask
        for: ``graph-time`` (off: a function's own time) and ``sleep-time``
        (off: without the time its task was switched out)."""
        g = self.kernel.tracing.graph
        graph_time = g is None or g.graph_time
        sleep_time = g is None or g.sleep_time
        return DURATION_KEYS.index((graph_time, sleep_time))

    @staticmethod
    def _times(rng, dur, n: int) -> tuple[int, int]:
        """The summed time and squares of ``n`` calls of a function whose
        measured calls were ``dur`` = [calls, sum, sum of squares]: their
        sum drawn with n times the mean and the variance, from a gamma
        distribution (durations are positive: a normal draw around a mean
        of a spread calls' function fell below 0, shown as a Time of 0,
        for one call of twice the mean's spread one draw in three), and
        their squares as n such calls have them: (sum x)^2 / n plus the
        squared deviations from their mean, var * chi-squared(n - 1) (for
        normal x, independent of the sum).  (The squares were n times the
        measured mean square, floored at (sum x)^2 / n: a sum drawn above
        n * sqrt(mean^2 + var) gave s^2 0, for a function of 14 hits with
        a spread of 0.4 times its mean one draw in five.)"""
        m, s1, s2 = dur
        mean = s1 / m
        var = max(0.0, s2 / m - mean * mean)
        if not var or mean <= 0:
            time = round(n * mean)
            return time, max(round(n * s2 / m), -(-time * time // n))
        time = round(rng.gammavariate(n * mean * mean / var, var / mean))
        spread = var * rng.gammavariate((n - 1) / 2, 2.0) if n > 1 else 0.0
        return time, -(-time * time // n) + round(spread)

    # --- the global filter ----------------------------------------------------
    def _filter_generation(self):
        return None if self.prof.ops is None else self.prof.ops.generation

    def _take_filter(self) -> None:
        """The functions counted, and their rates, under the filter now."""
        self._generation = self._filter_generation()
        self._rates = self._cpu_rates()

    def _cpu_rates(self) -> list[tuple]:
        k = self.kernel
        wl = k.workload
        if wl is None:
            return [((), ()) for _ in self.prof.stats]
        recs = ftrace_records(k)
        ops = self.prof.ops
        counts, n = wl.call_profile(CALL_PROFILE_N)
        ids = []
        for i in sorted(wl.call_ids(recs.addrs)):
            rec = recs.by_addr[wl.wg.addr[i]]
            if ops is not None:
                if ops.filtering() and rec not in ops.filter:
                    continue
                if rec in ops.notrace:
                    continue
            ids.append(i)
        ips = tuple(wl.wg.addr[i] for i in ids)
        rate = fn_rate(k)
        if self.prof.graph:
            durs = measured_or_like(wl.duration_profile(rate), ids, wl.wg.base_table)
        else:
            durs = [(None,) * len(ids) for _ in counts]
        return [(ips, tuple(rate * (c.get(i, 0) + CALL_PRIOR) / n for i in ids), d)
                for c, d in zip(counts, durs)]


def measured_or_like(profiles, ids, base_table) -> list[tuple]:
    """Per CPU, the duration sums ([calls, sum, sum of squares] per
    ``DURATION_KEYS`` setting, ``Workload.duration_profile()``'s) of each
    function of ``ids``: its own where that CPU's profile measured calls of
    it returning; else its calls on the other CPUs; else (no profile saw
    one return: counted at ``CALL_PRIOR``, or too rare for the sample) a
    typical function of its kind on that CPU (a leaf like the leaves, one
    with callees like those): their median mean, and their median spread
    relative to it (var / mean^2).  A function measured once has no spread
    of its own: it takes its kind's.  A counted call took some time, and
    calls of one function vary.  None only where nothing was measured."""
    nk = len(DURATION_KEYS)

    def leaf(i):                    # (a table's callee -1: return)
        e = base_table[i] if i < len(base_table) else None
        return e is None or not any(g >= 0 for g in e[0])

    def typical(sums_list):
        """Per setting: (median mean, median var / mean^2)."""
        out = []
        for j in range(nk):
            means, rel = [], []
            for sums in sums_list:
                m, s1, s2 = sums[j]
                mean = s1 / m
                means.append(mean)
                if m > 1 and mean > 0:
                    rel.append(max(0.0, s2 / m - mean * mean) / (mean * mean))
            out.append((statistics.median(means), statistics.median(rel) if rel else 0.0))
        return out

    def spread(sums, kind):
        """``sums`` with its kind's relative spread where it has one call."""
        out = []
        for j in range(nk):
            m, s1, s2 = sums[j]
            if m == 1:
                mean = s1
                s2 = mean * mean * (1.0 + kind[j][1])
            out.append([m, s1, s2])
        return out

    def like(kind):
        return [[1, mean, mean * mean * (1.0 + rel)] for mean, rel in kind]

    out = []
    for d in profiles:
        kinds = None
        row = []
        for i in ids:
            got = d.get(i)
            if got is None:
                got = _summed([p[i] for p in profiles if i in p], nk)
            if got is None or got[0][0] == 1:
                if kinds is None:
                    if not d:
                        row.append(got)
                        continue
                    leaves = [v for f, v in d.items() if leaf(f)]
                    others = [v for f, v in d.items() if not leaf(f)]
                    every = typical(list(d.values()))
                    kinds = {True: typical(leaves) if leaves else every,
                             False: typical(others) if others else every}
                kind = kinds[leaf(i)]
                got = like(kind) if got is None else spread(got, kind)
            row.append(got)
        out.append(tuple(row))
    return out


def _summed(sums_list, nk: int):
    """The duration sums of ``sums_list`` added up (None: none)."""
    if not sums_list:
        return None
    out = [[0, 0.0, 0.0] for _ in range(nk)]
    for sums in sums_list:
        for o, x in zip(out, sums):
            o[0] += x[0]
            o[1] += x[1]
            o[2] += x[2]
    return out


def start(kernel) -> FunctionCalls | None:
    """The calls counted for a kernel's function profiler, from now on."""
    prof = kernel.tracing.function_profiler if kernel.tracing is not None else None
    if prof is None:
        return None
    calls = prof.counter = FunctionCalls(kernel, prof)
    kernel.add_timer_hook(calls.run, skip=calls.run, observer=True)
    return calls
