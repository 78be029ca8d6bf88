"""Tests of the ``fakefs selftest`` harness (fakefs/selftest.py).

Most tests need no mount: argument handling, obtaining/caching the harness
from a fake kernel tree / tarball / .deb, the work tree, test selection and
output parsing.  The end-to-end tests (root + unshare) use a stand-in daemon
(a tmpfs whose source is "tracefs") and a tiny stand-in ftracetest, so they
exercise the namespace and mount handling without the real daemon.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from fakefs import selftest as st

FUNCTIONS = "clear_trace() { echo > trace; }\n"


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def _tc(desc: str, body: str = "", flags: str = "", requires: str = "") -> str:
    s = "#!/bin/sh\n# description: %s\n" % desc
    if requires:
        s += "# requires: %s\n" % requires
    if flags:
        s += "# flags: %s\n" % flags
    return s + body


@pytest.fixture
def ksrc(tmp_path) -> Path:
    """A fake kernel tree with a minimal ftrace selftest directory."""
    root = tmp_path / "linux-9.9"
    ft = root / st.FTRACE_REL
    _write(ft / "ftracetest", "#!/bin/sh\necho fake ftracetest\n", 0o755)
    _write(ft / "test.d" / "functions", FUNCTIONS)
    _write(ft / "test.d" / "00basic" / "a.tc", _tc("basic a"))
    _write(ft / "test.d" / "00basic" / "b.tc", _tc("basic b", flags="instance"))
    _write(ft / "test.d" / "ftrace" / "c.tc", _tc("ftrace c"))
    _write(ft / "logs" / "old.log", "stale\n")
    return root


@pytest.fixture
def extra(tmp_path) -> Path:
    d = tmp_path / "mytests"
    _write(d / "one.tc", _tc("extra one"), 0o444)
    _write(d / "sub" / "two.tc", _tc("extra two", flags="instance"), 0o444)
    _write(d / "helper.py", "print('not a test')\n")
    return d


def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fakefs selftest")
    st.add_arguments(p)
    return p.parse_args(argv)


# --------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------

def test_arguments_defaults(monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    a = parse([])
    assert a.tests == [] and a.extra == [] and a.ksrc is None
    assert a.verbose == 0 and not a.keep and not a.list
    assert a.timeout == st.DEFAULT_TIMEOUT
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
    argv = st.daemon_argv(a)
    assert argv[:4] == [sys.executable, "-m", "fakefs", "mount"]
    i = argv.index("-o")
    assert argv[i + 1] == "fsname=tracefs,allow_other,CONFIG_X=y"
    assert "-f" in argv
    assert argv[argv.index("--cmdline") + 1] == "ftrace_stackmap.bits=10 quiet"
    assert argv[argv.index("--seed") + 1] == "3"
    assert argv[argv.index("--persona") + 1] == "p"
    a = parse(["--daemon-cmd", "/bin/standin --x 'a b'"])
    argv = st.daemon_argv(a)
    assert argv[:3] == ["/bin/standin", "--x", "a b"]
    assert argv[3:] == ["-f", "-o", "fsname=tracefs"]


def test_ftracetest_argv(tmp_path, monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    tree = st.WorkTree(root=tmp_path, ftrace=tmp_path / "ftrace")
    t = [tree.test_d / "x.tc"]
    argv = st.ftracetest_argv(parse([]), tree, t)
    assert argv[:2] == ["/bin/sh", str(tree.ftrace / "ftracetest")]
    assert argv[2:4] == ["-l", str(tmp_path / "logs")]
    assert "-v" in argv and "-k" not in argv
    assert argv[-1] == str(t[0])
    argv = st.ftracetest_argv(parse(["-v", "--keep", "--fail-unsupported"]), tree, t)
    assert "-vv" in argv and "-k" in argv and "--fail-unsupported" in argv


def test_cli_wiring():
    from fakefs import cli
    a = cli.build_parser().parse_args(["selftest", "--list", "--extra", "d", "x.tc"])
    assert a.func is cli.cmd_selftest
    assert a.list and a.extra == ["d"] and a.tests == ["x.tc"]


# --------------------------------------------------------------------------
# obtaining ftracetest
# --------------------------------------------------------------------------

def test_ftrace_dir_in_tree(ksrc):
    ft = ksrc / st.FTRACE_REL
    assert st.ftrace_dir_in_tree(ksrc) == ft
    assert st.ftrace_dir_in_tree(ft) == ft
    with pytest.raises(st.SelftestError):
        st.ftrace_dir_in_tree(ksrc / "tools")


def test_obtain_from_tree_is_used_in_place(ksrc, tmp_path):
    cache = tmp_path / "cache"
    assert st.obtain_ftracetest(str(ksrc), cache) == ksrc / st.FTRACE_REL
    assert not cache.exists()


def test_obtain_missing_ksrc(tmp_path):
    with pytest.raises(st.SelftestError):
        st.obtain_ftracetest(str(tmp_path / "nope"), tmp_path / "cache")


def _make_tarball(ksrc: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w:xz") as tf:
        tf.add(ksrc, arcname="linux-source-9.9")
    return dest


def test_obtain_from_tarball_is_cached(ksrc, tmp_path, monkeypatch):
    tarball = _make_tarball(ksrc, tmp_path / "linux-source-9.9.tar.xz")
    cache = tmp_path / "cache"
    got = st.obtain_ftracetest(str(tarball), cache)
    assert got.parent == cache and st.is_ftrace_dir(got)
    assert (got / "test.d" / "ftrace" / "c.tc").is_file()
    assert os.access(got / "ftracetest", os.X_OK)
    # only the ftrace directory, and no temporary leftovers
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".selftest")) == [got.name]
    # second call: served from the cache without extracting
    monkeypatch.setattr(st, "extract_tarball", lambda *a: pytest.fail("extracted twice"))
    assert st.obtain_ftracetest(str(tarball), cache) == got


def _make_deb(ksrc: Path, work: Path, version: str) -> Path:
    """A minimal linux-source-6.12 .deb holding usr/src/linux-source-6.12.tar.xz."""
    pkg = work / ("pkg-" + version)
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(textwrap.dedent("""\
        Package: linux-source-6.12
        Version: %s
        Architecture: all
        Maintainer: test <test@example.invalid>
        Description: test package
        """ % version))
    (pkg / "usr" / "src").mkdir(parents=True)
    with tarfile.open(pkg / "usr/src/linux-source-6.12.tar.xz", "w:xz") as tf:
        tf.add(ksrc, arcname="linux-source-6.12")
    deb = work / ("linux-source-6.12_%s_all.deb" % version)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Znone", "--build", str(pkg), str(deb)],
                   check=True, stdout=subprocess.DEVNULL)
    return deb


needs_dpkg = pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="needs dpkg-deb")


@needs_dpkg
def test_obtain_default_from_cached_deb(ksrc, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    old = _make_deb(ksrc, tmp_path, "6.12.9-1~deb12u1")
    shutil.move(old, cache / old.name)
    # the newer package (by Debian version order) wins
    _write(ksrc / st.FTRACE_REL / "test.d" / "ftrace" / "new.tc", _tc("new"))
    new = _make_deb(ksrc, tmp_path, "6.12.10-1~deb12u1")
    shutil.move(new, cache / new.name)
    monkeypatch.setattr(st, "download_deb", lambda c: pytest.fail("downloaded"))
    got = st.obtain_ftracetest(None, cache)
    assert got == cache / "ftracetest-6.12.10-1_deb12u1"
    assert (got / "test.d" / "ftrace" / "new.tc").is_file()
    assert st.obtain_ftracetest(None, cache) == got


@needs_dpkg
def test_download_retries_after_apt_update(ksrc, tmp_path, monkeypatch):
    deb = _make_deb(ksrc, tmp_path, "6.12.1-1")
    bindir = tmp_path / "bin"
    log = tmp_path / "apt.log"
    _write(bindir / "apt-get", textwrap.dedent("""\
        #!/bin/sh
        echo "$@" >> %(log)s
        case "$1" in
        update) touch %(marker)s ;;
        download) [ -e %(marker)s ] || { echo "E: no lists" >&2; exit 100; }
                  cp %(deb)s . ;;
        esac
        """ % {"log": log, "marker": tmp_path / "updated", "deb": deb}), 0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    cache = tmp_path / "cache"
    got = st.obtain_ftracetest(None, cache)
    assert log.read_text().split("\n")[:3] == [
        "download linux-source-6.12", "update", "download linux-source-6.12"]
    assert (cache / deb.name).is_file()
    assert got == cache / "ftracetest-6.12.1-1" and st.is_ftrace_dir(got)
    assert not list(cache.glob(".download-*"))


def test_download_failure_is_reported(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    _write(bindir / "apt-get", "#!/bin/sh\nexit 100\n", 0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    with pytest.raises(st.SelftestError, match="--ksrc"):
        st.obtain_ftracetest(None, tmp_path / "cache")


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert st.default_cache_dir() == tmp_path / "fakefs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert st.default_cache_dir() == tmp_path / "home" / ".cache" / "fakefs"


def test_version_order():
    vs = ["6.12.10-1", "6.12.9-1", "6.12.9-1~deb12u1", "6.12.117-1~deb12u1", "6.12.9-2"]
    assert sorted(vs, key=st._version_key) == [
        "6.12.9-1~deb12u1", "6.12.9-1", "6.12.9-2", "6.12.10-1", "6.12.117-1~deb12u1"]


# --------------------------------------------------------------------------
# work tree and test selection
# --------------------------------------------------------------------------

@pytest.fixture
def tree(ksrc, tmp_path) -> st.WorkTree:
    work = tmp_path / "work"
    work.mkdir()
    return st.make_work_tree(ksrc / st.FTRACE_REL, work)


def test_work_tree_copy(tree):
    assert st.is_ftrace_dir(tree.ftrace)
    assert os.access(tree.ftrace / "ftracetest", os.X_OK)
    assert not (tree.ftrace / "logs").exists()


def test_add_extra_copies_unchanged(tree, extra):
    name = st.add_extra(tree, extra)
    assert name == "mytests"
    for rel in ("one.tc", "sub/two.tc", "helper.py"):
        assert (tree.test_d / name / rel).read_bytes() == (extra / rel).read_bytes()
    assert (extra / "one.tc").stat().st_mode & 0o777 == 0o444    # source untouched
    assert st.add_extra(tree, extra) == name                      # idempotent


def test_add_extra_name_collision(tree, tmp_path):
    d = tmp_path / "x" / "ftrace"                                 # same name as test.d/ftrace
    _write(d / "mine.tc", _tc("mine"))
    name = st.add_extra(tree, d)
    assert name == "ftrace-2"
    assert (tree.test_d / "ftrace" / "c.tc").is_file()           # upstream dir untouched
    assert not (tree.test_d / "ftrace" / "mine.tc").exists()


def test_add_extra_errors(tree, tmp_path):
    with pytest.raises(st.SelftestError):
        st.add_extra(tree, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(st.SelftestError):
        st.add_extra(tree, tmp_path / "empty")


def rels(tree, tests):
    return [tree.rel(t) for t in tests]


def test_select_default(tree, extra):
    assert rels(tree, st.select_tests(tree, [])) == [
        "00basic/a.tc", "00basic/b.tc", "ftrace/c.tc"]
    st.add_extra(tree, extra)
    assert rels(tree, st.select_tests(tree, [])) == ["mytests/one.tc", "mytests/sub/two.tc"]


def test_select_specs(tree, extra, tmp_path):
    st.add_extra(tree, extra)
    sel = lambda *specs: rels(tree, st.select_tests(tree, list(specs), cwd=tmp_path))
    assert sel("00basic/a.tc") == ["00basic/a.tc"]
    assert sel("00basic") == ["00basic/a.tc", "00basic/b.tc"]
    assert sel("00basic/") == ["00basic/a.tc", "00basic/b.tc"]
    assert sel("one.tc") == ["mytests/one.tc"]                    # relative to the extra dir
    assert sel("sub") == ["mytests/sub/two.tc"]
    assert sel("mytests") == ["mytests/one.tc", "mytests/sub/two.tc"]
    assert sel("00basic/*.tc") == ["00basic/a.tc", "00basic/b.tc"]
    assert sel("*/c.tc") == ["ftrace/c.tc"]
    assert sel("sub/*") == ["mytests/sub/two.tc"]                 # glob within an extra
    assert sel("ftrace/c.tc", "00basic", "ftrace/c.tc") == [
        "ftrace/c.tc", "00basic/a.tc", "00basic/b.tc"]            # order kept, no duplicates
    assert len(sel("all")) == 5
    # an existing file of an --extra dir maps to its copy
    assert sel(str(extra / "one.tc")) == ["mytests/one.tc"]
    with pytest.raises(st.SelftestError):
        sel("nosuch.tc")
    with pytest.raises(st.SelftestError):
        sel("../../etc")


def test_select_outside_paths(tree, tmp_path):
    lone = _write(tmp_path / "elsewhere" / "lone.tc", _tc("lone"))
    assert rels(tree, st.select_tests(tree, [str(lone)])) == ["cmdline/lone.tc"]
    assert (tree.test_d / "cmdline" / "lone.tc").read_bytes() == lone.read_bytes()
    d = tmp_path / "moretests"
    _write(d / "m.tc", _tc("m"))
    # a directory given relative to the current directory becomes an extra
    assert rels(tree, st.select_tests(tree, ["moretests"], cwd=tmp_path)) == ["moretests/m.tc"]
    assert "moretests" in tree.extras


def test_expected_cases(tree, extra):
    st.add_extra(tree, extra)
    tests = st.select_tests(tree, ["00basic", "mytests"])
    assert st.expected_cases(tree, tests) == [
        (1, "00basic/a.tc", False), (2, "00basic/b.tc", False),
        (3, "mytests/one.tc", False), (4, "mytests/sub/two.tc", False),
        (5, "00basic/b.tc", True), (6, "mytests/sub/two.tc", True)]


def test_list_mode(ksrc, extra, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    monkeypatch.setattr(st.tempfile, "tempdir", str(tmp_path))
    a = parse(["--list", "--ksrc", str(ksrc), "--extra", str(extra)])
    assert st.run(a) == 0
    assert capsys.readouterr().out.split() == ["mytests/one.tc", "mytests/sub/two.tc"]
    assert not list(tmp_path.glob("fakefs-selftest.*"))          # work dir removed
    a = parse(["--list", "--ksrc", str(ksrc), "nosuch"])
    assert st.run(a) == 2


# --------------------------------------------------------------------------
# output parsing and the final report
# --------------------------------------------------------------------------

OUTPUT = """\
=== Ftrace unit tests ===
[1] Basic trace file check\t[PASS]
[2] ftrace - stackmap basic functionality\t[FAIL]
execute: /tmp/x/ftrace/test.d/upstream/stackmap-basic.tc
+ fail trace has no <stack_id> events
[3] Kprobe dynamic event\t[UNSUPPORTED]
[4] something unresolved\t[UNRESOLVED]
[5] expected failure\t[XFAIL]
[6] (instance)  Basic test for tracers\t[PASS]

# of passed:  2
# of failed:  1
# of unresolved:  1
# of untested:  0
# of unsupported:  1
# of xfailed:  1
# of undefined(test bug):  0
"""


def test_parse_output():
    s = st.parse_output(OUTPUT)
    assert s.complete
    assert (s.passed, s.failed, s.skipped, s.xfailed, s.total) == (2, 1, 2, 1, 6)
    assert s.results == {1: "PASS", 2: "FAIL", 3: "UNSUPPORTED", 4: "UNRESOLVED",
                         5: "XFAIL", 6: "PASS"}
    assert s.names[2] == "ftrace - stackmap basic functionality"
    assert s.final_line() == "2 passed, 1 failed, 2 skipped, 1 xfailed"


def test_parse_output_verbose_and_colors():
    text = ("[1] a test\n+ some output\n\x1b[32m\t[PASS]\x1b[0m\n"
            "[2] another\n\t[\x1b[31mFAIL\x1b[0m]\n"
            "# of passed:  1\n# of failed:  1\n# of undefined(test bug):  0\n")
    s = st.parse_output(text)
    assert s.results == {1: "PASS", 2: "FAIL"}
    assert s.final_line() == "1 passed, 1 failed, 0 skipped"


def test_parse_output_without_summary():
    s = st.parse_output("[1] a\t[PASS]\n[2] b\t[UNDEFINED]\n")
    assert not s.complete
    assert (s.passed, s.failed) == (1, 1)
    assert st.parse_output("").total == 0


def test_report_exit_status(capsys):
    cases = [(1, "00basic/basic1.tc", False), (2, "upstream/stackmap-basic.tc", False)]
    ok = st.parse_output("[1] a\t[PASS]\n[2] b\t[UNSUPPORTED]\n"
                         "# of passed:  1\n# of unsupported:  1\n# of undefined(test bug):  0\n")
    assert st.report(ok, cases, {"ftracetest_rc": 0}, 0) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "1 passed, 0 failed, 1 skipped"
    bad = st.parse_output(OUTPUT)
    assert st.report(bad, cases, {"ftracetest_rc": 1}, 0) == 1
    out = capsys.readouterr().out
    assert "upstream/stackmap-basic.tc" in out and out.strip().endswith("1 xfailed")
    none = st.parse_output("# of passed:  0\n# of undefined(test bug):  0\n")
    assert st.report(none, [], {"ftracetest_rc": 0}, 0) == 1       # zero tests ran
    assert st.report(st.parse_output("[1] a\t[PASS]\n"), cases, {}, 0) == 1  # no summary
    assert st.report(st.Summary(), cases, {"error": "mount failed"}, 2) == 2
    assert st.report(ok, cases, {"ftracetest_rc": 1}, 0) == 1      # e.g. --fail-unsupported
    assert st.report(ok, cases, {"ftracetest_rc": 0, "timed_out": True}, 0) == 1


def test_mount_field_unescape():
    assert st._unescape_mount_field(r"/a\040b\011c") == "/a b\tc"


# --------------------------------------------------------------------------
# end to end with a stand-in daemon and a stand-in ftracetest (root only)
# --------------------------------------------------------------------------

STANDIN_DAEMON = """\
#!/bin/sh
# stand-in for `fakefs mount -f -o fsname=tracefs ... MNT`
for a; do MNT=$a; done
echo "$@" > %(argv)s
echo $$ > %(pid)s
mount -t tmpfs tracefs "$MNT" || exit 1
T="$MNT/sys/kernel/tracing"
mkdir -p "$T/instances"
echo 0 > "$T/tracing_on"
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
    if not os.path.isdir(st.TRACING_DIR):
        return "needs %s on the host" % st.TRACING_DIR
    if os.geteuid() != 0:
        problem = st.userns_problem()        # without root: a user namespace
        if problem:
            return "needs root or unprivileged user namespaces: " + problem
    return None


_NS_PROBLEM = _ns_problem()
needs_root_ns = pytest.mark.skipif(_NS_PROBLEM is not None, reason=_NS_PROBLEM or "")


def _host_mount_lines(word):
    with open("/proc/self/mounts") as f:
        return [l for l in f if word in l]


@needs_root_ns
def test_end_to_end_standin(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    ksrc = tmp_path / "ksrc"
    _write(ksrc / "ftracetest", STANDIN_FTRACETEST, 0o755)
    _write(ksrc / "test.d" / "functions", FUNCTIONS)
    _write(ksrc / "test.d" / "00basic" / "ok.tc", _tc(
        "in the right place", "test \"$(pwd)\" = /sys/kernel/tracing\n"
        "test \"$(grep tracefs /proc/mounts | head -1 | cut -d' ' -f1)\" = tracefs\n"
        "test -f tracing_on\n"))
    extra = tmp_path / "extra"
    _write(extra / "fails.tc", _tc("fails", "false\n"), 0o444)
    daemon = _write(tmp_path / "standin", STANDIN_DAEMON % {
        "argv": tmp_path / "argv", "pid": tmp_path / "pid"}, 0o755)
    monkeypatch.setattr(st.tempfile, "tempdir", str(tmp_path))
    before = _host_mount_lines("tracefs")

    a = parse(["--ksrc", str(ksrc), "--daemon-cmd", str(daemon), "--extra", str(extra),
               "--cmdline", "a=1", "--timeout", "60", "00basic", "fails.tc"])
    rc = st.run(a)
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
    assert st.run(a) == 0
    assert capfd.readouterr().out.strip().splitlines()[-1] == "1 passed, 0 failed, 0 skipped"


@needs_root_ns
def test_end_to_end_daemon_failure(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("KSRC", raising=False)
    ksrc = tmp_path / "ksrc"
    _write(ksrc / "ftracetest", STANDIN_FTRACETEST, 0o755)
    _write(ksrc / "test.d" / "functions", FUNCTIONS)
    _write(ksrc / "test.d" / "t.tc", _tc("t"))
    bad = _write(tmp_path / "bad", "#!/bin/sh\necho boot failed >&2\nexit 3\n", 0o755)
    a = parse(["--ksrc", str(ksrc), "--daemon-cmd", str(bad)])
    assert st.run(a) == 2
    cap = capfd.readouterr()
    assert "boot failed" in cap.out
    assert "daemon exited" in cap.err
