"""The bare pyfuse3 filesystem ``make bench`` compares fakefs with."""

import os
import subprocess

from mountlib import requires_fuse

from fakefs.bench import barefs as bare

REL = "sys/kernel/tracing/tracing_on"


def test_count_requests_reads_libfuse_debug_lines(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"FUSE library version: 3.14.0\n"
                    b"unique: 2, opcode: INIT (26), nodeid: 0, insize: 104, pid: 0\n"
                    b"INIT: 7.41\n"
                    b"   unique: 2, success, outsize: 80\n"
                    b"unique: 4, opcode: LOOKUP (1), nodeid: 1, insize: 44, pid: 7\n"
                    b"   unique: 4, success, outsize: 144\n"
                    b"unique: 6, opcode: READ (15), nodeid: 2, insize: 80, pid: 7\n"
                    b"unique: 8, opcode: READ (15), nodeid: 2, insize: 80, pid: 7\n")
    assert bare.count_requests(str(log)) == {"INIT": 1, "LOOKUP": 1, "READ": 2}
    start = log.read_bytes().index(b"unique: 6")
    assert bare.count_requests(str(log), start) == {"READ": 2}


@requires_fuse
def test_bare_fs_serves_the_file_and_counts_requests():
    with bare.barefs_mounted(REL, debug=True) as (mnt, log, stats, proc):
        path = os.path.join(mnt, REL)
        assert os.listdir(mnt) == ["sys"]
        assert os.stat(path).st_size == 0              # as tracefs (and fakefs)
        before = bare.handler_counts(proc, stats)
        reqs = bare.requests_of(log, lambda: subprocess.run(["cat", path], check=True,
                                                            capture_output=True))
        after = bare.handler_counts(proc, stats)
        # direct_io: cat reads until a read returns nothing
        assert reqs["OPEN"] == reqs["FLUSH"] == reqs["RELEASE"] == 1 and reqs["READ"] == 2
        for op in ("open", "read", "flush", "release"):
            assert after[op] - before.get(op, 0) == reqs[op.upper()]
        with open(path, "rb") as fh:
            assert fh.read() == b"1\n"
        with open(path, "rb") as fh:
            assert fh.read() == b"1\n"        # the same twice


@requires_fuse
def test_naive_style_reads_through_the_page_cache():
    with bare.barefs_mounted(REL, style="naive", debug=True) as (mnt, log, stats, proc):
        path = os.path.join(mnt, REL)
        assert os.stat(path).st_size == 2
        cat = lambda: subprocess.run(["cat", path], check=True, capture_output=True)  # noqa: E731
        assert cat().stdout == b"1\n"
        reqs = bare.requests_of(log, cat)
        assert reqs["OPEN"] == 1 and reqs["READ"] == 0     # keep_cache: no READ the second time
    assert not os.path.exists(stats)                      # cleaned up
