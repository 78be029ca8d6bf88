"""What every run of an executable executes (fs/binfmt_elf.py)."""

import os

from elf_helpers import make_elf
from fakefs.kernel.fs.binfmt_elf import start_points, start_points_of_fd


def _start(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return start_points_of_fd(fd)
    finally:
        os.close(fd)


def test_entry_and_init_as_file_offsets(tmp_path):
    s = _start(make_elf(tmp_path / "pie", entry=0x1040, init=0x1000))
    assert (s.entry, s.init, s.pie, s.interp) == (0x1040, 0x1000, True, True)
    assert (s.entry_vaddr, s.init_vaddr) == (0x1040, 0x1000)


def test_a_fixed_address_executable(tmp_path):
    s = _start(make_elf(tmp_path / "exec", entry=0x1080, init=0x1010, pie=False, interp=False))
    assert (s.entry, s.init, s.pie, s.interp) == (0x1080, 0x1010, False, False)
    assert s.entry_vaddr == 0x401080 and s.init_vaddr == 0x401010


def test_without_init(tmp_path):
    s = _start(make_elf(tmp_path / "noinit", init=None))
    assert s.entry == 0x1040 and s.init is None and s.init_vaddr is None


def test_not_an_executable(tmp_path):
    text = tmp_path / "text"
    text.write_bytes(b"#!/bin/sh\necho hi\n")
    assert _start(str(text)) is None
    assert _start(make_elf(tmp_path / "arm", machine=183)) is None      # aarch64
    assert _start(make_elf(tmp_path / "nowhere", entry=0x5000)) is None  # entry outside
    assert start_points(lambda off, size: b"") is None


def test_the_systems_shell_if_there():
    if not os.path.exists("/usr/bin/dash"):
        return
    s = _start("/usr/bin/dash")
    assert s.init is not None and s.entry != s.init
