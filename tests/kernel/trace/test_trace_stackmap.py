import errno
import importlib.util
import os
import random
import struct
from array import array

import pytest

from fakefs.kernel.fs.pseudo import File, FileNode, KernelError
from fakefs.kernel.lib.jhash import jhash2, jhash2_ulongs
from fakefs.kernel.trace._trace_stackmap import MAX_PROBE
from fakefs.kernel.trace.trace_stackmap import (
    BIN_MAGIC, FtraceStackMap, MAX_DEPTH, StackMapBinOps, StackMapOps, StackMapStatOps,
    is_reset_command)

UPSTREAM_DUMP = os.path.join(os.path.dirname(__file__), "../../../../shared/upstream/stackmap_dump.py")


class Tr:
    def __init__(self, on=False):
        self.on = on

    def tracing_is_on(self):
        return self.on


class FixedHashMap(FtraceStackMap):
    """All stacks hash to one key: exercises probing and collisions."""

    def key_hash(self, ips):
        return 0x80000001


def stack(i, depth=12):
    return tuple(0xffffffff81000000 + (i * 64 + d) * 16 for d in range(depth))


class Syms:
    def sprint_symbol(self, ip):
        return "fn_%x+0x10/0x40" % (ip & 0xffff)


def test_jhash_known_values():
    # lookup3 of no words is just the initial state
    assert jhash2([], 0) == 0xdeadbeef
    assert jhash2([], 1) == 0xdeadbef0
    # stable, seed-dependent, order-dependent
    a = jhash2_ulongs((1, 2, 3), 7)
    assert a == jhash2_ulongs((1, 2, 3), 7)
    assert a != jhash2_ulongs((1, 2, 3), 8)
    assert a != jhash2_ulongs((3, 2, 1), 7)
    assert 0 <= a < 1 << 32


def test_sizes_follow_bits_and_clamp():
    assert FtraceStackMap(14).max_elts == 16384
    assert FtraceStackMap(14).map_size == 32768
    assert FtraceStackMap(3).map_bits == 10
    assert FtraceStackMap(30).map_bits == 18


def test_get_id_dedups_and_counts():
    m = FtraceStackMap(10, nr_cpus=2, hash_seed=5)
    a, b = stack(1), stack(2)
    ia = m.get_id(a, 0)
    assert ia >= 0 and m.get_id(a, 1) == ia
    ib = m.get_id(b, 1)
    assert ib >= 0 and ib != ia
    assert m.next_elt == 2
    assert sum(m.successes) == 3 and m.successes == [1, 2]
    assert m.vals[ia].ref_count == 2
    # stack_id is the slot index derived from the key's top bits
    key = m.key_hash(a)
    assert key != 0
    first = key >> (32 - 11)
    assert (ia - first) % m.map_size < MAX_PROBE


def test_zero_hash_maps_to_one():
    m = FtraceStackMap(10, hash_seed=0)
    import fakefs.kernel.trace.trace_stackmap as tsm
    orig = tsm.jhash2_ulongs
    tsm.jhash2_ulongs = lambda ips, seed: 0
    try:
        assert m.key_hash(stack(9)) == 1
        assert m.get_id(stack(9)) == 0        # key 1 -> top bits 0 -> slot 0
    finally:
        tsm.jhash2_ulongs = orig


def test_invalid_inputs():
    m = FtraceStackMap(10)
    assert m.get_id(()) == -errno.EINVAL
    m.resetting = True
    assert m.get_id(stack(1)) == -errno.EINVAL


def test_depth_is_truncated_to_max_depth():
    m = FtraceStackMap(10, hash_seed=1)
    deep = stack(3, depth=80)
    sid = m.get_id(deep)
    assert m.vals[sid].nr == MAX_DEPTH
    assert m.get_id(deep[:MAX_DEPTH]) == sid


def test_pool_exhaustion_leaves_gravestones_and_counts_drops():
    m = FtraceStackMap(10, hash_seed=3)
    ids = [m.get_id(stack(i)) for i in range(m.max_elts)]
    assert all(i >= 0 for i in ids) and m.next_elt == m.max_elts
    drops_before = sum(m.drops)
    sid = m.get_id(stack(99999))
    assert sid == -errno.ENOSPC
    assert sum(m.drops) == drops_before + 1
    graves = [i for i in range(m.map_size) if m.keys[i] and m.vals[i] is None]
    assert len(graves) == 1
    # known stacks still resolve after exhaustion
    assert m.get_id(stack(5)) == ids[5]
    # the same new stack again: probes past its own gravestone, claims another
    assert m.get_id(stack(99999)) == -errno.ENOSPC
    graves2 = [i for i in range(m.map_size) if m.keys[i] and m.vals[i] is None]
    assert len(graves2) == 2
    text = m.stats_text()
    assert "entries: 1024 / 1024\n" in text and "drops: 2\n" in text


def test_probe_bound_drops_after_max_probe_slots():
    m = FixedHashMap(10, hash_seed=1)
    start = 0x80000001 >> (32 - 11)
    ids = [m.get_id(stack(i)) for i in range(MAX_PROBE)]
    assert ids == [(start + i) % m.map_size for i in range(MAX_PROBE)]
    # 65th distinct stack with the same key: all 64 probed slots are taken
    assert m.get_id(stack(MAX_PROBE)) == -errno.ENOSPC
    assert sum(m.drops) == 1
    # an existing one is still found (a hit, not a drop)
    assert m.get_id(stack(10)) == ids[10]


def test_probe_wraps_around_table_end():
    class EndHash(FtraceStackMap):
        def key_hash(self, ips):
            return 0xFFFFFFFF
    m = EndHash(10)
    assert m.get_id(stack(1)) == m.map_size - 1
    assert m.get_id(stack(2)) == 0


def test_reset_rules():
    tr = Tr(on=True)
    m = FtraceStackMap(10, tr=tr, hash_seed=2)
    m.get_id(stack(1))
    assert m.reset() == -errno.EBUSY
    assert m.next_elt == 1 and not m.resetting
    tr.on = False
    # a reset that finds another reset in progress is refused
    inner = []
    m.synchronize_rcu = lambda: inner.append(m.reset())
    assert m.reset() == 0
    assert inner == [-errno.EBUSY]
    assert m.next_elt == 0 and sum(m.successes) == 0
    assert all(k == 0 for k in m.keys)
    assert m.stats_text() == "entries: 0 / 1024\ntable_size: 2048\nsuccesses: 0\ndrops: 0\n"


@pytest.mark.parametrize("data,ok", [
    (b"0", True), (b"0\n", True), (b"reset", True), (b"reset\n", True),
    (b"1", False), (b"00", False), (b"0\n\n", False), (b"resetx", False), (b"res", False),
    (b"reset\n\n", False), (b" 0", False), (b"", False), (b"0" + b" " * 20, False),
])
def test_reset_command_parsing(data, ok):
    assert is_reset_command(data) is ok


def test_stat_format_and_success_rate():
    m = FtraceStackMap(10, nr_cpus=2, hash_seed=4)
    m.successes = [2, 1]
    m.drops = [1, 0]
    assert m.stats_text() == ("entries: 0 / 1024\ntable_size: 2048\nsuccesses: 3\n"
                              "drops: 1\nsuccess_rate: 75%\n")


def _node(ops, data):
    return FileNode("x", 0o640, None, data, ops)


def test_files_text_stat_bin_and_write_errno():
    tr = Tr()
    m = FtraceStackMap(10, nr_cpus=1, tr=tr, hash_seed=6)
    for i in (1, 2, 2, 3, 3, 3):
        m.get_id(stack(i, depth=3))
    node = _node(StackMapOps(Syms()), m)
    f = File(node, os.O_RDONLY)
    text = node.fops.read(f, 0, 1 << 20).decode()
    blocks = text.split("\n\n")
    assert blocks[-1] == ""
    assert len(blocks) - 1 == 3
    first = blocks[0].split("\n")
    assert first[0].startswith("stack_id ") and first[0].endswith(", depth 3]")
    assert first[1].startswith("    [0] fn_")
    refs = sorted(int(b.split("[ref ")[1].split(",")[0]) for b in blocks[:-1])
    assert refs == [1, 2, 3]

    w = File(node, os.O_WRONLY | os.O_TRUNC)
    with pytest.raises(KernelError) as e:
        node.fops.write(w, b"1\n")
    assert e.value.errno == errno.EINVAL
    tr.on = True
    with pytest.raises(KernelError) as e:
        node.fops.write(w, b"0\n")
    assert e.value.errno == errno.EBUSY
    tr.on = False

    bnode = _node(StackMapBinOps(), m)
    bf = File(bnode, os.O_RDONLY)
    bnode.fops.open(bf)
    data = bnode.fops.read(bf, 0, 1 << 20)
    magic, version, nr, _ = struct.unpack_from("=IIII", data)
    assert (magic, version, nr) == (BIN_MAGIC, 2, 3)
    assert data[:4] == struct.pack("=I", 0x464D5342)
    assert len(data) == 16 + 3 * (16 + 3 * 8)

    assert node.fops.write(w, b"reset\n") == 6
    assert m.next_elt == 0
    # the bin snapshot taken at open is unaffected by the reset
    assert bnode.fops.read(bf, 0, 1 << 20) == data
    snode = _node(StackMapStatOps(), m)
    assert snode.fops.read(File(snode, os.O_RDONLY), 0, 4096).startswith(b"entries: 0 / 1024\n")


@pytest.mark.skipif(not os.path.exists(UPSTREAM_DUMP), reason="shared/upstream not present")
def test_upstream_parser_reads_our_bin():
    spec = importlib.util.spec_from_file_location("stackmap_dump", UPSTREAM_DUMP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = FtraceStackMap(10, hash_seed=9)
    rng = random.Random(1)
    for _ in range(200):
        m.get_id(stack(rng.randrange(40), depth=rng.randrange(10, 30)))
    parsed = list(mod.parse_stackmap_bin(m.binary()))
    expect = [(i, e.ref_count, list(e.ips)) for i, e in m.populated()]
    assert parsed == expect


class NoMemo(dict):
    def get(self, key, default=None):
        return default


class WalkOnly(FtraceStackMap):
    """Every lookup probes: no stored-stack memo, and the map never
    says that every slot is claimed."""

    @property
    def empty_slots(self):
        return 1

    @empty_slots.setter
    def empty_slots(self, _value):
        pass


@pytest.mark.parametrize("bits,n,full", [(10, 3000, True), (12, 800, True), (14, 300, False)])
def test_the_shortcuts_give_the_same_ids_and_counts_as_the_walk(bits, n, full):
    """A stored stack's slot from the memo (and, for the same tuple asked
    again, from the tuples last found: ``StackSeen``), a drop without
    probing once every slot is claimed: the same results as probing every
    time (given a new tuple each time: none is seen again)."""
    rng = random.Random(bits)
    made = {}                  # (the same stack: the same tuple, as a frame's)
    events = [made.setdefault(key, stack(*key))
              for key in ((rng.randrange(n), rng.randrange(5, 25)) for _ in range(20000))]
    fast = FtraceStackMap(bits, hash_seed=11)
    walk = WalkOnly(bits, hash_seed=11)
    walk._stored = NoMemo()
    assert [fast.get_id(e) for e in events] == [walk.get_id(tuple(list(e))) for e in events]
    assert fast.stats_text() == walk.stats_text()
    assert fast.binary() == walk.binary()
    assert fast.keys == walk.keys
    assert fast.empty_slots == fast.keys.count(0)
    assert (fast.empty_slots == 0) == full
    fast.tr = Tr(on=False)
    assert fast.reset() == 0 and fast.empty_slots == fast.map_size


def test_unseen_lookups_follow_the_uses_so_far():
    m = FtraceStackMap(bits=10, nr_cpus=2, hash_seed=1)
    for _ in range(30):
        m.get_id(stack(1), 0)
    for _ in range(10):
        m.get_id(stack(2), 1)
    m.unseen_lookups(4000, 7, 1, random.Random(3))
    refs = {e.ips: e.ref_count for _, e in m.populated()}
    assert sum(refs.values()) == sum(m.successes) == 4040
    assert m.successes == [30, 4010] and m.drops == [0, 7]
    assert refs[stack(1)] == 30 + 3000 and refs[stack(2)] == 10 + 1000
    assert m.next_elt == 2                      # no stack is invented


def test_unseen_lookups_share_each_stack_its_expected_hits_rounded_at_random():
    """Weights 1, 2, 3 (their uses so far), 10 hits: each stack gets 10 w / 6
    rounded down or up, 10 in all, and on average exactly its share."""
    rng = random.Random(5)
    got = []
    for _ in range(3000):
        m = FtraceStackMap(bits=10, nr_cpus=1, hash_seed=1)
        for n, uses in ((1, 1), (2, 2), (3, 3)):
            for _ in range(uses):
                m.get_id(stack(n), 0)
        m.unseen_lookups(10, 0, 0, rng)
        refs = {e.ips: e.ref_count for _, e in m.populated()}
        hits = [refs[stack(n)] - n for n in (1, 2, 3)]
        assert sum(hits) == 10
        assert all(10 * n // 6 <= h <= -(-10 * n // 6) for n, h in zip((1, 2, 3), hits)), hits
        got.append(hits)
    for i, n in enumerate((1, 2, 3)):
        mean = sum(h[i] for h in got) / len(got)
        assert abs(mean - 10 * n / 6) < 0.05, (n, mean)


def test_the_compiled_probe_answers_what_its_specification_answers():
    """``_trace_stackmap.probe`` and ``probe_reference`` on the same tables:
    a stored stack, a collision (the key, another stack), a claimed-but-empty
    slot, a free slot, none within MAX_PROBE, wrapping at the table's end,
    and a map's own tables as lookups fill them."""
    from fakefs.kernel.trace._trace_stackmap import probe
    from fakefs.kernel.trace.trace_stackmap import StackMapElt, probe_reference
    rng = random.Random(4)
    size = 64
    for _ in range(3000):
        keys = array("L", [rng.choice((0, 7, 9, 0xFFFFFFFF)) for _ in range(size)])
        vals = [None if k == 0 or rng.random() < 0.3 else StackMapElt(stack(rng.randrange(4)))
                for k in keys]
        key = rng.choice((7, 9, 0xFFFFFFFF))
        ips = stack(rng.randrange(4))
        args = (key, ips, rng.randrange(size), size - 1, rng.randrange(1, 80))
        assert probe(keys, vals, *args) == probe_reference(keys, vals, *args)
    m = FtraceStackMap(10, hash_seed=3)
    for i in range(5000):
        ips = stack(rng.randrange(3000), depth=rng.randrange(3, 20))
        key = m.key_hash(ips)
        args = (key, ips, key >> m._shift, m.map_size - 1, MAX_PROBE)
        assert probe(m.keys, m.vals, *args) == probe_reference(m.keys, m.vals, *args)
        m.get_id(ips)
    assert m.drops[0] > 0 and m.next_elt == m.max_elts
