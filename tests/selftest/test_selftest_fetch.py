"""Obtaining ftracetest (fakefs/selftest/fetch.py): from a kernel tree, a
tarball, a cached or downloaded linux-source .deb."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

import pytest
from selftest_helpers import make_tc, write

from fakefs.selftest import fetch
from fakefs.selftest.errors import SelftestError

def test_ftrace_dir_in_tree(ksrc):
    ft = ksrc / fetch.FTRACE_REL
    assert fetch.ftrace_dir_in_tree(ksrc) == ft
    assert fetch.ftrace_dir_in_tree(ft) == ft
    with pytest.raises(SelftestError):
        fetch.ftrace_dir_in_tree(ksrc / "tools")


def test_obtain_from_tree_is_used_in_place(ksrc, tmp_path):
    cache = tmp_path / "cache"
    assert fetch.obtain_ftracetest(str(ksrc), cache) == ksrc / fetch.FTRACE_REL
    assert not cache.exists()


def test_obtain_missing_ksrc(tmp_path):
    with pytest.raises(SelftestError):
        fetch.obtain_ftracetest(str(tmp_path / "nope"), tmp_path / "cache")


def _make_tarball(ksrc: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w:xz") as tf:
        tf.add(ksrc, arcname="linux-source-9.9")
    return dest


def test_obtain_from_tarball_is_cached(ksrc, tmp_path, monkeypatch):
    tarball = _make_tarball(ksrc, tmp_path / "linux-source-9.9.tar.xz")
    cache = tmp_path / "cache"
    got = fetch.obtain_ftracetest(str(tarball), cache)
    assert got.parent == cache and fetch.is_ftrace_dir(got)
    assert (got / "test.d" / "ftrace" / "c.tc").is_file()
    assert os.access(got / "ftracetest", os.X_OK)
    # only the ftrace directory, and no temporary leftovers
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".selftest")) == [got.name]
    # second call: served from the cache without extracting
    monkeypatch.setattr(fetch, "extract_tarball", lambda *a: pytest.fail("extracted twice"))
    assert fetch.obtain_ftracetest(str(tarball), cache) == got


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
    write(ksrc / fetch.FTRACE_REL / "test.d" / "ftrace" / "new.tc", make_tc("new"))
    new = _make_deb(ksrc, tmp_path, "6.12.10-1~deb12u1")
    shutil.move(new, cache / new.name)
    monkeypatch.setattr(fetch, "download_deb", lambda c: pytest.fail("downloaded"))
    got = fetch.obtain_ftracetest(None, cache)
    assert got == cache / "ftracetest-6.12.10-1_deb12u1"
    assert (got / "test.d" / "ftrace" / "new.tc").is_file()
    assert fetch.obtain_ftracetest(None, cache) == got


@needs_dpkg
def test_download_retries_after_apt_update(ksrc, tmp_path, monkeypatch):
    deb = _make_deb(ksrc, tmp_path, "6.12.1-1")
    bindir = tmp_path / "bin"
    log = tmp_path / "apt.log"
    write(bindir / "apt-get", textwrap.dedent("""\
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
    got = fetch.obtain_ftracetest(None, cache)
    assert log.read_text().split("\n")[:3] == [
        "download linux-source-6.12", "update", "download linux-source-6.12"]
    assert (cache / deb.name).is_file()
    assert got == cache / "ftracetest-6.12.1-1" and fetch.is_ftrace_dir(got)
    assert not list(cache.glob(".download-*"))


def test_download_failure_is_reported(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    write(bindir / "apt-get", "#!/bin/sh\necho 'E: Unable to locate package'\nexit 100\n", 0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    with pytest.raises(SelftestError, match="--ksrc") as e:
        fetch.obtain_ftracetest(None, tmp_path / "cache")
    assert "could not download linux-source-6.12 (apt-get download said: E: Unable to locate " \
           "package)" in str(e.value)


def test_the_download_is_announced_with_its_size_before_it_starts(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    events = tmp_path / "events"
    write(bindir / "apt-cache", textwrap.dedent("""\
        #!/bin/sh
        [ "$*" = "show --no-all-versions linux-source-6.12" ] || exit 100
        printf 'Package: linux-source-6.12\\nVersion: 6.12.117-1~deb12u1\\nSize: 153476148\\n'
        """), 0o755)
    write(bindir / "apt-get", "#!/bin/sh\necho \"apt-get $*\" >> %s\nexit 100\n" % events, 0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    monkeypatch.setattr(fetch, "log", lambda msg: events.open("a").write("log " + msg + "\n"))
    cache = tmp_path / "cache"
    with pytest.raises(SelftestError):
        fetch.obtain_ftracetest(None, cache)
    lines = events.read_text().splitlines()
    assert lines[:2] == [
        "log downloading linux-source-6.12 6.12.117-1~deb12u1 (153 MB) once with apt-get "
        "download into %s, for its ftrace selftests (--ksrc DIR or KSRC=DIR takes them from a "
        "kernel tree instead) ..." % cache,
        "apt-get download linux-source-6.12"]
    # apt without package lists: the size is not known, the rough one is said
    write(bindir / "apt-cache", "#!/bin/sh\necho 'E: No packages found' >&2\nexit 100\n", 0o755)
    assert fetch.deb_candidate() is None
    assert fetch.download_notice(cache, None).startswith(
        "downloading linux-source-6.12 (about 150 MB) once")


def test_without_apt_get_the_error_says_what_to_do(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(SelftestError, match="no linux-source-6.12 in .* and no apt-get to "
                                            "download it: use --ksrc DIR or KSRC=DIR"):
        fetch.obtain_ftracetest(None, tmp_path / "cache")


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert fetch.default_cache_dir() == tmp_path / "fakefs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert fetch.default_cache_dir() == tmp_path / "home" / ".cache" / "fakefs"


def test_version_order():
    vs = ["6.12.10-1", "6.12.9-1", "6.12.9-1~deb12u1", "6.12.117-1~deb12u1", "6.12.9-2"]
    assert sorted(vs, key=fetch._version_key) == [
        "6.12.9-1~deb12u1", "6.12.9-1", "6.12.9-2", "6.12.10-1", "6.12.117-1~deb12u1"]
