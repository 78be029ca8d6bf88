"""BTF arguments of probe events (trace_probe_btf.py) through dynamic_events:
names, ``$arg*``/``$argN``, fields, types from BTF, strings and bitfields,
and a kernel built without CONFIG_PROBE_EVENTS_BTF_ARGS."""

import errno

import pytest

import ftrace_helpers
import probe_helpers
from ftrace_helpers import MS, entries
from probe_helpers import add, fresh, last_error
from kfiles import errno_of, rd, wr

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.readme import BTF_ARGS

booted = ftrace_helpers.booted
k = probe_helpers.k
clock = probe_helpers.clock


def _fields(k, event):
    return [ln.split(";")[0].split(":", 1)[1] for ln in rd(k, "events/%s/format" % event).splitlines()
            if ln.startswith("\tfield:") and "common_" not in ln and "__probe" not in ln]


def test_readme_advertises_btf_arguments(k):
    assert BTF_ARGS in rd(k, "README")
    assert "\t           $stack<index>, $stack, $retval, $comm, $arg<N>,\n" + BTF_ARGS in rd(k, "README")


def test_names_and_meta_arguments(k):
    add(k, "f:fpevent kfree object")
    add(k, "t:tpevent kfree ptr")
    add(k, "f:fp2 vfs_read $arg*")
    add(k, "t:tp2 kfree $arg*")
    add(k, "p:kp vfs_read $arg2 $arg3:u32 c=count")
    add(k, "r:kr vfs_read $arg1 $retval")
    assert rd(k, "dynamic_events") == (
        "f:fprobes/fpevent kfree object=object\n"
        "t:tracepoints/tpevent kfree ptr=ptr\n"
        "f:fprobes/fp2 vfs_read file=file buf=buf count=count pos=pos\n"
        "t:tracepoints/tp2 kfree call_site=call_site ptr=ptr\n"
        "p:kprobes/kp vfs_read buf=buf count=count:u32 c=count\n"
        "r:kprobes/kr vfs_read file=file arg2=$retval\n")
    # types from BTF: pointers x64, size_t u64, ssize_t s64
    assert _fields(k, "fprobes/fp2") == ["u64 file", "u64 buf", "u64 count", "u64 pos"]
    assert 'count=%Lu pos=0x%Lx"' in rd(k, "events/fprobes/fp2/format")
    assert _fields(k, "kprobes/kr") == ["u64 file", "s64 arg2"]


def test_fields_through_pointers(k):
    add(k, "t:tpevent kmem_cache_alloc obj_size=s->object_size")
    add(k, "f:fpevent getname_flags%return path=$retval->name:string")
    add(k, "t:tpevent2 sched_wakeup p->se.group_node.next->prev")
    add(k, "t:tpevent3 sched_wakeup p->prio p->sched_reset_on_fork")
    assert "tpevent kmem_cache_alloc obj_size=s->object_size" in rd(k, "dynamic_events")
    assert "tpevent2 sched_wakeup arg1=p->se.group_node.next->prev" in rd(k, "dynamic_events")
    assert _fields(k, "tracepoints/tpevent") == ["u32 obj_size"]         # unsigned int
    assert _fields(k, "fprobes/fpevent") == ["__data_loc char[] path"]
    assert _fields(k, "tracepoints/tpevent2") == ["u64 arg1"]           # struct list_head *
    assert _fields(k, "tracepoints/tpevent3") == ["s32 arg1", "u32 arg2"]


def test_a_bitfield_is_masked(k, clock):
    add(k, "t:tpevent sched_wakeup p->sched_reset_on_fork p->prio")
    wr(k, "events/tracepoints/tpevent/enable", "1\n")
    clock.advance(30 * MS)
    wr(k, "events/tracepoints/tpevent/enable", "0\n")
    values = {ln.split(" arg1=")[1].split()[0] for ln in entries(k) if " tpevent: " in ln}
    assert values and values <= {"0", "1"}


@pytest.mark.parametrize("marked,err", [
    ("p 0xffffffff81000000 ^object", errno.EINVAL),       # no function entry: no BTF
    ("f kmem_cache_alloc_noprof s->^", errno.ENOENT),
    ("t kfree ptr.^x", errno.EOPNOTSUPP),
    ("t sched_wakeup p->se.^nope", errno.ENOENT),
    ("t sched_wakeup p->prio->^x", errno.EINVAL),
    ("f vfs_read ^$arg0", errno.EINVAL),
    ("f vfs_read ^$arg1x", errno.ENOENT),
    ("f do_sys_openat2 $arg* ^$arg*", errno.EINVAL),
])
def test_errors(k, marked, err):
    first = marked.index("^")
    cmd = marked.replace("^", "")
    assert errno_of(add, k, cmd) == err
    _head, logged, pos = last_error(k)
    assert (logged, pos) == (cmd, first)
    assert rd(k, "dynamic_events") == ""


def test_a_char_pointer_is_read_as_a_string(k):
    add(k, "f:fp do_sys_openat2 filename:string")
    assert _fields(k, "fprobes/fp") == ["__data_loc char[] filename"]


def test_expansion_too_long_for_the_buffer(k):
    # HUF_compress_internal's 13 parameter names take 135 bytes of the 128
    assert errno_of(add, k, "f HUF_compress_internal $arg*") == errno.E2BIG
    head, logged, pos = last_error(k)
    assert head.endswith("$arg* failed because the argument list is too long")
    assert pos == len("f HUF_compress_internal ")


def test_without_btf_arguments():
    clock = ManualClock()
    k = fresh(sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False,
                       config_overrides={"CONFIG_PROBE_EVENTS_BTF_ARGS": False}))
    assert BTF_ARGS not in rd(k, "README")
    assert errno_of(add, k, "f vfs_read $arg*") == errno.EOPNOTSUPP
    assert last_error(k)[1:] == ("f vfs_read $arg*", len("f vfs_read "))
    assert errno_of(add, k, "f vfs_read file") == errno.EOPNOTSUPP
    add(k, "f:fp vfs_read $arg1 $retval")
    assert rd(k, "dynamic_events") == "f:fprobes/fp vfs_read%return arg1=$arg1 arg2=$retval\n"
    assert _fields(k, "fprobes/fp") == ["u64 arg1", "u64 arg2"]
