"""``make bench``'s memory figures: what it counts as the buffers' pages."""

from fakefs import sim
from fakefs.bench.memory import _rb_pages_bytes
from fakefs.sim.clock import ManualClock
from fakefs.sim.files import read_file, write_file


def test_the_buffers_pages_are_allocinfo_s_ring_buffer_pages():
    """A sub-buffer's page is 4 KB (its header and 4080 bytes of data):
    allocinfo's ``__rb_allocate_pages`` lines count every CPU buffer's
    pages taken since boot (the snapshot buffer's too; boot's are in its
    footprint), that much more than ``buffer_total_size_kb``."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    write_file(k, "sys/kernel/tracing/buffer_size_kb", b"65536")
    got = _rb_pages_bytes(read_file(k, "proc/allocinfo").decode())
    tr = k.tracing.global_trace
    bufs = [tr.buffer] + ([tr.max_buffer] if tr.max_buffer is not None else [])
    pages = sum(cb.nr_pages for b in bufs for cb in b.cpus)
    assert got % 4096 == 0 and abs(got // 4096 - pages) < 16, (got // 4096, pages)
    total_kb = int(read_file(k, "sys/kernel/tracing/buffer_total_size_kb").split()[0])
    assert got > total_kb * 1024
