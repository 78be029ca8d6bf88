from fakefs.kernel.mm.alloc_tag import AllocTag
from mm_helpers import boot


def test_percpu_charges_every_possible_cpu():
    k = boot(nr_cpus=4)
    t = AllocTag("drivers/test/pcpu.c", 1, "test_pcpu", None, "alloc_percpu")
    obj = k.percpu.alloc(t, 16)
    assert (t.bytes, t.calls) == (16 * 4, 1)
    k.percpu.free(obj)
    assert (t.bytes, t.calls) == (0, 0)
    k = boot(nr_cpus=2, MEMCG=True)
    t = AllocTag("drivers/test/pcpu.c", 1, "test_pcpu", None, "alloc_percpu")
    k.percpu.alloc(t, 16)
    assert t.bytes == 16 * 2 + 16 // 4 * 8           # + obj_cgroup pointers per 4-byte unit
