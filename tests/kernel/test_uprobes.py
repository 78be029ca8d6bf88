"""Uprobes (kernel/uprobes.py): registration checks and what a started
program's start hits."""

import errno
import os

import pytest

from elf_helpers import make_elf
from fakefs.kernel.fs.pseudo import KernelError
from fakefs.kernel.uprobes import (INIT_AFTER_ENTRY_NS, INIT_RUN_NS, LOADER_NS, STATIC_NS,
                                   Uprobes, open_plain)


class Kernel:
    seed = 7
    trace_hits = None                  # no probes on the machine: hits run at once


class Consumer:
    def __init__(self, is_return=False):
        self.is_return = is_return
        self.hits = []

    def handler(self, task, cpu, t, vaddr):
        self.hits.append(("entry", t, vaddr))

    def ret_handler(self, task, cpu, t, func, ret):
        self.hits.append(("ret", t, func, ret))


def _run(ups, f, pid=4242):
    for delay, fn in ups.program_start(f.key, pid):
        fn(None, 0, delay)


def test_register_checks(tmp_path):
    ups = Uprobes(Kernel())
    f = open_plain(0, make_elf(tmp_path / "prog"))
    c = Consumer()
    with pytest.raises(KernelError) as e:
        ups.register(f, f.size + 1, 0, c)                 # beyond the file
    assert e.value.errno == errno.EINVAL
    with pytest.raises(KernelError) as e:
        ups.register(f, 0x1000, 3, c)                     # reference counter not a short's
    assert e.value.errno == errno.EINVAL
    up = ups.register(f, 0x1000, 2, c)
    with pytest.raises(KernelError) as e:
        ups.register(f, 0x1000, 4, Consumer())            # another counter for the same place
    assert e.value.errno == errno.EINVAL
    assert ups.register(f, 0x1000, 2, Consumer()) is up   # shared
    f.close()


def test_lookup_errors(tmp_path):
    with pytest.raises(KernelError) as e:
        open_plain(0, str(tmp_path / "missing"))
    assert e.value.errno == errno.ENOENT
    d = open_plain(0, str(tmp_path))
    assert not d.regular and d.fd is None


def test_the_start_of_a_dynamic_pie(tmp_path):
    ups = Uprobes(Kernel())
    f = open_plain(0, make_elf(tmp_path / "prog", entry=0x1040, init=0x1000))
    entry, init, ret, other = Consumer(), Consumer(), Consumer(True), Consumer()
    ups.register(f, 0x1040, 0, entry)
    ups.register(f, 0x1000, 0, init)
    ups.register(f, 0x1000, 0, ret)
    ups.register(f, 0x1010, 0, other)                     # elsewhere: never run here
    _run(ups, f)
    assert len(entry.hits) == len(init.hits) == len(ret.hits) == 1 and not other.hits
    (_, t_entry, v_entry), = entry.hits
    (_, t_init, v_init), = init.hits
    (_, t_ret, func, retaddr), = ret.hits
    assert t_entry == LOADER_NS and t_init == LOADER_NS + INIT_AFTER_ENTRY_NS
    assert t_ret == t_init + INIT_RUN_NS
    base = v_entry - 0x1040
    assert base % 4096 == 0 and base >= 0x555555554000 and v_init == base + 0x1000
    assert func == v_init and retaddr >> 40 == 0x7f          # back into libc
    # another file, or the same unregistered: nothing
    assert ups.program_start((f.dev, f.ino + 1), 1) == []
    for c, off in ((entry, 0x1040), (init, 0x1000), (ret, 0x1000), (other, 0x1010)):
        ups.unregister(next(u for u in ups.by_inode[f.key] if u.offset == off), c)
    assert ups.program_start(f.key, 1) == [] and not ups.by_inode
    f.close()


def test_a_return_probe_on_the_entry_point_never_fires(tmp_path):
    ups = Uprobes(Kernel())
    f = open_plain(0, make_elf(tmp_path / "prog", pie=False, interp=False))
    ret, entry = Consumer(True), Consumer()
    ups.register(f, 0x1040, 0, ret)
    ups.register(f, 0x1040, 0, entry)
    _run(ups, f)
    assert not ret.hits and entry.hits == [("entry", STATIC_NS, 0x401040)]
    f.close()


def test_not_an_executable_runs_nothing(tmp_path):
    p = tmp_path / "data"
    p.write_bytes(os.urandom(8192))
    ups = Uprobes(Kernel())
    f = open_plain(0, str(p))
    ups.register(f, 0, 0, Consumer())
    assert ups.program_start(f.key, 1) == []
    f.close()
