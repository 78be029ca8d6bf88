"""The call sites the simulated machine allocates at, and how
(:mod:`.alloc_calls`).

* :data:`CACHES`: the named slab caches its code paths use;
* :data:`SITES`: the call sites its scripted activities (fork, page cache,
  network ...) charge, by key;
* :class:`SiteProfile`: for any other call site, the allocator it calls
  (from the tag's ``callee``: kmalloc, named caches, pages, vmalloc,
  kvmalloc, percpu) and an object size drawn for it.
"""

from __future__ import annotations

import math

from .alloc_tag import AllocTag
from .page_alloc import GFP_KERNEL, PAGE_SIZE
from .slub import SLAB_HWCACHE_ALIGN, SLAB_RECLAIM_ACCOUNT

# named caches the workload uses: name -> (object size, flags)
CACHES = {
    "task_struct": (9664, SLAB_HWCACHE_ALIGN),
    "mm_struct": (1344, SLAB_HWCACHE_ALIGN),
    "vm_area_struct": (176, 0),
    "vma_lock": (40, 0),
    "anon_vma": (104, 0),
    "anon_vma_chain": (64, 0),
    "sighand_cache": (2112, SLAB_HWCACHE_ALIGN),
    "signal_cache": (1152, SLAB_HWCACHE_ALIGN),
    "files_cache": (704, SLAB_HWCACHE_ALIGN),
    "fs_cache": (56, SLAB_HWCACHE_ALIGN),
    "cred_jar": (184, SLAB_HWCACHE_ALIGN),
    "pid": (136, SLAB_HWCACHE_ALIGN),
    "dentry": (192, SLAB_RECLAIM_ACCOUNT),
    "ext4_inode_cache": (1184, SLAB_RECLAIM_ACCOUNT),
    "kernfs_node_cache": (128, 0),
    "radix_tree_node": (576, SLAB_RECLAIM_ACCOUNT),
    "skbuff_head_cache": (232, SLAB_HWCACHE_ALIGN),
    "skbuff_small_head": (704, 0),
    "filp": (232, SLAB_HWCACHE_ALIGN),
    "names_cache": (4096, SLAB_HWCACHE_ALIGN),
    "buffer_head": (104, SLAB_RECLAIM_ACCOUNT),
    "ext4_extent_status": (40, SLAB_RECLAIM_ACCOUNT),
}

# (file, function[, line]) of the sites the scripted activities use
SITES = {
    "page_ext": ("mm/page_ext.c", "alloc_page_ext", 271),
    "sys_hash": ("mm/mm_init.c", "alloc_large_system_hash", 2439),
    "blk_rqs": ("block/blk-mq.c", "blk_mq_alloc_rqs"),
    "blk_rq_map": ("block/blk-mq.c", "blk_mq_alloc_rq_map", 3493),
    "blk_rq_map2": ("block/blk-mq.c", "blk_mq_alloc_rq_map", 3499),
    "ct_hash": ("net/netfilter/nf_conntrack_core.c", "nf_ct_alloc_hashtable"),
    "kernfs": ("fs/kernfs/dir.c", "__kernfs_new_node"),
    "task": ("kernel/fork.c", "alloc_task_struct_node"),
    "stack": ("kernel/fork.c", "alloc_thread_stack_node"),
    "dup_mm": ("kernel/fork.c", "dup_mm"),
    "mm_cid": ("kernel/fork.c", "mm_init"),
    "vma_dup": ("kernel/fork.c", "vm_area_dup"),
    "vma_lock": ("kernel/fork.c", "vma_lock_alloc"),
    "sighand": ("kernel/fork.c", "copy_sighand"),
    "signal": ("kernel/fork.c", "copy_signal"),
    "pid": ("kernel/pid.c", "alloc_pid"),
    "cred": ("kernel/cred.c", "prepare_creds"),
    "files": ("fs/file.c", "dup_fd"),
    "fs": ("fs/fs_struct.c", "copy_fs_struct"),
    "anon_vma": ("mm/rmap.c", "anon_vma_alloc"),
    "avc": ("mm/rmap.c", "anon_vma_chain_alloc"),
    "pgd": ("arch/x86/mm/pgtable.c", "_pgd_alloc"),
    "pte": ("arch/x86/mm/pgtable.c", "pte_alloc_one"),
    "anon": ("mm/memory.c", "alloc_anon_folio"),
    "filemap": ("mm/filemap.c", "__filemap_get_folio"),
    "readahead": ("mm/readahead.c", "page_cache_ra_unbounded"),
    "xas": ("lib/xarray.c", "xas_alloc"),
    "dentry": ("fs/dcache.c", "__d_alloc", 1650),
    "dname": ("fs/dcache.c", "__d_alloc", 1667),
    "inode": ("fs/ext4/super.c", "ext4_alloc_inode"),
    "es": ("fs/ext4/extents_status.c", "__es_alloc_extent", 485),
    "bh": ("fs/buffer.c", "alloc_buffer_head"),
    "filp": ("fs/file_table.c", "alloc_empty_file"),
    "getname": ("fs/namei.c", "getname_flags", 144),
    "skb": ("net/core/skbuff.c", "__alloc_skb"),
    "skb_data": ("net/core/skbuff.c", "kmalloc_reserve", 620),
    "skb_small": ("net/core/skbuff.c", "kmalloc_reserve", 598),
    "frag": ("net/core/sock.c", "skb_page_frag_refill", 3075),
    "sk": ("net/core/sock.c", "sk_prot_alloc", 2179),
    "nl_init": ("net/netlink/af_netlink.c", "netlink_proto_init", 2940),
    "ipc_ids": ("ipc/util.c", "ipc_init_ids"),
    "kthread": ("kernel/kthread.c", "set_kthread_struct"),
    "worker": ("kernel/workqueue.c", "alloc_worker"),
}


_KINDS: dict[str, str] = {}


def _callee_kind(callee: str) -> str:
    k = _KINDS.get(callee)
    if k is None:
        k = _KINDS[callee] = _kind(callee)
    return k


def _kind(c: str) -> str:
    if "percpu" in c or c.endswith("pcpu_stats"):
        return "percpu"
    if c.startswith("kv"):
        return "kvmalloc"
    if any(x in c for x in ("vmalloc", "vzalloc", "vcalloc", "vrealloc")):
        return "vmalloc"
    if any(x in c for x in ("page", "folio", "pte_alloc", "pmd_alloc", "pud_alloc", "pagetable")):
        return "page"
    if "kmem_cache" in c or c in ("alloc_inode_sb", "__getname", "mempool_alloc"):
        return "cache"
    return "kmalloc"


def lognormal(rng, median: float, sigma: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, median * math.exp(rng.gauss(0.0, sigma))))


class SiteProfile:
    """How the workload uses one call site: allocator kind, object size and
    allocation flags (GFP_KERNEL; GFP_ATOMIC for a site only interrupts
    get to: ``fakefs.sim.alloc_workload.AllocWorkload.keep_runtime_sites``)."""

    __slots__ = ("tag", "kind", "size", "order", "gfp")

    def __init__(self, tag: AllocTag, rng):
        self.tag = tag
        self.gfp = GFP_KERNEL
        kind = _callee_kind(tag.callee)
        self.kind = kind
        self.order = 0
        if kind == "kmalloc":
            self.size = int(lognormal(rng, 96, 1.1, 8, 8192))
            if rng.random() < 0.02:
                self.size = int(lognormal(rng, 16384, 0.8, 8193, 131072))
        elif kind == "cache":
            self.size = int(lognormal(rng, 160, 0.9, 16, 4096))
        elif kind == "kvmalloc":
            self.size = int(lognormal(rng, 2048, 1.6, 64, 1 << 21))
        elif kind == "vmalloc":
            self.size = int(lognormal(rng, 32768, 1.2, 4096, 4 << 20))
        elif kind == "percpu":
            self.size = int(lognormal(rng, 24, 1.0, 4, 2048))
        else:
            if tag.callee in ("alloc_page", "get_zeroed_page", "__get_free_page", "__dev_alloc_page"):
                self.order = 0
            else:
                self.order = rng.choice((0, 0, 0, 0, 0, 1, 2, 3))
            self.size = PAGE_SIZE << self.order

