"""What a traced function leaves in ``rax`` when it returns: the ``retval``
of a function graph exit (CONFIG_FUNCTION_GRAPH_RETVAL, kernel/trace/fgraph.c
``ftrace_return_to_handler()`` reads the return register whatever the
function's prototype says).

The walk's calls do no real work, so their values are drawn plausibly for
the function's return type (from its prototype: :func:`return_kind`), from
a hash of the function and the instant it was called: the same trace gives
the same values, and no draw of the walk's generator is taken (the calls
stay what they were without the option).

* ``void``: nothing is returned; ``rax`` holds what the last function it
  called left there (0 when it called none that returned);
* ``bool``: 0 or 1;
* ``int`` (and the other 32-bit types): 0 mostly, now and then a small
  count, or a negative error code; as the CPU leaves it, zero-extended to
  64 bits (``mov eax, -5``: ``0x00000000fffffffb``), which is why
  ``print_graph_retval()`` sign-extends a value with bit 31 set;
* ``long`` (``ssize_t``, ``long``, ``loff_t``): the same, sign-extended;
* ``ulong`` (unsigned and size types): a small count;
* ``pointer``: an address in the direct map, now and then NULL.

A call the model makes for a request of the mount (``proc_reg_write()`` of
a file without a write operation) returns its real value instead.
"""

from __future__ import annotations

import errno

from .trace_btf import Btf, return_kind as btf_return_kind

ULONG_MASK = (1 << 64) - 1
DIRECT_MAP = 0xffff888000000000
# what a failing call of the model returns most (as -errno)
ERRORS = (errno.EINVAL, errno.ENOENT, errno.EAGAIN, errno.ENOMEM, errno.EBUSY, errno.EPERM)
KINDS = ("void", "bool", "int", "long", "ulong", "pointer")


def retval_of(kind: str, func: int, calltime: int, rax: int) -> int:
    """``rax`` after a call of ``func`` (a ``kind`` function) made at
    ``calltime``; ``rax`` is what its last callee left there."""
    if kind == "void":
        return rax
    # CPython's hash of a tuple of ints: no per-process seed (only str and
    # bytes have one), computed in C
    h = hash((func, calltime))
    roll = h & 63
    if kind == "bool":
        return roll & 1
    if kind == "pointer":
        return 0 if roll == 0 else DIRECT_MAP + (h >> 8 & 0x3fffffff) * 64
    if kind == "ulong":
        return 0 if roll < 40 else h >> 8 & 0xfff
    if roll >= 6:
        return 0
    value = 1 + (h >> 8 & 63) if roll else -ERRORS[(h >> 8 & 0xff) % len(ERRORS)]
    return value & (0xffffffff if kind == "int" else ULONG_MASK)


class ReturnValues:
    """The return registers of one kernel's traced functions: each
    function's kind (from its prototype) looked up once."""

    __slots__ = ("kernel", "kinds")

    def __init__(self, kernel):
        self.kernel = kernel
        self.kinds: dict = {}           # function address -> kind

    @staticmethod
    def load() -> None:
        """The prototypes read now (``Btf.vmlinux``: once per process, some
        130 ms), at the tracer's registration, as the kernel patches its
        text then, rather than in the middle of its first traced step."""
        Btf.vmlinux()

    def kind(self, func: int) -> str:
        kind = self.kinds.get(func)
        if kind is None:
            sym = self.kernel.kallsyms.lookup(func)
            kind = self.kinds[func] = return_kind(sym[0] if sym is not None else "")
        return kind


def return_kind(name: str) -> str:
    """The kind of what function ``name`` returns (see the module's doc):
    its BTF prototype's (``trace_btf``), "long" without one."""
    kind = btf_return_kind(name) if name else None
    return kind if kind in KINDS else "long"
