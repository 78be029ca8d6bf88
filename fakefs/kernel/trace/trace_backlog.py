"""What tracing can still show of a gap: the tracing side of the lazy
catch-up (``Kernel.catch_up``, ``add_gap_watcher``).

Nobody looked at the kernel for a while.  Of that stretch, an array that
records in overwrite mode shows its last buffer-full on each CPU; its
counters (entries-written, overrun, the stackmap's successes, drops and
reference counts) show all of it.  So a gap is:

1. simulated in full for a *probe* at its start, long enough to measure what
   each recording CPU writes now (entries, bytes and stackmap uses per
   simulated ns): PROBE_ENTRIES on every such CPU, or PROBE_NS;
2. skipped up to a window before now in which, at those rates, every CPU
   fills its buffer MARGIN times over;
3. simulated in full to now.

When the kernel has caught up, the skipped time is counted at the rates
measured over all of the gap that was simulated in full (the probe and the
window: same settings, same model): its entries were written and then
overwritten (``written``, ``overrun``), pushing out the pages of the probe
they covered; the stackmap's uses are shared among the stacks it holds in
proportion to their uses (a stack first seen in skipped time is not
invented).

In non-overwrite mode the buffer keeps its *first* buffer-full: the gap is
simulated in full until every recording CPU has refused an entry, and the
rest are dropped events.  Function probes switch tracing and events on and
off, so an array with probes (or event triggers) needs the whole gap in full (the kernel caps
that at ``MAX_BACKLOG_NS``).

While anything is recorded, a stretch longer than TRACED_GAP_NS is a gap
(the kernel's own threshold is longer): simulating what tracing records
costs more than the time it takes.  Settings cannot change inside a gap: a
request that changes one catches the kernel up first.
"""

from __future__ import annotations

# while something is recorded, a stretch longer than this is a gap (what
# tracing records costs more to simulate than the time it takes)
TRACED_GAP_NS = 300_000_000
PROBE_NS = 200_000_000
PROBE_ENTRIES = 2000
MARGIN = 1.25


class _Meter:
    """One array's counters when the gap began, per CPU."""

    __slots__ = ("written", "bytes", "dropped", "successes", "drops")

    def __init__(self, tr):
        cpus = tr.buffer.cpus
        self.written = [cb.written for cb in cpus]
        self.bytes = [cb.bytes_written for cb in cpus]
        self.dropped = [cb.dropped for cb in cpus]
        smap = tr.stackmap
        self.successes = list(smap.successes) if smap is not None else None
        self.drops = list(smap.drops) if smap is not None else None


def recording(tr) -> bool:
    """Anything reaches ``tr``'s buffer: it records, with a tracer or events."""
    return tr.recording() and (bool(tr.enabled_events) or tr.current.name != "nop")


class TraceBacklog:
    """The gap watcher of every trace array."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.rng = kernel.subsystem_rng("trace_backlog")
        self.meters: dict = {}          # array -> _Meter, for the gap under way
        # the counter clock's reading at each instant the gap's simulation
        # asked where to go on from: its reading when the skip began
        self.counter_at: dict[int, int] = {}

    def gap_threshold(self) -> int:
        if any(recording(tr) for tr in self.kernel.tracing.arrays()):
            return TRACED_GAP_NS
        return 1 << 62

    def gap_begins(self, gap) -> None:
        self.meters = {tr: _Meter(tr) for tr in self.kernel.tracing.arrays() if recording(tr)}
        self.counter_at = {}

    def full_from(self, t: int, gap) -> int:
        tracing = self.kernel.tracing
        self.counter_at[t] = tracing.clocks.counter
        if any(tr.acts_on_itself() for tr in tracing.arrays()):
            return t
        if not self.meters:
            return gap.end
        full = gap.full
        h = gap.end
        for tr, m in self.meters.items():
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
        return h

    def gap_ends(self, gap) -> None:
        meters, self.meters = self.meters, {}
        if not gap.skipped or gap.full <= 0:
            return
        live = set(self.kernel.tracing.arrays())
        for tr, m in meters.items():
            if tr not in live:
                continue
            overwrite = tr.flag("overwrite")
            before = self._stamp(tr, gap)
            for c, cb in enumerate(tr.buffer.cpus):
                n = cb.written - m.written[c]
                if n <= 0:
                    continue
                cb.unrecorded(self._scale(n, gap), (cb.bytes_written - m.bytes[c]) * gap.skipped // gap.full,
                              before, overwrite)
            smap = tr.stackmap
            if smap is not None and m.successes is not None:
                for c in range(len(smap.successes)):
                    smap.unseen_lookups(self._scale(smap.successes[c] - m.successes[c], gap),
                                        self._scale(smap.drops[c] - m.drops[c], gap), c, self.rng)

    def _stamp(self, tr, gap) -> int:
        """The end of the skip as ``tr``'s entries are stamped (its clock):
        what is older was there before the skip."""
        reader = tr.clock_reader
        if reader is None:
            return gap.skip_end
        if tr.clock == "counter":
            return self.counter_at.get(gap.skip_end - gap.skipped, self.kernel.tracing.clocks.counter) + 1
        return reader(gap.skip_end)

    def _scale(self, n: int, gap) -> int:
        """``n`` things in the gap's full part: how many in its skipped time
        (the fraction rounded at random, so that the expectation is kept)."""
        if n <= 0:
            return 0
        x = n * gap.skipped / gap.full
        k = int(x)
        return k + (self.rng.random() < x - k)
