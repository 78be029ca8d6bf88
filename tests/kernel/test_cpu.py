"""/sys/devices/system/cpu of a kernel without CPU hotplug."""

from fakefs.kernel.init import Kernel
from fakefs.kernel.time import ManualClock
from kfiles import rd

BASE = "sys/devices/system/cpu/"


def test_cpu_masks_and_no_online_files():
    k = Kernel(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False).boot()
    assert rd(k, "online", BASE) == "0-1\n"
    assert rd(k, "possible", BASE) == "0-1\n"
    assert rd(k, "offline", BASE) == "\n"
    d = k.tree.root.walk(BASE)
    assert sorted(n for n in d.children if n.startswith("cpu")) == ["cpu0", "cpu1"]
    # CONFIG_HOTPLUG_CPU=n: no CPU can be taken offline
    assert not d.children["cpu1"].children
