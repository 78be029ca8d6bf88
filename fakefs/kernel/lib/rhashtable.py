"""Resizable hash tables (lib/rhashtable.c), as far as memory goes.

Only the bucket tables are modelled (elements are allocated by the users).
``rhashtable_init()`` is a hooked allocation: it records the tag that is
current at init (``alloc_tag_record``) in the table, and every later bucket
table allocation, including the resizes done by the deferred worker, is
charged to that saved tag (``alloc_hooks_tag(ht->alloc_tag, ...)``).  So
/proc/allocinfo shows each table's memory at its own init call site rather
than in lib/rhashtable.c.

Tables grow to twice the size above 75 % load and, with
``automatic_shrinking``, shrink below 30 %.
"""

from __future__ import annotations

HASH_DEFAULT_SIZE = 64
HASH_MIN_SIZE = 4
BUCKET_TABLE_HEADER = 64          # struct bucket_table up to the aligned buckets[]


def roundup_pow_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class Rhashtable:
    """``struct rhashtable`` with its current bucket table."""

    def __init__(self, kernel, min_size: int = 0, max_size: int = 0, nelem_hint: int = 0,
                 automatic_shrinking: bool = False):
        self.kernel = kernel
        self.min_size = max(min_size, HASH_MIN_SIZE)
        self.max_size = max_size
        self.automatic_shrinking = automatic_shrinking
        self.nelems = 0
        self.alloc_tag = None
        self.size = 0
        self.tbl = None
        self.nr_rehash = 0
        self._init_noprof(nelem_hint)

    def _init_noprof(self, nelem_hint: int) -> None:
        """``rhashtable_init_noprof``: runs inside the caller's alloc_hooks()."""
        at = self.kernel.alloc_tag
        self.alloc_tag = at.current                   # alloc_tag_record(ht->alloc_tag)
        if nelem_hint:
            size = max(roundup_pow_of_two(nelem_hint * 4 // 3), self.min_size)
        else:
            size = max(HASH_DEFAULT_SIZE, self.min_size)
        self.tbl = self._bucket_table_alloc(size)
        self.size = size

    def _bucket_table_alloc(self, nbuckets: int):
        """``bucket_table_alloc``: charged to the table's saved tag."""
        k = self.kernel
        at = k.alloc_tag
        old = at.current
        at.current = self.alloc_tag
        try:
            return k.vmalloc.kvmalloc_noprof(BUCKET_TABLE_HEADER + 8 * nbuckets)
        finally:
            at.current = old

    def _rehash(self, size: int) -> None:
        new = self._bucket_table_alloc(size)
        self.kernel.vmalloc.kvfree(self.tbl)
        self.tbl = new
        self.size = size
        self.nr_rehash += 1

    # --- elements -----------------------------------------------------------
    def insert(self, n: int = 1) -> None:
        self.nelems += n
        while self.nelems > self.size * 3 // 4 and (not self.max_size or self.size < self.max_size):
            self._rehash(self.size * 2)

    def remove(self, n: int = 1) -> None:
        self.nelems = max(0, self.nelems - n)
        if self.automatic_shrinking and self.nelems < self.size * 3 // 10 and self.size > self.min_size:
            size = max(roundup_pow_of_two(self.nelems * 3 // 2), self.min_size)
            if size < self.size:
                self._rehash(size)

    def destroy(self) -> None:
        """``rhashtable_destroy``: frees the bucket table."""
        if self.tbl is not None:
            self.kernel.vmalloc.kvfree(self.tbl)
            self.tbl = None


def rhashtable_init(kernel, tag, **params) -> Rhashtable:
    """``rhashtable_init(ht, params)`` at the call site ``tag``."""
    at = kernel.alloc_tag
    old = at.current
    at.current = tag
    try:
        return Rhashtable(kernel, **params)
    finally:
        at.current = old
