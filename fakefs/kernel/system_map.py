"""``/boot/System.map``: the symbol map installed next to the kernel image.

``make install`` copies ``System.map`` (``nm -n vmlinux`` filtered by
scripts/mksysmap: ``%016lx %c %s`` per symbol, address order) to
``/boot/System.map-<release>``, and older installers also left a
``/boot/System.map`` beside it.  Both are published for the simulated
kernel's text, from ``_stext`` through ``_etext`` and the init text, which
is what ``readprofile`` walks (from ``_stext`` until a symbol that is not
``T``/``t``/``W``/``w``).  Module symbols are not in it (they are not in
vmlinux).

These are ordinary files on the root filesystem: a real size, not changed
by writes (the simulated /boot is read-only), and readable by root only
(0600 root, as distributions that ship the real map install it, e.g.
Ubuntu): a file on disk shows every reader the same bytes, so unlike
``/proc/kallsyms`` it cannot zero the addresses for an unprivileged one;
the mode keeps them from such a reader (EACCES), as ``kptr_restrict``
does there.  (Debian 6.12's linux-image ships only an 83-byte
placeholder, ``ffffffffffffffff B The real System.map is in the
linux-image-<version>-dbg package``, 0644; its -dbg package holds the
real map.  This one is the real map, which ``readprofile`` needs.)
"""

from __future__ import annotations

import errno

from .fs.pseudo import FileOperations, KernelError

SYSTEM_MAP_MODE = 0o600              # root's only: see the module's doc


def system_map_text(kallsyms) -> bytes:
    """vmlinux's symbols in ``nm -n`` order, as mksysmap leaves them."""
    lines = []
    for addr, typ, name, mod in kallsyms.symbols():
        if mod is not None:
            continue
        lines.append("%016x %s %s\n" % (addr, typ, name))
    return "".join(lines).encode("ascii", "replace")


class SystemMapOps(FileOperations):
    observes = False

    def __init__(self, kernel):
        self.kernel = kernel
        self._text: bytes | None = None

    def text(self) -> bytes:
        if self._text is None:
            self._text = system_map_text(self.kernel.kallsyms)
        return self._text

    def read(self, f, off, size):
        return self.text()[off:off + size]

    def write(self, f, data):
        raise KernelError(errno.EROFS)

    def size(self, node) -> int:
        return len(self.text())


def system_map_init(kernel) -> None:
    if kernel.kallsyms is None:
        return
    boot = kernel.tree.makedirs("boot")
    ops = SystemMapOps(kernel)
    for name in ("System.map-%s" % kernel.config.release, "System.map"):
        if name not in boot.children:
            kernel.tree.create_file(name, SYSTEM_MAP_MODE, boot, kernel, ops)
