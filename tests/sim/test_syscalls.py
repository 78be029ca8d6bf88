"""The tasks' system calls: the data and the values they use."""

from __future__ import annotations

import random

import pytest

from fakefs.sim.syscalls import AT_FDCWD, CallSpec, Syscalls, load_syscalls


def test_every_call_in_the_data_is_a_real_x86_64_call():
    s = Syscalls(random.Random(1))
    assert {"clone", "wait4", "execve", "exit_group"} <= set(s.calls)
    for prof in s.profiles.values():
        assert prof.block.nr >= 0 and prof.every_ns > 0
        assert abs(prof.cum[-1] - 1.0) < 1e-9


def test_bad_symbols_are_refused():
    with pytest.raises(ValueError):
        CallSpec("read", {"args": ["fd", "nonsense"], "ret": 0})
    with pytest.raises(ValueError):
        CallSpec("close", {"args": ["fd"], "ret": "count"})
    with pytest.raises(KeyError):
        CallSpec("no_such_call", {"args": [], "ret": 0})


def test_values_are_fixed_per_task_and_call():
    s = Syscalls(random.Random(2))
    tc = s.task(1234)
    read = s.calls["read"]
    a1, r1 = s.values(tc, read)
    a2, r2 = s.values(tc, read)
    assert a1 == a2 and len(a1) == 6 and r1 == a1[2]          # a full read
    assert 3 <= a1[0] < 32 and a1[1] >> 40 == 0x55
    args, ret = s.values(tc, s.calls["wait4"], child=777)
    assert ret == 777 and args[0] == 0xffffffff
    assert s.values(tc, s.calls["openat"])[0][0] == AT_FDCWD
    assert s.values(tc, s.calls["getpid"])[1] == 1234
    spec = load_syscalls()
    assert spec["profile"]["shell"]["block"] == "read"
