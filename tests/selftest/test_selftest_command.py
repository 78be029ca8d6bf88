"""The ``fakefs selftest`` command (fakefs/selftest/command.py): arguments,
the daemon's and ftracetest's command lines, --list."""

from __future__ import annotations

import sys
import tempfile

from selftest_helpers import parse

from fakefs.selftest import command, worktree

def test_arguments_defaults(monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    a = parse([])
    assert a.tests == [] and a.extra == [] and a.ksrc is None
    assert a.verbose == 0 and not a.keep and not a.list
    assert a.timeout == command.DEFAULT_TIMEOUT
    assert a.cmdline is None and a.seed is None and a.persona is None


def test_arguments_full(monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    a = parse(["--ksrc", "/k", "--extra", "x", "--extra", "y", "--cmdline", "a=1 b",
               "--seed", "7", "-o", "allow_other", "-vv", "--keep", "00basic", "t.tc"])
    assert a.ksrc == "/k" and a.extra == ["x", "y"] and a.cmdline == "a=1 b"
    assert a.seed == "7" and a.mount_options == ["allow_other"]
    assert a.verbose == 2 and a.keep and a.tests == ["00basic", "t.tc"]


def test_ksrc_from_environment(monkeypatch):
    monkeypatch.setenv("KSRC", "/usr/src/linux")
    assert parse([]).ksrc == "/usr/src/linux"
    assert parse(["--ksrc", "/other"]).ksrc == "/other"
    monkeypatch.setenv("KSRC", "")
    assert parse([]).ksrc is None


def test_daemon_argv(monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    a = parse(["--cmdline", "ftrace_stackmap.bits=10 quiet", "--seed", "3", "--persona", "p",
               "-o", "fsname=other,allow_other", "-o", "CONFIG_X=y"])
    argv = command.daemon_argv(a)
    assert argv[:4] == [sys.executable, "-m", "fakefs", "mount"]
    i = argv.index("-o")
    assert argv[i + 1] == "fsname=tracefs,allow_other,CONFIG_X=y"
    assert "-f" in argv
    assert argv[argv.index("--cmdline") + 1] == "ftrace_stackmap.bits=10 quiet"
    assert argv[argv.index("--seed") + 1] == "3"
    assert argv[argv.index("--persona") + 1] == "p"
    a = parse(["--daemon-cmd", "/bin/standin --x 'a b'"])
    argv = command.daemon_argv(a)
    assert argv[:3] == ["/bin/standin", "--x", "a b"]
    assert argv[3:] == ["-f", "-o", "fsname=tracefs"]


def test_ftracetest_argv(tmp_path, monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    tree = worktree.WorkTree(root=tmp_path, ftrace=tmp_path / "ftrace")
    t = [tree.test_d / "x.tc"]
    argv = command.ftracetest_argv(parse([]), tree, t)
    assert argv[:2] == ["/bin/sh", str(tree.ftrace / "ftracetest")]
    assert argv[argv.index("-l") + 1] == str(tmp_path / "logs")
    assert "-v" in argv and "-k" not in argv
    assert argv[-1] == str(t[0])
    argv = command.ftracetest_argv(parse(["-v", "--keep", "--fail-unsupported"]), tree, t)
    assert "-vv" in argv and "-k" in argv and "--fail-unsupported" in argv


def test_cli_wiring():
    from fakefs.cli import command as cli
    a = cli.build_parser().parse_args(["selftest", "--list", "--extra", "d", "x.tc"])
    assert a.func is cli.cmd_selftest
    assert a.list and a.extra == ["d"] and a.tests == ["x.tc"]


def test_list_mode(ksrc, extra, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    a = parse(["--list", "--ksrc", str(ksrc), "--extra", str(extra)])
    assert command.run(a) == 0
    assert capsys.readouterr().out.split() == ["mytests/one.tc", "mytests/sub/two.tc"]
    assert not list(tmp_path.glob("fakefs-selftest.*"))          # work dir removed
    a = parse(["--list", "--ksrc", str(ksrc), "nosuch"])
    assert command.run(a) == 2
