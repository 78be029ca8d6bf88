"""The dyn_ftrace records and globs (ftrace_records.py): available_filter_functions
and which functions a word written to set_ftrace_filter picks."""

import errno
import re

import pytest

from fakefs.kernel.lib.glob import glob_regex
from fakefs.kernel.trace.ftrace_records import (MATCH_END_ONLY, MATCH_FRONT_ONLY, MATCH_FULL,
                                                MATCH_GLOB, MATCH_INDEX, MATCH_MIDDLE_ONLY, Glob,
                                                filter_parse_regex, ftrace_records)
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
def test_records_match(k):
    r = ftrace_records(k)
    assert ftrace_records(k) is r                      # one per kernel
    i = r.by_name["schedule"][0]
    assert r.display(i) == "schedule"
    assert r.match("schedule", None) == ([i], False)
    assert r.match("!schedule", None) == ([i], True)
    assert r.rec_of_ip(r.ip(i)) == i and r.rec_of_ip(r.addrs[i] + 1) == i
    assert r.rec_of_ip(0) is None
    # a number is a record index, from 1
    n = len(r)
    assert r.match("1", None) == ([0], False) and r.match(str(n), None) == ([n - 1], False)
    assert r.match("0", None) == ([], False) and r.match(str(n + 1), None) == ([], False)
    # :mod: patterns: a module, any module (blank) or, with "!", the others
    assert r.modules
    mod = sorted(r.modules)[0]
    recs = r.match("*", mod)[0]
    assert recs and all(r.mods[x] == mod for x in recs)
    assert r.display(recs[0]) == "%s [%s]" % (r.names[recs[0]], mod)
    in_mods, core = r.match("*", "")[0], r.match("*", "!")[0]
    assert all(r.mods[x] is not None for x in in_mods) and all(r.mods[x] is None for x in core)
    assert len(in_mods) + len(core) == n
    assert len(r.match("*", "!" + mod)[0]) == n - len(recs)
