"""What tracing can still show of a gap: the tracing side of the lazy
catch-up (``Timekeeper.catch_up``, ``add_gap_watcher``).

Nobody looked at the kernel for a while.  Of that stretch, an array that
records in overwrite mode shows its last buffer-full on each CPU; its
counters (entries-written, overrun, the stackmap's successes, drops and
reference counts) show all of it.  So a gap is:

1. simulated in full for a *probe* at its start, long enough to measure what
   each recording CPU writes now (entries, bytes and stackmap uses per
   simulated ns): PROBE_ENTRIES on every such CPU, or PROBE_NS (but
   EMPTY_PROBE_NS while a CPU wrote nothing: a rare call or event);
2. skipped up to a window before now in which, at those rates, every CPU
   fills its buffer MARGIN times over (``window_from``);
3. simulated in full to now.  Where the kernel simulates more than that
   window (the machine needs its last GAP_WINDOW_NS, see ``catch_up``), the
   time before the window is *quiet*: the machine runs, tracing records
   nothing (``untraced``), and that time is counted like the skipped.

When the kernel has caught up, the skipped time is counted at the rates
measured over all of the gap that was simulated in full (the probe and the
window: same settings, same model), per CPU by the time it was awake (a
halted CPU does nothing: ``_hidden``; in the quiet steps as the machine ran,
in the skip at the CPU's share of the time simulated): its entries were written and then
overwritten (``written``, ``overrun``), pushing out the pages of the probe
they covered beyond the room the buffer still had (sparse entries, a
filtered tracer's, stay); the stackmap's uses are shared among the stacks
it holds in proportion to their uses (a stack first seen in skipped time is not
invented).

In non-overwrite mode the buffer keeps its *first* buffer-full: the gap is
simulated in full until every recording CPU has refused an entry, and the
rest are dropped events.

Function probes and event triggers may switch tracing or events on and off,
take snapshots, dump or count into histograms.  While one of them can still
change something at its next hit (``may_act``: a traceoff while tracing is
on, an enable_event of a disabled event, any snapshot, dump or histogram)
the gap is simulated in full.
Once none can (tracing switched off for good, the counts used up, the
events already in the state the triggers put them in), what they do is a
rate like the rest: a counted stacktrace trigger or probe loses the calls of
the skipped time from its count, and its stacks are entries of the buffer.
An array that started recording during the gap is measured from then on.

Nothing bounds what the full parts cost: all that can be seen is
simulated (a move of the virtual clock is the work asked for; in-process,
nobody waits).  A mount never makes a gap while something records: its
runner keeps the machine at the host's time, and a machine that falls
behind is stepped in full while requests are served at the instant it
reached (``fuse/runner.py``).

A skip stops at what a followed real process did (``Timekeeper._shown_first``):
a moment of each fork, exec or exit is simulated in full and traced, even
before the window (``traced_needs``).

While anything is recorded, a stretch longer than TRACED_GAP_NS nobody saw
(in-process, or a move of the virtual clock) is a gap
(the kernel's own threshold is longer): simulating what tracing records
costs more than the time it takes (a gap simulates the machine's last
GAP_WINDOW_NS and a probe in any case, so a shorter threshold would not
pay).  Settings cannot change inside a gap: a request that changes one
catches the kernel up first.
"""

from __future__ import annotations

from ..kernel.trace.ftrace_probes import hit_counted_probes, probes_may_act
from .call_rates import AwakeTime
from ..kernel.trace.trace_events_trigger import hit_counted_triggers, triggers_may_act

# while something is recorded, a stretch longer than this is a gap (what
# tracing records costs more to simulate than the time it takes)
TRACED_GAP_NS = 300_000_000
PROBE_NS = 200_000_000
PROBE_ENTRIES = 2000
# a CPU that wrote nothing in PROBE_NS (a rare call or event) is measured
# this long before its rate counts as nothing
EMPTY_PROBE_NS = 1_000_000_000
# the window is this many times the time the probe's rate fills a buffer
# in: a CPU writes only while it is awake, and its share of awake time
# moves (0.44-0.62 over 600 ms, seed 1); at 1.25 buffer-fulls some buffers
# still held the probe's entries, which the skip's pushed out (test_window's
# held half missing in 2 runs of 8 under load; at 2.0, in none of 8)
MARGIN = 2.0


class _Meter:
    """One array's counters when its measure began (the gap's start, or
    when it started recording in the gap: ``full``, the ns of the gap
    simulated in full by then), per CPU, and the counts of its counted
    stacktrace triggers and probes."""

    __slots__ = ("full", "written", "bytes", "dropped", "successes", "drops",
                 "trigger_counts", "probe_counts")

    def __init__(self, tr, full: int = 0):
        self.full = full
        cpus = tr.buffer.cpus
        self.written = [cb.written for cb in cpus]
        self.bytes = [cb.bytes_written for cb in cpus]
        self.dropped = [cb.dropped for cb in cpus]
        smap = tr.stackmap
        self.successes = list(smap.successes) if smap is not None else None
        self.drops = list(smap.drops) if smap is not None else None
        self.trigger_counts = [(d, d.count) for d in hit_counted_triggers(tr)]
        ops = tr.ftrace_ops
        self.probe_counts = [(p, rec, p.entries[rec]) for p, rec in hit_counted_probes(ops)] \
            if ops is not None else []


def recording(tr) -> bool:
    """Anything reaches ``tr``'s buffer: it records, with a tracer or events."""
    return tr.recording() and (bool(tr.enabled_events) or tr.current.name != "nop")


def may_act(tr) -> bool:
    """A trigger or probe of ``tr`` may still change what it records or
    shows (see the module's text)."""
    if tr.event_triggers and triggers_may_act(tr):
        return True
    ops = tr.ftrace_ops
    return ops is not None and bool(ops.probes) and probes_may_act(ops)


class TraceBacklog:
    """The gap watcher of every trace array (``trace_activity.backlog``)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.rng = kernel.subsystem_rng("trace_backlog")
        self.meters: dict = {}          # array -> _Meter, for the gap under way
        # the gap's window (where recording goes on again after the skip),
        # the ns before it simulated quiet, where the quiet time ended, and
        # the counter clock's reading then
        self.window_from: int | None = None
        self.quiet = 0
        # of the gap under way, per CPU, the ns it was awake (not halted:
        # ``Scheduler.halted_spans``) in its quiet steps and in the steps
        # simulated in full, and how long those were (a halted CPU does
        # nothing: quiet time counts as the awake time in it)
        self.quiet_awake: list[int] = [0] * kernel.nr_cpus
        self.full_awake: list[int] = [0] * kernel.nr_cpus
        self.full_steps = 0
        self.quiet_end = 0
        self.quiet_counter = 0
        # the counter clock's reading at each instant the gap's simulation
        # asked where to go on from: its reading when the skip began
        self.counter_at: dict[int, int] = {}

    def gap_threshold(self) -> int:
        tracing = self.kernel.tracing          # the instances not engaged record nothing
        if recording(tracing.global_trace) or any(recording(tr) for tr in tracing.engaged):
            return TRACED_GAP_NS
        return 1 << 62

    def gap_begins(self, gap) -> None:
        self.meters = {tr: _Meter(tr) for tr in self.kernel.tracing.arrays() if recording(tr)}
        self.counter_at = {}
        self.window_from = None
        self.quiet = 0

    def boundary(self) -> int | None:
        """Where the window of the gap under way begins (before it, steps
        are quiet), once known."""
        return self.window_from

    def untraced(self, t0: int, t1: int) -> bool:
        """Is the step [t0, t1), which the machine ran, quiet?  Counts it
        (``quiet_step`` then ``account``)."""
        quiet = self.quiet_step(t0, t1)
        self.account(t0, t1, quiet)
        return quiet

    def quiet_step(self, t0: int, t1: int) -> bool:
        """Will the step [t0, t1) be quiet (before the window of the gap
        under way: the machine runs, nothing is recorded)?  Asked before
        the machine runs it."""
        w = self.window_from
        return not (w is None or t1 > w
                    or any(fn(t0, t1) for fn in self.kernel.trace_hits.traced_needs))

    def account(self, t0: int, t1: int, quiet: bool) -> None:
        """The machine ran the step [t0, t1), quiet or not: its awake time
        goes to the counts of the steps simulated in full or of the quiet
        ones."""
        if not quiet:
            if self.meters:
                for c, a in enumerate(self._awake(t0, t1)):
                    self.full_awake[c] += a
                self.full_steps += t1 - t0
            return
        for c, a in enumerate(self._awake(t0, t1)):
            self.quiet_awake[c] += a
        self.quiet += t1 - t0
        self.quiet_end = t1
        self.quiet_counter = self.kernel.tracing.clocks.counter

    def _awake(self, t0: int, t1: int) -> list[int]:
        """Per CPU, the ns of [t0, t1) it was awake."""
        sched = self.kernel.sched
        return [AwakeTime(sched, c, t0, t1).ns for c in range(len(self.full_awake))]

    def _hidden(self, c: int, skipped: int, quiet: int) -> int:
        """The ns of the gap in which CPU ``c`` did, in the skip and the
        quiet steps, what it did in the steps simulated in full: a halted
        CPU does nothing, so what counts is the time it was awake (in the
        quiet steps as the machine ran, in the skip at its share of the
        time simulated since boot), as ns of the full steps (at their share)."""
        if not self.full_awake[c]:
            return skipped + quiet
        awake = self.quiet_awake[c] + skipped * self.kernel.sched.awake_share(c, self.kernel.sim_time)
        return round(awake * self.full_steps / self.full_awake[c])

    def full_from(self, t: int, gap) -> int:
        tracing = self.kernel.tracing
        self.counter_at[t] = tracing.clocks.counter
        if gap.skipped or self.window_from is not None:
            return t                           # the window at the end is set: to its end
        arrays = list(tracing.arrays())
        for tr in arrays:
            if tr not in self.meters and recording(tr):
                self.meters[tr] = _Meter(tr, gap.full)     # switched on in the gap
        if any(tr.acts_on_itself() and may_act(tr) for tr in arrays):
            return t                           # what it does next is not a rate yet
        h = gap.end
        for tr, m in self.meters.items():
            if not recording(tr):
                continue                       # switched off for good: nothing to fill
            full = gap.full - m.full
            cpus = tr.buffer.cpus
            wrote = [cb.written - m.written[c] for c, cb in enumerate(cpus)]
            if full < PROBE_NS and min(wrote) < PROBE_ENTRIES:
                return t                                   # still measuring
            if not tr.flag("overwrite"):
                if any(n and cb.dropped == m.dropped[c] for c, (n, cb) in enumerate(zip(wrote, cpus))):
                    return t                               # a buffer still takes entries
                continue
            for c, cb in enumerate(cpus):
                nbytes = cb.bytes_written - m.bytes[c]
                if nbytes > 0 and full > 0:
                    fill = cb.nr_pages * cb.subbuf_size * full // nbytes
                    h = min(h, gap.end - int(fill * MARGIN))
                elif tr.cpumask >> c & 1 and full < EMPTY_PROBE_NS:
                    return t             # nothing yet: a rare call or event, still measuring
        if h > t:
            self.window_from = h
        return h

    def gap_ends(self, gap) -> None:
        meters, self.meters = self.meters, {}
        quiet, self.quiet, self.window_from = self.quiet, 0, None
        try:
            self._count_hidden(gap, meters, quiet)
        finally:
            self.quiet_awake = [0] * len(self.quiet_awake)
            self.full_awake = [0] * len(self.full_awake)
            self.full_steps = 0

    def _count_hidden(self, gap, meters: dict, quiet: int) -> None:
        hidden = gap.skipped + quiet           # ns nothing recorded
        if hidden <= 0 or gap.full - quiet <= 0:
            return
        live = set(self.kernel.tracing.arrays())
        for tr, m in meters.items():
            # what it did in the skip it does now: nothing could change it
            if tr not in live or not recording(tr):
                continue
            full = gap.full - quiet - m.full
            if full <= 0:
                continue
            overwrite = tr.flag("overwrite")
            before = self._stamp(tr, gap, quiet)
            for c, cb in enumerate(tr.buffer.cpus):
                n = cb.written - m.written[c]
                if n <= 0:
                    continue
                hid = self._hidden(c, gap.skipped, quiet)
                cb.unrecorded(self._scale(n, hid, full), (cb.bytes_written - m.bytes[c]) * hid // full,
                              before, overwrite)
            smap = tr.stackmap
            if smap is not None and m.successes is not None:
                for c in range(len(smap.successes)):
                    hid = self._hidden(c, gap.skipped, quiet)
                    smap.unseen_lookups(self._scale(smap.successes[c] - m.successes[c], hid, full),
                                        self._scale(smap.drops[c] - m.drops[c], hid, full), c, self.rng)
            self._use_counts(tr, m, hidden, full)

    def _use_counts(self, tr, m: _Meter, hidden: int, full: int) -> None:
        """Counted stacktrace triggers and probes: the hits of the skipped
        time come off their counts, at the rate of the full parts."""
        for d, before in m.trigger_counts:
            used = before - d.count
            if used > 0 and d.count > 0:
                d.count = max(0, d.count - self._scale(used, hidden, full))
        changed = False
        for probe, rec, before in m.probe_counts:
            now = probe.entries.get(rec)
            if now is None or now <= 0 or before - now <= 0:
                continue
            probe.entries[rec] = max(0, now - self._scale(before - now, hidden, full))
            changed = True
        if changed:
            tr.ftrace_ops.count_changed()

    def _stamp(self, tr, gap, quiet: int) -> int:
        """The end of what nothing recorded (the skip, and the quiet time
        after it if any) as ``tr``'s entries are stamped (its clock): what
        is older was there before."""
        reader = tr.clock_reader
        end = self.quiet_end if quiet else gap.skip_end
        if reader is None:
            return end
        if tr.clock == "counter":
            if quiet:
                return self.quiet_counter + 1
            # (the counter stands still in a skip: its reading where the last one ended)
            return self.counter_at.get(gap.skip_end, self.kernel.tracing.clocks.counter) + 1
        return reader(end)

    def _scale(self, n: int, hidden: int, full: int) -> int:
        """``n`` things in ``full`` ns of the gap recorded: how many in its
        ``hidden`` ns (skipped or quiet; the fraction rounded at random, so
        that the expectation is kept)."""
        if n <= 0:
            return 0
        x = n * hidden / full
        k = int(x)
        return k + (self.rng.random() < x - k)


def start(kernel) -> TraceBacklog | None:
    """The gap watcher of a kernel that traces (``trace_activity.backlog``)."""
    act = kernel.trace_activity
    if act is None:
        return None
    act.backlog = backlog = TraceBacklog(kernel)
    kernel.add_gap_watcher(backlog)
    return backlog
