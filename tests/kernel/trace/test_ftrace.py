"""Dynamic ftrace: available_filter_functions, set_ftrace_filter/notrace,
function probes and pid filters, through their file operations."""

import collections
import errno
import os
import re

import pytest

from fakefs.kernel.fs.pseudo import File
from fakefs.kernel.init import Kernel
from fakefs.kernel.time import ManualClock
from kfiles import errno_of, node, rd, wr
from fakefs.kernel.lib.glob import glob_regex
from fakefs.kernel.trace.ftrace import (MATCH_END_ONLY, MATCH_FRONT_ONLY, MATCH_FULL, MATCH_GLOB,
                                        MATCH_INDEX, MATCH_MIDDLE_ONLY, filter_parse_regex)

APPEND = os.O_WRONLY | os.O_APPEND
TRUNC = os.O_WRONLY | os.O_TRUNC
MS = 1_000_000


def boot(host_tasks=False, nr_cpus=2):
    clock = ManualClock()
    k = Kernel(seed=7, nr_cpus=nr_cpus, clock=clock, host_kallsyms=False)
    if host_tasks:
        k.host_tasks = True
    return k.boot(), clock


@pytest.fixture(scope="module")
def booted():
    return boot()


@pytest.fixture
def k(booted):
    """The shared kernel, with every ftrace setting of the top level undone."""
    k, clock = booted
    yield k
    reset_ftrace_filter(k)
    wr(k, "set_ftrace_notrace", "\n")
    wr(k, "current_tracer", "nop\n")
    wr(k, "events/enable", "0\n")
    wr(k, "tracing_on", "1\n")


err = errno_of


def entries(k, path="trace"):
    return [ln for ln in rd(k, path).splitlines() if not ln.startswith("#")]


def functions(lines):
    return collections.Counter(ln.split(": ", 1)[1].split()[0] for ln in lines
                               if "<stack trace>" not in ln and not ln.startswith(" =>"))


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


# --------------------------------------------------------------- the filter files
def test_trunc_append_and_probes_survive_trunc(k):
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
    assert rd(k, "set_ftrace_notrace") == "#### no functions disabled ####\n"
    wr(k, "set_ftrace_filter", "schedule:traceoff\n")
    assert rd(k, "set_ftrace_filter") == ("#### all functions enabled ####\n"
                                          "schedule:traceoff:unlimited\n")
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "set_ftrace_filter", "sched_tick\n", APPEND)
    wr(k, "set_ftrace_filter", "sched_tick:traceoff\n", APPEND)
    text = rd(k, "set_ftrace_filter").splitlines()
    # functions in record (address) order, then the probes
    assert sorted(text[:2]) == ["sched_tick", "schedule"]
    assert sorted(text[2:]) == ["sched_tick:traceoff:unlimited", "schedule:traceoff:unlimited"]
    wr(k, "set_ftrace_filter", "schedule\n")            # O_TRUNC: functions only
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "schedule"
    wr(k, "set_ftrace_filter", "\n")
    got = rd(k, "set_ftrace_filter").splitlines()
    assert got[0] == "#### all functions enabled ####" and sorted(got[1:]) == sorted(text[2:])
    # "!" takes functions out again
    wr(k, "set_ftrace_filter", "schedule sched_tick\n")
    wr(k, "set_ftrace_filter", "!sched_tick\n", APPEND)
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "schedule"
    # a word split over two writes is one word
    n = node(k, "set_ftrace_filter")
    f = File(n, TRUNC)
    n.fops.open(f)
    n.fops.write(f, b"sched")
    n.fops.write(f, b"_tick\n")
    n.fops.release(f)
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "sched_tick"
    # an unterminated last word counts at close, errors unreported
    wr(k, "set_ftrace_filter", "schedule")
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "schedule"
    wr(k, "set_ftrace_filter", "no_such_function_xyz")
    assert rd(k, "set_ftrace_filter").startswith("#### all functions enabled ####\n")


def reset_ftrace_filter(k):
    """test.d/functions reset_ftrace_filter(), word for word."""
    wr(k, "set_ftrace_filter", "\n")
    for t in rd(k, "set_ftrace_filter").splitlines():
        if t.startswith("#"):
            continue
        fields = t.split(":")
        if len(fields) < 2 or not fields[1]:
            continue
        if t not in rd(k, "set_ftrace_filter"):
            continue
        name = fields[0].split(" ")[0]
        if fields[1] in ("enable_event", "disable_event"):
            trig, limit = ":".join(fields[1:4]), (fields[4] if len(fields) > 4 else "")
        else:
            trig, limit = fields[1], (fields[2] if len(fields) > 2 else "")
        if limit != "unlimited":
            trig += ":" + limit
        wr(k, "set_ftrace_filter", "!%s:%s\n" % (name, trig))


def test_probe_listing_round_trips(k):
    for cmd in ("schedule:traceoff", "schedule:traceon:5", "kernel_clone:stacktrace",
                "sched_tick:stacktrace:2", "schedule:enable_event:sched:sched_switch",
                "schedule:disable_event:sched:sched_waking:3", "non_exist_func:mod:non_exist_mod"):
        wr(k, "set_ftrace_filter", cmd + "\n", APPEND)
    lines = set(rd(k, "set_ftrace_filter").splitlines())
    assert {"schedule:traceoff:unlimited", "schedule:traceon:count=5",
            "kernel_clone:stacktrace:unlimited", "sched_tick:stacktrace:count=2",
            "schedule:enable_event:sched:sched_switch:unlimited",
            "schedule:disable_event:sched:sched_waking:count=3",
            "non_exist_func:mod:non_exist_mod"} == lines
    assert rd(k, "events/sched/sched_switch/enable") == "0*\n"
    assert rd(k, "events/sched/sched_waking/enable") == "0*\n"
    reset_ftrace_filter(k)
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
    assert k.tracing.global_trace.ftrace_ops is None
    assert rd(k, "events/sched/sched_switch/enable") == "0\n"


def test_probe_errors(k):
    wr(k, "set_ftrace_filter", "schedule:traceoff\n")
    # the same functions again: nothing new
    assert err(wr, k, "set_ftrace_filter", "schedule:traceoff\n") == errno.EINVAL
    # with a count it is another probe
    wr(k, "set_ftrace_filter", "schedule:traceoff:3\n")
    assert err(wr, k, "set_ftrace_filter", "!schedule:traceon\n") == errno.ENODEV
    assert err(wr, k, "set_ftrace_filter", "!kernel_clone:traceoff\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:traceoff:x\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "nosuchfn_abc:traceoff\n") == errno.EINVAL
    for cmd in ("snapshot", "dump", "cpudump"):
        assert err(wr, k, "set_ftrace_filter", "schedule:%s\n" % cmd) == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:enable_event:sched:nope\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_filter", "schedule:enable_event:sched\n") == errno.EINVAL
    assert err(wr, k, "set_ftrace_notrace", "schedule:traceoff\n") == errno.EINVAL
    wr(k, "set_ftrace_filter", "!schedule:traceoff:0\n")        # the count one
    assert rd(k, "set_ftrace_filter").splitlines()[1:] == ["schedule:traceoff:unlimited"]
    wr(k, "set_ftrace_filter", "*lock*:traceoff\n")
    n = len(rd(k, "set_ftrace_filter").splitlines())
    wr(k, "set_ftrace_filter", "!*try*lock:traceoff\n", APPEND)
    left = rd(k, "set_ftrace_filter").splitlines()[1:]
    assert len(left) < n - 1 and not any(re.search("try.*lock$", ln.split(":")[0]) for ln in left)
    wr(k, "set_ftrace_filter", "!*:traceoff\n", APPEND)
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"


def test_mod_commands(k):
    wr(k, "set_ftrace_filter", "non_exist_func:mod:non_exist_module\n")
    wr(k, "set_ftrace_filter", "*:mod:other_mod\n", APPEND)
    # a cached module command is a filter: nothing is traced, no "all" line
    assert rd(k, "set_ftrace_filter") == ("*:mod:other_mod\n"
                                          "non_exist_func:mod:non_exist_module\n")
    wr(k, "set_ftrace_filter", "!*:mod:other_mod\n", APPEND)
    assert rd(k, "set_ftrace_filter") == "non_exist_func:mod:non_exist_module\n"
    assert err(wr, k, "set_ftrace_filter", "!x:mod:never_cached\n", APPEND) == errno.EINVAL
    wr(k, "set_ftrace_filter", "\n")
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
    wr(k, "set_ftrace_notrace", "x:mod:nomod\n")
    assert rd(k, "set_ftrace_notrace") == "#### no functions disabled ####\nx:mod:nomod\n"


# --------------------------------------------------------------- tracing with filters
def test_filter_sees_every_call_of_the_function(k, booted):
    clock = booted[1]
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "current_tracer", "function\n")
    clock.advance(500 * MS)
    lines = entries(k)
    funcs = functions(lines)
    assert set(funcs) == {"schedule"}
    # a busy machine's schedule() rate, on both CPUs, from many tasks
    assert 300 < funcs["schedule"] < 2000
    assert {"[000]", "[001]"} <= {ln.split()[1] for ln in lines}
    assert len({ln.split()[0] for ln in lines}) > 5
    # notrace wins over the filter
    wr(k, "set_ftrace_filter", "*sched*\n")
    wr(k, "set_ftrace_notrace", "schedule\n")
    wr(k, "trace", "")
    clock.advance(200 * MS)
    funcs = functions(entries(k))
    assert funcs and "schedule" not in funcs and all("sched" in f for f in funcs)
    # without a filter: the sampled stream of every function again
    wr(k, "set_ftrace_filter", "\n")
    wr(k, "set_ftrace_notrace", "\n")
    wr(k, "trace", "")
    clock.advance(100 * MS)
    assert len(functions(entries(k))) > 50


def test_traceoff_traceon_and_counts(k, booted):
    clock = booted[1]
    wr(k, "events/sched/enable", "1\n")
    clock.advance(5 * MS)
    assert entries(k)
    wr(k, "set_ftrace_filter", "schedule:traceoff\n")
    clock.advance(3 * MS)
    assert rd(k, "tracing_on") == "0\n"
    n = len(entries(k))
    clock.advance(100 * MS)
    assert len(entries(k)) == n
    wr(k, "set_ftrace_filter", "!schedule:traceoff\n", APPEND)
    wr(k, "trace", "")
    wr(k, "set_ftrace_filter", "schedule:traceon\n")
    clock.advance(3 * MS)
    assert rd(k, "tracing_on") == "1\n" and entries(k)
    wr(k, "set_ftrace_filter", "!schedule:traceon\n", APPEND)
    # at most 3 times, counting only when it did something
    wr(k, "set_ftrace_filter", "schedule:traceoff:3\n")
    for left in (2, 1, 0):
        clock.advance(50 * MS)
        assert rd(k, "tracing_on") == "0\n"
        assert rd(k, "set_ftrace_filter").endswith("schedule:traceoff:count=%d\n" % left)
        wr(k, "tracing_on", "1\n")
    clock.advance(50 * MS)
    assert rd(k, "tracing_on") == "1\n"
    wr(k, "set_ftrace_filter", "!schedule:traceoff:0\n")
    assert k.tracing.global_trace.ftrace_ops is None


def test_stacktrace_probe_with_the_nop_tracer(k, booted):
    clock = booted[1]
    wr(k, "trace", "")
    wr(k, "set_ftrace_filter", "kernel_clone:stacktrace\n", APPEND)
    assert "kernel_clone:stacktrace:unlimited\n" in rd(k, "set_ftrace_filter")
    clock.advance(1000 * MS)
    text = rd(k, "trace")
    assert "<stack trace>" in text and "\n => kernel_clone\n" in text
    # a count stops it
    wr(k, "set_ftrace_filter", "!kernel_clone:stacktrace\n")
    wr(k, "set_ftrace_filter", "kernel_clone:stacktrace:1\n")
    wr(k, "trace", "")
    clock.advance(1000 * MS)
    assert rd(k, "trace").count("<stack trace>") == 1
    assert "kernel_clone:stacktrace:count=0\n" in rd(k, "set_ftrace_filter")


def test_event_probes_soft_mode(k, booted):
    clock = booted[1]
    ev = "events/sched/sched_switch/enable"
    wr(k, ev, "0\n")
    wr(k, "set_ftrace_filter", "schedule:enable_event:sched:sched_switch\n")
    assert rd(k, ev) == "0*\n"
    clock.advance(20 * MS)
    assert rd(k, ev) == "1*\n"
    wr(k, ev, "0\n")                       # soft mode: only soft-disabled
    assert rd(k, ev) == "0*\n"
    clock.advance(20 * MS)
    assert rd(k, ev) == "1*\n"
    assert "sched_switch:" in rd(k, "trace")
    reset_ftrace_filter(k)
    assert rd(k, ev) == "1\n"              # left as the probe left it
    # disable_event, three times at most
    wr(k, "set_ftrace_filter", "schedule:disable_event:sched:sched_switch:3\n")
    assert rd(k, ev) == "1*\n"
    for _ in range(3):
        clock.advance(20 * MS)
        assert rd(k, ev) == "0*\n"
        wr(k, ev, "1\n")
        assert rd(k, ev) == "1*\n"
    clock.advance(20 * MS)
    assert rd(k, ev) == "1*\n"
    assert "schedule:disable_event:sched:sched_switch:count=0" in rd(k, "set_ftrace_filter")
    reset_ftrace_filter(k)
    assert rd(k, ev) == "1\n"
    wr(k, ev, "0\n")


def test_instances_are_independent(k, booted):
    clock = booted[1]
    tracing = k.tracing
    tracing.instance_mkdir("ft")
    try:
        assert node(k, "instances/ft/set_ftrace_filter") and node(k, "instances/ft/set_ftrace_notrace")
        assert k.tree.root.walk("sys/kernel/tracing/instances/ft/available_filter_functions") is None
        wr(k, "instances/ft/set_ftrace_filter", "kernel_clone\n")
        wr(k, "instances/ft/set_ftrace_filter", "schedule:enable_event:sched:sched_switch\n",
           APPEND)
        assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
        assert rd(k, "events/sched/sched_switch/enable") == "0\n"
        wr(k, "set_ftrace_filter", "schedule\n")
        wr(k, "current_tracer", "function\n")
        wr(k, "instances/ft/current_tracer", "function\n")
        clock.advance(1000 * MS)
        assert set(functions(entries(k))) == {"schedule"}
        inst = functions(entries(k, "instances/ft/trace"))
        # its own filter, and the event its probe turned on
        assert set(inst) == {"kernel_clone", "sched_switch:"}
        assert rd(k, "instances/ft/events/sched/sched_switch/enable") == "1*\n"
        tr = tracing.instances["ft"]
        ev = next(e for e in tracing.events if e.name == "sched_switch")
    finally:
        tracing.instance_rmdir("ft")
    # the probes went with the instance
    assert not tr.soft_mode and tr.ftrace_ops is None and ev not in tr.soft_disabled


# --------------------------------------------------------------- pids
def test_pid_files_follow_host_task_tracking(k):
    assert k.tree.root.walk("sys/kernel/tracing/set_ftrace_pid") is None
    assert "set_ftrace_pid" not in rd(k, "README")
    k2, clock = boot(host_tasks=True)
    for d in ("", "instances/p/"):
        if d:
            k2.tracing.instance_mkdir("p")
        assert rd(k2, d + "set_ftrace_pid") == "no pid\n"
        assert rd(k2, d + "set_ftrace_notrace_pid") == "no pid\n"
    assert "  set_ftrace_pid\t- Write pid(s) to only function trace those pids\n" in rd(k2, "README")


def test_pid_filters():
    k, clock = boot(host_tasks=True)
    pids = [t.pid for t in k.workload.tasks() if t.comm == "cc1"]
    wr(k, "set_ftrace_pid", "%d\n" % pids[0])
    wr(k, "set_ftrace_pid", "%d 0x%x\n" % (pids[1], pids[1]), APPEND)
    assert rd(k, "set_ftrace_pid") == "%d\n%d\n" % (pids[0], pids[1])
    assert err(wr, k, "set_ftrace_pid", "12 abc\n", APPEND) == errno.EINVAL
    assert rd(k, "set_ftrace_pid") == "%d\n%d\n" % (pids[0], pids[1])     # all or nothing
    wr(k, "current_tracer", "function\n")
    clock.advance(200 * MS)
    seen = {int(re.match(r"\s*\S+-(\d+)", ln).group(1)) for ln in entries(k)}
    assert seen and seen <= set(pids)
    # notrace pid beats the pid list
    wr(k, "set_ftrace_notrace_pid", "%d\n" % pids[0])
    wr(k, "trace", "")
    clock.advance(500 * MS)
    seen = {int(re.match(r"\s*\S+-(\d+)", ln).group(1)) for ln in entries(k)}
    assert seen <= {pids[1]}
    wr(k, "set_ftrace_pid", "\n")
    assert rd(k, "set_ftrace_pid") == "no pid\n"
    wr(k, "trace", "")
    clock.advance(100 * MS)
    seen = {int(re.match(r"\s*\S+-(\d+)", ln).group(1)) for ln in entries(k)}
    assert pids[0] not in seen and len(seen) > 3
    wr(k, "set_ftrace_notrace_pid", "\n")
    assert k.tracing.global_trace.ftrace_ops is None


def test_readme_lists_what_is_there(k):
    readme = rd(k, "README")
    assert re.search("accepts: .* glob-matching-pattern", readme)
    assert "\t\t      stacktrace\n" in readme and "enable_event:<system>:<event>" in readme
    assert "snapshot\n" not in readme and "cpudump" not in readme
