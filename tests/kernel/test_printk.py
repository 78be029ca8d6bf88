"""/dev/kmsg (kernel/printk/printk.c's devkmsg_*): records, positions, writes."""

import errno
import os
import types

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, KernelError, WouldBlock
from fakefs.kernel.init import Kernel
from fakefs.kernel.printk import LogBuffer
from fakefs.sim.clock import ManualClock


def boot():
    return sim.boot(host_kallsyms=False, clock=ManualClock())


def kmsg(k, flags=os.O_RDONLY):
    node = k.tree.root.walk("dev/kmsg")
    f = File(node, flags, pid=1, uid=0)
    node.fops.open(f)
    return f


def records(k, f):
    out = []
    while True:
        try:
            out.append(f.node.fops.read(f, 0, 8192).decode())
        except WouldBlock:
            return out


def test_one_record_a_read_then_it_blocks():
    k = boot()
    f = kmsg(k)
    recs = records(k, f)
    assert len(recs) == len(k.log.records) and recs[0].startswith("6,0,") and ";Linux version" in recs[0]
    seqs = [int(r.split(",")[1]) for r in recs]
    assert seqs == list(range(len(recs)))
    assert not f.node.fops.poll(f)
    k.log.printk("later")
    assert f.node.fops.poll(f) and records(k, f) == ["6,%d,0,-;later\n" % len(recs)]


def test_a_write_is_a_user_record():
    k = boot()
    w = kmsg(k, os.O_WRONLY)
    r = kmsg(k)
    records(k, r)
    n = w.node.fops.write(w, b"hello\\there\n")
    assert n == len(b"hello\\there\n")
    w.node.fops.write(w, b"<3>bad thing")
    w.node.fops.write(w, b"<30>daemon news\n")           # facility 3 (daemon), level 6
    w.node.fops.write(w, b"<junk")
    got = records(k, r)
    assert [g.split(";", 1)[1] for g in got] == ["hello\\x5cthere\n", "bad thing\n", "daemon news\n",
                                                 "<junk\n"]
    assert [g.split(",", 1)[0] for g in got] == ["12", "11", "30", "12"]
    with pytest.raises(KernelError) as e:
        w.node.fops.write(w, b"x" * 1025)
    assert e.value.errno == errno.EINVAL


def test_writes_are_ratelimited_per_open_file():
    k = boot()
    w = kmsg(k, os.O_WRONLY)
    before = k.log.next_seq
    for i in range(15):
        w.node.fops.write(w, b"msg %d" % i)
    assert k.log.next_seq - before == 10
    w.node.fops.release(w)
    assert k.log.records[-1].text == "?: 5 output lines suppressed due to ratelimiting"
    k.clock.advance(5_000_000_000)
    w = kmsg(k, os.O_WRONLY)
    w.node.fops.write(w, b"again")
    assert k.log.records[-1].text == "again"


def test_small_buffer_and_overwritten_records():
    k = boot()
    f = kmsg(k)
    with pytest.raises(KernelError) as e:
        f.node.fops.read(f, 0, 10)
    assert e.value.errno == errno.EINVAL                  # and that record is gone for it
    assert f.node.fops.read(f, 0, 8192).startswith(b"%d," % k.log.records[1].level)
    log = LogBuffer(types.SimpleNamespace(now=0), capacity=4)
    for i in range(10):
        log.printk("m%d" % i)
    assert log.first_seq == 6 and log.record(2).seq == 6 and log.record(10) is None


def test_a_reader_sees_what_the_machine_printed_until_now():
    """A dump probe prints from the running machine into the log a
    /dev/kmsg reader then gets."""
    clock = ManualClock()
    k = sim.boot(host_kallsyms=False, clock=clock)
    f = kmsg(k)
    records(k, f)
    node = k.tree.root.walk("sys/kernel/tracing/set_ftrace_filter")
    w = File(node, os.O_WRONLY | os.O_TRUNC, pid=1, uid=0)
    node.fops.open(w)
    node.fops.write(w, b"schedule:dump\n")
    node.fops.release(w)
    clock.advance(50_000_000)
    k.timekeeper.run_until_now()                 # the adapter's catch-up before a read or poll
    assert f.node.fops.poll(f)
    got = records(k, f)
    assert got[0].startswith("0,") and got[0].endswith(";Dumping ftrace buffer:\n")


def test_console_loglevels_from_the_command_line_and_the_sysctl():
    from fakefs.sim.files import read_file, write_file

    def printk_of(cmdline):
        k = sim.boot(cmdline=cmdline, host_kallsyms=False, clock=ManualClock())
        unknown = [r.text for r in k.log.records if "Unknown kernel command line" in r.text]
        return k, read_file(k, "proc/sys/kernel/printk"), unknown

    assert printk_of("")[1] == b"7\t4\t1\t7\n"
    k, text, unknown = printk_of("quiet")
    assert text == b"4\t4\t1\t7\n" and unknown == []
    assert printk_of("debug")[1] == b"10\t4\t1\t7\n"
    assert printk_of("loglevel=3")[1] == b"3\t4\t1\t7\n"
    k, text, _ = printk_of("loglevel=x")
    assert text == b"7\t4\t1\t7\n"
    assert any(r.text == "Malformed early option 'loglevel'" for r in k.log.records)
    write_file(k, "proc/sys/kernel/printk", b"5 6\n")
    assert read_file(k, "proc/sys/kernel/printk") == b"5\t6\t1\t7\n"
    with pytest.raises(KernelError) as e:
        write_file(k, "proc/sys/kernel/printk", b"2 x\n")
    assert e.value.errno == errno.EINVAL
    assert read_file(k, "proc/sys/kernel/printk") == b"2\t6\t1\t7\n"


def test_kptr_restrict_sysctl_takes_0_to_2():
    """kernel/printk/sysctl.c: proc_dointvec_minmax_sysadmin, 0..2, default 0."""
    k = sim.keep_time(Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False).boot(
        [("fakefs.kernel.printk", "devkmsg_init")]))
    n = k.tree.root.walk("proc/sys/kernel/kptr_restrict")
    assert n.mode & 0o777 == 0o644
    f = File(n, os.O_RDWR)
    assert n.fops.show(f) == "0\n"
    for text, want in ((b"2\n", 2), (b" 1", 1), (b"0x2", 2), (b"0", 0)):
        n.fops.write(f, text)
        assert k.log.kptr_restrict == want and n.fops.show(f) == "%d\n" % want
    for bad in (b"3", b"-1", b"x", b""):
        with pytest.raises(KernelError) as e:
            n.fops.write(f, bad)
        assert e.value.errno == errno.EINVAL, bad
    assert k.log.kptr_restrict == 0


def test_dmesg_restrict_sysctl_parses_as_proc_dointvec_minmax():
    """kernel/printk/sysctl.c: proc_dointvec_minmax_sysadmin, 0..1: no
    sign before the digits, base 0 (0x1 is 1), a space or newline after."""
    k = sim.keep_time(Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False).boot(
        [("fakefs.kernel.printk", "devkmsg_init")]))
    n = k.tree.root.walk("proc/sys/kernel/dmesg_restrict")
    f = File(n, os.O_RDWR)
    for text, want in ((b"0\n", 0), (b"0x1", 1), (b" 0 ", 0), (b"01", 1)):
        n.fops.write(f, text)
        assert k.log.dmesg_restrict == want and n.fops.show(f) == "%d\n" % want
    for bad in (b"+0", b"2", b"-1", b"1x", b"", b"08"):
        with pytest.raises(KernelError) as e:
            n.fops.write(f, bad)
        assert e.value.errno == errno.EINVAL, bad
    assert k.log.dmesg_restrict == 1
