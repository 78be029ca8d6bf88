"""The kernel's BTF as probe events read it (kernel/trace/trace_btf.c and the
parts of kernel/bpf/btf.c it calls), and a function's return type.

The data (``data/btf-6.12.json.gz``, made by ``tools/mkbtf.py`` from the
``.BTF`` section of Debian's 6.12 vmlinux) holds the prototype of every
vmlinux function the simulated kernel has (traceable functions and the
tracepoints' ``__probestub_*`` stubs) and every type they reach, with the
built kernel's struct layouts.  Module functions have no BTF here (their
split BTF is not in the data): a probe on one finds no BTF entry.

Types are lists as the data stores them (see the generator's docstring);
an id is an int, 0 is ``void``.  ``return_kind(func)`` says what a
function returns in the words function_graph's ``funcgraph-retval`` needs
(``fgraph_retval.KINDS``): ``"void"``, ``"bool"``, ``"int"`` (up to 32
bits), ``"long"`` (signed 64-bit integers and enums), ``"ulong"``
(unsigned ones: ``size_t``, ``unsigned long``), ``"pointer"``, ``"other"``
(a struct returned by value, a float) or None when the function has no
BTF entry;
``param_kinds(func)`` the same of its parameters (what the registers of
a probed call hold, ``trace_kprobe_regs.py``).
"""

from __future__ import annotations

import gzip
import json
import os

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "btf-6.12.json.gz")
VOID = ["void"]
MODIFIERS = ("typedef", "volatile", "const", "restrict", "type_tag")


class Btf:
    """vmlinux's BTF: function prototypes by name and the types they use."""

    _shared: "Btf | None" = None

    def __init__(self, doc: dict):
        self.funcs: dict = doc["funcs"]
        self.types: list = doc["types"]
        self._kinds: dict = {}             # func -> (return kind, parameter kinds)

    @classmethod
    def vmlinux(cls) -> "Btf":
        """The data, loaded once per process (read-only)."""
        if cls._shared is None:
            with gzip.open(DATA, "rt", encoding="utf-8") as f:
                cls._shared = cls(json.load(f))
        return cls._shared

    def type(self, tid: int):
        """``btf_type_by_id()`` (None past the end)."""
        if tid == 0:
            return VOID
        if 0 < tid <= len(self.types):
            return self.types[tid - 1]
        return None

    def skip_modifiers(self, tid: int):
        """``btf_type_skip_modifiers()``: (type, its id) under typedefs and
        qualifiers."""
        t = self.type(tid)
        while t is not None and t[0] in MODIFIERS:
            tid = t[2] if t[0] == "typedef" else t[1]
            t = self.type(tid)
        return t, tid

    def find_func_proto(self, name: str):
        """``btf_find_func_proto()``: the prototype of function ``name``
        (``["proto", ret, params]``) or None."""
        pid = self.funcs.get(name)
        return None if pid is None else self.type(pid)

    def find_struct_member(self, t, name: str):
        """``btf_find_struct_member()``: (member, bit offset of the anonymous
        struct/union holding it, that containing type) or None; members of
        anonymous structs and unions are searched after the named ones, the
        last pushed first, at most 16 of them."""
        stack = []
        cur = 0
        while True:
            for m in t[3]:
                if not m[0]:
                    mt, _tid = self.skip_modifiers(m[1])
                    if mt is not None and mt[0] in ("struct", "union") and len(stack) < 16:
                        stack.append((mt, cur + m[2]))
                elif m[0] == name:
                    return m, cur, t
            if not stack:
                return None
            t, cur = stack.pop()

    def return_kind(self, func: str):
        """What ``func`` returns: void / bool / int / long / ulong / pointer
        / other, None without a BTF entry (see the module docstring)."""
        return self._func_kinds(func)[0]

    def param_kinds(self, func: str) -> list:
        """The kinds (as ``return_kind``) of ``func``'s parameters, in
        order; empty without a BTF entry."""
        return self._func_kinds(func)[1]

    def _func_kinds(self, func: str) -> tuple:
        got = self._kinds.get(func)
        if got is None:
            proto = self.find_func_proto(func)
            got = self._kinds[func] = (None, []) if proto is None else (
                self.kind_of(proto[1]), [self.kind_of(tid) for _name, tid in proto[2]])
        return got

    def kind_of(self, tid: int) -> str:
        """void / bool / int / long / ulong / pointer / other of type ``tid``."""
        t, _tid = self.skip_modifiers(tid)
        if t is None:
            return "other"
        kind = t[0]
        if kind == "void":
            return "void"
        if kind == "ptr":
            return "pointer"
        if kind == "int":
            if t[1] == "_Bool":
                return "bool"
            if t[2] == 8:
                return "long" if t[5] else "ulong"
            return "int"
        if kind in ("enum", "enum64"):
            return ("long" if t[3] else "ulong") if t[2] == 8 else "int"
        return "other"


def return_kind(func: str):
    """The return type class of a vmlinux function (``Btf.return_kind``)."""
    return Btf.vmlinux().return_kind(func)


def param_kinds(func: str) -> list:
    """The kinds of a vmlinux function's parameters (``Btf.param_kinds``)."""
    return Btf.vmlinux().param_kinds(func)
