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


def resized(val: int) -> SavedCmdlines:
    """tracing_saved_cmdlines_size_write(): a new, empty table."""
    if not val or val > PID_MAX_DEFAULT:
        raise KernelError(errno.EINVAL)
    return SavedCmdlines(val)
