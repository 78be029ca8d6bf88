"""The dyn_ftrace records and globs (ftrace_records.py): available_filter_functions
and which functions a word written to set_ftrace_filter picks."""

import bisect
import errno
import re
import types

import pytest

from fakefs import sim
from fakefs.kernel.kallsyms import Kallsyms
from fakefs.sim.clock import ManualClock
from fakefs.kernel.lib.glob import glob_regex
from fakefs.kernel.trace.ftrace_records import (AddrIndex, MATCH_END_ONLY, MATCH_FRONT_ONLY, MATCH_FULL,
                                                MATCH_GLOB, MATCH_INDEX, MATCH_MIDDLE_ONLY,
                                                FtraceRecords, Glob, allocate_pages,
                                                filter_parse_regex, ftrace_records, record_pages)
import ftrace_helpers
from kfiles import errno_of, rd, wr


booted, k = ftrace_helpers.booted, ftrace_helpers.k      # the shared kernel


err = errno_of


# --------------------------------------------------------------- matching
@pytest.mark.parametrize("word, typ, search, neg", [
    ("schedule", MATCH_FULL, "schedule", False),
    ("sched*", MATCH_FRONT_ONLY, "sched", False),
    ("*sched", MATCH_END_ONLY, "sched", False),
    ("*sched*", MATCH_MIDDLE_ONLY, "sched", False),
    ("*", MATCH_END_ONLY, "", False),
    ("sch*ule", MATCH_GLOB, "sch*ule", False),
    ("sch?dule", MATCH_GLOB, "sch?dule", False),
    ("*pin*lock", MATCH_GLOB, "*pin*lock", False),
    ("!m*lock", MATCH_GLOB, "m*lock", True),
    ("12", MATCH_INDEX, "12", False),
])
def test_filter_parse_regex(word, typ, search, neg):
    assert filter_parse_regex(word) == (typ, search, neg)


@pytest.mark.parametrize("pat, s, hit", [
    ("[Ss]y[Ss]_*", "SyS_read", True), ("[Ss]y[Ss]_*", "sys_read", True),
    ("[Ss]y[Ss]_*", "sy_read", False), ("[!a]bc", "abc", False), ("[!a]bc", "xbc", True),
    ("[a-c]z", "bz", True), ("[a-c]z", "dz", False), ("[]]x", "]x", True),
    ("a[", "a[", True), ("x\\*", "x*", True), ("x\\*", "xy", False), ("s?h", "sch", True),
])
def test_glob_match(pat, s, hit):
    assert bool(glob_regex(pat).fullmatch(s)) is hit


def test_available_filter_functions(k):
    avail = rd(k, "available_filter_functions").splitlines()
    names = set(avail)
    assert {"schedule", "kernel_clone", "sched_tick", "_raw_spin_lock"} <= names
    # not traceable: the call graph's notrace functions, padding, entry code
    assert not names & {"__schedule", "do_syscall_64", "asm_exc_page_fault", "_stext"}
    assert not any(n.startswith("__pfx_") for n in names)
    # gcc's cold parts have no __fentry__ call: not traceable, though the table has them
    assert any(".cold" in n for n in k.kallsyms.functions())
    assert not any(".cold" in n for n in names)
    addrs = rd(k, "available_filter_functions_addrs").splitlines()
    assert len(addrs) == len(avail)
    ks = k.kallsyms
    for line in addrs[:50] + addrs[-50:]:
        ip, name = line.split(" ", 1)
        assert ks.lookup(int(ip, 16))[:2] == (name.split(" [")[0], 4)


@pytest.mark.parametrize("glob, regex", [
    ("*schedule", "^.*schedule$"), ("*schedule*", "^.*schedule.*$"), ("schedule*", "^schedule.*$"),
    ("*pin*lock", ".*pin.*lock$"), ("mutex*unl*", "^mutex.*unl.*"), ("sch*ule", "^sch.*ule$"),
    ("[Ss]y[Ss]_*", "^[Ss]y[Ss]_.*$"), ("sch?dule", "^sch.dule$"),
])
def test_glob_filters_list_what_grep_finds(k, glob, regex):
    """func-filter-glob.tc: the listing is available_filter_functions | grep."""
    wr(k, "set_ftrace_filter", glob + "\n")
    got = [ln.split(" ")[0] for ln in rd(k, "set_ftrace_filter").splitlines()]
    want = [ln.split(" ")[0] for ln in rd(k, "available_filter_functions").splitlines()
            if re.search(regex, ln.split(" ")[0])]
    assert got == want and got


def test_index_and_unknown_function(k):
    first = rd(k, "available_filter_functions").split("\n", 1)[0]
    wr(k, "set_ftrace_filter", "1\n")
    assert rd(k, "set_ftrace_filter") == first + "\n"
    assert err(wr, k, "set_ftrace_filter", "no_such_function_anywhere\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "999999999\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:bogus_command\n") == errno.EINVAL


@pytest.mark.parametrize("typ, search, s, hit", [
    (MATCH_FULL, "schedule", "schedule", True), (MATCH_FULL, "schedule", "schedule_idle", False),
    (MATCH_FRONT_ONLY, "sched", "schedule", True), (MATCH_FRONT_ONLY, "sched", "__sched", False),
    (MATCH_MIDDLE_ONLY, "ched", "schedule", True), (MATCH_MIDDLE_ONLY, "x", "schedule", False),
    (MATCH_END_ONLY, "dule", "schedule", True), (MATCH_END_ONLY, "sched", "schedule", False),
    (MATCH_END_ONLY, "", "schedule", True), (MATCH_GLOB, "s*e", "schedule", True),
    (MATCH_GLOB, "s*x", "schedule", False), (MATCH_INDEX, "1", "1", False),
])
def test_ftrace_glob(typ, search, s, hit):
    g = Glob(typ, search)
    assert g.match(s) is hit and len(g) == len(search)


# --------------------------------------------------------------- records
def with_module(k):
    """The records of the kernel's symbol table with a module loaded
    (``testmod``) beside the ftrace trampoline's pseudo-module."""
    ks = k.kallsyms
    core = [(a, t, n) for a, t, n, m in ks.symbols() if m is None]
    base = 0xffffffffc1000000
    mods = [(base + 0x40 * i, "t", name, "testmod")
            for i, name in enumerate(("tm_open", "tm_read", "tm_write"))]
    mods.append((base - 0x2000, "t", "ftrace_trampoline", "__builtin__ftrace"))
    return FtraceRecords(types.SimpleNamespace(kallsyms=Kallsyms(core, mods), workload=None, modules=None))


def test_records_match(k):
    r = ftrace_records(k)
    assert ftrace_records(k) is r                      # one per kernel
    i = r.named("schedule")[0]
    assert r.display(i) == "schedule"
    assert r.match("schedule", None) == ([i], False)
    assert r.match("!schedule", None) == ([i], True)
    assert r.rec_of_ip(r.ip(i)) == i and r.rec_of_ip(r.addrs[i] + 1) == i
    assert r.rec_of_ip(0) is None
    # a number is a record index, from 1
    n = len(r)
    assert r.match("1", None) == ([0], False) and r.match(str(n), None) == ([n - 1], False)
    assert r.match("0", None) == ([], False) and r.match(str(n + 1), None) == ([], False)
    # kallsyms' pseudo-module of ftrace trampolines has no records
    assert not any(m == "__builtin__ftrace" for _a, _t, _n, m in k.kallsyms.symbols()) or \
        "__builtin__ftrace" not in r.modules
    # :mod: patterns: a module, any module (blank) or, with "!", the others
    r = with_module(k)
    n = len(r)
    assert r.modules == {"testmod"}
    mod = sorted(r.modules)[0]
    recs = r.match("*", mod)[0]
    assert recs and all(r.mods[x] == mod for x in recs)
    assert r.display(recs[0]) == "%s [%s]" % (r.names[recs[0]], mod)
    in_mods, core = r.match("*", "")[0], r.match("*", "!")[0]
    assert all(r.mods[x] is not None for x in in_mods) and all(r.mods[x] is None for x in core)
    assert len(in_mods) + len(core) == n
    assert len(r.match("*", "!" + mod)[0]) == n - len(recs)


def test_compact_records_answer_as_the_lists_did(k):
    """The records keep no list of modules, no table of the symbols'
    records and no array of the boot's addresses: the answers are those
    the old forms gave, for every record and every name."""
    from array import array
    for r in (ftrace_records(k), with_module(k)):
        ks, at = r._ks, r.names._at
        # the modules: a list with None for each core record, then theirs
        mods = [None if p >= 0 else ks.lookup(a)[3] for p, a in zip(at, r.addrs)]
        assert any(mods) == (r is not ftrace_records(k) or bool(r.modules))
        assert list(r.mods) == mods and [r.mods[i] for i in range(len(mods))] == mods
        assert r.mods[-1] == mods[-1] and len(r.mods) == len(r) == len(mods)
        with pytest.raises(IndexError):
            r.mods[len(mods)]
        # a name's records: through a table of each symbol's record
        rec_at = array("i", [-1]) * len(ks.core_names())
        for i, p in enumerate(at):
            if p >= 0:
                rec_at[p] = i
        for name in set(ks.core_names()):
            old = [rec_at[p] for p in ks.core_names().positions(name) if rec_at[p] >= 0]
            old.extend(i for i, n in r.names.module_names.items() if n == name)
            assert r.named(name) == old, name
        # the boot's record addresses: the core records' and the init text's, sorted
        boot = array("Q", sorted(r._init_addrs.union(a for a, m in zip(r.addrs, mods) if m is None)))
        assert r._boot_core == boot and r.boot_count() == len(boot)


# --------------------------------------------------------------- record pages
def test_dyn_ftrace_total_info(k):
    r = ftrace_records(k)
    text = rd(k, "dyn_ftrace_total_info")
    m = re.fullmatch(r"(\d+) pages:(\d+) groups: (\d+)\n", text)
    assert m, text
    count, pages, groups = map(int, m.groups())
    # the functions ftrace manages are the ones it lists
    assert count == len(rd(k, "available_filter_functions").splitlines()) == len(r)
    # the init text's records were there at boot, in the last groups
    assert r._init_addrs and len(r._boot_core) == count + len(r._init_addrs)
    assert (pages, groups) == record_pages([a not in r._init_addrs for a in r._boot_core], [])
    assert pages * 4096 // 16 >= count
    # a module gets groups of its own
    rm = with_module(k)
    core_pages = record_pages([a not in rm._init_addrs for a in rm._boot_core], [])
    assert rm.dyn_info() == (len(rm), core_pages[0] + 1, core_pages[1] + 1)
    assert len(rm) == len(rm._boot_core) - len(rm._init_addrs) + 3


@pytest.mark.parametrize("count, groups", [
    (1, [(0, 1)]),
    (256, [(0, 256)]),
    (257, [(1, 257)]),                          # 2 pages: one order-1 block
    (32768, [(7, 32768)]),
    (50000, [(7, 32768), (6, 16384), (2, 848)]),
    # 256 records a page; the largest block the remaining records need, down
    (57615, [(7, 32768), (6, 16384), (5, 8192), (1, 271)]),
])
def test_allocate_pages(count, groups):
    assert allocate_pages(count) == groups


def test_record_pages_against_a_real_boot():
    """This machine (a 6.18 kernel, same code): boot log "ftrace: allocated
    200 pages with 3 groups" for 50752 entries, and after init memory is
    freed dyn_ftrace_total_info says "48514 pages:192 groups: 2"."""
    boot = [True] * 48514 + [False] * (50752 - 48514)
    assert record_pages([True] * 50752, []) != (200, 3)     # 50752 + skipped were allocated
    assert record_pages(boot, []) == (192, 2)
    # a boot count that needs the same 3 groups: 128 + 64 + 8 pages
    assert sum(1 << o for o, _c in allocate_pages(51000)) == 200
    assert record_pages([True] * 48514 + [False] * (51000 - 48514), []) == (192, 2)


def test_dyn_ftrace_total_info_from_6_13_has_the_patching_times():
    """"ftrace: Show timings of how long nop patching took" (6.13): two lines more."""
    k = sim.boot(persona="6.18", seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    lines = rd(k, "dyn_ftrace_total_info").splitlines()
    assert len(lines) == 3 and lines[0] == "%d pages:%d groups: %d" % ftrace_records(k).dyn_info()
    m = re.fullmatch(r"ftrace boot update time = (\d+) \(ns\)", lines[1])
    assert m and 230 * 50000 < int(m.group(1)) < 330 * 60000
    assert lines[2] == "ftrace module total update time = 0 (ns)"


def test_addr_index_is_the_dict_it_replaced():
    """A record's index by its address, the records in address order (the
    core) or not (module records in their load order)."""
    from array import array
    for addrs in ([0x1000, 0x1010, 0x2000, 0x2040],
                  [0x1000, 0x1010, 0xc000, 0xa000, 0xb010, 0xa010]):
        arr = array("Q", addrs)
        idx = AddrIndex(arr)
        want = {a: i for i, a in enumerate(addrs)}
        for a in addrs + [0, 0x1001, 0xa008, 0xffff, 1 << 63]:
            assert idx.get(a) == want.get(a), hex(a)
            assert (a in idx) is (a in want)
        assert idx[addrs[-1]] == len(addrs) - 1
        with pytest.raises(KeyError):
            idx[0x1001]
        assert None not in idx and idx.get(None, -1) == -1


def test_records_of_a_name_several_functions_share():
    """Static functions of one name in several files are as many records,
    found by the name in record order (names kept by the symbol table:
    ``RecordNames``); an alias at a record's address is no record."""
    core = [(0x1000, "T", "_stext"), (0x1000, "t", "dup"), (0x1040, "T", "alias_a"),
            (0x1040, "T", "alias_b"), (0x1080, "t", "dup"), (0x10c0, "T", "solo"),
            (0x1100, "t", "dup"), (0x1200, "T", "_etext")]
    mods = [(0xffffffffc1000000, "t", "dup", "testmod")]
    r = FtraceRecords(types.SimpleNamespace(kallsyms=Kallsyms(core, mods), workload=None,
                                            modules=None))
    assert list(r.names) == ["dup", "alias_a", "dup", "solo", "dup", "dup"]
    assert [r.names[i] for i in range(len(r))] == list(r.names) and r.names[-1] == "dup"
    assert r.named("dup") == [0, 2, 4, 5] and r.mods[5] == "testmod"
    assert r.named("alias_a") == [1] and r.named("alias_b") == [] and r.named("x") == []
    assert r.match("dup", None) == ([0, 2, 4, 5], False)
    assert r.match("al*", None) == ([1], False)


# ---------------------------------------------- the core scan kept per table
def _records_the_plain_way(kernel):
    """(addresses, names, modules, init text's addresses) of the records,
    made as FtraceRecords made them before its core scan was kept per
    table: one pass over ``ks.symbols()``, relocated addresses."""
    from fakefs.kernel.module import module_traceable
    from fakefs.kernel.trace import ftrace_records as fr
    ks = kernel.kallsyms
    notrace = fr.notrace_names(kernel)
    bounds = fr.untraceable_bounds(ks)
    init_lo, init_hi = ks.addr_of("_sinittext") or 0, ks.addr_of("_einittext") or 0
    core, modrecs, init = [], [], set()
    for addr, _typ, name, mod in ks.symbols():
        if fr._no_record(name, notrace):
            continue
        if mod is None:
            if bisect.bisect_right(bounds, addr) & 1:
                if init_lo <= addr < init_hi:
                    init.add(addr)
                continue
            core.append((addr, name, None))
        elif mod not in fr._PSEUDO_MODULES and module_traceable(kernel, mod, addr):
            modrecs.append((addr, name, mod))
    core.sort(key=lambda r: r[0])
    seen, out = set(), []
    for rec in core + modrecs:
        if rec[0] not in seen:
            seen.add(rec[0])
            out.append(rec)
    return [r[0] for r in out], [r[1] for r in out], [r[2] for r in out], init


def _records(recs):
    names = list(recs.names)
    mods = [recs.mods[i] if i >= recs._ncore else None for i in range(len(names))]
    return list(recs.addrs), names, mods, recs._init_addrs


def test_the_core_scan_kept_per_table_gives_the_records_of_the_plain_way(monkeypatch):
    """Each kernel of a process shares the bundled table (relocated by its
    seed): the records' places in it are scanned once per table and
    notrace set.  Cold and warm, for kernels at other addresses, without
    a call graph (no notrace) and with a module loaded: the records of
    the plain pass over the relocated symbols."""
    from fakefs.kernel.trace import ftrace_records as fr
    from fakefs.sim.files import finish
    monkeypatch.setattr(fr, "_CORE_SCANS", {})
    shifts = set()
    for seed in (1, 2, 7):
        kern = sim.boot(seed=seed, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
        shifts.add(kern.kallsyms.core_table()[1])
        assert _records(ftrace_records(kern)) == _records_the_plain_way(kern)
    assert len(shifts) == 3 and len(fr._CORE_SCANS) == 1    # (KASLR: three places, one scan)
    bare = types.SimpleNamespace(kallsyms=kern.kallsyms, workload=None, modules=None)
    assert _records(FtraceRecords(bare)) == _records_the_plain_way(bare)
    assert len(fr._CORE_SCANS) == 2                       # (no notrace: a scan of its own)
    finish(kern, kern.modules.load("trace_printk"))       # renumbered with its records
    recs = ftrace_records(kern)
    assert "trace_printk" in recs.modules
    assert _records(recs) == _records_the_plain_way(kern)
