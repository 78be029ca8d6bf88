"""The simulated kernel's module commands (selftest/kmod.py), against
stand-ins for the control file and /proc/modules."""

import os

from fakefs.selftest.kmod import install, main


def _files(tmp_path, modules=""):
    ctl = tmp_path / "control"
    ctl.write_text("trace_printk\n")
    proc = tmp_path / "modules"
    proc.write_text(modules)
    return str(ctl), str(proc)


def test_modprobe_of_a_module_that_does_not_exist(tmp_path, capsys):
    ctl, proc = _files(tmp_path)
    assert main(["/usr/sbin/modprobe", "no-such"], ctl, proc) == 1
    err = capsys.readouterr().err
    assert err == "modprobe: FATAL: Module no-such not found in directory /lib/modules/%s\n" % os.uname().release
    assert (tmp_path / "control").read_text() == "trace_printk\n"      # no system call made


def test_modprobe_loads_through_the_control_file(tmp_path):
    ctl, proc = _files(tmp_path)
    assert main(["modprobe", "trace-printk"], ctl, proc) == 0
    assert (tmp_path / "control").read_text() == "load trace_printk\n"


def test_loaded_already_and_not_loaded(tmp_path, capsys):
    ctl, proc = _files(tmp_path, "trace_printk 12288 0 - Live 0xffffffffc0a00000\n")
    assert main(["modprobe", "trace-printk"], ctl, proc) == 0        # nothing to do
    assert (tmp_path / "control").read_text() == "trace_printk\n"
    assert main(["rmmod", "trace-printk"], ctl, proc) == 0
    assert (tmp_path / "control").read_text() == "delete trace_printk\n"
    assert main(["rmmod", "other"], ctl, proc) == 1
    assert capsys.readouterr().err == "rmmod: ERROR: Module other is not currently loaded\n"


def test_lsmod(tmp_path, capsys):
    ctl, proc = _files(tmp_path, "b 8192 0 - Live 0x0\na 16384 1 b, Live 0x0\n")
    assert main(["lsmod"], ctl, proc) == 0
    assert capsys.readouterr().out == ("Module                  Size  Used by\n"
                                       "b                       8192  0\n"
                                       "a                      16384  1 b\n")


def test_install_links_every_command(tmp_path):
    script = install(str(tmp_path / "bin"), "/x/control", "/x/modules")
    for cmd in ("insmod", "modprobe", "rmmod", "lsmod"):
        assert os.path.realpath(tmp_path / "bin" / cmd) == os.path.realpath(script)
    assert os.access(script, os.X_OK) and "'/x/control', '/x/modules'" in open(script).read()
