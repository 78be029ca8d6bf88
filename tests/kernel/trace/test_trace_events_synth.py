"""Synthetic events (trace_events_synth.py) through their files:
``synthetic_events``, ``s:`` in ``dynamic_events``, the events' formats
and the error_log of 6.12's trace_events_synth.c."""

import errno

import pytest

import ftrace_helpers
from ftrace_helpers import APPEND
from fakefs.sim.files import read_file
from kfiles import errno_of, node, rd, wr

booted = ftrace_helpers.booted              # the shared kernel


@pytest.fixture
def k(booted):
    k, _clock = booted
    wr(k, "events/enable", "0\n")
    wr(k, "synthetic_events", "\n")
    wr(k, "dynamic_events", "\n")
    wr(k, "error_log", "\n")
    return k


def add(k, cmd, path="synthetic_events"):
    return wr(k, path, cmd + "\n", APPEND)


def last_error(k):
    """(location line, command, caret position) of the last error."""
    lines = rd(k, "error_log").splitlines()
    return lines[-3], lines[-2][len("  Command: "):], len(lines[-1]) - 11 - 1


def test_create_show_and_remove(k):
    add(k, "wakeup_latency  u64 lat pid_t pid char comm[16]")
    add(k, "s:synthetic/other u64 lat; char name[]; unsigned long[] stack", "dynamic_events")
    assert rd(k, "synthetic_events") == (
        "wakeup_latency\tu64 lat; pid_t pid; char[16] comm\n"
        "other\tu64 lat; char[] name; unsigned long[] stack\n")
    assert rd(k, "dynamic_events") == (
        "s:synthetic/wakeup_latency\tu64 lat; pid_t pid; char[16] comm\n"
        "s:synthetic/other\tu64 lat; char[] name; unsigned long[] stack\n")
    for f in ("format", "id", "enable", "filter", "trigger", "hist"):
        assert node(k, "events/synthetic/wakeup_latency/" + f)
    fmt = rd(k, "events/synthetic/wakeup_latency/format")
    assert "\tfield:u64 lat;\toffset:8;\tsize:8;\tsigned:0;\n" in fmt
    assert "\tfield:pid_t pid;\toffset:16;\tsize:4;\tsigned:1;\n" in fmt
    assert "\tfield:char comm[16];\toffset:24;\tsize:16;\tsigned:1;\n" in fmt
    assert fmt.endswith('print fmt: "lat=%llu, pid=%d, comm=%s", REC->lat, REC->pid, REC->comm\n')
    fmt = rd(k, "events/synthetic/other/format")
    assert "\tfield:__data_loc char[] name;\toffset:16;\tsize:8;\tsigned:1;\n" in fmt
    assert "\tfield:__data_loc unsigned long[] stack;\toffset:24;\tsize:8;\tsigned:1;\n" in fmt
    assert fmt.endswith('"lat=%llu, name=%s, stack=%s", REC->lat, __get_str(name), '
                        '__get_stacktrace(stack)\n')
    add(k, "!wakeup_latency")
    assert errno_of(add, k, "!wakeup_latency") == errno.ENOENT
    assert k.tree.root.walk("sys/kernel/tracing/events/synthetic/wakeup_latency") is None
    add(k, "-:synthetic/other", "dynamic_events")
    assert rd(k, "dynamic_events") == ""
    assert k.tree.root.walk("sys/kernel/tracing/events/synthetic") is None


def test_same_name_and_truncation(k):
    add(k, "myevent u64 var1")
    assert errno_of(add, k, "myevent u64 var2") == errno.EEXIST
    assert last_error(k)[0].endswith("synthetic_events: error: Event already exists")
    wr(k, "synthetic_events", "myevent u64 var1 ;u64 var2\n")
    assert rd(k, "synthetic_events") == "myevent\tu64 var1; u64 var2\n"


def test_enabled_event_is_busy(k):
    add(k, "busy u64 lat")
    wr(k, "events/synthetic/busy/enable", "1\n")
    assert errno_of(add, k, "!busy") == errno.EBUSY
    assert errno_of(wr, k, "synthetic_events", "\n") == errno.EBUSY
    wr(k, "events/synthetic/busy/enable", "0\n")
    add(k, "!busy")


@pytest.mark.parametrize("cmd", [
    "myevent ^chr arg", "myevent ^unsigned arg", "myevent char ^str]; int v",
    "^mye-vent char str[]", "myevent char ^st-r[]", "myevent char str;^[]",
    "myevent char str; ^int", "myevent char ^str[; int v", "myevent char ^str[kdjdk]",
    "myevent char ^str[257]", "^mye;vent char str[]", "^myevent ; char str[]",
    "^myevent; char str[]", "^myevent ;char str[]", "^; char str[]", "^;myevent char str[]",
    "^myevent"])
def test_errors_of_the_selftest(k, cmd):
    text = cmd.replace("^", "")
    assert errno_of(add, k, text) == errno.EINVAL
    loc, got, pos = last_error(k)
    assert "synthetic_events: error: " in loc
    assert (got, pos) == (text, cmd.index("^"))


@pytest.mark.parametrize("cmd,err", [
    ("myevent chr arg", "Invalid type"), ("myevent unsigned arg", "Incomplete type"),
    ("myevent char str[257]", "Invalid array specification"),
    ("mye-vent char str[]", "Illegal name"), ("myevent char str; int", "Invalid field"),
    ("myevent", "Command must be of the form: <name> field[;field] ...")])
def test_error_texts(k, cmd, err):
    errno_of(add, k, cmd)
    assert last_error(k)[0].endswith(": error: " + err)


def test_dynamic_events_group_must_be_synthetic(k):
    assert errno_of(add, k, "s:junk/myevent char str[", "dynamic_events") == errno.EINVAL
    loc, got, pos = last_error(k)
    assert loc.endswith("synthetic_events: error: Command must be of the form: s or "
                        "-:[synthetic/]<name> field[;field] ...")
    assert (got, pos) == ("s:junk/myevent char str[", 0)


def test_types(k):
    for t in ("u32", "u16", "u8", "s64", "s32", "s16", "s8", "char", "int", "long", "pid_t",
              "unsigned char", "unsigned int", "unsigned long", "bool", "gfp_t"):
        wr(k, "synthetic_events", "myevent %s var\n" % t)
        assert rd(k, "synthetic_events") == "myevent\t%s var\n" % t
    wr(k, "synthetic_events", "myevent char var[10]\n")
    assert rd(k, "synthetic_events") == "myevent\tchar[10] var\n"
    assert errno_of(wr, k, "synthetic_events", "myevent int var[]\n") == errno.EINVAL


def test_fired_records_print_and_encode(k):
    add(k, "s:ev pid_t pid; u64 delta; unsigned long[] stack; char name[]; char c[4]",
        "dynamic_events")
    wr(k, "events/synthetic/ev/enable", "1\n")
    wr(k, "trace", "\n")
    ev = k.tracing.synth_ops.find("ev")
    ks = k.kallsyms
    stack = (ks.addr_of("schedule"), ks.addr_of("kthread"))
    ev.fire(k.tracing, 0, (k.sim_time, 0, 0, 0, 0), [-1, 5, stack, b"a name", "longer"])
    lines = [x for x in rd(k, "trace").splitlines() if not x.startswith("#")]
    assert lines[0].endswith("ev: pid=-1 delta=5 stack=STACK:")
    assert lines[1].startswith("=> schedule+0x0/") and lines[2].startswith("=> kthread+0x0/")
    assert lines[3] == "name=a name c=lon"
    k.timekeeper.run_until_now()
    raw = read_file(k, "sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw")
    assert len(raw) == 4096
    # the stack's data: its length, then the addresses
    want = b"".join(x.to_bytes(8, "little") for x in (2,) + stack)
    assert want in raw and b"a name\0" in raw
