"""The kernel's banners (init/version.c, init/version-timestamp.c) and
``/proc/version`` (fs/proc/version.c).

``linux_banner`` is the line the kernel logs first at boot;
``linux_proc_banner`` is the format ``/proc/version`` fills with the
system name, the release and the build's version string.  Both are data
symbols of ``.rodata`` (listed in ``/proc/kallsyms`` with
CONFIG_KALLSYMS_ALL, and readable there by probes: ``@linux_proc_banner``).
"""

from __future__ import annotations

from .fs.proc.inode import ProcOps

SYSNAME = "Linux"
COMPILE_BY = "fakefs"          # LINUX_COMPILE_BY, LINUX_COMPILE_HOST
COMPILE_HOST = "fakefs"


def _compiler(kernel) -> str:
    return kernel.config.compiler


def uts_version(kernel) -> str:
    """``UTS_VERSION``: the build number and its SMP/preemption words."""
    dyn = " PREEMPT_DYNAMIC" if kernel.config.version_at_least(5, 12) else ""
    return "#1 SMP" + dyn


def linux_proc_banner(kernel) -> str:
    return "%%s version %%s (%s@%s) (%s) %%s\n" % (COMPILE_BY, COMPILE_HOST, _compiler(kernel))


def linux_banner(kernel) -> str:
    return linux_proc_banner(kernel) % (SYSNAME, kernel.config.release, uts_version(kernel))


class ProcVersionOps(ProcOps):
    """/proc/version: ``version_proc_show()``"""

    def show(self, f):
        return linux_banner(f.data)


def proc_version_init(kernel) -> None:
    proc = kernel.tree.makedirs("proc")
    kernel.tree.create_file("version", 0o444, proc, kernel, ProcVersionOps())
