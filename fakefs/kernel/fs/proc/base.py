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
