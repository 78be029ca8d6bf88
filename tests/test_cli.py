import os
import subprocess
import sys

from mountlib import REPO, mounted, requires_fuse


def fakefs(*args):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "fakefs", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_persona_help_lists_default():
    r = fakefs("mount", "--persona", "help", "/nonexistent")
    assert r.returncode == 0
    assert "6.12-stackmap (default)" in r.stdout


def test_persona_help_needs_no_mountpoint_and_says_what_is_modern():
    r = fakefs("mount", "--persona", "help")
    assert r.returncode == 0
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("2.6.30-eqware"))
    assert "tracing directory is modern" in line
    r = fakefs("mount")
    assert r.returncode == 2 and "required: mountpoint" in r.stderr


def test_unknown_persona_is_refused():
    r = fakefs("mount", "--persona", "9.99-nope", "/tmp")
    assert r.returncode == 2 and "unknown persona" in r.stderr


def test_mount_refuses_missing_dir():
    r = fakefs("mount", "/nonexistent/dir")
    assert r.returncode == 2


@requires_fuse
def test_dmesg_shows_unknown_parameters_and_umount():
    with mounted(cmdline="quiet=1 ftrace_stackmap.bits=11 nosuchparam") as mnt:
        r = fakefs("dmesg", mnt)
        assert r.returncode == 0
        assert r.stdout.startswith("[    0.0")
        # quiet is init/main.c's (the console's level), whatever its value
        assert 'Unknown kernel command line parameters "nosuchparam", will be passed ' \
               'to user space.' in r.stdout
        with open(os.path.join(mnt, "sys/kernel/tracing/stack_map_stat")) as fh:
            assert "/ 2048\n" in fh.read()
        assert fakefs("umount", mnt).returncode == 0
        assert not os.path.exists(os.path.join(mnt, "sys"))


def test_no_command_shows_the_commands_and_version():
    r = fakefs()
    assert r.returncode == 2 and "COMMAND" in r.stderr and "sandbox" in r.stderr
    assert "``" not in r.stderr                       # plain text, not RST
    r = fakefs("--version")
    assert r.returncode == 0 and r.stdout.startswith("fakefs ")


def test_unknown_kconfig_symbols_are_refused():
    r = fakefs("mount", "-o", "CONFIG_BOGUS=y", "/tmp")
    assert r.returncode == 2 and "CONFIG_BOGUS" in r.stderr


def test_every_symbol_the_model_reads_may_be_overridden():
    import re
    from fakefs.kernel.config import known_symbols
    known = known_symbols()
    root = os.path.join(REPO, "fakefs")
    read = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name)) as fh:
                    read |= {"CONFIG_" + m for m in re.findall(r'enabled\("([A-Z0-9_]{2,})"\)', fh.read())}
    assert read and read <= known, read - known
