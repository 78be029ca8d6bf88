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


def test_a_task_s_names_are_strings_in_its_user_memory():
    """The names its calls pass (openat's, newfstatat's file; execve's
    program) are at their addresses in the task's memory (Task.mm); the
    rest faults."""
    s = Syscalls(random.Random(3))
    tc = s.task(100, "/usr/bin/make")
    args, _ret = s.values(tc, s.calls["openat"])
    name = tc.read_string(args[1])
    assert name.startswith(b"/") and name + b"\0" in s.paths
    assert tc.read(args[1], 1) == ord("/") and tc.read_string(args[1] + 1) == name[1:]
    assert tc.read_string(args[1] - 1) is None and tc.read(args[1] + len(name), 2) is None
    exe, _ret = s.values(tc, s.execve)
    assert tc.read_string(exe[0]) == b"/usr/bin/make"
    assert tc.read_string(exe[1]) is None                # argv: not modelled
    assert tc.name_address(7) in (args[1], exe[0])
    # the same draws as an address that is no name
    plain = Syscalls(random.Random(3))
    ptc = plain.task(100)
    assert plain.values(ptc, plain.calls["openat"])[0] == args


def test_a_profile_picks_the_first_call_whose_cumulative_share_is_above_the_draw():
    """``ProfileCalls.pick`` (a bisection) is the linear walk of the shares:
    the first call whose cumulative weight is above the draw."""
    calls = Syscalls(random.Random(1))
    rng = random.Random(2)
    for prof in calls.profiles.values():
        for x in [rng.random() for _ in range(500)] + [0.0, *prof.cum[:-1]]:
            want = next((c for c, cum in zip(prof.calls, prof.cum) if x < cum), prof.calls[-1])
            assert prof.pick(x) is want, (x, prof.cum)
