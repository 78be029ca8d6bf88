"""Files whose open holds a reference on their trace array, as
``tracing_open_generic_tr()``, ``tracing_open_file_tr()``,
``subsystem_open()`` and the other ``*_open`` handlers that call
``trace_array_get()`` do: an instance cannot be removed (EBUSY) while one
is open.  Measured on the stock kernel: every file of an instance except
``options/*`` and an event's ``format``, ``id`` and ``trigger``.
"""

from __future__ import annotations

from ..fs.pseudo import FileOperations


class ArrayFileOps(FileOperations):
    """Operations of a file that pins its trace array while open.  A
    subclass with its own ``open`` calls this one last (an open that fails
    takes no reference), and its ``release`` calls this one."""

    def array(self, f):
        """The trace array the file belongs to."""
        return f.data

    def open(self, f) -> None:
        self.array(f).open_refs += 1

    def release(self, f) -> None:
        self.array(f).open_refs -= 1
