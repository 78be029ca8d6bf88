"""/sys/devices/system/cpu and CPU hotplug's files (kernel/cpu.py), without a machine."""

import errno

import pytest

from fakefs import sim
from fakefs.kernel.cpu import kstrtobool, num_online_cpus
from fakefs.kernel.fs.pseudo import KernelError
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, rd, wr

BASE = "sys/devices/system/cpu/"


def boot(nr_cpus=2, **over):
    return sim.boot(seed=1, nr_cpus=nr_cpus, clock=ManualClock(), host_kallsyms=False,
                    config_overrides=over or None)


def test_without_hotplug_no_online_files():
    k = boot(CONFIG_HOTPLUG_CPU=False)
    assert rd(k, "online", BASE) == "0-1\n"
    assert rd(k, "possible", BASE) == "0-1\n"
    assert rd(k, "offline", BASE) == "\n"
    d = k.tree.root.walk(BASE)
    assert sorted(n for n in d.children if n.startswith("cpu")) == ["cpu0", "cpu1"]
    # CONFIG_HOTPLUG_CPU=n: no CPU can be taken offline
    assert not d.children["cpu1"].children
    assert not d.children["cpu0"].children


def test_online_files_for_every_cpu_but_the_boot_cpu():
    k = boot(nr_cpus=4)
    d = k.tree.root.walk(BASE)
    # x86: arch_cpu_is_hotpluggable() is cpu > 0, so cpu0 has no online file
    assert "online" not in d.children["cpu0"].children
    for cpu in (1, 2, 3):
        node = d.children["cpu%d" % cpu].children["online"]
        assert node.mode & 0o7777 == 0o644
        assert rd(k, "cpu%d/online" % cpu, BASE) == "1\n"


@pytest.mark.parametrize("text,val", [
    (b"1", True), (b"y", True), (b"Y\n", True), (b"t", True), (b"True", True),
    (b"on", True), (b"ON", True), (b"0", False), (b"n", False), (b"N", False),
    (b"f", False), (b"false", False), (b"off", False), (b"oF", False), (b"0x", False),
    (b"yes please", True), (b"10", True)])
def test_kstrtobool(text, val):
    assert kstrtobool(text) is val


@pytest.mark.parametrize("text", [b"\n", b"2", b"-1", b"o", b"o\n", b"ox", b" 1", b"x"])
def test_kstrtobool_einval(text):
    with pytest.raises(KernelError) as e:
        kstrtobool(text)
    assert e.value.errno == errno.EINVAL


def test_writes_parse_as_kstrtobool_and_change_the_masks():
    k = boot(nr_cpus=4)
    hp = k.cpuhp
    for bad in ("2\n", "\n", "o\n", "x"):
        assert errno_of(lambda: wr(k, "cpu2/online", bad, base=BASE)) == errno.EINVAL
    assert rd(k, "cpu2/online", BASE) == "1\n"
    assert wr(k, "cpu2/online", "", base=BASE) == 0            # sysfs: nothing to store
    assert wr(k, "cpu2/online", "1\n", base=BASE) == 2         # online already: a no-op
    assert hp.changes == 0
    assert wr(k, "cpu2/online", "off\n", base=BASE) == 4
    assert rd(k, "cpu2/online", BASE) == "0\n"
    assert rd(k, "online", BASE) == "0-1,3\n"
    assert rd(k, "offline", BASE) == "2\n"
    assert rd(k, "possible", BASE) == "0-3\n"
    assert rd(k, "present", BASE) == "0-3\n"
    assert wr(k, "cpu2/online", "0", base=BASE) == 1           # offline already
    assert hp.changes == 1
    wr(k, "cpu1/online", "n", base=BASE)
    assert rd(k, "online", BASE) == "0,3\n"
    assert rd(k, "offline", BASE) == "1-2\n"
    assert num_online_cpus(k) == 2
    wr(k, "cpu2/online", "y", base=BASE)
    wr(k, "cpu1/online", "1", base=BASE)
    assert rd(k, "online", BASE) == "0-3\n"
    assert rd(k, "offline", BASE) == "\n"
    assert hp.changes == 4


def test_the_last_online_cpu_stays():
    k = boot(nr_cpus=2)
    wr(k, "cpu1/online", "0", base=BASE)
    # _cpu_down(): num_online_cpus() == 1 is EBUSY (cpu0 has no online
    # file, so only the kernel's own callers get there)
    with pytest.raises(KernelError) as e:
        k.cpuhp.cpu_down(0)
    assert e.value.errno == errno.EBUSY
    assert rd(k, "online", BASE) == "0\n"


def test_trace_header_counts_online_cpus():
    k = boot(nr_cpus=2)
    assert "#P:2\n" in rd(k, "trace")
    wr(k, "cpu1/online", "0", base=BASE)
    assert "#P:1\n" in rd(k, "trace")
    # the per-CPU buffers and files stay
    assert k.tree.root.walk("sys/kernel/tracing/per_cpu/cpu1/trace") is not None
    wr(k, "cpu1/online", "1", base=BASE)
    assert "#P:2\n" in rd(k, "trace")


def test_offline_spans():
    k = boot(nr_cpus=2)
    hp = k.cpuhp
    k.clock.advance(5_000_000)
    wr(k, "cpu1/online", "0", base=BASE)
    a = k.sim_time
    k.clock.advance(10_000_000)
    wr(k, "cpu1/online", "1", base=BASE)
    b = k.sim_time
    assert hp.offline_spans(1, 0, b + 100) == [(a, b)]
    assert hp.offline_spans(1, a + 5, a + 10) == [(a + 5, a + 10)]
    assert hp.offline_spans(0, 0, b) == []
    assert hp.cpu_at(1, a) == 0 and hp.cpu_at(1, b) == 1
