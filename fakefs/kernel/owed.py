"""Work the simulated kernel owes: done when what it changes is looked at.

A part of the model that runs lazily (the allocation workload while no
kmem event records) registers a hook with each state it changes; a reader
of that state (``/proc/allocinfo``, the kernel log ...) settles first.  The
same work in slices (``slices``, ``pay_slice``) lets a request's caller
answer others between them (``FileOperations.owed``).
"""

from __future__ import annotations


class Settle:
    """The hooks to run before a state is seen.  Calling it runs them; a
    hook that looks at the state itself does not run them again."""

    __slots__ = ("hooks", "slices", "_running")

    def __init__(self):
        self.hooks: list = []
        # fn() -> bool: a slice of a hook's work, True while more remains
        # (calling the hook then does the rest)
        self.slices: list = []
        self._running = False

    def pay_slice(self) -> bool:
        """A slice of the work owed: True while more remains."""
        return any([fn() for fn in self.slices])

    def __call__(self) -> None:
        if self._running:
            return
        self._running = True
        try:
            for fn in self.hooks:
                fn()
        finally:
            self._running = False
