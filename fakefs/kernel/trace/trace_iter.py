"""Reading a trace array's ring buffer as text (kernel/trace/trace.c's
``trace_iterator``): ``trace`` (a snapshot, text made as it is read),
``trace_pipe`` (consuming, blocking), and the ``per_cpu/cpuN/stats`` counters.
"""

from __future__ import annotations

import heapq
from itertools import islice, repeat

from ..cpu import num_online_cpus
from ..fs.pseudo import WouldBlock, POLLIN, POLLRDNORM
from .trace_output import (LAT_HELP_HEADER, TraceFormatter, func_help_header, ns2usecs,
                           print_trace_header)
from .trace_clock import clock_in_ns
from .trace_ref import ArrayFileOps

# a trace_seq's text: TRACE_SEQ_SIZE (8192) less its other fields (64-bit)
SEQ_BUFFER_SIZE = 8192 - (24 + 8 + 4)


def formatter(tr) -> TraceFormatter:
    if tr.formatter is None:
        tr.formatter = TraceFormatter(tr)
    return tr.formatter


class PipeWait:
    """What a consuming reader that found nothing waits for
    (``ring_buffer_wait()`` on its CPU's, or every CPU's, waiters): the
    buffer it reads (``ops.ring(tr)``, else ``tr.buffer``) written to,
    overwritten, reset or swapped, or tracing switched on or off
    (``rb_simple_write()`` wakes the waiters: a reader that read something
    gets EOF once tracing is off).  Readers of one file share a ``key``;
    ``token()`` changes with any of those (a reader woken by it reads
    again and may wait once more)."""

    __slots__ = ("tr", "cpu", "ops")

    def __init__(self, tr, cpu, ops=None):
        self.tr = tr
        self.cpu = cpu
        self.ops = ops

    @property
    def key(self) -> tuple:
        return (id(self.tr), self.cpu, id(self.ops))

    def token(self) -> tuple:
        tr = self.tr
        buf = tr.buffer if self.ops is None else self.ops.ring(tr)
        cpus = buf.cpus if self.cpu is None else (buf.cpus[self.cpu],)
        # entries + read: what a consuming reader takes changes nothing
        # (the kernel wakes no waiter for it); a reset zeroes them all
        return (tr.tracing_is_on(), id(buf),
                tuple([(id(cb), cb.written, cb.entries + cb.read, cb.overrun) for cb in cpus]))


# --- trace / trace_pipe ------------------------------------------------------

def merged_events(buf, cpu=None):
    """All entries of the ring buffer ``buf`` (of one CPU) in timestamp
    order, each as (entry, cpu): an iterator over the entries the buffers
    hold now (taken at the call), merged as it is read."""
    cpus = buf.cpus if cpu is None else [buf.cpus[cpu]]
    streams = [zip(cb.iter_events(), repeat(cb.cpu)) for cb in cpus]
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=_stamp_of)


def _stamp_of(item) -> int:
    return item[0][0]


def consume_next(buf, cpu=None):
    """A consuming reader's next entry of ``buf`` (of one CPU): the oldest
    at the head of a CPU, taken off it, as (entry, cpu, events the writer
    overwrote before it); None when empty."""
    cpus = buf.cpus if cpu is None else [buf.cpus[cpu]]
    best = None
    for cb in cpus:
        e = cb.peek()
        if e is not None and (best is None or e[0] < best[1][0]):
            best = (cb, e)
    if best is None:
        return None
    cb = best[0]
    cb.consume()
    return best[1], cb.cpu, cb.lost_events()


class TraceIter:
    """Per-open state of ``trace``: the line generator over the snapshot
    (None before the first read, False once exhausted) and the text made
    but not yet read (``buf``, starting at offset ``base``); ``pinned``: the
    per-CPU buffers its open keeps from being resized (a reader's
    ``ring_buffer_read_start()``)."""

    __slots__ = ("paused", "lat", "lines", "buf", "base", "pinned")

    def __init__(self, paused: bool, lat: bool):
        self.paused = paused
        self.lat = lat                # latency-format when opened (TRACE_FILE_LAT_FMT)
        self.lines = None
        self.buf = bytearray()
        self.base = 0
        self.pinned: list = []


class TraceOps(ArrayFileOps):
    """``trace``: a static view; opening with O_TRUNC clears the buffer.

    Text is produced lazily from the snapshot of entries taken when a read
    starts at offset 0, so a reader with any block size sees one consistent
    snapshot and ``head`` does not pay for the whole buffer.
    """

    def __init__(self, cpu=None):
        self.cpu = cpu

    def open(self, f):
        tr = f.data
        if f.trunc:
            # a latency tracer's ``trace`` clears the max buffer it shows
            ring = self.ring(tr)
            if ring is not tr.buffer:
                if self.cpu is None:
                    ring.reset()
                    ring.time_start = tr.clock_now()
                else:
                    ring.cpus[self.cpu].reset()
            elif self.cpu is None:
                tr.reset_buffer()
            else:
                tr.buffer.cpus[self.cpu].reset()
        # pause-on-trace: recording stops while the file is open for reading
        f.private = TraceIter(paused=f.readable and tr.flag("pause-on-trace"),
                              lat=tr.flag("latency-format"))
        if f.private.paused:
            tr.buffer.record_disabled += 1
        if f.readable:
            self.pin(f, tr)
        super().open(f)

    def pin(self, f, tr) -> None:
        """``ring_buffer_read_start()`` of every CPU the reader shows: those
        buffers cannot be resized until the release."""
        buf = self.ring(tr)
        pinned = f.private.pinned = list(buf.cpus) if self.cpu is None else [buf.cpus[self.cpu]]
        for cb in pinned:
            cb.resize_disabled += 1

    def release(self, f):
        if f.private.paused:
            f.data.buffer.record_disabled -= 1
        for cb in f.private.pinned:
            cb.resize_disabled -= 1
        super().release(f)

    def read_observes(self, f, off):
        """Paused since the open (which caught up), nothing new is recorded."""
        return off == 0 and not f.private.paused

    def write(self, f, data):
        return len(data)     # writes are accepted; only O_TRUNC clears

    def ring(self, tr):
        """The buffer the file shows (``iter->array_buffer``): a latency
        tracer's ``trace`` shows the max buffer (``print_max``)."""
        return tr.max_buffer if tr.current.print_max and tr.max_buffer is not None else tr.buffer

    def empty_help(self, tr, buf):
        """Text shown instead of the column header (the snapshot file's
        help while it is empty), or None."""
        return None

    def _generate(self, f):
        tr = f.data
        buf = self.ring(tr)
        events = iter(merged_events(buf, self.cpu))
        shown = buf.cpus if self.cpu is None else [buf.cpus[self.cpu]]
        nonempty = any(cb.entries for cb in shown)
        # the header counts every CPU's entries, per_cpu/cpuN/trace's too
        # (get_total_entries()), and the overruns of any CPU make annotations
        cpus = buf.cpus
        if buf is tr.max_buffer and tr.current.print_max:
            # tracing_iter_reset(): a max buffer's CPUs may hold entries from
            # before the section (no reset took place there): skipped, and
            # a CPU with skipped entries counts no overruns
            since = buf.time_start
            entries = total = 0
            for cb in cpus:
                n = cb.counted_entries()
                skipped = sum(1 for e in cb.iter_events() if e[0] < since) if n else 0
                entries += n - skipped
                total += n - skipped if skipped else n + cb.overrun
            events = (item for item in events if item[0][0] >= since)
            nonempty = any(e[0] >= since for cb in shown for e in cb.iter_events())
        else:
            entries = sum(cb.counted_entries() for cb in cpus)
            total = entries + sum(cb.overrun for cb in cpus)
        annotate = tr.flag("annotate") and any(cb.overrun for cb in cpus)
        help_text = self.empty_help(tr, buf)
        lat = f.private.lat
        verbose = tr.flag("verbose")
        # test_cpu_buff_start() belongs to the normal printer only
        annotate = annotate and not any(tr.flag(o) for o in ("bin", "hex", "raw"))

        view = tr.current.text_view(tr, formatter(tr), lat)
        if view is not None:
            return self._view_text(tr, view, buf, help_text, nonempty, entries, total)

        def gen():
            yield "# tracer: %s\n#\n" % tr.current.name
            if help_text is not None:
                yield help_text
            elif not tr.flag("context-info"):
                pass
            elif lat:                   # trace_default_header(): nothing for an empty buffer
                if nonempty:
                    yield print_trace_header(tr, entries, total, buf)
                    if not verbose:
                        yield LAT_HELP_HEADER
            elif not verbose:
                yield func_help_header(tr, entries, total, num_online_cpus(tr.kernel))
            line = formatter(tr).printer(lat, buf)
            if not annotate and not lat:       # the next entry matters to neither
                while True:
                    chunk = list(islice(events, 256))
                    if not chunk:
                        return
                    yield "".join([line(e, cpu) for e, cpu in chunk])
            started = set()
            prev = next(events, None)
            idx = 0
            while prev is not None:
                e, cpu = prev
                prev = next(events, None)
                if annotate and cpu not in started:
                    started.add(cpu)
                    if idx:
                        yield "##### CPU %u buffer started ####\n" % cpu
                yield line(e, cpu, prev[0][0] if prev is not None else None, idx)
                idx += 1
        return gen()

    def _view_text(self, tr, view, buf, help_text, nonempty, entries, total):
        """The text of a tracer with a printer of its own (``text_view()``)."""
        cpus = buf.cpus if self.cpu is None else [buf.cpus[self.cpu]]
        streams = [(cb.cpu, iter(cb.iter_events())) for cb in cpus]

        def gen():
            yield "# tracer: %s\n#\n" % tr.current.name
            if help_text is not None:
                yield help_text
            else:
                yield view.header(nonempty, lambda: print_trace_header(tr, entries, total))
            yield from view.lines(streams)
        return gen()

    def read(self, f, off, size):
        it = f.private
        if off == 0 or it.lines is None or off < it.base:
            it.lines = self._generate(f)
            it.buf = bytearray()
            it.base = 0
        want = off + size
        while it.base + len(it.buf) < want and it.lines:
            chunk = []
            n = 0
            for s in it.lines:
                chunk.append(s)
                n += len(s)
                if n >= 65536:
                    break
            else:
                it.lines = False          # exhausted
            it.buf += "".join(chunk).encode("latin-1", "replace")
        del it.buf[:off - it.base]        # what was read is not kept
        it.base = off
        return bytes(it.buf[:size])


class TracePipeOps(ArrayFileOps):
    """``trace_pipe``: consuming reads that block while the buffer is empty."""

    nonseekable = True

    def __init__(self, cpu=None):
        self.cpu = cpu

    def open(self, f):
        # pending: the rest of the text of the last read (trace_seq_to_user()
        # hands it out first, alone); held: an entry whose line did not fit
        # in the text buffer (the kernel leaves it in the ring, printed again)
        f.private = {"pos": 0, "pending": b"", "held": None,
                     "lat": f.data.flag("latency-format")}
        super().open(f)

    def read(self, f, off, size):
        """``tracing_read_pipe()``: lines into a text buffer of
        SEQ_BUFFER_SIZE until it holds ``size`` bytes (the line that gets it
        there is consumed whole; one that does not fit is left for the next
        read), then ``size`` bytes of it; the rest comes with the next read."""
        tr = f.data
        st = f.private
        if st["pending"]:
            out, st["pending"] = st["pending"][:size], st["pending"][size:]
            st["pos"] += len(out)
            return out
        cnt = min(size, SEQ_BUFFER_SIZE - 1)
        seq = bytearray()
        # a consuming reader's latency columns: the entry is still at the
        # head of its CPU when printed, so it is its own "next" (delay 0),
        # and the index counts from 1 at each read (trace_iterator_reset())
        text = self._view_printer(tr, st) or formatter(tr).printer(st["lat"])
        idx = 0
        while len(seq) < cnt:
            ev, st["held"] = st["held"], None
            if ev is None:
                ev = consume_next(tr.buffer, self.cpu)
                if ev is None:
                    break
            idx += 1
            line = text(ev[0], ev[1], None, idx).encode("latin-1", "replace")
            if ev[2]:           # print_trace_line(): what the writer overwrote first
                line = b"CPU:%d [LOST %d EVENTS]\n" % (ev[1], ev[2]) + line
            if len(seq) + len(line) > SEQ_BUFFER_SIZE - 1:
                if not seq:
                    seq += b"[LINE TOO BIG]\n"
                else:
                    st["held"] = ev
                break
            seq += line
        if not seq:
            # tracing_wait_pipe(): EOF once something was read and tracing is off
            if not tr.tracing_is_on() and st["pos"]:
                return b""
            raise WouldBlock(PipeWait(tr, self.cpu))
        out, st["pending"] = bytes(seq[:size]), bytes(seq[size:])
        st["pos"] += len(out)
        return out

    def _view_printer(self, tr, st):
        """A printer of the current tracer's own (``text_view()``, made at
        the first read and kept with the open file, as ``pipe_open``), or
        None; a line may take the next entry of its CPU too (a leaf's return)."""
        view = st.get("view")
        if view is None or view[0] is not tr.current:
            st["view"] = view = (tr.current, tr.current.text_view(tr, formatter(tr), st["lat"]))
        view = view[1]
        if view is None:
            return None

        def text(e, cpu, _next=None, _idx=0):
            cb = tr.buffer.cpus[cpu]
            s, took = view.line(e, cpu, cb.peek())
            if took:
                cb.consume()
            return s
        return text

    def poll(self, f):
        """``trace_poll()``: readable at once with ``options/block``; else
        the top-level file when any CPU has an entry, a per-CPU file when
        its buffer reached ``buffer_percent`` (trace_buffer_files)."""
        tr = f.data
        if tr.flag("block"):
            return POLLIN | POLLRDNORM
        if f.private["pending"] or f.private["held"] is not None:
            return POLLIN | POLLRDNORM
        if self.cpu is None:
            ready = not all(cb.empty() for cb in tr.buffer.cpus)
        else:
            ready = tr.buffer.cpus[self.cpu].watermark_hit(tr.buffer_percent)
        return POLLIN | POLLRDNORM if ready else 0


class CpuStatsOps(ArrayFileOps):
    def __init__(self, cpu):
        self.cpu = cpu

    def show(self, f):
        tr = f.data
        cb = tr.buffer.cpus[self.cpu]
        old = cb.oldest_ts()
        now = tr.clock_now()
        in_ns = clock_in_ns(tr.clock)

        def t(ns):
            if not in_ns:                    # counter or tsc: the reading itself
                return "%d" % ns
            us = ns2usecs(ns)
            return "%5d.%06d" % (us // 1_000_000, us % 1_000_000)
        return ("entries: %d\noverrun: %d\ncommit overrun: %d\nbytes: %d\n"
                "oldest event ts: %s\nnow ts: %s\ndropped events: %d\nread events: %d\n"
                % (cb.counted_entries(), cb.overrun, cb.commit_overrun, cb.counted_bytes(),
                   t(old), t(now),
                   cb.dropped, cb.read))


