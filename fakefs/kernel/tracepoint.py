"""Tracepoints (include/linux/tracepoint.h): named hooks in kernel code paths.

A code path calls ``tp.fire(*args)`` where the kernel has a
``trace_<name>()`` call; probes registered on it (the trace event code, while
an event of it is enabled somewhere) run in order.  A tracepoint with no probe
costs one test, like the static key in front of a disabled one.
"""

from __future__ import annotations


class Tracepoint:
    __slots__ = ("name", "probes", "driven")

    def __init__(self, name: str):
        self.name = name
        self.probes: list = []
        self.driven = False       # a modelled code path fires it

    def register(self, probe) -> None:
        if probe not in self.probes:
            self.probes.append(probe)

    def unregister(self, probe) -> None:
        if probe in self.probes:
            self.probes.remove(probe)

    def fire(self, *args) -> None:
        for probe in self.probes:
            probe(*args)

    def __repr__(self):
        return "Tracepoint(%s, %d probes)" % (self.name, len(self.probes))


class Tracepoints:
    """Every tracepoint of one kernel, by name (made on first use, as the
    ``__tracepoint_<name>`` objects exist whether probed or not)."""

    __slots__ = ("_by_name",)

    def __init__(self):
        self._by_name: dict[str, Tracepoint] = {}

    def get(self, name: str) -> Tracepoint:
        tp = self._by_name.get(name)
        if tp is None:
            tp = self._by_name[name] = Tracepoint(name)
        return tp

    def __iter__(self):
        return iter(list(self._by_name.values()))


class TracepointHooks:
    """Probes of other kinds on tracepoints (tracepoint probe events), run
    where the trace event code's probe runs: at each replayed hit of the
    tracepoint, recorded by an event or not.  ``by_name``: name ->
    handlers ``(cpu, ts, task, flags, preempt_count, args, stack)``;
    ``version`` moves at each change."""

    __slots__ = ("by_name", "version")

    def __init__(self):
        self.by_name: dict[str, list] = {}
        self.version = 0

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def __contains__(self, name) -> bool:
        return name in self.by_name

    def get(self, name: str):
        return self.by_name.get(name)

    def add(self, name: str, handler) -> None:
        self.by_name.setdefault(name, []).append(handler)
        self.version += 1

    def remove(self, name: str, handler) -> bool:
        """Take ``handler`` off; True when ``name`` has none left."""
        hooks = self.by_name.get(name, [])
        if handler in hooks:
            hooks.remove(handler)
            self.version += 1
        if hooks:
            return False
        self.by_name.pop(name, None)
        return True

    @staticmethod
    def run(hooks, cpu, ts, task, flags, pc, args, stack) -> None:
        """``stack``: the hit's, or a function making it."""
        if callable(stack):
            stack = stack()
        for hook in list(hooks):
            hook(cpu, ts, task, flags, pc, args, stack)
