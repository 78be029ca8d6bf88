"""Fprobe and tracepoint probe events (trace_fprobe.py) through
dynamic_events."""

import errno

import pytest

import ftrace_helpers
import probe_helpers
from ftrace_helpers import MS, entries
from probe_helpers import add, last_error
from kfiles import errno_of, node, rd, wr

booted = ftrace_helpers.booted              # the shared kernel


k = probe_helpers.k                         # (fixtures: the shared kernel, fresh)
clock = probe_helpers.clock




def test_listing_names_and_groups(k):
    add(k, "f:myevent1 kernel_clone")
    add(k, "f:myevent2 kernel_clone%return")
    add(k, "f vfs_read $arg1 $arg2:u32")
    add(k, "f vfs_read $retval")                 # $retval makes it an exit probe
    add(k, "t:myevent3 kmem_cache_alloc")
    add(k, "t sched_switch $arg1")
    add(k, "t:grp/ev not_loaded_yet")
    assert rd(k, "dynamic_events") == (
        "f:fprobes/myevent1 kernel_clone\n"
        "f:fprobes/myevent2 kernel_clone%return\n"
        "f:fprobes/vfs_read__entry vfs_read file=file buf=buf:u32\n"
        "f:fprobes/vfs_read__exit vfs_read%return arg1=$retval\n"
        "t:tracepoints/myevent3 kmem_cache_alloc\n"
        "t:tracepoints/sched_switch sched_switch preempt=preempt\n"
        "t:grp/ev not_loaded_yet\n")
    assert rd(k, "kprobe_events") == ""
    fmt = rd(k, "events/fprobes/myevent2/format")
    assert "\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n" in fmt
    assert 'print fmt: "(%lx <- %lx)", REC->__probe_func, REC->__probe_ret_ip' in fmt
    assert "\tfield:u32 buf;\toffset:24;" in rd(k, "events/fprobes/vfs_read__entry/format")
    add(k, "-:myevent2")
    assert "myevent2" not in rd(k, "dynamic_events")
    assert k.tree.root.walk("sys/kernel/tracing/events/fprobes/myevent2") is None
    add(k, "-:tracepoints/")
    assert "t:tracepoints/" not in rd(k, "dynamic_events")
    assert "t:grp/ev not_loaded_yet\n" in rd(k, "dynamic_events")
    add(k, "!f:fprobes/myevent1 kernel_clone")
    assert "myevent1" not in rd(k, "dynamic_events")


@pytest.mark.parametrize("marked,err", [
    ("f^100 vfs_read", errno.EINVAL),
    ("f^1a111 vfs_read", errno.EINVAL),
    ("f^100000 vfs_read", errno.EINVAL),
    ("f ^non_exist_func", errno.EINVAL),          # no function matches the filter
    ("f ^vfs_read+10", errno.EINVAL),
    ("f:^/bar vfs_read", errno.EINVAL),
    ("f:foo/^bar.1 vfs_read", errno.EINVAL),
    ("f vfs_read ^$stack10000", errno.EINVAL),
    ("f vfs_read ^%ax", errno.EINVAL),
    ("f vfs_read ^@+10", errno.EINVAL),
    # BTF arguments (fprobe_syntax_errors.tc's with their errnos)
    ("f vfs_read args=^$arg*", errno.EINVAL),
    ("f vfs_read +0(^$arg*)", errno.EINVAL),
    ("f vfs_read $arg* ^$arg*", errno.EINVAL),
    ("f vfs_read ^hoge", errno.ENOENT),
    ("f kfree ^$arg10", errno.ENOENT),
    ("f kfree%return ^$retval", errno.ENOENT),
    ("f vfs_read%return $retval->^foo", errno.EINVAL),
    ("f vfs_read file->^foo", errno.ENOENT),
    ("f vfs_read file^-.foo", errno.EINVAL),
    ("f vfs_read ^file:string", errno.EINVAL),
    ("f vfs_read file.^f_mode", errno.EOPNOTSUPP),
    ("f vfs_read%return file->f_mode->^x", errno.EINVAL),
    ("f vfs_read^%hoge", errno.EINVAL),
    ("t^100 kfree", errno.EINVAL),
    ("t kfree ^$retval", errno.EINVAL),
    ("t kfree ^%rax", errno.EINVAL),
    ("t kfree ^__data", errno.ENOENT),             # the stub's data is hidden
    ("t kfree^%return", errno.EINVAL),
    ("t kf^-ree", errno.EINVAL),
])
def test_command_errors(k, marked, err):
    cmd = marked.replace("^", "")
    assert errno_of(add, k, cmd) == err
    head, logged, pos = last_error(k)
    assert head.startswith("trace_fprobe: error: ")
    assert (logged, pos) == (cmd, marked.index("^"))
    assert rd(k, "dynamic_events") == ""


def test_append_rules(k):
    add(k, "f:fprobes/testevent kernel_clone")
    assert errno_of(add, k, "f:fprobes/testevent do_exit%return") == errno.EEXIST
    assert last_error(k)[0].endswith("Probe type is different from existing probe")
    wr(k, "dynamic_events", "f:fprobes/testevent kernel_clone abcd=\\1\n")
    assert errno_of(add, k, "f:fprobes/testevent kernel_clone bcd=\\1") == errno.EEXIST
    assert last_error(k)[2] == len("f:fprobes/testevent kernel_clone ")
    assert errno_of(add, k, "f:fprobes/testevent kernel_clone abcd=\\1") == errno.EEXIST
    assert last_error(k)[0].endswith("There is already the exact same probe event")
    add(k, "f:fprobes/testevent do_exit abcd=\\2")            # same types: appended
    assert rd(k, "dynamic_events").count("f:fprobes/testevent ") == 2
    # a kprobe event's name is taken for fprobes, and the other way round
    add(k, "p:kgroup/kevent vfs_open")
    assert errno_of(add, k, "f:kgroup/kevent vfs_open") == errno.EEXIST
    assert last_error(k)[0].endswith("Given group/event name is already used by another event")
    assert errno_of(add, k, "p:fprobes/testevent vfs_open") == errno.EEXIST


def test_entry_and_exit_fire_with_the_same_entry_argument(k, clock):
    add(k, "f:tests/myevent1 vfs_read arg=$arg1")
    add(k, "f:tests/myevent2 vfs_read%return arg=$arg1 ret=$retval")
    wr(k, "events/tests/enable", "1\n")
    clock.advance(100 * MS)
    ent = [ln for ln in entries(k) if "myevent1:" in ln]
    ext = [ln for ln in entries(k) if "myevent2:" in ln]
    assert ent and len(ent) == len(ext)
    assert all(": (vfs_read+0x4/" in ln for ln in ent)
    assert all(" <- vfs_read) arg=" in ln for ln in ext)
    for a, b in zip(ent, ext):
        assert a.split("arg=")[1] == b.split("arg=")[1].split()[0]
    assert "vfs_read" not in rd(k, "sys/kernel/debug/kprobes/list", base="")
    wr(k, "events/tests/enable", "0\n")
    wr(k, "trace", "\n")
    clock.advance(50 * MS)
    assert not [ln for ln in entries(k) if "myevent" in ln]


def test_busy_event_is_not_removed(k):
    add(k, "f:busy kernel_clone")
    wr(k, "events/fprobes/busy/enable", "1\n")
    assert errno_of(add, k, "-:busy") == errno.EBUSY
    assert errno_of(wr, k, "dynamic_events", "\n") == errno.EBUSY
    wr(k, "events/fprobes/busy/enable", "0\n")
    add(k, "-:busy")
    assert node(k, "events") and rd(k, "dynamic_events") == ""


def test_tracepoint_probes_fire_with_the_tracepoint(k, clock):
    """A tracepoint probe fires at the tracepoint's hits whether or not its
    event is enabled; with the event enabled each hit gives both records,
    the probe's at the same instant, from the stub's ftrace site."""
    add(k, "t:tp1 kmem_cache_alloc $arg1\nt sched_switch c=$comm")
    wr(k, "events/tracepoints/enable", "1\n")
    clock.advance(50 * MS)
    lines = entries(k)
    tp1 = [ln for ln in lines if " tp1: " in ln]
    sw = [ln for ln in lines if " sched_switch: " in ln]
    assert tp1 and sw
    assert all(": (__probestub_kmem_cache_alloc+0x4/" in ln for ln in tp1)
    for ln in sw:                          # $comm is the task the line names
        comm, task = ln.split("c=")[1].strip('"'), ln.split()[0].rsplit("-", 1)[0]
        assert comm == task or (task == "<idle>" and comm.startswith("swapper/"))
    wr(k, "events/kmem/kmem_cache_alloc/enable", "1\n")
    wr(k, "trace", "\n")
    clock.advance(20 * MS)
    lines = entries(k)
    idx = [i for i, ln in enumerate(lines) if " kmem_cache_alloc: " in ln]
    assert idx
    for i in idx:
        assert " tp1: " in lines[i + 1]
        assert lines[i].split(": ")[0] == lines[i + 1].split(": ")[0]
    wr(k, "events/kmem/kmem_cache_alloc/enable", "0\n")
    wr(k, "events/tracepoints/enable", "0\n")
    assert not k.trace_hits.tp_hooks
    wr(k, "trace", "\n")
    clock.advance(20 * MS)
    assert entries(k) == []


def test_the_function_is_an_ftrace_filter(k, clock):
    """register_fprobe() takes the symbol as set_ftrace_filter does: a glob
    probes every function it matches; nothing matched is EINVAL with
    "Failed to register probe event"."""
    add(k, "f vfs_rea*")
    assert rd(k, "dynamic_events") == "f:fprobes/vfs_rea___entry vfs_rea*\n"
    wr(k, "events/fprobes/vfs_rea___entry/enable", "1\n")
    clock.advance(100 * MS)
    funcs = {ln.split(": (")[1].split("+")[0] for ln in entries(k)}
    assert "vfs_read" in funcs and all(f.startswith("vfs_rea") for f in funcs)
    wr(k, "events/fprobes/vfs_rea___entry/enable", "0\n")
    assert errno_of(add, k, "f:x no_such_function_*") == errno.EINVAL
    assert last_error(k)[0].endswith("Failed to register probe event")
