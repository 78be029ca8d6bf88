"""``/sys/devices/system/cpu`` (drivers/base/cpu.c): the CPUs the kernel has.

The simulated kernel is built without CONFIG_HOTPLUG_CPU: its CPUs cannot
be taken offline, so no ``cpuN/online`` file exists (a kernel with hotplug
has one for every CPU that can go).  The masks read ``0-N`` like the
kernel's ``%*pbl``; ``offline`` is empty (a newline).
"""

from __future__ import annotations

from .fs.pseudo import FileOperations
from .lib.bitmap import bitmap_list_string

NR_CPUS = 8192            # CONFIG_NR_CPUS of Debian's x86_64 kernels


class CpuMaskOps(FileOperations):
    observes = False

    def __init__(self, which: str):
        self.which = which

    def show(self, f):
        kernel = f.data
        if self.which == "kernel_max":
            return "%d\n" % (NR_CPUS - 1)
        if self.which == "offline":
            return "\n"
        return bitmap_list_string((1 << kernel.nr_cpus) - 1) + "\n"


def cpu_dev_init(kernel) -> None:
    d = kernel.tree.makedirs("sys/devices/system/cpu")
    for name in ("kernel_max", "offline", "online", "possible", "present"):
        kernel.tree.create_file(name, 0o444, d, kernel, CpuMaskOps(name))
    for cpu in range(kernel.nr_cpus):
        kernel.tree.create_dir("cpu%d" % cpu, d, 0o755)
