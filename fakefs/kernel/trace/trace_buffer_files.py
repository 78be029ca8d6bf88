"""More files of kernel/trace/trace.c: the ring buffer's sub-buffer size
(``buffer_subbuf_size_kb``), the watermark of per-CPU readers
(``buffer_percent``), binary markers (``trace_marker_raw``), the saved
tgids (``saved_tgids``) and the binary per-CPU reader
(``per_cpu/cpuN/trace_pipe_raw``).

``buffer_percent`` is what a poll of ``per_cpu/cpuN/trace_pipe`` waits for
(``trace_poll()`` -> ``ring_buffer_poll_wait()`` with the array's
percentage): the CPU's buffer must be that full, in sub-buffers, before the
file polls readable; 0 means any entry.  A read blocks only until the first
entry (``tracing_wait_pipe()`` waits with 0), the top-level ``trace_pipe``
polls readable on any entry, and ``options/block`` makes every poll
readable at once.  ``trace_pipe_raw`` polls the same way.  (Its splice,
which also waits for the watermark, is not modelled: through FUSE a splice
goes through the page cache of a file of size 0 and gets nothing.)

``trace_pipe_raw`` (``tracing_buffers_read()``) gives the CPU's buffer a
sub-buffer page at a time in the ring buffer's binary format
(``ring_buffer_page.py``, records by ``trace_events_raw.py``), consuming
what it gives like ``trace_pipe``.  A read takes a page
(``ring_buffer_read_page()`` with the read's size as the room for events)
and returns it from its start, up to the read's size; later reads return
the rest of that page before a new one is taken.  An empty buffer blocks
the read (EAGAIN with O_NONBLOCK) until an entry comes, whether tracing is
on or not; a buffer whose first event does not fit in the read's size
returns 0 bytes.

A ``trace_marker_raw`` entry shows, after ``# <id> buf:``, every byte of
the event's data past the id, as the kernel does: the bytes written, then
the padding the reservation adds (at least the 4 bytes the kernel
reserves beyond the data, up to the 4-byte alignment).  The kernel shows
whatever that padding held; its sub-buffers are allocated zeroed and this
model never reuses one, so it shows ``00``.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import POLLIN, POLLRDNORM, FileOperations, KernelError, WouldBlock, later
from ..lib.kstrtox import ULONG_MAX
from .trace_parser import user_ulong
from . import trace_entries as te
from .ring_buffer import PAGE_SIZE, RB_MAX_SMALL_DATA, event_length
from .ring_buffer_page import read_page
from .trace_events_raw import RecordEncoder
from .trace_iter import PipeWait
from .trace_ref import ArrayFileOps

FAULTED_SIZE = len("<faulted>")
RAW_DATA_HDR = te.TRACE_ENTRY_HDR + 4            # struct raw_data_entry before buf[]
FAULT_SIZE_ID = FAULTED_SIZE + 4
SUBBUF_ORDER_MAX = 7                             # "between 1 and 128 system pages"


def subbuf_order_for(kb: int) -> int:
    """buffer_subbuf_size_write(): the order of ``kb`` KB, with the
    kernel's arithmetic (unsigned long KB << 10, pages in an int, fls of
    pages - 1 as unsigned); > SUBBUF_ORDER_MAX means EINVAL."""
    val = (kb * 1024) & ULONG_MAX
    pages = (((val + PAGE_SIZE - 1) & ULONG_MAX) // PAGE_SIZE) & 0xFFFFFFFF
    return ((pages - 1) & 0xFFFFFFFF).bit_length()


def set_subbuf_order(tr, order: int) -> None:
    """The array's buffer takes ``order``, then its snapshot buffer if
    allocated (both must have the same); when the snapshot's fails, the
    main buffer goes back to its order (errors as KernelError)."""
    mem = tr.tracing.buffer_memory()
    main = tr.buffer
    old = main.subbuf_order
    err = main.set_subbuf_order(order, mem)
    if not err and tr.allocated_snapshot:
        err = tr.max_buffer.set_subbuf_order(order, mem)
        if err:
            main.set_subbuf_order(old, mem)
    if err:
        raise KernelError(-err)


class BufferSubbufSizeOps(ArrayFileOps):
    """buffer_subbuf_size_kb: the sub-buffer size in KB; a write rounds up
    to a power of two of pages, 1 to 128 of them, else EINVAL."""

    observes = False

    def show(self, f):
        return "%d\n" % ((PAGE_SIZE << f.data.buffer.subbuf_order) // 1024)

    def write(self, f, data):
        tr = f.data
        order = subbuf_order_for(user_ulong(data))
        if order > SUBBUF_ORDER_MAX:
            raise KernelError(errno.EINVAL)
        if order != tr.buffer.subbuf_order:
            set_subbuf_order(tr, order)
        return len(data)


class BufferPercentOps(ArrayFileOps):
    """buffer_percent: 0..100 (default 50), see the module's doc."""

    observes = False

    def show(self, f):
        return "%d\n" % f.data.buffer_percent

    def write(self, f, data):
        val = user_ulong(data)
        if val > 100:
            raise KernelError(errno.EINVAL)
        f.data.buffer_percent = val
        return len(data)


def marker_writer(tr, f, write):
    """``write(pid, cpu, ns)`` of who writes a marker, where and when.  On
    a machine, the writer runs its write on a CPU as a task of its own (with
    the host's pid when the kernel follows the real processes, else with a
    pid of the machine's: ``HostProcesses.own_pid``; its comm is read from
    the host when it is new), its comm saved as any task's (``record-cmd``),
    and everything the machine did before is traced first: the write is a
    ``Later`` for the instant after the writer's (its caller moves the
    machine there)."""
    k = tr.kernel
    if k.driver is None or not f.pid:
        if tr.flag("record-cmd"):
            tr.tracing.save_cmdline(f.pid)
        return write(f.pid, 0, k.sim_time)
    pid, cpu, ts = k.driver.host_task(f.pid, k.sim_time)
    if tr.flag("record-cmd") and pid == f.pid:
        tr.tracing.save_cmdline(pid)
    return later(k, ts + 1, lambda: write(pid, cpu, ts))


def raw_data_shown(size: int) -> int:
    """Bytes of buf[] the trace shows for a raw_data entry of ``size``
    reserved bytes: the event's data length (``ring_buffer_event_length()``
    of the reserved event) less the id and the entry header."""
    length = event_length(size)
    data = length - 4 if length - 4 <= RB_MAX_SMALL_DATA + 4 else length - 8
    return data - RAW_DATA_HDR


class TraceMarkerRawOps(ArrayFileOps):
    """trace_marker_raw: a write of a 4-byte id (native endian) and data
    becomes one TRACE_RAW_DATA entry; too short or too long for one event
    is EINVAL, never cut (``tracing_mark_raw_write()``)."""

    writes_data = True

    def write(self, f, data):
        tr = f.data
        if not tr.flag("markers"):
            raise KernelError(errno.EINVAL)
        cnt = len(data)
        if cnt < 4:
            raise KernelError(errno.EINVAL)
        size = RAW_DATA_HDR + cnt
        if cnt < FAULT_SIZE_ID:
            size += FAULT_SIZE_ID - cnt
        if size > tr.buffer.max_event_size():
            raise KernelError(errno.EINVAL)
        if not tr.recording():
            raise KernelError(errno.EBADF)     # the reservation fails: "as if not open for write"
        tr.ensure_expanded()

        def write(pid, cpu, ts):
            buf = bytes(data[4:]).ljust(raw_data_shown(size), b"\0")
            entry = (ts, te.TRACE_RAW_DATA, pid, tr.kernel.sched.flags(cpu, 0), 0,
                     int.from_bytes(data[:4], "little"), buf)
            if not (tr.reserves_on(cpu) and tr.write_entry(cpu, entry, size)):
                raise KernelError(errno.EBADF)     # a CPU out of tracing_cpumask, a full buffer
            return cnt
        return marker_writer(tr, f, write)


class SavedTgidsOps(FileOperations):
    """saved_tgids (top level): ``pid tgid`` of the saved pids."""

    def show(self, f):
        return f.data.tracing.tgids.text()


class BufferInfo:
    """Per-open state of ``trace_pipe_raw`` (``struct ftrace_buffer_info``):
    the page read last (``spare``) and how much of it was returned."""

    __slots__ = ("spare", "read", "encoder", "closed")

    def __init__(self, encoder):
        self.spare = b""
        self.read = 0
        self.encoder = encoder
        self.closed = False


class TracePipeRawOps(ArrayFileOps):
    """per_cpu/cpuN/trace_pipe_raw, see the module's doc."""

    nonseekable = True

    def __init__(self, cpu: int):
        self.cpu = cpu

    def ring(self, tr):
        """The buffer it reads (``iter->array_buffer``)."""
        return tr.buffer

    def open(self, f):
        f.private = BufferInfo(RecordEncoder(f.data.tracing))
        super().open(f)

    def read(self, f, off, size):
        if not size:
            return b""
        tr = f.data
        info = f.private
        if info.read >= len(info.spare):
            buf = self.ring(tr)
            cb = buf.cpus[self.cpu]
            page = read_page(cb, info.encoder.encode, size, buf.subbuf_size)
            if page is None:
                if cb.empty() and not info.closed:
                    raise WouldBlock(PipeWait(tr, self.cpu, self))
                return b""
            info.spare = page
            info.read = 0
        out = info.spare[info.read:info.read + size]
        info.read += len(out)
        return out

    def flush(self, f):
        """``tracing_buffers_flush()``: a closing reader no longer waits."""
        f.private.closed = True

    def poll(self, f):
        """``trace_poll()``: as a per-CPU ``trace_pipe`` (buffer_percent)."""
        tr = f.data
        if tr.flag("block"):
            return POLLIN | POLLRDNORM
        ready = self.ring(tr).cpus[self.cpu].watermark_hit(tr.buffer_percent)
        return POLLIN | POLLRDNORM if ready else 0


class SnapshotRawOps(TracePipeRawOps):
    """per_cpu/cpuN/snapshot_raw (``snapshot_raw_fops``, CONFIG_TRACER_SNAPSHOT):
    the same pages, consumed from the snapshot buffer, which only a swap
    fills (an empty one blocks its reader)."""

    def ring(self, tr):
        return tr.max_buffer

    def open(self, f):
        """``snapshot_raw_open()``: EBUSY while a latency tracer uses it."""
        if f.data.current.use_max_tr:
            raise KernelError(errno.EBUSY)
        super().open(f)
