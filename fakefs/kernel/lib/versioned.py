"""A set that stamps each change: what is derived from it is made again
only when it changed (``version``, unique among all such sets)."""

from __future__ import annotations

import itertools

_STAMPS = itertools.count(1)


def _changes(name):
    method = getattr(set, name)

    def changed(self, *args):
        result = method(self, *args)
        self.version = next(_STAMPS)
        return result if name[:2] != "__" else self

    changed.__name__ = name
    return changed


class VersionedSet(set):
    """``set`` whose every in-place change gives it a new ``version``."""

    __slots__ = ("version",)

    def __init__(self, *args):
        super().__init__(*args)
        self.version = next(_STAMPS)


for _name in ("add", "discard", "remove", "pop", "clear", "update", "difference_update",
              "intersection_update", "symmetric_difference_update",
              "__ior__", "__iand__", "__isub__", "__ixor__"):
    setattr(VersionedSet, _name, _changes(_name))
