"""The /proc root (fs/proc/root.c, generic.c, proc_sysctl.c).

``proc_create(kernel, name, mode, parent, fops, data)`` and
``proc_mkdir(kernel, name, parent)`` declare entries the way the kernel
does.  ``register_sysctl(kernel, "vm", table)`` adds ``/proc/sys/<dir>/``
entries from a table of :class:`CtlTable` rows, and applies any
``sysctl.<dir>.<name>=`` boot parameter to them (``do_sysctl_args``).
"""

from __future__ import annotations

import errno

from ..pseudo import DirNode, FileOperations, KernelError


def proc_root(kernel) -> DirNode:
    root = kernel.tree.root.children.get("proc")
    if root is None:
        root = kernel.tree.create_dir("proc", kernel.tree.root, 0o555)
    return root


def proc_mkdir(kernel, name: str, parent: DirNode | None = None, mode: int = 0o555) -> DirNode:
    parent = parent or proc_root(kernel)
    existing = parent.children.get(name)
    if isinstance(existing, DirNode):
        return existing
    return kernel.tree.create_dir(name, parent, mode)


def proc_create(kernel, name: str, mode: int, parent: DirNode | None, fops: FileOperations,
                data=None):
    return kernel.tree.create_file(name, mode, parent or proc_root(kernel), data, fops)


def proc_remove(kernel, node) -> None:
    kernel.tree.remove(node)


class CtlTable:
    """One sysctl row: name, mode, and handler functions.

    ``show()`` returns the text a read gives; ``store(text)`` parses a write
    and raises KernelError on bad input (the ``proc_handler``).
    """

    def __init__(self, procname: str, mode: int, show, store=None):
        self.procname = procname
        self.mode = mode
        self.show = show
        self.store = store


class _SysctlOps(FileOperations):
    setattr_allowed = False      # proc_sys_setattr(): mode/owner changes are EPERM

    def show(self, f):
        return f.data.show()

    def write(self, f, data):
        entry: CtlTable = f.data
        if entry.store is None:
            raise KernelError(errno.EPERM)
        entry.store(data.decode("latin-1"))
        return len(data)


SYSCTL_OPS = _SysctlOps()


def register_sysctl(kernel, path: str, table: list[CtlTable]) -> list:
    """Add ``/proc/sys/<path>/<procname>`` for each row; returns the nodes."""
    d = proc_mkdir(kernel, "sys")
    for part in path.strip("/").split("/"):
        d = proc_mkdir(kernel, part, d)
    nodes = []
    for entry in table:
        nodes.append(proc_create(kernel, entry.procname, entry.mode, d, SYSCTL_OPS, entry))
        key = path.strip("/") + "/" + entry.procname
        boot_val = kernel.cmdline.sysctl.get(key)
        if boot_val is not None and entry.store is not None:
            try:
                entry.store(boot_val)
            except KernelError as e:
                kernel.log.pr_warn("Failed to set sysctl parameter '%s=%s': %s"
                                   % (key.replace("/", "."), boot_val, e.args[1]))
    return nodes


def proc_root_init(kernel) -> None:
    proc_root(kernel)
    proc_mkdir(kernel, "sys")


# --- proc_dointvec_minmax (kernel/sysctl.c) ----------------------------------

SYSCTL_PAGE_SIZE = 4096
U64_MAX = (1 << 64) - 1
_WSPACE = b" \t\n\v\f\r"


def parse_dointvec_minmax(data: bytes, lo: int = 0, hi: int = 1) -> tuple[int, int]:
    """``proc_dointvec_minmax`` for one int: returns (value, bytes consumed)
    or raises KernelError(EINVAL)."""
    p = 0
    n = min(len(data), SYSCTL_PAGE_SIZE - 1)
    left = n
    while left and data[p] in _WSPACE:
        p += 1
        left -= 1
    if not left:
        raise KernelError(errno.EINVAL)
    tmp = data[p:p + min(left, 21)]
    q = 0
    neg = False
    if tmp[:1] == b"-" and left > 1:
        neg = True
        q = 1
    if q >= len(tmp) or not (48 <= tmp[q] <= 57):
        raise KernelError(errno.EINVAL)
    # strtoul base 0
    base = 10
    if tmp[q] == 48 and q + 1 < len(tmp) and tmp[q + 1] in b"xX" and q + 2 < len(tmp) \
            and chr(tmp[q + 2]) in "0123456789abcdefABCDEF":
        base = 16
        q += 2
    elif tmp[q] == 48:
        base = 8
    digits = "0123456789abcdef"[:base]
    start = q
    while q < len(tmp) and chr(tmp[q]).lower() in digits:
        q += 1
    value = int(tmp[start:q].decode(), base) if q > start else 0
    if value > U64_MAX:
        raise KernelError(errno.EINVAL)
    if q == 21:
        raise KernelError(errno.EINVAL)
    if q < left and tmp[q:q + 1] not in (b" ", b"\t", b"\n"):
        raise KernelError(errno.EINVAL)
    p += q
    left -= q
    if neg:
        value = -value
    if value > 0x7FFFFFFF or value < -0x80000000 or value < lo or value > hi:
        raise KernelError(errno.EINVAL)
    while left and data[p] in _WSPACE:
        p += 1
        left -= 1
    return value, n - left
