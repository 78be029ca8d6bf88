"""The inner stage end to end (fakefs/selftest/inner.py, root only).

A stand-in daemon (a tmpfs whose source is "tracefs") and a tiny stand-in
ftracetest exercise the namespace and mount handling without the real daemon.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from selftest_helpers import FUNCTIONS, make_tc, parse, write

from fakefs.selftest import command, namespace


STANDIN_DAEMON = """\
#!/bin/sh
# stand-in for `fakefs mount -f -o fsname=tracefs ... MNT`
for a; do MNT=$a; done
echo "$@" > %(argv)s
echo $$ > %(pid)s
mount -t tmpfs tracefs "$MNT" || exit 1
T="$MNT/sys/kernel/tracing"
mkdir -p "$T/instances" "$MNT/sys/devices/system/cpu/cpu0" "$MNT/proc/sys/kernel"
echo 0 > "$T/tracing_on"
echo 950000 > "$MNT/proc/sys/kernel/sched_rt_runtime_us"
echo 1000000 > "$MNT/proc/sys/kernel/sched_rt_period_us"
trap 'exit 0' TERM
while :; do sleep 0.1; done
"""

# Finds the tracing dir the way ftracetest does, sources each test in a
# subshell with set -e and prints ftracetest-style result and summary lines.
STANDIN_FTRACETEST = """\
#!/bin/sh
TRACING_DIR=`grep tracefs /proc/mounts | cut -f2 -d' ' | head -1`
echo "tracing dir: $TRACING_DIR"
while [ $# -gt 0 ]; do case "$1" in -l) shift 2;; -*) shift;; *) break;; esac; done
P=0; F=0; N=0
for t; do
    N=$((N+1))
    printf '[%d]%s' $N "$(grep '^# description:' $t | cut -f2- -d:)"
    if (cd $TRACING_DIR && set -e && . $t); then P=$((P+1)); echo '\t[PASS]'
    else F=$((F+1)); echo '\t[FAIL]'; fi
done
echo
echo "# of passed:  $P"
echo "# of failed:  $F"
echo "# of unresolved:  0"
echo "# of untested:  0"
echo "# of unsupported:  0"
echo "# of xfailed:  0"
echo "# of undefined(test bug):  0"
[ $F -eq 0 ]
"""

def _ns_problem():
    if not shutil.which("unshare"):
        return "needs unshare(1)"
    if not os.path.isdir(namespace.TRACING_DIR):
        return "needs %s on the host" % namespace.TRACING_DIR
    if os.geteuid() != 0:
        problem = namespace.userns_problem()        # without root: a user namespace
        if problem:
            return "needs root or unprivileged user namespaces: " + problem
    return None


_NS_PROBLEM = _ns_problem()
needs_root_ns = pytest.mark.skipif(_NS_PROBLEM is not None, reason=_NS_PROBLEM or "")


def _host_mount_lines(word):
    with open("/proc/self/mounts") as f:
        return [l for l in f if word in l]


def _standins(tmp_path, monkeypatch):
    """(the stand-in kernel tree with ftracetest, the stand-in daemon);
    the work directories go under ``tmp_path``."""
    monkeypatch.delenv("KSRC", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ksrc = tmp_path / "ksrc"
    write(ksrc / "ftracetest", STANDIN_FTRACETEST, 0o755)
    write(ksrc / "test.d" / "functions", FUNCTIONS)
    daemon = write(tmp_path / "standin", STANDIN_DAEMON % {
        "argv": tmp_path / "argv", "pid": tmp_path / "pid"}, 0o755)
    return ksrc, daemon


@needs_root_ns
def test_end_to_end_standin(tmp_path, capfd, monkeypatch):
    ksrc, daemon = _standins(tmp_path, monkeypatch)
    write(ksrc / "test.d" / "00basic" / "ok.tc", make_tc(
        "in the right place", "test \"$(pwd)\" = /sys/kernel/tracing\n"
        "test \"$(grep tracefs /proc/mounts | head -1 | cut -d' ' -f1)\" = tracefs\n"
        "test -f tracing_on\n"))
    extra = tmp_path / "extra"
    write(extra / "fails.tc", make_tc("fails", "false\n"), 0o444)
    before = _host_mount_lines("tracefs")

    a = parse(["--ksrc", str(ksrc), "--daemon-cmd", str(daemon), "--extra", str(extra),
               "--cmdline", "a=1", "--timeout", "60", "00basic", "fails.tc"])
    rc = command.run(a)
    out = capfd.readouterr().out
    assert rc == 1, out
    assert "tracing dir: /sys/kernel/tracing" in out
    assert "[1] in the right place\t[PASS]" in out
    assert "[2] fails\t[FAIL]" in out
    assert out.strip().splitlines()[-1] == "1 passed, 1 failed, 0 skipped"
    assert "extra/fails.tc" in out
    # the daemon got the options, was stopped, and nothing leaked to the host
    argv = (tmp_path / "argv").read_text().split()
    assert argv[:3] == ["-f", "-o", "fsname=tracefs"] and "--cmdline" in argv
    pid = int((tmp_path / "pid").read_text())
    assert not os.path.exists("/proc/%d" % pid)
    assert _host_mount_lines("tracefs") == before
    assert not list(tmp_path.glob("fakefs-selftest.*"))

    # only passing tests: exit status 0
    a = parse(["--ksrc", str(ksrc), "--daemon-cmd", str(daemon), "00basic/ok.tc"])
    assert command.run(a) == 0
    assert capfd.readouterr().out.strip().splitlines()[-1] == "1 passed, 0 failed, 0 skipped"


@needs_root_ns
def test_end_to_end_daemon_failure(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    ksrc = tmp_path / "ksrc"
    write(ksrc / "ftracetest", STANDIN_FTRACETEST, 0o755)
    write(ksrc / "test.d" / "functions", FUNCTIONS)
    write(ksrc / "test.d" / "t.tc", make_tc("t"))
    bad = write(tmp_path / "bad", "#!/bin/sh\necho boot failed >&2\nexit 3\n", 0o755)
    a = parse(["--ksrc", str(ksrc), "--daemon-cmd", str(bad)])
    assert command.run(a) == 2
    cap = capfd.readouterr()
    assert "boot failed" in cap.out
    assert "daemon exited" in cap.err


@needs_root_ns
def test_end_to_end_in_shards(tmp_path, capfd, monkeypatch):
    """``--jobs 2``: two inner stages at once, each its own daemon, taking
    the next test left, each by its own ftracetest; the cases printed
    together in one run's numbering, a failing test's own output before
    them."""
    ksrc, daemon = _standins(tmp_path, monkeypatch)
    for name in ("a", "b", "c"):
        write(ksrc / "test.d" / "00basic" / (name + ".tc"), make_tc(
            "case " + name, "test -f tracing_on\ntest \"$(pwd)\" = /sys/kernel/tracing\n"))
    extra = tmp_path / "extra"
    write(extra / "fails.tc", make_tc("fails", "false\n"), 0o444)
    before = _host_mount_lines("tracefs")
    a = parse(["--ksrc", str(ksrc), "--daemon-cmd", str(daemon), "--extra", str(extra),
               "-j", "2", "00basic", "fails.tc"])
    rc = command.run(a)
    cap = capfd.readouterr()
    out = cap.out
    assert rc == 1, out
    merged = out[out.index("=== Ftrace unit tests (in shards) ==="):]
    assert ["[1] case a\t[PASS]", "[2] case b\t[PASS]", "[3] case c\t[PASS]",
            "[4] fails\t[FAIL]"] == [l for l in merged.splitlines() if l.startswith("[")]
    assert "# of passed:  3" in merged and "# of failed:  1" in merged
    # the failing test in its own ftracetest's numbering, before the merged cases
    own = out[:out.index("=== Ftrace")]
    assert "---- ftracetest of extra/fails.tc: its output (its own numbering) ----" in own
    assert "[1] fails\t[FAIL]" in own and "case a" not in own
    assert "[4] extra/fails.tc  FAIL" in out
    assert out.strip().splitlines()[-1] == "3 passed, 1 failed, 0 skipped"
    # each test ran once, by one shard or the other
    ran = [l.split(": ")[2] for l in cap.err.splitlines() if l.startswith("selftest: shard ")
           and l.count(": ") >= 3]
    assert sorted(ran) == ["00basic/a.tc", "00basic/b.tc", "00basic/c.tc", "extra/fails.tc"]
    assert _host_mount_lines("tracefs") == before
    assert not list(tmp_path.glob("fakefs-selftest.*"))


@needs_root_ns
def test_in_shards_the_others_start_when_the_file_is_there(tmp_path, capfd, monkeypatch):
    """``--more-jobs-when FILE``: one shard until FILE exists (make test:
    the unit tests are done), then the others take what is left; without
    FILE, the one shard runs every test."""
    ksrc, daemon = _standins(tmp_path, monkeypatch)
    flag = tmp_path / "unit-tests-done"
    # the first test makes the file, then takes a while: the second shard
    # starts meanwhile and takes the next tests
    write(ksrc / "test.d" / "00basic" / "a.tc", make_tc(
        "case a", "touch %s\nsleep 4\n" % flag))
    for name in ("b", "c", "d"):
        write(ksrc / "test.d" / "00basic" / (name + ".tc"), make_tc("case " + name, "true\n"))
    for make_flag in (True, False):
        if not make_flag:
            write(ksrc / "test.d" / "00basic" / "a.tc", make_tc("case a", "true\n"))
        flag.unlink(missing_ok=True)
        a = parse(["--ksrc", str(ksrc), "--daemon-cmd", str(daemon), "-j", "2",
                   "--more-jobs-when", str(flag), "00basic"])
        assert command.run(a) == 0
        cap = capfd.readouterr()
        assert cap.out.strip().splitlines()[-1] == "4 passed, 0 failed, 0 skipped"
        by = {}
        for l in cap.err.splitlines():
            if l.startswith("selftest: shard ") and l.count(": ") >= 3:
                by[l.split(": ")[2]] = l.split(": ")[1]
        assert sorted(by) == ["00basic/a.tc", "00basic/b.tc", "00basic/c.tc", "00basic/d.tc"]
        if make_flag:
            assert "shard 2 of up to 2 started" in cap.err
            assert by["00basic/a.tc"] == "shard 1" and "shard 2" in by.values(), by
        else:
            assert "started" not in cap.err and set(by.values()) == {"shard 1"}, by
