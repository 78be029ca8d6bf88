"""The ftrace stack map (RFC v3 "trace: add lock-free stackmap for stack trace
deduplication"): kernel/trace/trace_stackmap.c of the series.

Model of the series' data structure, one operation at a time:

* a pool of ``2**bits`` elements handed out by a bump counter (``next_elt``);
* a table of ``2**(bits+1)`` slots, each a 32-bit key (0 = free) and a pointer
  to an element (None until published);
* the key is the seeded 32-bit jhash2 of the stack's IPs, with 0 mapped to 1;
  the first slot probed is the key's top ``bits+1`` bits, then linear probing,
  at most ``MAX_PROBE`` slots;
* a free slot is claimed by writing its key; if the pool is exhausted the slot
  stays "claimed but empty" (a gravestone) and the event is a drop;
* the stack_id is the slot index; counters are per CPU and summed for display.

Two shortcuts skip the walk where its outcome is known, changing no result
(a test compares them with probing every time): a stack already stored
has its slot remembered, and once every slot is claimed (counted as they
are) a stack not stored is a drop without hashing or probing.

Reset is refused (EBUSY) while tracing is on for the owning trace array or
while another reset is in progress.
"""

from __future__ import annotations

import errno
import random
import struct
from array import array

from ..fs.pseudo import FileOperations, KernelError
from ..lib.jhash import jhash2_ulongs
from ._trace_stackmap import MAX_DEPTH, StackMapElt, StackSeen, get_id

BITS_MIN, BITS_MAX, BITS_DEFAULT = 10, 18, 14

BIN_MAGIC = 0x464D5342  # 'FSMB'
BIN_VERSION = 2
BIN_HEADER = struct.Struct("=IIII")
BIN_ENTRY = struct.Struct("=IIII")


def probe_reference(keys, vals, key: int, ips: tuple, idx: int, mask: int, max_probe: int) -> int:
    """The series' probing (``_trace_stackmap.probe``'s specification):
    from slot ``idx`` on, wrapping at ``mask``, at most ``max_probe``
    slots: the slot holding ``key`` whose element's stack is ``ips`` (its
    index), else the first free slot (``-2 - index``), else -1.  A slot
    with the key and no element yet (claimed but empty), or another stack
    (a 32-bit collision), is probed past."""
    for _ in range(max_probe):
        idx &= mask
        k = keys[idx]
        if k == key:
            val = vals[idx]
            if val is not None and (val.ips is ips or val.ips == ips):
                return idx
        elif k == 0:
            return -2 - idx
        idx += 1
    return -1


def _empty_keys(n: int) -> array:
    """``n`` slots' keys, all 0 (empty)."""
    return array("L", bytes(array("L").itemsize * n))


class FtraceStackMap:
    def __init__(self, bits: int = BITS_DEFAULT, nr_cpus: int = 1, tr=None,
                 hash_seed: int | None = None, rng: random.Random | None = None):
        bits = max(BITS_MIN, min(BITS_MAX, bits))
        self.tr = tr
        self.map_bits = bits
        self.max_elts = 1 << bits
        self.map_size = 1 << (bits + 1)
        rng = rng or random.Random()
        self.hash_seed = rng.getrandbits(32) if hash_seed is None else hash_seed & 0xFFFFFFFF
        self.nr_cpus = nr_cpus
        self.keys = _empty_keys(self.map_size)    # slot -> its key (0: empty), unsigned longs
        self.vals: list[StackMapElt | None] = [None] * self.map_size
        self.empty_slots = self.map_size     # keys still 0 (counted as they are claimed)
        self.next_elt = 0
        self.resetting = False
        self.successes = [0] * nr_cpus
        self.drops = [0] * nr_cpus
        self._shift = 32 - (bits + 1)
        # stack -> (slot, elt) for stacks already stored.  Slots are never
        # vacated except by reset, so the probe would find the same slot:
        # this only skips the walk, it changes no result.  A reset makes
        # a new one.
        self._stored: dict[tuple, tuple[int, StackMapElt]] = {}
        self._seen = StackSeen()             # (the stored stacks last asked for, by identity)
        # Called between claiming the reset and clearing (synchronize_rcu()).
        self.synchronize_rcu = lambda: None

    # --- hashing --------------------------------------------------------
    def key_hash(self, ips: tuple) -> int:
        """The stack's key: jhash2 of its words (0 is "empty": 1 instead).
        Not cached: a stack is hashed only when it is not stored (a cache
        by stack was hit 0 times in 29,000 with everything traced, and held
        ~12k stacks, ~13 MB)."""
        return jhash2_ulongs(ips, self.hash_seed) or 1

    # --- hot path ---------------------------------------------------------
    def get_id(self, ips: tuple, cpu: int = 0) -> int:
        """Return the stack_id (slot index) or a negative errno: the stored
        stack's slot (the first shortcut), a drop once every slot is
        claimed (the second), else the walk (``probe``), claiming a free
        slot and publishing a new element from the pool, or a gravestone
        once the pool is used up.  Compiled (``_trace_stackmap.get_id``)."""
        return get_id(self, ips, cpu)

    def unseen_lookups(self, successes: int, drops: int, cpu: int, rng: random.Random) -> None:
        """Account lookups made in time nobody could see (trace_backlog):
        ``successes`` hits shared among the stored stacks in proportion to
        the uses each has had, ``drops`` failures.  Stacks that would have
        been new then are not invented.  The share is systematic sampling
        (one draw): a stack of weight w of ``total`` gets ``successes * w /
        total`` hits, rounded down or up at random so that each gets that
        many in expectation and all of them ``successes`` exactly; one pass
        over the stacks (a draw per hit took 20-25 ms with a full map)."""
        stored = self._stored
        if successes > 0 and stored:
            total = 0
            for _idx, elt in stored.values():
                total += elt.ref_count or 1
            off = rng.randrange(total)
            cum = prev = 0
            for _idx, elt in stored.values():
                cum += elt.ref_count or 1
                cur = (cum * successes + off) // total
                if cur != prev:
                    elt.ref_count = (elt.ref_count + cur - prev) & 0xFFFFFFFF
                    prev = cur
            self.successes[cpu] += successes
        self.drops[cpu] += max(0, drops)

    # --- control path ---------------------------------------------------
    def reset(self) -> int:
        if self.resetting:
            return -errno.EBUSY
        self.resetting = True
        try:
            if self.tr is not None and self.tr.tracing_is_on():
                return -errno.EBUSY
            self.synchronize_rcu()
            self.keys = _empty_keys(self.map_size)
            self.vals = [None] * self.map_size
            self.empty_slots = self.map_size
            # a new dict: the frames that remember their stack's slot
            # (_trace_function.StackIds) know the old one is gone
            old, self._stored = self._stored, {}
            old.clear()
            self._seen = StackSeen()
            self.next_elt = 0
            self.successes = [0] * self.nr_cpus
            self.drops = [0] * self.nr_cpus
            return 0
        finally:
            self.resetting = False

    # --- exports ----------------------------------------------------------
    def populated(self):
        """(stack_id, elt) for every published slot, in slot order."""
        keys, vals = self.keys, self.vals
        for i in range(self.map_size):
            if keys[i]:
                elt = vals[i]
                if elt is not None:
                    yield i, elt

    def stats_text(self) -> str:
        s = sum(self.successes)
        d = sum(self.drops)
        out = ["entries: %u / %u\n" % (self.next_elt, self.max_elts),
               "table_size: %u\n" % self.map_size,
               "successes: %u\n" % s,
               "drops: %u\n" % d]
        if s + d > 0:
            out.append("success_rate: %u%%\n" % (s * 100 // (s + d)))
        return "".join(out)

    def text(self, sprint_symbol) -> str:
        out = []
        for idx, elt in self.populated():
            nr = min(elt.nr, MAX_DEPTH)
            out.append("stack_id %u [ref %u, depth %u]\n" % (idx, elt.ref_count, nr))
            for i in range(nr):
                out.append("    [%u] %s\n" % (i, sprint_symbol(elt.ips[i])))
            out.append("\n")
        return "".join(out)

    def binary(self) -> bytes:
        parts = []
        n = 0
        for idx, elt in self.populated():
            nr = min(elt.nr, MAX_DEPTH)
            parts.append(BIN_ENTRY.pack(idx, nr, elt.ref_count, 0))
            parts.append(struct.pack("=%dQ" % nr, *elt.ips[:nr]))
            n += 1
        return BIN_HEADER.pack(BIN_MAGIC, BIN_VERSION, n, 0) + b"".join(parts)


def is_reset_command(data: bytes) -> bool:
    """What ``stack_map`` accepts: ``0`` or ``reset``, one optional newline.

    Like the handler, only the first 7 bytes of a write are looked at.
    """
    buf = data[:7]
    if buf.endswith(b"\n"):
        buf = buf[:-1]
    return buf in (b"0", b"reset")


class StackMapOps(FileOperations):
    """``stack_map``: text export; writing 0/reset clears the map."""

    def __init__(self, kallsyms):
        self.kallsyms = kallsyms

    def show(self, f):
        return f.data.text(self.kallsyms.sprint_symbol)

    def write(self, f, data):
        if not data or not is_reset_command(data):
            raise KernelError(errno.EINVAL)
        ret = f.data.reset()
        if ret:
            raise KernelError(-ret)
        return len(data)


class StackMapStatOps(FileOperations):
    def show(self, f):
        return f.data.stats_text()


class StackMapBinOps(FileOperations):
    """``stack_map_bin``: a binary snapshot taken at open."""

    def open(self, f):
        f.private = f.data.binary()

    def read(self, f, off, size):
        return f.private[off:off + size]
