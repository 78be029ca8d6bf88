"""The switch of memory allocation profiling: the ``sysctl.vm.mem_profiling=``
boot parameter and ``/proc/sys/vm/mem_profiling`` (lib/alloc_tag.c, with the
``proc_dointvec_minmax`` parsing of kernel/sysctl.c).

The state switched lives in the kernel's :class:`~.alloc_tag.AllocTagging`
(``at`` below): ``support`` (mem_profiling_support), ``enabled`` (the
``mem_alloc_profiling_key`` static key) and ``compressed``.  Behaviour
differences follow ``kernel.config.version``:

* < 6.13: ``sysctl.vm.mem_profiling=`` is ``never``-prefix or kstrtobool of
  the whole value, no messages; allocinfo always exists;
* >= 6.13: optional ``,compressed`` (page references in page flags, no
  page_ext; may fail and shut profiling down), ``pr_info`` at boot, no
  allocinfo without support, module-unload leaks reported with pr_info;
* >= 6.18: header ``2.0`` and ``accurate:no``; writes rejected once support
  is gone;
* >= 7.0 (the reworked sysctl of current mainline): the sysctl is always
  0644 and refuses writes instead (EACCES for DEBUG, EINVAL without
  support); ``mem_profiling_compressed`` shows the compression state.

The sysctl is 0644, or 0444 for DEBUG builds and without support (before
7.0); ``/proc/sys/vm/mem_profiling_compressed`` exists from 7.0 on.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..fs.proc.base import CtlTable, SYSCTL_OPS, parse_dointvec_minmax, register_sysctl
from ..params import kstrtobool
from ..printk import KERN_ERR, KERN_INFO


V_COMPRESSED = (6, 13)      # ",compressed", pr_info messages, no allocinfo without support
V_FORMAT_2 = (6, 18)        # allocinfo 2.0 / accurate:no / proc_mem_profiling_handler
V_SYSCTL_REWORK = (7, 0)    # sysctl always 0644, write errors, mem_profiling_compressed

U64 = (1 << 64) - 1


# ---------------------------------------------------------------------------
# boot parameter


def setup_early_mem_profiling(at, val) -> int:
    """``sysctl.vm.mem_profiling={0|1|never}[,compressed]``; returns 0 or -errno."""
    at.boot_param = val
    if not at.configured:
        return 0
    if not val:
        return -errno.EINVAL
    log = at.kernel.log
    if val.startswith("never"):
        enable = False
        at.support = False
        if at.version >= V_COMPRESSED:
            log.printk("Memory allocation profiling is disabled!", KERN_INFO)
    elif at.version < V_COMPRESSED:
        try:
            enable = kstrtobool(val)
        except ValueError:
            return -errno.EINVAL
        at.support = True
    else:
        token, sep, rest = val.partition(",")
        try:
            enable = kstrtobool(token)
        except ValueError:
            return -errno.EINVAL
        compressed = False
        if sep:
            if rest != "compressed":
                return -errno.EINVAL
            compressed = True
        at.compressed = compressed
        at.support = True
        log.printk("Memory allocation profiling is enabled %s compression and is turned %s!"
                   % ("with" if compressed else "without", "on" if enable else "off"), KERN_INFO)
    at.enabled = enable
    return 0



# ---------------------------------------------------------------------------
# /proc/sys/vm/mem_profiling


class MemProfilingSysctl(type(SYSCTL_OPS)):
    """``/proc/sys/vm/mem_profiling``: proc_sys_call_handler + proc_do_static_key
    (+ the 6.18/mainline ``proc_mem_profiling_handler`` checks)."""

    def __init__(self, at, compressed_key: bool = False):
        self.at = at
        self.compressed_key = compressed_key

    def _value(self) -> bool:
        return self.at.compressed if self.compressed_key else self.at.enabled

    def open(self, f):
        if f.writable and not (f.node.mode & 0o222):
            raise KernelError(errno.EACCES)
        f.private = 0

    def show(self, f):
        return "%d\n" % int(self._value())

    def read(self, f, off, size):
        if off or not size:
            return b""
        return self.show(f).encode()[:size]

    def write(self, f, data):
        pos = f.private or 0
        n = sysctl_write(self.at, data, pos, compressed_key=self.compressed_key)
        f.private = pos + n
        return n


def sysctl_write(at, data: bytes, pos: int = 0, from_kernel: bool = False,
                 compressed_key: bool = False) -> int:
    """A write to the sysctl; returns bytes accepted or raises KernelError."""
    if at.version >= V_SYSCTL_REWORK and not compressed_key:
        if from_kernel:
            return len(data)
        if at.debug:
            raise KernelError(errno.EACCES)
        if not at.support:
            raise KernelError(errno.EINVAL)
    elif at.version >= V_FORMAT_2 and not compressed_key and not at.support:
        raise KernelError(errno.EINVAL)
    if not data:
        return 0
    if pos:
        return len(data)        # sysctl_writes_strict: writes past the start are ignored
    val, n = parse_dointvec_minmax(data)
    at.settle()                 # what happened so far, counted as it was
    if compressed_key:
        at.compressed = bool(val)
    else:
        at.enabled = bool(val)
    return n


def _sysctl_mode(at) -> int:
    if at.version >= V_SYSCTL_REWORK:
        return 0o644
    if at.debug or not at.support:
        return 0o444
    return 0o644


def sysctl_init(at) -> None:
    kernel = at.kernel
    table = [CtlTable("mem_profiling", _sysctl_mode(at), lambda: "%d\n" % int(at.enabled), None)]
    if at.version >= V_SYSCTL_REWORK:
        table.append(CtlTable("mem_profiling_compressed", 0o444,
                              lambda: "%d\n" % int(at.compressed), None))
    nodes = register_sysctl(kernel, "vm", table)
    for entry, node in zip(table, nodes):
        node.fops = MemProfilingSysctl(at, compressed_key=entry.procname != "mem_profiling")
        at.sysctl_nodes[entry.procname] = node


def do_sysctl_args(at) -> None:
    """The late-boot replay of ``sysctl.vm.mem_profiling=`` into /proc/sys
    (``do_sysctl_args()``), with its error messages."""
    val = at.boot_param
    k = at.kernel
    if not any(n.replace("-", "_") == "sysctl.vm.mem_profiling" for n, _v in k.cmdline.args):
        return
    node = at.sysctl_nodes.get("mem_profiling")
    if node is None:
        return
    if not val:
        k.printk("Setting sysctl args: `%s' invalid for parameter `sysctl.vm.mem_profiling'"
                 % (val or ""), KERN_ERR)
        return
    if not node.mode & 0o222:
        k.printk("Failed to set sysctl parameter 'vm.mem_profiling=%s': permission denied (read-only?)"
                 % val, KERN_ERR)
        return
    try:
        sysctl_write(at, val.encode(), 0, from_kernel=True)
    except KernelError as e:
        if e.errno == errno.EINVAL:
            k.printk("Failed to set sysctl parameter 'vm.mem_profiling=%s': invalid value" % val, KERN_ERR)
        else:
            k.printk("Error %s writing to proc file to set sysctl parameter 'vm.mem_profiling=%s'"
                     % ("-" + errno.errorcode.get(e.errno, str(e.errno)), val), KERN_ERR)

