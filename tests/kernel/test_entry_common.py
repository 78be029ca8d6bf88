"""System call numbers and the entry/exit tracepoints."""

from __future__ import annotations

from fakefs.kernel.entry_common import SyscallEntry, syscall_nr, syscall_table
from fakefs.kernel.tracepoint import Tracepoints


def test_x86_64_numbers():
    assert syscall_nr("read") == 0
    assert syscall_nr("clone") == 56
    assert syscall_nr("wait4") == 61
    assert syscall_nr("newfstatat") == 262
    by_name, by_nr = syscall_table()
    assert by_nr[231] == "sys_exit_group"
    assert len(by_name) > 350


def test_enter_exit_fire_only_when_probed():
    tps = Tracepoints()
    e = SyscallEntry(tps)
    assert not e.traced()
    hits = []
    tps.get("sys_enter").register(lambda *a: hits.append(a))
    assert e.traced()
    e.enter(1, 100, 42, 0, (3, 0x1000, 4096, 0, 0, 0))
    e.exit(1, 200, 42, 0, 4096)          # sys_exit has no probe
    assert hits == [(1, 100, 42, 0, 0, (0, (3, 0x1000, 4096, 0, 0, 0)))]
