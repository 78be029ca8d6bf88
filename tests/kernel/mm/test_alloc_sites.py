"""The call sites the workload uses and how (alloc_sites.py)."""

import random

import pytest

from fakefs.kernel.mm.alloc_tag import AllocTag
from fakefs.kernel.mm.alloc_sites import SITES, SiteProfile
from mm_helpers import boot


@pytest.fixture
def kernel():
    return boot()


def test_every_scripted_site_exists(kernel):
    wl = kernel.alloc_calls
    missing = [key for key in SITES if wl.site(key) is None]
    assert not missing


@pytest.mark.parametrize("callee,kind", [
    ("kmalloc", "kmalloc"), ("kzalloc", "kmalloc"), ("kvmalloc", "kvmalloc"), ("vzalloc", "vmalloc"),
    ("alloc_pages", "page"), ("folio_alloc", "page"), ("kmem_cache_alloc", "cache"),
    ("__alloc_percpu", "percpu"), ("alloc_inode_sb", "cache"),
])
def test_profile_follows_the_callee(callee, kind):
    for seed in range(20):
        p = SiteProfile(AllocTag("x.c", 1, "f", callee=callee), random.Random(seed))
        assert p.kind == kind
        if kind == "page":
            assert p.size == 4096 << p.order and 0 <= p.order <= 3
        else:
            assert 4 <= p.size <= 4 << 20 and p.order == 0
