"""The saved command lines (kernel/trace/trace_sched_switch.c).

The trace records pids; the comm shown beside each is looked up at read
time in a small table the tracer fills as tasks are seen: ``saved_cmdlines``.
The table is one page allocation holding a pid-to-slot map for every pid
below ``PID_MAX_DEFAULT`` and ``cmdline_num`` slots of (pid, comm), so the
number of slots asked for by ``saved_cmdlines_size`` is rounded up to what
fits in the allocation (128 asked, 6552 kept).  Slots are handed out round
robin; a pid whose slot was taken over by another pid shows as ``<...>``.

What records a task: the kernel's sched_switch and sched_wakeup probes save
the tasks they see on a CPU that committed an event since it last saved
(``tracing_record_taskinfo``).  The simulated one saves the committing task
at the commit itself, when another task committed last on that CPU and the
array has ``record-cmd`` (``TraceArray.write_entry``), and ``trace_marker``
writers from the host; the same tasks end up in the table, a little earlier.

``saved_tgids`` (:class:`SavedTgids`) maps pids to thread-group ids.  The map
exists once some array set ``record-tgid``; the same probes fill it, but
only while an event file is enabled that was enabled under ``record-tgid``
(``sched_tgid_ref``): with the function tracer alone nothing is saved and
the trace's TGID column shows ``(-------)``, as on a stock kernel.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError

PID_MAX_DEFAULT = 0x8000
TASK_COMM_LEN = 16
PAGE_SIZE = 4096
SAVED_CMDLINES_DEFAULT = 128
# struct saved_cmdlines_buffer without its slots: map_pid_to_cmdline[PID_MAX_DEFAULT + 1],
# the map_cmdline_to_pid pointer (8-aligned), cmdline_num and cmdline_idx
HEADER_SIZE = ((PID_MAX_DEFAULT + 1) * 4 + 7) // 8 * 8 + 8 + 4 + 4
SLOT_SIZE = TASK_COMM_LEN + 4       # a comm and its map_cmdline_to_pid entry


def cmdline_slots(val: int) -> int:
    """The slots allocate_cmdlines_buffer(val) ends up with."""
    size = PAGE_SIZE
    while size < HEADER_SIZE + val * SLOT_SIZE:
        size <<= 1
    return (size - HEADER_SIZE) // SLOT_SIZE


class SavedCmdlines:
    """``savedcmd``: the slots, the pid map, the round-robin index."""

    __slots__ = ("cmdline_num", "cmdline_idx", "map_pid_to_cmdline", "map_cmdline_to_pid",
                 "comms")

    def __init__(self, val: int = SAVED_CMDLINES_DEFAULT):
        self.cmdline_num = cmdline_slots(val)
        self.cmdline_idx = 0
        self.map_pid_to_cmdline: dict[int, int] = {}
        self.map_cmdline_to_pid: list[int | None] = [None] * self.cmdline_num
        self.comms: list[str] = [""] * self.cmdline_num

    def save(self, pid: int, comm: str) -> None:
        """trace_save_cmdline()."""
        if not pid:
            return
        tpid = pid & (PID_MAX_DEFAULT - 1)
        idx = self.map_pid_to_cmdline.get(tpid)
        if idx is None:
            idx = (self.cmdline_idx + 1) % self.cmdline_num
            self.map_pid_to_cmdline[tpid] = idx
            self.cmdline_idx = idx
        self.map_cmdline_to_pid[idx] = pid
        self.comms[idx] = comm[:TASK_COMM_LEN - 1]

    def lookup(self, pid: int) -> str | None:
        """The comm saved for ``pid`` (not the idle task), None if none is."""
        idx = self.map_pid_to_cmdline.get(pid & (PID_MAX_DEFAULT - 1))
        if idx is not None and self.map_cmdline_to_pid[idx] == pid:
            return self.comms[idx]
        return None

    def find(self, pid: int) -> str:
        """__trace_find_cmdline()."""
        if not pid:
            return "<idle>"
        return self.lookup(pid) or "<...>"

    def text(self) -> str:
        """saved_cmdlines: the slots in order, ``pid comm``."""
        return "".join("%d %s\n" % (pid, self.find(pid))
                       for pid in self.map_cmdline_to_pid if pid is not None)


# pid_max when the map is allocated: systemd's setting on Debian 12
# (/usr/lib/sysctl.d/50-pid-max.conf), the 64-bit PID_MAX_LIMIT
TGID_MAP_MAX = 4 * 1024 * 1024


class SavedTgids:
    """``tgid_map`` (None until ``record-tgid`` is first set) and
    ``sched_tgid_ref``: the count of event files enabled with
    EVENT_FILE_FL_RECORDED_TGID, kept as the kernel keeps it (setting
    ``record-tgid`` counts every enabled file of every array again)."""

    __slots__ = ("map", "ref", "last")

    def __init__(self, nr_cpus: int):
        self.map: dict[int, int] | None = None
        self.ref = 0
        self.last: list[int | None] = [None] * nr_cpus   # the pid saved last, per CPU

    def alloc(self) -> None:
        """trace_alloc_tgid_map(): once, never freed."""
        if self.map is None:
            self.map = {}

    def save(self, cpu: int, pid: int, tgid: int) -> None:
        """trace_save_tgid() from the probes (only while ``ref``)."""
        if pid and self.map is not None and pid <= TGID_MAP_MAX:
            self.map[pid] = tgid
            self.last[cpu] = pid

    def event_enabled(self, recorded: set, ev, record_tgid: bool) -> None:
        """An event file of an array with ``record-tgid`` (``record_tgid``)
        was enabled: it takes a reference (``recorded``: the array's files
        with the flag)."""
        if record_tgid:
            self.ref += 1
            recorded.add(ev)

    def event_disabled(self, recorded: set, ev) -> None:
        if ev in recorded:
            recorded.discard(ev)
            self.ref -= 1

    def record(self, arrays, enable: bool) -> None:
        """trace_event_enable_tgid_record(): ``record-tgid`` changed in some
        array; every enabled file of every array takes (or drops) a
        reference, whether it had one or not."""
        for tr in arrays:
            for ev in tr.enabled_events:
                if enable:
                    self.ref += 1
                    tr.tgid_recorded.add(ev)
                else:
                    self.ref -= 1
                    tr.tgid_recorded.discard(ev)

    def find(self, pid: int) -> int:
        """trace_find_tgid(): 0 when none was saved."""
        m = self.map
        return m.get(pid, 0) if m is not None and pid <= TGID_MAP_MAX else 0

    def text(self) -> str:
        """saved_tgids: ``pid tgid`` by pid, the pids with a tgid saved."""
        m = self.map or {}
        return "".join("%d %d\n" % (pid, m[pid]) for pid in sorted(m) if m[pid])


def resized(val: int) -> SavedCmdlines:
    """tracing_saved_cmdlines_size_write(): a new, empty table."""
    if not val or val > PID_MAX_DEFAULT:
        raise KernelError(errno.EINVAL)
    return SavedCmdlines(val)
