"""FOPEN_NOFLUSH for the opens whose FLUSH would do nothing (fuse/noflush.py):
opens of files without a flush of their own, readers and writers, send no
FLUSH at close; files whose flush acts keep theirs."""

from __future__ import annotations

import os

from mountlib import requires_fuse

from fakefs.bench.barefs import fakefs_mounted, requests_of
from fakefs.fuse.noflush import HEADER, noflush_bit

T = "sys/kernel/tracing/"

HEADER_3_14 = """
struct fuse_file_info {
	/** Open flags */
	int flags;
	unsigned int writepage : 1;
	/** Can be filled in by open */
	unsigned int direct_io : 1;
	unsigned int keep_cache : 1;
	unsigned int flush : 1;
	unsigned int nonseekable : 1;
	unsigned int flock_release : 1;
	unsigned int cache_readdir : 1;
	/** Can be filled in by open, to indicate that flush is not needed
	    on close. */
	unsigned int noflush : 1;
	unsigned int padding : 24;
	unsigned int padding2 : 32;
	uint64_t fh;
};
"""


def test_the_bit_comes_from_the_header():
    assert noflush_bit(HEADER_3_14) == 7
    moved = HEADER_3_14.replace("unsigned int writepage : 1;", "unsigned int writepage : 1;\n"
                                "\tunsigned int parallel_direct_writes : 1;")
    assert noflush_bit(moved) == 8
    assert noflush_bit(HEADER_3_14.replace("noflush", "nothing")) is None
    assert noflush_bit("struct other { int x; };") is None
    if os.path.exists(HEADER):
        with open(HEADER) as fh:
            assert noflush_bit(fh.read()) is not None


@requires_fuse
def test_only_flushes_that_do_something_are_sent():
    with fakefs_mounted(debug=True) as (mnt, log):
        tr = os.path.join(mnt, T)

        def cat(rel, n=5):
            def run():
                for _ in range(n):
                    with open(os.path.join(tr, rel), "rb") as f:
                        f.read()
            return run

        def echo(rel, data):
            def run():
                with open(os.path.join(tr, rel), "w") as f:
                    f.write(data)
            return run

        cat("tracing_on")()
        got = requests_of(log, cat("tracing_on"))
        assert got["OPEN"] == 5 and got["RELEASE"] == 5 and got["FLUSH"] == 0, got
        # a writer of a file that acts at write() has nothing to do at close
        got = requests_of(log, echo("tracing_on", "1\n"))
        assert got["OPEN"] == 1 and got["WRITE"] == 1 and got["FLUSH"] == 0, got
        # one whose flush commits keeps it (ftrace_regex_release, anchors §0
        # fact 5): the unfinished word is processed there
        got = requests_of(log, echo("set_ftrace_filter", "schedule"))
        assert got["OPEN"] == 1 and got["FLUSH"] == 1, got
        with open(os.path.join(tr, "set_ftrace_filter")) as f:
            assert f.read() == "schedule\n"
        echo("set_ftrace_filter", "")()
        # a read-only open of a file whose flush acts: trace_pipe_raw's wakes
        # a reader blocked on the same file (tracing_buffers_flush)
        got = requests_of(log, _nonblock_read(os.path.join(tr, "per_cpu/cpu0/trace_pipe_raw")))
        assert got["OPEN"] == 1 and got["FLUSH"] == 1, got


def _nonblock_read(path):
    def run():
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            os.read(fd, 4096)
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
    return run
