"""Per-structure tags: an rhashtable's memory is charged to the tag that was
current at its init, whoever grows it later."""

from fakefs.kernel.init import ALLOC_INITCALLS, Kernel
from fakefs.kernel.lib.rhashtable import Rhashtable, rhashtable_init
from fakefs.kernel.mm.alloc_tag import AllocTag
from fakefs.sim.clock import ManualClock
from fakefs import sim


def boot():
    return sim.boot_kernel(Kernel(clock=ManualClock(), nr_cpus=2),
                           [("fakefs.kernel.fs.proc.base", "proc_root_init"), *ALLOC_INITCALLS])


def test_tables_charged_to_the_init_site():
    k = boot()
    at = k.alloc_tag
    init_site = AllocTag("net/test/table.c", 42, "test_table_init", None, "rhashtable_init")
    other = AllocTag("net/test/other.c", 7, "busy_path", None, "kmalloc")
    ht = rhashtable_init(k, init_site, automatic_shrinking=True)
    assert ht.alloc_tag is init_site and ht.size == 64
    assert (init_site.bytes, init_site.calls) == (1024, 1)      # 64 + 64*8 -> kmalloc-1k
    # elements inserted from some other allocation context: the resize is still ours
    at.current = other
    ht.insert(49)
    at.current = None
    assert ht.size == 128 and (init_site.bytes, init_site.calls) == (2048, 1)
    assert (other.bytes, other.calls) == (0, 0)
    ht.insert(1000)
    assert ht.size == 2048 and (init_site.bytes, init_site.calls) == (32768, 1)  # order-3 kvmalloc
    ht.remove(1040)                                              # 9 left: shrink to 16 buckets
    assert ht.size == 16 and (init_site.bytes, init_site.calls) == (192, 1)
    ht.destroy()
    assert (init_site.bytes, init_site.calls) == (0, 0)


def test_without_hooks_the_tag_is_whatever_was_current():
    k = boot()
    ht = Rhashtable(k)
    assert ht.alloc_tag is None
