"""The map behind hist triggers (kernel/trace/tracing_map.c).

A :class:`TracingMap` holds at most ``2**map_bits`` elements, one per key.
Each element has the map's *fields*: sums (``tracing_map_add_sum_field``)
the trigger adds to on every hit and keys (``tracing_map_add_key_field``)
that only sort; plus variables (``tracing_map_add_var``).  ``hits`` counts
every insert or lookup that found or made an element, ``drops`` every new
key refused because the element pool was used up.  Nothing is ever removed
but by :meth:`TracingMap.clear`.

Sorting (``tracing_map_sort_entries``) is the kernel's: the elements, first
ordered by the bytes of their keys (``detect_dups`` sorts them with
``memcmp``), are heap-sorted by the primary sort key with lib/sort.c's
algorithm, so entries that compare equal come out in the same order as on
a stock kernel; a secondary key then sorts each run of equal primary keys.

A key is given twice to :meth:`TracingMap.insert`: as a hashable Python
value and as the bytes the kernel would compare (the compound key buffer).
"""

from __future__ import annotations

TRACING_MAP_BITS_DEFAULT = 11
TRACING_MAP_BITS_MAX = 17
TRACING_MAP_BITS_MIN = 7
TRACING_MAP_KEYS_MAX = 3
TRACING_MAP_VALS_MAX = 3
TRACING_MAP_FIELDS_MAX = TRACING_MAP_KEYS_MAX + TRACING_MAP_VALS_MAX
TRACING_MAP_VARS_MAX = 16
TRACING_MAP_SORT_KEYS_MAX = 2

U64 = (1 << 64) - 1


# --- comparison functions (tracing_map_cmp_*) -------------------------------

def cmp_none(a, b) -> int:
    return 0


def cmp_string(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


def cmp_num(size: int, signed: bool):
    """``tracing_map_cmp_num()``: compare the low ``size`` bytes of two u64
    as that C type; other sizes do not compare."""
    if size not in (1, 2, 4, 8):
        return cmp_none
    bits = size * 8
    mask = (1 << bits) - 1
    if signed:
        sign = 1 << (bits - 1)

        def conv(v):
            v &= mask
            return v - (1 << bits) if v & sign else v
    else:
        def conv(v):
            return v & mask

    def cmp(a, b):
        a, b = conv(a), conv(b)
        return (a > b) - (a < b)
    return cmp


def cmp_u64(a: int, b: int) -> int:
    """``tracing_map_cmp_atomic64``: the comparison of sums."""
    return (a > b) - (a < b)


# --- lib/sort.c --------------------------------------------------------------

def _parent(i: int) -> int:
    return (i - 1) // 2


def kernel_sort(items: list, cmp) -> None:
    """Sort ``items`` in place as lib/sort.c's ``sort()`` does (a bottom-up
    heapsort, not stable): ties end in the order the kernel leaves them."""
    num = len(items)
    n, a = num, num // 2
    if not a:
        return
    shift = 0
    while True:
        if a:
            a -= 1 << shift
        elif n > 3:
            n -= 1
            items[0], items[n] = items[n], items[0]
            shift = 1 if cmp(items[1], items[2]) <= 0 else 0
            a = 1 << shift
            n -= 1
            items[a], items[n] = items[n], items[a]
        else:
            break
        b = a
        while True:
            c = 2 * b + 1
            d = c + 1
            if d >= n:
                break
            b = c if cmp(items[c], items[d]) > 0 else d
        if d == n:
            b = c
        while b != a and cmp(items[a], items[b]) >= 0:
            b = _parent(b)
        c = b
        while b != a:
            b = _parent(b)
            items[b], items[c] = items[c], items[b]
    n -= 1
    items[0], items[n] = items[n], items[0]
    if n == 2 and cmp(items[0], items[1]) > 0:
        items[0], items[1] = items[1], items[0]


# --- the map -----------------------------------------------------------------

class MapField:
    """``struct tracing_map_field`` as the map describes it: a key (its
    index among the key values) or a sum."""

    __slots__ = ("cmp", "key_index")

    def __init__(self, cmp, key_index: int | None):
        self.cmp = cmp
        self.key_index = key_index


class MapElt:
    """``struct tracing_map_elt``: the key, the sums, the variables, and
    what the map's user keeps per element (``private``)."""

    __slots__ = ("key", "key_bytes", "sums", "vars", "vset", "private")

    def __init__(self, key, key_bytes: bytes, n_sums: int, n_vars: int, private):
        self.key = key
        self.key_bytes = key_bytes
        self.sums = [0] * n_sums
        self.vars = [0] * n_vars
        self.vset = [False] * n_vars
        self.private = private


class SortKey:
    """``struct tracing_map_sort_key``: a map field index and a direction."""

    __slots__ = ("field_idx", "descending")

    def __init__(self, field_idx: int = 0, descending: bool = False):
        self.field_idx = field_idx
        self.descending = descending


class TracingMap:
    def __init__(self, map_bits: int):
        if not TRACING_MAP_BITS_MIN <= map_bits <= TRACING_MAP_BITS_MAX:
            raise ValueError(map_bits)
        self.map_bits = map_bits
        self.max_elts = 1 << map_bits
        self.fields: list[MapField] = []
        self.n_keys = 0
        self.n_vars = 0
        self.elts: dict = {}
        self.by_bytes: dict = {}     # the elements by the bytes of their keys (lookups)
        self.hits = 0
        self.drops = 0

    # -- set-up ---------------------------------------------------------------
    def _add_field(self, f: MapField) -> int:
        if len(self.fields) >= TRACING_MAP_FIELDS_MAX:
            return -1
        self.fields.append(f)
        return len(self.fields) - 1

    def add_sum_field(self) -> int:
        return self._add_field(MapField(cmp_u64, None))

    def add_key_field(self, cmp) -> int:
        idx = self._add_field(MapField(cmp, self.n_keys))
        if idx >= 0:
            self.n_keys += 1
        return idx

    def add_var(self) -> int:
        if self.n_vars >= TRACING_MAP_VARS_MAX:
            return -1
        self.n_vars += 1
        return self.n_vars - 1

    # -- use --------------------------------------------------------------------
    def insert(self, key, key_bytes: bytes, new_private=None) -> MapElt | None:
        """``tracing_map_insert()``: the element of ``key``, made if there is
        room (``new_private()`` gives its private data), else None."""
        elt = self.elts.get(key)
        if elt is not None:
            self.hits += 1
            return elt
        if len(self.elts) >= self.max_elts:
            self.drops += 1
            return None
        elt = MapElt(key, key_bytes, len(self.fields), self.n_vars,
                     new_private() if new_private is not None else None)
        self.elts[key] = elt
        self.by_bytes[key_bytes] = elt
        self.hits += 1
        return elt

    def lookup(self, key_bytes: bytes) -> MapElt | None:
        """``tracing_map_lookup()``: the element whose key is the first
        ``key_size`` bytes of ``key_bytes`` (a longer compound key of
        another map compares by its head, as memcmp() does), or None."""
        return self.by_bytes.get(key_bytes)

    def clear(self) -> None:
        self.by_bytes = {}
        self.elts = {}
        self.hits = 0
        self.drops = 0

    @staticmethod
    def update_sum(elt: MapElt, i: int, n: int) -> None:
        elt.sums[i] = (elt.sums[i] + n) & U64

    @staticmethod
    def set_var(elt: MapElt, i: int, n) -> None:
        elt.vars[i] = n
        elt.vset[i] = True

    @staticmethod
    def var_set(elt: MapElt, i: int) -> bool:
        return elt.vset[i]

    @staticmethod
    def read_var(elt: MapElt, i: int):
        return elt.vars[i]

    @staticmethod
    def read_var_once(elt: MapElt, i: int):
        """``tracing_map_read_var_once()``: the value, unset afterwards."""
        elt.vset[i] = False
        return elt.vars[i]

    # -- sorting ----------------------------------------------------------------
    def _cmp_fn(self, sk: SortKey):
        f = self.fields[sk.field_idx]
        cmp, sign = f.cmp, -1 if sk.descending else 1
        if f.key_index is not None:
            k = f.key_index

            def by_key(a, b):
                return sign * cmp(a.key[k], b.key[k])
            return by_key
        i = sk.field_idx

        def by_sum(a, b):
            return sign * cmp(a.sums[i], b.sums[i])
        return by_sum

    def sort_entries(self, sort_keys: list) -> list:
        """The elements in the order ``tracing_map_sort_entries()`` gives."""
        entries = list(self.elts.values())
        if len(entries) < 2:
            return entries
        entries.sort(key=lambda e: e.key_bytes)        # detect_dups()
        primary = self._cmp_fn(sort_keys[0])
        kernel_sort(entries, primary)
        if len(sort_keys) > 1:
            self._sort_secondary(entries, primary, self._cmp_fn(sort_keys[1]))
        return entries

    @staticmethod
    def _sort_secondary(entries: list, primary, secondary) -> None:
        n_entries = len(entries)
        start, n_sub = 0, 1
        for i in range(n_entries - 1):
            if primary(entries[i], entries[i + 1]) == 0:
                n_sub += 1
                if i < n_entries - 2:
                    continue
            if n_sub < 2:
                start, n_sub = i + 1, 1
                continue
            run = entries[start:start + n_sub]
            kernel_sort(run, secondary)
            entries[start:start + n_sub] = run
            start, n_sub = i + 1, 1
