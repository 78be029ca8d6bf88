"""Tag accounting of the slab allocator: nesting, _noprof helpers, frees,
object extension vectors, enable/disable, DEBUG warnings."""

import pytest

from fakefs.kernel.mm.alloc_tag import AllocTag
from fakefs.kernel.mm.slub import calculate_order, kmalloc_index
from mm_helpers import boot, write


@pytest.fixture
def kernel():
    return boot()


def counters(*tags):
    return [(t.bytes, t.calls) for t in tags]


def site(k, name="test_site"):
    """A tag of its own, as a new alloc_hooks() call site would have."""
    return AllocTag("drivers/test/test.c", 10, name, None, "kmalloc")


def test_kmalloc_caches_and_orders():
    assert [kmalloc_index(s) for s in (1, 8, 9, 64, 65, 96, 97, 128, 129, 192, 193, 256, 257, 8192)] == \
        [0, 0, 1, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 12]
    assert calculate_order(192, 8) == 0
    assert calculate_order(256, 8) == 1
    assert calculate_order(1024, 8) == 3
    assert calculate_order(9664, 2) == 3


def test_object_charged_to_caller_slab_page_to_slub(kernel):
    k = kernel
    s = k.slab
    caller = site(k)
    cache = s.kmem_cache_create("test_cache_a", 200)
    page_tag = s.tag_slab_page
    vec_tag = s.tag_obj_exts
    before = counters(page_tag, vec_tag)
    obj = s.kmem_cache_alloc(caller, cache)
    # the caller pays the object (s->size), one call; the inner hooks win for the rest
    assert counters(caller) == [(cache.size, 1)]
    assert counters(page_tag)[0] == (before[0][0] + (4096 << cache.order), before[0][1] + 1)
    vec_bytes = s.kmalloc_cache(cache.objects * s.objext_size).size
    assert counters(vec_tag)[0] == (before[1][0] + vec_bytes, before[1][1] + 1)
    # a second object on the same slab: no new page, no new vector
    obj2 = s.kmem_cache_alloc(caller, cache)
    assert counters(caller) == [(2 * cache.size, 2)]
    assert counters(page_tag, vec_tag) == [(before[0][0] + (4096 << cache.order), before[0][1] + 1),
                                          (before[1][0] + vec_bytes, before[1][1] + 1)]
    s.kmem_cache_free(cache, obj)
    s.kmem_cache_free(cache, obj2)
    assert counters(caller) == [(0, 0)]
    # the empty slab stays cached (min_partial): its page and vector too
    assert counters(page_tag)[0] == (before[0][0] + (4096 << cache.order), before[0][1] + 1)


def test_kmalloc_vectors_are_not_charged(kernel):
    s = kernel.slab
    caller = site(kernel)
    vec_tag = s.tag_obj_exts
    before = counters(vec_tag)
    objs = [s.kmalloc(caller, 3000) for _ in range(40)]       # fills new kmalloc-4k slabs
    assert counters(caller) == [(40 * 4096, 40)]
    assert counters(vec_tag) == before                         # __GFP_NO_OBJ_EXT vectors
    for o in objs:
        s.kfree(o)
    assert counters(caller) == [(0, 0)]


def test_empty_slabs_beyond_min_partial_go_back(kernel):
    s = kernel.slab
    caller = site(kernel)
    cache = s.kmem_cache_create("test_cache_b", 512)
    page_tag = s.tag_slab_page
    base = page_tag.calls
    objs = [s.kmem_cache_alloc(caller, cache) for _ in range(cache.objects * 20)]
    assert page_tag.calls == base + 20 and cache.nr_slabs == 20
    for o in objs:
        s.kmem_cache_free(cache, o)
    assert cache.nr_slabs == cache.min_partial
    assert page_tag.calls == base + cache.min_partial
    assert caller.bytes == 0 and caller.calls == 0


def test_large_kmalloc_is_pages_charged_to_the_caller(kernel):
    s = kernel.slab
    caller = site(kernel)
    page_tag = s.tag_slab_page
    before = counters(page_tag)
    obj = s.kmalloc(caller, 20000)
    assert counters(caller) == [(32768, 1)]                  # order-3 block
    assert counters(page_tag) == before
    s.kfree(obj)
    assert counters(caller) == [(0, 0)]


def test_noprof_helper_charges_its_caller(kernel):
    """foo_noprof() does kmalloc_noprof(); foo() is alloc_hooks(foo_noprof())."""
    at = kernel.alloc_tag
    s = kernel.slab
    a, b = site(kernel, "caller_a"), site(kernel, "caller_b")

    def helper_noprof(size):
        return s.kmalloc_noprof(size), s.kmalloc_noprof(size)

    at.alloc_hooks(a, helper_noprof, 64)
    at.alloc_hooks(b, helper_noprof, 100)
    assert counters(a, b) == [(128, 2), (256, 2)]
    assert at.current is None


def test_nesting_innermost_wins_and_restores(kernel):
    at = kernel.alloc_tag
    s = kernel.slab
    outer, inner = site(kernel, "outer"), site(kernel, "inner")
    seen = []

    def inner_fn():
        seen.append(at.current)
        return s.kmalloc_noprof(32)

    def outer_fn():
        s.kmalloc_noprof(32)
        at.alloc_hooks(inner, inner_fn)
        seen.append(at.current)
        return s.kmalloc_noprof(32)

    at.alloc_hooks(outer, outer_fn)
    assert seen == [inner, outer]
    assert counters(outer, inner) == [(64, 2), (32, 1)]
    assert at.current is None


def test_disable_freezes_enable_resumes(kernel):
    k = kernel
    s = k.slab
    caller = site(k)
    a = s.kmalloc(caller, 64)
    assert write(k, "proc/sys/vm/mem_profiling", b"0\n") == 2
    b = s.kmalloc(caller, 64)              # not counted
    s.kfree(a)                             # not subtracted either
    assert counters(caller) == [(64, 1)]
    assert write(k, "proc/sys/vm/mem_profiling", b"1\n") == 2
    c = s.kmalloc(caller, 64)
    assert counters(caller) == [(128, 2)]  # resumed from the frozen value
    s.kfree(b)                             # allocated untagged: nothing to give back
    s.kfree(c)
    assert counters(caller) == [(64, 1)]   # a's free was lost while disabled
    assert "WARNING" not in k.log.dmesg()


def test_debug_warns_about_missing_annotation_once():
    k = boot(MEM_ALLOC_PROFILING_DEBUG=True)
    s = k.slab
    objs = [s.kmalloc_noprof(64) for _ in range(3)]    # no alloc_hooks(): current tag unset
    log = k.log.dmesg()
    assert log.count("current->alloc_tag not set") == 1
    assert "------------[ cut here ]------------" in log
    assert "WARNING: CPU: 0 PID: " in log and " at include/linux/alloc_tag.h:132 " in log
    assert "---[ end trace 0000000000000000 ]---" in log
    for o in objs:
        s.kfree(o)
    assert k.log.dmesg().count("alloc_tag was not set") == 1
    assert k.tainted >= {"W"}


def test_no_warning_without_debug(kernel):
    o = kernel.slab.kmalloc_noprof(64)
    kernel.slab.kfree(o)
    assert "WARNING" not in kernel.log.dmesg()


def test_obj_exts_failure_612_warns_618_marks_inaccurate():
    for persona, expect_warn in (("6.12-stackmap", True), ("6.18", False)):
        k = boot(persona=persona)
        s = k.slab
        caller = site(k)
        cache = s.kmem_cache_create("test_cache_c", 100)
        s.objext_fail = 1
        obj = s.kmem_cache_alloc(caller, cache)
        assert counters(caller) == [(0, 0)]
        log = k.log.dmesg()
        assert ("prepare_slab_obj_exts_hook, test_cache_c: Failed to create slab extension vector!"
                in log) == expect_warn
        assert bool(caller.flags & 1) == (not expect_warn)
        s.kmem_cache_free(cache, obj)


def test_bulk_alloc_and_free(kernel):
    s = kernel.slab
    caller = site(kernel)
    at = kernel.alloc_tag
    old = at.current
    at.current = caller
    b = s.kmalloc_bulk_noprof(100, 1000)
    at.current = old
    assert counters(caller) == [(128 * 1000, 1000)]
    s.kfree(b)
    assert counters(caller) == [(0, 0)]
