"""Uprobe events (trace_uprobe.py): uprobe_events, uprobe_profile,
dynamic_events, the error log of uprobe_syntax_errors.tc, enabling, hits."""

import errno

import pytest

import ftrace_helpers
import probe_helpers
from elf_helpers import make_elf
from ftrace_helpers import entries
from probe_helpers import add, last_error
from kfiles import errno_of, rd, wr

from fakefs.kernel.sched import Task
from fakefs.kernel.trace.readme import UPROBE_FILE, UPROBE_PLACE

booted = ftrace_helpers.booted
k = probe_helpers.k


@pytest.fixture
def prog(tmp_path):
    return make_elf(tmp_path / "my-prog.bin", entry=0x1040, init=0x1000)


def up(k, cmd):
    return add(k, cmd, "uprobe_events")


def test_readme_and_files(k):
    text = rd(k, "README")
    assert UPROBE_FILE in text and UPROBE_PLACE in text
    assert rd(k, "uprobe_events") == "" and rd(k, "uprobe_profile") == ""


def test_listing_names_and_removal(k, prog):
    up(k, "p:myevent %s:0x00001000" % prog)
    up(k, "r %s:0x1000 $retval %%ax:x16 @+0x10 $comm $stack1" % prog)
    up(k, "p %s:4160(0x20) +8(%%sp):u32" % prog)
    add(k, "p:grp/ev %s:0x1000" % prog)                # through dynamic_events too
    assert rd(k, "uprobe_events") == (
        "p:uprobes/myevent %s:0x0000000000001000\n"
        "r:uprobes/p_my_0x1000 %s:0x0000000000001000 arg1=$retval arg2=%%ax:x16 arg3=@+0x10 "
        "arg4=$comm arg5=$stack1\n"
        "p:uprobes/p_my_0x1040 %s:0x0000000000001040(0x20) arg1=+8(%%sp):u32\n"
        "p:grp/ev %s:0x0000000000001000\n") % (prog, prog, prog, prog)
    assert rd(k, "dynamic_events") == rd(k, "uprobe_events")
    assert rd(k, "kprobe_events") == ""
    fmt = rd(k, "events/uprobes/p_my_0x1000/format")
    assert "\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n" in fmt
    assert 'print fmt: "(%lx <- %lx) arg1=0x%Lx arg2=0x%x arg3=0x%Lx arg4=\\"%s\\" arg5=0x%Lx"' in fmt
    assert rd(k, "uprobe_profile").splitlines()[0].split() == [prog, "myevent", "0"]
    up(k, "-:myevent")
    assert "myevent" not in rd(k, "uprobe_events")
    # a removal names the place as the listing shows it
    assert errno_of(up, k, "-:uprobes/p_my_0x1040 %s:0x1040" % prog) == errno.ENOENT
    up(k, "-:uprobes/p_my_0x1040 %s:0x0000000000001040(0x20)" % prog)
    wr(k, "uprobe_events", "\n")                       # O_TRUNC: all of them
    assert rd(k, "uprobe_events") == "" and rd(k, "dynamic_events") == ""


@pytest.mark.parametrize("marked,err", [
    ("p ^/non_exist_file:100", errno.ENOENT),
    ("p ^/proc:100", errno.EINVAL),
    ("p PROG:^10a", errno.EINVAL),
    ("p PROG:10(^1a)", errno.EINVAL),
    ("p PROG:10(10^", errno.EINVAL),
    ("p PROG:10(10)^a", errno.EINVAL),
    ("p PROG:10 ^@+ab", errno.EINVAL),
    ("p PROG:10 ^@symbol", errno.EINVAL),
    ("p PROG:10^%hoge", errno.EINVAL),
    ("p PROG:10(10)^%return", errno.EINVAL),
    ("p PROG:10 $stack0:^symstr", errno.EINVAL),
    ("p PROG:10 ^$arg1", errno.EINVAL),
    ("p PROG:10 ^hoge", errno.EINVAL),
    ("p:^/x PROG:10", errno.EINVAL),
])
def test_errors(k, prog, marked, err):
    marked = marked.replace("PROG", prog)
    cmd = marked.replace("^", "")
    assert errno_of(up, k, cmd) == err
    head, logged, pos = last_error(k)
    assert head.startswith("trace_uprobe: error: ")
    assert (logged, pos) == (cmd, marked.index("^"))
    assert rd(k, "uprobe_events") == ""


def test_not_a_uprobe_command(k, prog):
    assert errno_of(up, k, "p vfs_read") == errno.EINVAL         # no path
    assert errno_of(up, k, "p %s:x10" % prog) == errno.EINVAL     # no offset
    assert errno_of(up, k, "f %s:10" % prog) == errno.EINVAL
    add(k, "p:kp vfs_read")                                      # a kprobe, not a uprobe
    assert rd(k, "uprobe_events") == ""


def test_append_rules(k, prog):
    up(k, "p:ev %s:0x1000 a=%%ax" % prog)
    assert errno_of(up, k, "r:ev %s:0x1000 a=%%ax" % prog) == errno.EEXIST
    assert last_error(k)[0].endswith("Probe type is different from existing probe")
    assert errno_of(up, k, "p:ev %s:0x1000 a=%%ax" % prog) == errno.EEXIST
    assert last_error(k)[0].endswith("There is already the exact same probe event")
    assert errno_of(up, k, "p:ev %s:0x1040 b=%%ax" % prog) == errno.EEXIST
    assert last_error(k)[0].endswith("Argument type or name is different from existing probe")
    up(k, "p:ev %s:0x1040 a=%%ax" % prog)
    assert rd(k, "uprobe_events").count("p:uprobes/ev ") == 2
    # the same place with another reference counter offset (no error_log entry)
    assert errno_of(up, k, "p:other %s:0x1000(0x8)" % prog) == errno.EINVAL
    add(k, "p:kprobes/kev vfs_read")
    assert errno_of(up, k, "p:kprobes/kev %s:0x1000" % prog) == errno.EEXIST


def test_enable_registers_and_may_fail(k, prog):
    up(k, "p:far %s:0x100000" % prog)                  # beyond the file's end
    assert errno_of(wr, k, "events/uprobes/far/enable", "1\n") == errno.EINVAL
    assert rd(k, "events/uprobes/far/enable") == "0\n"
    up(k, "p:near %s:0x1000" % prog)
    wr(k, "events/uprobes/near/enable", "1\n")
    assert errno_of(wr, k, "uprobe_events", "\n") == errno.EBUSY
    ups = k.uprobes
    assert [u.offset for u in next(iter(ups.by_inode.values()))] == [0x1000]
    wr(k, "events/uprobes/near/enable", "0\n")
    assert not ups.by_inode
    # several at once: the first error is the write's, the others are enabled
    assert errno_of(wr, k, "events/uprobes/enable", "1\n") == errno.EINVAL
    assert rd(k, "events/uprobes/near/enable") == "1\n"
    assert rd(k, "events/uprobes/far/enable") == "0\n"
    wr(k, "events/uprobes/enable", "0\n")


def _start(k, path, pid=4321, comm="my-prog"):
    """What a followed process executing ``path`` hits (sim/host.py's
    part, done here by hand)."""
    f = next(tu.file for tu in k.tracing.dyn_events.events if getattr(tu, "file", None))
    task = Task(pid, comm)
    for delay, fn in k.uprobes.program_start(f.key, pid):
        fn(task, 1, k.sim_time + delay)


def test_hits_at_the_start_of_a_program(k, prog):
    up(k, "p:init %s:0x1000 %%ip $comm" % prog)
    up(k, "r:initret %s:0x1000 @+0:u8" % prog)
    up(k, "p:entry %s:0x1040" % prog)
    up(k, "p:middle %s:0x1020" % prog)
    wr(k, "events/uprobes/enable", "1\n")
    _start(k, prog)
    wr(k, "events/uprobes/enable", "0\n")
    got = [ln.split(": ", 1)[1] for ln in entries(k) if "-4321 " in ln]
    assert [g.split(":")[0] for g in got] == ["entry", "init", "initret"]
    entry, init, ret = got
    base = int(entry.split("(0x")[1].split(")")[0], 16) - 0x1040
    assert init == "init: (0x%x) arg1=0x%x arg2=\"my-prog\"" % (base + 0x1000, base + 0x1000)
    assert ret.startswith("initret: (0x7f") and ret.endswith(" <- 0x%x) arg1=0" % (base + 0x1000))
    prof = {ln.split()[1]: int(ln.split()[2]) for ln in rd(k, "uprobe_profile").splitlines()}
    assert prof == {"init": 1, "initret": 1, "entry": 1, "middle": 0}
