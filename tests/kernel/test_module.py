"""The module loader (module.py) with the trace-printk sample (samples.py):
/proc/modules, kallsyms, ftrace's records and cached :mod: commands,
printk_formats, the sample's prints and kprobe events on its functions."""

import errno
import os

import pytest

from fakefs import sim
from fakefs.kernel.module import ModuleImage
from fakefs.kernel.samples import funcs
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, rd, wr

CTL = ".fakefs/modules"
APPEND = os.O_WRONLY | os.O_APPEND


@pytest.fixture
def k():
    clock = ManualClock()
    kern = sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False)
    clock.advance(10_000_000)
    return kern


def load(k, name):
    return wr(k, CTL, "load %s\n" % name, os.O_WRONLY, base="")


def delete(k, name):
    return wr(k, CTL, "delete %s\n" % name, os.O_WRONLY, base="")


def test_load_lists_and_unload_leaves(k):
    assert "trace_printk" in rd(k, CTL, base="").split()
    before = rd(k, "available_filter_functions")
    assert "[trace_printk]" not in rd(k, "kallsyms", base="proc/")
    load(k, "trace-printk")
    mods = rd(k, "modules", base="proc/")
    name, size, ref, users, state, addr = mods.split()
    assert (name, size, ref, users, state) == ("trace_printk", "12288", "0", "-", "Live")
    ksyms = [ln for ln in rd(k, "kallsyms", base="proc/").splitlines() if ln.endswith("\t[trace_printk]")]
    names = [ln.split()[2] for ln in ksyms]
    assert "trace_printk_irq_work" in names and "cleanup_module" in names
    assert "init_module" not in names                    # init text freed
    assert ksyms[0].startswith(addr[2:])                  # its text starts at the address listed
    assert int(addr, 16) >= 0xffffffffc0000000
    avail = rd(k, "available_filter_functions")
    assert avail.startswith(before)
    assert avail[len(before):] == "trace_printk_irq_work [trace_printk]\n"   # exit is notrace
    assert errno_of(load, k, "trace_printk") == errno.EEXIST
    delete(k, "trace_printk")
    assert rd(k, "modules", base="proc/") == ""
    assert rd(k, "available_filter_functions") == before
    assert "[trace_printk]" not in rd(k, "kallsyms", base="proc/")
    assert errno_of(delete, k, "trace_printk") == errno.ENOENT
    assert errno_of(load, k, "no_such_module") == errno.ENOENT


def test_cached_mod_command_applies_at_load_and_leaves_a_filter_matching_nothing(k):
    wr(k, "set_ftrace_filter", "*:mod:trace_printk")
    assert rd(k, "set_ftrace_filter") == "*:mod:trace_printk\n"
    load(k, "trace_printk")
    assert rd(k, "set_ftrace_filter") == "trace_printk_irq_work [trace_printk]\n"
    delete(k, "trace_printk")
    assert rd(k, "set_ftrace_filter") == ""              # zeroed entries: not empty, lists nothing
    tr = k.tracing.global_trace
    assert tr.ftrace.filtering() and not tr.ftrace.match(k.kallsyms.addr_of("vfs_read") + 9, 1)
    wr(k, "set_ftrace_filter", "")                       # truncation clears them
    assert rd(k, "set_ftrace_filter").startswith("#### all functions enabled ####")


def test_filters_carried_over_when_an_earlier_module_goes(k):
    """Records after a going module are renumbered: filters keep naming
    the same functions."""
    from fakefs.kernel.module import ModuleImage
    from fakefs.kernel.samples import funcs
    k.modules.add_image(ModuleImage("other", 8192, funcs([("other_fn", 0x40, True, ())])))
    load(k, "trace_printk")
    load(k, "other")
    wr(k, "set_ftrace_filter", "other_fn\nvfs_read\n")
    delete(k, "trace_printk")
    assert rd(k, "set_ftrace_filter") == "vfs_read\nother_fn [other]\n"


def test_printk_formats_and_prints(k):
    load(k, "trace_printk")
    fmts = rd(k, "printk_formats")
    assert '"This is a %s that will use trace_bprintk()\\n"' in fmts
    assert '"(irq) This is a static string that will use trace_bputs\\n"' in fmts
    trace = rd(k, "trace")
    lines = [ln for ln in trace.splitlines() if "trace_printk" in ln and "This" in ln]
    assert len(lines) == 8
    assert ": This is a static string that will use trace_bputs" in lines[0]
    assert "trace_printk_init: This" in lines[0]           # the name alone (kallsyms_lookup)
    irq = [ln for ln in lines if "(irq)" in ln]
    assert len(irq) == 4 and all("trace_printk_irq_work: (irq)" in ln for ln in irq)
    assert all(" d.h1. " in ln for ln in irq)
    assert "trace_printk_init: This is a dynamic string that will use trace_printk" in trace
    n = fmts.count("\n")
    delete(k, "trace_printk")
    load(k, "trace_printk")
    assert rd(k, "printk_formats").count("\n") == n      # kept once, after unload too
    log = k.log.dmesg()
    assert log.count("** trace_printk() being used. Allocating extra memory.  **") == 1    # once


def test_no_prints_while_the_option_is_off(k):
    wr(k, "options/trace_printk", "0")
    load(k, "trace_printk")
    assert "This is" not in rd(k, "trace")


def test_kprobe_event_on_a_module_waits_for_it(k):
    wr(k, "kprobe_events", "p:event1 trace_printk:trace_printk_irq_work")   # not loaded: accepted
    wr(k, "events/kprobes/event1/enable", "1")
    load(k, "trace_printk")
    assert "event1: (trace_printk_irq_work+0x4/0x70 [trace_printk])" in rd(k, "trace")
    delete(k, "trace_printk")
    # the event stays, enabled, its probe off the kprobe table until the module comes back
    assert "p:kprobes/event1 trace_printk:trace_printk_irq_work" in rd(k, "kprobe_events")
    assert rd(k, "events/kprobes/event1/enable") == "1\n"
    wr(k, "trace", "")
    load(k, "trace_printk")
    assert rd(k, "trace").count("event1:") == 1
    delete(k, "trace_printk")
    wr(k, "events/kprobes/event1/enable", "0")
    wr(k, "kprobe_events", "-:kprobes/event1", APPEND)


def test_a_module_in_use_by_another_cannot_go(k):
    """``depends``: loading needs what it uses (ENOENT, an unknown symbol);
    the used module counts its users (``/proc/modules``) and refuses to go
    while one is loaded (``delete_module()``: EWOULDBLOCK)."""
    k.modules.add_image(ModuleImage("lib_a", 4096, funcs([("lib_a_fn", 0x40, True, ())])))
    k.modules.add_image(ModuleImage("uses_a", 4096, funcs([("uses_a_fn", 0x40, True, ())]),
                                    depends=("lib_a",)))
    assert errno_of(load, k, "uses_a") == errno.ENOENT
    load(k, "lib_a")
    load(k, "uses_a")
    lines = rd(k, "modules", base="proc/").splitlines()
    assert [ln.split()[:5] for ln in lines] == [["uses_a", "4096", "0", "-", "Live"],
                                                ["lib_a", "4096", "1", "uses_a,", "Live"]]
    assert errno_of(delete, k, "lib_a") == errno.EWOULDBLOCK
    assert "lib_a" in rd(k, "modules", base="proc/")
    delete(k, "uses_a")
    assert rd(k, "modules", base="proc/").split()[:4] == ["lib_a", "4096", "0", "-"]
    delete(k, "lib_a")
    assert rd(k, "modules", base="proc/") == ""
