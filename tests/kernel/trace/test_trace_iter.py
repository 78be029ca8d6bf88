"""Reading the ring buffer as text (trace_iter.py)."""

import os
import re

from fakefs import sim
from fakefs.kernel.fs.pseudo import File
from fakefs.sim.clock import ManualClock
from kfiles import node, rd, wr


def boot(ns=200_000_000):
    k = sim.boot(cmdline="ftrace=function", seed=7, nr_cpus=2, clock=ManualClock())
    k.clock.advance(ns)
    wr(k, "tracing_on", "0")
    return k


def test_trace_read_at_any_offset_is_the_same_text():
    k = boot()
    whole = rd(k, "trace").encode()
    n = node(k, "trace")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    got = {}
    for off, size in ((0, 100), (100, 50), (5000, 300), (4000, 10), (len(whole) - 20, 4096), (0, 64)):
        got[off, size] = n.fops.read(f, off, size)
    n.fops.release(f)
    for (off, size), data in got.items():
        assert data == whole[off:off + size], (off, size)


def test_a_read_takes_the_options_as_they_are_then():
    k = boot()
    with_irq = rd(k, "trace").splitlines()[-1]
    wr(k, "options/irq-info", "0")
    without = rd(k, "trace").splitlines()[-1]
    # "[000] d..2.     0.199822: ..." and "[000]      0.199822: ...": the five flags go
    assert without.split("] ", 1)[1] == with_irq.split("] ", 1)[1][5:]
    wr(k, "options/context-info", "0")
    assert rd(k, "trace").splitlines()[-1] == without.split(": ", 1)[1]


def test_per_cpu_trace_header_counts_every_cpu():
    """As measured on the stock kernel: the same entries-in-buffer/written
    line in trace and in every per_cpu/cpuN/trace."""
    k = boot()
    head = [ln for ln in rd(k, "trace").splitlines() if "entries-in-buffer" in ln]
    for cpu in (0, 1):
        text = rd(k, "per_cpu/cpu%d/trace" % cpu)
        assert [ln for ln in text.splitlines() if "entries-in-buffer" in ln] == head
        body = [ln for ln in text.splitlines() if not ln.startswith("#")]
        assert body and all("[%03d]" % cpu in ln for ln in body)


def test_trace_pipe_latency_columns_see_the_entry_as_its_own_next():
    """A consuming reader prints an entry while it is still the head of its
    CPU: every delay is 0 (no mark), and the verbose index counts from 1 at
    each read."""
    k = boot()
    wr(k, "options/latency-format", "1")
    wr(k, "options/verbose", "1")
    n = node(k, "trace_pipe")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    for r in range(2):
        data = n.fops.read(f, 0, 4096)
        if r:       # the rest of the line the last read split comes alone
            assert data.count(b"\n") == 1 and data.endswith(b"\n")
            data = n.fops.read(f, 0, 4096)
        lines = data.decode().split("\n")[:-1]         # whole lines
        full = [ln for ln in lines if "ms (+" in ln]
        assert full
        assert all("(+0.000ms): " in ln for ln in full)
        assert [int(ln.split()[5], 16) for ln in full] == list(range(1, len(full) + 1))
    n.fops.release(f)
    wr(k, "options/verbose", "0")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    lines = n.fops.read(f, 0, 4096).decode().splitlines()[:-1]
    lines = [ln for ln in lines if "[LOST " not in ln]    # (not an entry: no columns)
    assert lines and all(re.search(r" \d+us : ", ln) for ln in lines)
    n.fops.release(f)


def _pipe(k):
    n = node(k, "trace_pipe")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    return n, f


def test_trace_pipe_reads_as_tracing_read_pipe_does():
    """A short read gets ``size`` bytes: whole lines and the start of the
    line that reached ``size`` (consumed); the next read gets the rest of
    that line alone.  A big read stops before the line that would not fit
    in the 8 KB text buffer (left in the ring) and never splits a line."""
    k = boot(20_000_000)          # nothing overwritten yet: no "[LOST n EVENTS]" line
    whole = rd(k, "trace")
    lines = [ln + "\n" for ln in whole.splitlines() if not ln.startswith("#")]
    assert len(lines) > 200
    n, f = _pipe(k)
    first = n.fops.read(f, 0, 300)
    assert len(first) == 300
    head = "".join(lines[:8]).encode()
    assert head.startswith(first)
    k_full = sum(1 for i in range(1, 9) if len("".join(lines[:i]).encode()) < 300)
    rest = n.fops.read(f, 300, 4096)      # the leftover of the split line, alone
    assert first + rest == "".join(lines[:k_full + 1]).encode()
    big = n.fops.read(f, 0, 1 << 20)
    assert big.endswith(b"\n") and len(big) <= 8155
    assert big == "".join(lines[k_full + 1:k_full + 1 + big.count(b"\n")]).encode()
    nxt = n.fops.read(f, 0, 1 << 20)      # the line that did not fit comes next
    assert nxt.startswith(lines[k_full + 1 + big.count(b"\n")].encode())
    n.fops.release(f)


def test_an_empty_trace_pipe_names_what_its_reader_waits_for():
    """WouldBlock's PipeWait: its token moves with a write to the buffer
    the file reads, a reset and tracing switched; not with what a reader
    consumes nor with another CPU's buffer for a per-CPU file."""
    import pytest
    from fakefs.kernel.fs.pseudo import WouldBlock

    k = boot()
    wr(k, "current_tracer", "nop")
    wr(k, "trace", "")
    wr(k, "tracing_on", "1")

    def blocked(path):
        n = node(k, path)
        f = File(n, os.O_RDONLY)
        n.fops.open(f)
        with pytest.raises(WouldBlock) as e:
            n.fops.read(f, 0, 4096)
        return e.value.waitq, n, f
    top, n, f = blocked("trace_pipe")
    cpus = [blocked("per_cpu/cpu%d/trace_pipe" % c)[0] for c in (0, 1)]
    assert len({top.key, cpus[0].key, cpus[1].key}) == 3
    t_top, t_cpus = top.token(), [w.token() for w in cpus]
    wr(k, "trace_marker", "hello")
    assert top.token() != t_top
    assert sorted(w.token() != t for w, t in zip(cpus, t_cpus)) == [False, True]
    moved = top.token()
    assert b"hello" in n.fops.read(f, 0, 4096)       # consumed: no wake-up for the others
    assert top.token() == moved
    wr(k, "tracing_on", "0")
    assert top.token() != moved and all(w.token() != t for w, t in zip(cpus, t_cpus))
    wr(k, "tracing_on", "1")
    wr(k, "trace_marker", "again")
    on = top.token()
    wr(k, "trace", "")
    assert top.token() != on                          # (the reset)
