import pytest

from fakefs.kernel.mm.alloc_tag import AllocTag
from fakefs.kernel.mm.page_alloc import get_order
from mm_helpers import boot


@pytest.fixture
def kernel():
    return boot()


def tag():
    return AllocTag("drivers/test/pages.c", 7, "test_pages", None, "alloc_pages")


def test_get_order():
    assert [get_order(n) for n in (1, 4096, 4097, 8192, 16384, 16385, 4 << 20)] == [0, 0, 1, 1, 2, 3, 10]


def test_pages_charged_and_given_back(kernel):
    pa = kernel.page_alloc
    t = tag()
    p = pa.alloc_pages(t, 3)
    assert (t.bytes, t.calls) == (32768, 1)
    pa.free_pages(p)
    assert (t.bytes, t.calls) == (0, 0)


def test_split_counts_a_call_per_page_and_exact_trims(kernel):
    pa = kernel.page_alloc
    at = kernel.alloc_tag
    t = tag()
    p = pa.alloc_pages(t, 2)
    pa.split_page(p)
    assert (t.bytes, t.calls) == (16384, 4)          # bytes unchanged, one call per page
    pa.free_pages(p)
    assert (t.bytes, t.calls) == (0, 0)
    old = at.current
    at.current = t
    p = pa.alloc_pages_exact_noprof(5 * 4096)        # order 3, 3 tail pages freed
    at.current = old
    assert (t.bytes, t.calls) == (5 * 4096, 5)
    pa.free_pages_exact(p)
    assert (t.bytes, t.calls) == (0, 0)


def test_bulk_pages(kernel):
    pa = kernel.page_alloc
    at = kernel.alloc_tag
    t = tag()
    at.current = t
    p = pa.alloc_pages_bulk_noprof(1010)
    at.current = None
    assert (t.bytes, t.calls) == (4136960, 1010)
    pa.free_pages(p)
    assert (t.bytes, t.calls) == (0, 0)


def test_never_has_no_page_references():
    k = boot("sysctl.vm.mem_profiling=never")
    t = tag()
    k.alloc_tag.enabled = True                        # even if the key were on
    p = k.page_alloc.alloc_pages(t, 0)
    assert (t.bytes, t.calls) == (0, 0) and p.ref is None


def test_page_account_charges_a_call_per_page(kernel):
    from fakefs.kernel.mm.page_alloc import PageAccount
    pa = kernel.page_alloc
    t = tag()
    acct = PageAccount(pa, t)
    avail = pa.si_mem_available()
    acct.charge(10)
    assert (t.bytes, t.calls, acct.pages) == (40960, 10, 10)
    assert pa.si_mem_available() == avail - 10
    acct.uncharge(4)
    assert (t.bytes, t.calls) == (6 * 4096, 6) and pa.si_mem_available() == avail - 6
    acct.uncharge(100)                      # never more than it holds
    assert (t.bytes, t.calls, acct.pages) == (0, 0, 0) and pa.si_mem_available() == avail


def test_page_account_without_an_allocator_has_its_own_ram():
    from fakefs.kernel.mm.page_alloc import PageAccount
    acct = PageAccount(None, None, ram_pages=100)
    acct.charge(30)
    assert acct.available_pages() == 70
    acct.uncharge(30)
    assert acct.available_pages() == 100
