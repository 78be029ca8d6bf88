"""Kprobe events (trace_kprobe.py) and dynamic_events (trace_dynevent.py)
through their files."""

import errno
import re

import pytest

import ftrace_helpers
import probe_helpers
from ftrace_helpers import APPEND, MS, entries
from kfiles import errno_of, node, rd, wr

booted = ftrace_helpers.booted              # the shared kernel


k = probe_helpers.k                         # (fixtures: the shared kernel, fresh)
clock = probe_helpers.clock


def add(k, cmd, path="kprobe_events"):
    return wr(k, path, cmd + "\n", APPEND)


def last_error(k):
    """(command, caret position) of the last error_log entry."""
    lines = rd(k, "error_log").splitlines()
    assert "trace_kprobe: error:" in lines[-3]
    return lines[-2][len("  Command: "):], len(lines[-1]) - 11 - 1


def test_listing_and_names(k):
    add(k, "p:myevent kernel_clone")
    add(k, "r:myret kernel_clone $retval")
    add(k, "p:grp/ev2 vfs_read+9 a=%ax:x16 $stack0 +0($stack):s32")
    add(k, "p vfs_read")
    add(k, "r10 vfs_read")
    add(k, "p:r2 vfs_read%return $arg1")
    assert rd(k, "kprobe_events") == (
        "p:kprobes/myevent kernel_clone\n"
        "r:kprobes/myret kernel_clone arg1=$retval\n"
        "p:grp/ev2 vfs_read+9 a=%ax:x16 arg2=$stack0 arg3=+0($stack):s32\n"
        "p:kprobes/p_vfs_read_0 vfs_read\n"
        "r10:kprobes/r_vfs_read_0 vfs_read\n"
        "r:kprobes/r2 vfs_read file=file\n")
    assert rd(k, "dynamic_events") == rd(k, "kprobe_events")
    assert node(k, "events/grp/ev2/format")
    fmt = rd(k, "events/grp/ev2/format")
    assert "\tfield:u16 a;\toffset:16;\tsize:2;\tsigned:0;\n" in fmt
    assert "\tfield:s32 arg3;\toffset:26;\tsize:4;\tsigned:1;\n" in fmt
    assert 'print fmt: "(%lx) a=0x%x arg2=0x%Lx arg3=%d", REC->__probe_ip, REC->a' in fmt
    assert "kprobes:myevent" in rd(k, "available_events")
    assert rd(k, "kprobe_profile").splitlines()[0] == "  %-44s %15d %15d" % ("myevent", 0, 0)


def test_remove_and_group_dirs(k):
    add(k, "p:mygroup/ kernel_clone")
    assert node(k, "events/mygroup/p_kernel_clone_0")
    add(k, "-:mygroup/")
    assert k.tree.root.walk("sys/kernel/tracing/events/mygroup") is None
    add(k, "p:a kernel_clone")
    add(k, "p:b do_exit")
    assert errno_of(add, k, "-:nosuch") == errno.ENOENT
    add(k, "-:kprobes/a")
    assert rd(k, "kprobe_events") == "p:kprobes/b do_exit\n"
    add(k, "!p:b do_exit", "dynamic_events")
    assert rd(k, "kprobe_events") == ""
    assert k.tree.root.walk("sys/kernel/tracing/events/kprobes") is None


def test_busy(k):
    add(k, "p:myevent kernel_clone")
    wr(k, "events/kprobes/myevent/enable", "1\n")
    assert errno_of(wr, k, "kprobe_events", "\n") == errno.EBUSY
    assert errno_of(add, k, "-:myevent") == errno.EBUSY
    assert errno_of(wr, k, "dynamic_events", "\n") == errno.EBUSY
    wr(k, "events/kprobes/myevent/enable", "0\n")
    wr(k, "kprobe_events", "\n")
    assert rd(k, "kprobe_events") == ""


def test_the_events_index_follows_adds_and_removes(k):
    """``tracing.events_by_key`` (what a new probe's name is checked
    against, and how an enable finds its probe event) is the events' own
    (system, name) after adds and removes; a name freed is free again."""
    def index_is_the_list():
        tracing = k.tracing
        return tracing.events_by_key == {(e.system, e.name): e for e in tracing.events}
    add(k, "p:a kernel_clone")
    add(k, "p:grp/b do_exit")
    assert errno_of(add, k, "p:a kernel_clone") == errno.EEXIST     # the same probe
    assert index_is_the_list() and ("grp", "b") in k.tracing.events_by_key
    wr(k, "events/kprobes/a/enable", "1\n")             # found by its tracepoint
    assert k.tracing.events_by_key[("kprobes", "a")].probes[0].kp.registered
    wr(k, "events/kprobes/a/enable", "0\n")
    add(k, "-:a")
    assert index_is_the_list() and ("kprobes", "a") not in k.tracing.events_by_key
    add(k, "p:a do_exit")                                # free again
    wr(k, "kprobe_events", "\n")
    assert index_is_the_list()


def test_multiprobe(k):
    add(k, "p:kprobes/testevent kernel_clone")
    add(k, "p:kprobes/testevent do_exit")
    assert rd(k, "kprobe_events").count("testevent") == 2
    add(k, "-:kprobes/testevent kernel_clone")
    assert rd(k, "kprobe_events") == "p:kprobes/testevent do_exit\n"
    assert errno_of(add, k, "p:kprobes/testevent kernel_clone $stack") == errno.EEXIST
    assert last_error(k) == ("p:kprobes/testevent kernel_clone $stack", 33)
    assert errno_of(add, k, "p:kprobes/testevent do_exit") == errno.EEXIST
    assert last_error(k)[1] == 0                                   # SAME_PROBE
    assert errno_of(add, k, "r:kprobes/testevent kernel_clone") == errno.EEXIST


@pytest.mark.parametrize("marked,err", [
    ("p^100 vfs_read", errno.EINVAL),
    ("r^1a111 vfs_read", errno.EINVAL),
    ("r^100000 vfs_read", errno.EINVAL),
    ("p ^non_exist_func", errno.EINVAL),
    ("p ^hoge-fuga", errno.EINVAL),
    ("p ^hoge+1000-1000", errno.EINVAL),
    ("p ^vfs_read++0", errno.EINVAL),           # kstrtol() takes one '+' only
    ("r ^vfs_read+10", errno.EINVAL),
    ("p:^/bar vfs_read", errno.EINVAL),
    ("p:^12345678901234567890123456789012345678901234567890123456789012345/bar vfs_read",
     errno.EINVAL),
    ("p:^foo.1/bar vfs_read", errno.EINVAL),
    ("p:^ vfs_read", errno.EINVAL),
    ("p:foo/^bar.1 vfs_read", errno.EINVAL),
    ("p vfs_read^%hoge", errno.EINVAL),
    ("p ^vfs_read+10%return", errno.EINVAL),
    ("p vfs_read args=^$arg*", errno.EINVAL),
    ("p vfs_read $arg* ^$arg*", errno.EINVAL),
    ("p vfs_read+20 ^$arg*", errno.EINVAL),
    ("p vfs_read ^hoge", errno.ENOENT),
    ("p kfree ^$arg10", errno.ENOENT),
    ("r kfree ^$retval", errno.ENOENT),
    ("p vfs_read+9 ^$arg1", errno.EINVAL),
    ("p ^vfs_read+3", errno.EILSEQ),
    ("p ^name_show", errno.EINVAL),
    ("p vfs_read ^@deaqswdefr", errno.ENOENT),
])
def test_command_errors(k, marked, err):
    cmd = marked.replace("^", "")
    assert errno_of(add, k, cmd) == err
    if marked.startswith("p vfs_read ^@"):
        assert last_error(k) == (cmd, len("p "))          # logged at the probe point
    else:
        assert last_error(k) == (cmd, marked.index("^"))
    assert rd(k, "kprobe_events") == ""


def test_not_a_kprobe_command(k):
    assert errno_of(add, k, "a:x vfs_read") == errno.EINVAL
    assert errno_of(add, k, "x:syn u64 lat", "dynamic_events") == errno.EINVAL
    assert errno_of(add, k, "p") == errno.EINVAL
    add(k, "# a comment only")
    assert rd(k, "error_log") == ""


def test_hits(k, clock):
    add(k, "p:testprobe kernel_clone $stack $stack0 +0($stack) comm=$comm "
           "s=$stack0:s32 u=$stack0:u32 x=$stack0:x32 bf=$stack0:b4@4/32")
    add(k, "r:testret kernel_clone $retval")
    wr(k, "events/kprobes/enable", "1\n")
    clock.advance(600 * MS)
    wr(k, "events/kprobes/enable", "0\n")
    lines = entries(k)
    probes = [ln for ln in lines if "testprobe:" in ln]
    rets = [ln for ln in lines if "testret:" in ln]
    assert probes and len(rets) == len(probes)
    m = re.search(r"testprobe: \(kernel_clone\+0x4/0x[0-9a-f]+\) arg1=(0x[0-9a-f]+) "
                  r"arg2=(0x[0-9a-f]+) arg3=(0x[0-9a-f]+) comm=\"[^\"]+\" "
                  r"s=(-?\d+) u=(\d+) x=(0x[0-9a-f]+) bf=(\d+)$", probes[0])
    assert m, probes[0]
    assert m.group(2) == m.group(3)                    # +0($stack) is $stack0
    u = int(m.group(5))
    assert int(m.group(6), 16) == u == int(m.group(2), 16) & 0xffffffff
    assert int(m.group(4)) % (1 << 32) == u
    assert int(m.group(7)) == (u >> 4) & 0xf
    # kernel_clone() returns a pid_t: BTF makes $retval an s32
    assert re.search(r"testret: \(\S+\+0x[0-9a-f]+/0x[0-9a-f]+ <- kernel_clone\) arg1=-?\d+$", rets[0])
    hits = {ln.split()[0]: int(ln.split()[1]) for ln in rd(k, "kprobe_profile").splitlines()}
    assert hits["testprobe"] == len(probes)
    wr(k, "kprobe_events", "\n")
    assert entries(k) == []                            # the buffer of its array is reset


def test_model_call_of_eventfs_create_dir(k):
    add(k, "p:testprobe eventfs_create_dir arg1=+0(%di):char arg2=+0(%di):char[4] "
           "s=+0(%di):string")
    wr(k, "events/kprobes/testprobe/enable", "1\n")
    add(k, "p:test kernel_clone")
    wr(k, "events/kprobes/testprobe/enable", "0\n")
    lines = [ln for ln in entries(k) if "testprobe:" in ln]
    assert lines and lines[0].endswith("arg1='t' arg2={'t','e','s','t'} s=\"test\"")


def test_dentry_args_are_expanded(k):
    add(k, "p:testprobe dput name=$arg1:%pd")
    add(k, "p:t2 vfs_read $arg1:%pD")
    assert rd(k, "kprobe_events") == (
        "p:kprobes/testprobe dput name=+0x0(+0x28($arg1)):string\n"
        "p:kprobes/t2 vfs_read arg1=+0x0(+0x28(+0x48(file))):string\n")


def test_instances_see_the_events(k):
    add(k, "p:ev1 kernel_clone")
    k.tracing.instance_mkdir("kp")
    try:
        assert node(k, "instances/kp/events/kprobes/ev1/enable")
        add(k, "p:ev2 kernel_clone")
        assert node(k, "instances/kp/events/kprobes/ev2/format")
        wr(k, "kprobe_events", "\n")
        assert k.tree.root.walk("sys/kernel/tracing/instances/kp/events/kprobes") is None
    finally:
        k.tracing.instance_rmdir("kp")


def test_filters_see_typed_fields(k, clock):
    add(k, "p:myevent schedule s=$stack0:s32 c=$comm")
    wr(k, "events/kprobes/myevent/enable", "1\n")
    clock.advance(400 * MS)
    values = {int(re.search(r" s=(-?\d+)", ln).group(1)) for ln in entries(k)}
    assert values
    pick = sorted(values)[len(values) // 2]
    wr(k, "trace", "\n")
    wr(k, "events/kprobes/myevent/filter", "s <= %d\n" % pick)
    clock.advance(400 * MS)
    got = [int(re.search(r" s=(-?\d+)", ln).group(1)) for ln in entries(k)]
    assert got and all(v <= pick for v in got)
    wr(k, "events/kprobes/myevent/filter", 'c == "no such comm"\n')
    wr(k, "trace", "\n")
    clock.advance(400 * MS)
    assert entries(k) == []
    wr(k, "events/kprobes/myevent/filter", "0\n")
    wr(k, "events/kprobes/myevent/enable", "0\n")


def test_an_instance_events_dir_not_yet_filled_counts_a_new_system(k):
    """An instance's events/ is filled in when first looked at; its link
    count (directories inside) follows a kprobe system made meanwhile."""
    k.tracing.instance_mkdir("lazy")
    try:
        evdir = k.tracing.instances["lazy"].dir.created_children()
        evdir = next(d for d in evdir if d.name == "events")
        assert evdir.populate is not None
        before = evdir.nr_subdirs()
        add(k, "p:lazygroup/lazyprobe vfs_read")
        assert evdir.populate is not None and evdir.nr_subdirs() == before + 1
        filled = evdir.nr_subdirs()
        assert "lazygroup" in evdir.children            # fills it in
        assert evdir.nr_subdirs() == filled
        wr(k, "kprobe_events", "-:lazygroup/lazyprobe\n", APPEND)
        assert "lazygroup" not in evdir.children and evdir.nr_subdirs() == before
    finally:
        k.tracing.instance_rmdir("lazy")


def _layout(k, name):
    addr = k.kallsyms.addr_of(name)
    return addr, k.kprobes.layout(addr)


def test_raw_addresses_resolve_on_the_layout(k):
    """``p:name 0xADDR`` (an address copied from /proc/kallsyms) and
    ``sym+off``: instruction boundaries of the modelled layout are taken,
    others are EILSEQ; outside any symbol ENOENT; address 0 EINVAL."""
    addr, lay = _layout(k, "kernel_clone")
    inside = next(off for off in range(lay.fentry + 1, lay.size) if not lay.boundary(off))
    body = next(off for off in lay.starts if off > lay.fentry)
    add(k, "p:at_entry 0x%x" % addr)
    add(k, "p:at_body 0x%x" % (addr + body))
    add(k, "p:sym_body kernel_clone+%d" % body)
    assert errno_of(add, k, "p:mid 0x%x" % (addr + inside)) == errno.EILSEQ
    assert last_error(k) == ("p:mid 0x%x" % (addr + inside), len("p:mid "))
    assert "Probe point is not an instruction boundary" in rd(k, "error_log")
    assert errno_of(add, k, "p:mid2 kernel_clone+%d" % inside) == errno.EILSEQ
    assert errno_of(add, k, "p:nowhere 0x1234") == errno.ENOENT
    assert rd(k, "error_log").splitlines()[-3].endswith("Invalid probed address or symbol")
    assert errno_of(add, k, "p:zero 0x0") == errno.EINVAL
    assert rd(k, "error_log").splitlines()[-3].endswith("Failed to register probe event")
    lines = rd(k, "kprobe_events").splitlines()
    assert [ln.split()[0] for ln in lines] == ["p:kprobes/at_entry", "p:kprobes/at_body",
                                               "p:kprobes/sym_body"]
    assert lines[2].endswith(" kernel_clone+%d" % body)
    assert re.fullmatch(r"p:kprobes/at_entry 0x[0-9a-f]{16}", lines[0])
    # the raw entry address is the function's entry: a return probe may go there
    add(k, "r:ret_raw 0x%x" % addr)
    assert errno_of(add, k, "r:ret_body 0x%x" % (addr + body)) == errno.EINVAL


def test_raw_address_probe_fires(k, clock):
    """A probe at a function's address (the machine's switches call
    schedule() all the time) fires on the instruction after endbr64."""
    addr, lay = _layout(k, "schedule")
    add(k, "p:raw 0x%x" % addr)
    wr(k, "events/kprobes/raw/enable", "1\n")
    clock.advance(100 * MS)
    lines = [ln for ln in entries(k) if " raw: " in ln]
    assert lines and all(ln.endswith("raw: (schedule+0x4/0x%x)" % lay.size) for ln in lines)


def test_a_data_symbol_argument_reads_the_banner(k, clock):
    """kprobe_args_symbol.tc: ``@linux_proc_banner`` (CONFIG_KALLSYMS_ALL)
    reads the format /proc/version is printed from."""
    add(k, "p:str schedule arg1=@linux_proc_banner:string arg2=@linux_proc_banner:u8")
    wr(k, "events/kprobes/str/enable", "1\n")
    clock.advance(100 * MS)
    lines = entries(k)
    i = next(i for i, ln in enumerate(lines) if " str: " in ln)
    version = rd(k, "proc/version", base="")
    groups = re.search(r" (\(.*\)) (\(.*\)) ", version).groups()
    # (the string ends with the banner's newline, printed as it is)
    assert lines[i].split('arg1="')[1] == "%s version %s " + " ".join(groups) + " %s"
    assert lines[i + 1] == '" arg2=%d' % ord("%")
