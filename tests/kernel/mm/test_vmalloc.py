import pytest

from fakefs.kernel.mm.alloc_tag import AllocTag
from fakefs.kernel.mm.vmalloc import VmArea
from mm_helpers import boot


@pytest.fixture
def kernel():
    return boot()


def tag():
    return AllocTag("drivers/test/vm.c", 3, "test_vm", None, "vmalloc")


def test_thread_stack_costs_16416_bytes_in_5_calls(kernel):
    vm = kernel.vmalloc
    t = tag()
    va_tag, vm_tag = vm.tag_vmap_area, vm.tag_vm_struct
    before = [(x.bytes, x.calls) for x in (va_tag, vm_tag)]
    area = vm.vmalloc(t, 16384)
    # pages + the page-pointer array go to the caller ...
    assert (t.bytes, t.calls) == (16384 + 32, 5)
    # ... the bookkeeping to the hooks inside mm/vmalloc.c
    assert (va_tag.bytes - before[0][0], va_tag.calls - before[0][1]) == (64, 1)
    assert (vm_tag.bytes - before[1][0], vm_tag.calls - before[1][1]) == (64, 1)
    assert vm_tag.function == "__get_vm_area_node" and va_tag.function == "alloc_vmap_area"
    vm.vfree(area)
    assert (t.bytes, t.calls) == (0, 0)
    assert [(x.bytes, x.calls) for x in (va_tag, vm_tag)] == before


def test_big_vmalloc_has_a_vmalloced_page_array(kernel):
    vm = kernel.vmalloc
    t = tag()
    area = vm.vmalloc(t, 8 << 20)                     # 2048 pages, 16 KiB array
    assert isinstance(area.array, VmArea)
    assert (t.bytes, t.calls) == ((8 << 20) + 16384 + 32, 2048 + 4 + 1)
    vm.vfree(area)
    assert (t.bytes, t.calls) == (0, 0)


def test_kvmalloc_paths(kernel):
    vm = kernel.vmalloc
    t = tag()
    small = vm.kvmalloc(t, 1000)
    assert (t.bytes, t.calls) == (1024, 1)
    big = vm.kvmalloc(t, 60000)                       # large kmalloc: one order-4 block
    assert (t.bytes, t.calls) == (1024 + 65536, 2)
    vm.fragmentation = 1.0
    frag = vm.kvmalloc(t, 200000)                     # order 6 fails: vmalloc fallback
    assert isinstance(frag, VmArea)
    for o in (small, big, frag):
        vm.kvfree(o)
    assert (t.bytes, t.calls) == (0, 0)
