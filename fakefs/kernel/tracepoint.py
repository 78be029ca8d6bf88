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
