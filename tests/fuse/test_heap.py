from fakefs import sim
from fakefs.fuse.heap import HeapTrim
from fakefs.kernel.fs.pseudo import kernel_write
from fakefs.kernel.time import ManualClock

T = "sys/kernel/tracing/"


def test_the_heap_is_trimmed_after_buffer_pages_are_given_back():
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    heap = HeapTrim(k)
    kernel_write(k.tree, T + "buffer_size_kb", b"4096")      # grows: nothing freed
    heap.after_request()
    assert heap.trims == 0
    kernel_write(k.tree, T + "buffer_size_kb", b"1408")      # shrinks
    heap.after_request()
    heap.after_request()                                     # once per release
    assert heap.trims == 1
    k.tracing.instance_mkdir("a")
    heap.after_request()
    assert heap.trims == 1
    k.tracing.instance_rmdir("a")
    heap.after_request()                                     # the instance's buffers went
    assert heap.trims == 2
