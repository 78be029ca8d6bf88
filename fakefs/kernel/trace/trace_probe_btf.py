"""BTF arguments of probe events (the CONFIG_PROBE_EVENTS_BTF_ARGS parts of
kernel/trace/trace_probe.c).

At a function's entry or exit (kprobes on a function's entry, fprobes,
tracepoint probes) an argument may be named as the function's prototype
names it (``object``), followed by fields (``p->se.group_node.next``:
``->`` through a pointer, ``.`` inside a struct), and ``$retval`` may
take fields too.  ``$arg*`` stands for every parameter and ``$argN``
becomes the parameter's name (``expand_meta_args``).  With no type given,
the type comes from BTF (pointers x64, enums s32/s64, integers by size and
sign, bitfields masked).  Prototypes and layouts are vmlinux's
(``trace_btf.Btf``).

The parse context (``trace_probe.ParseContext``) carries the function's
name (``funcname``), its prototype once looked up (``proto``, ``params``),
and the last type a fetch reached (``last_type``, ``last_bitoffs``,
``last_bitsize``).  Fetch instructions are tuples as in trace_probe.py.
"""

from __future__ import annotations

import errno

from .trace_btf import Btf
from .trace_probe_log import ProbeError, ProbeLog

MAX_BTF_ARGS_LEN = 128


def query_btf_context(ctx, tpoint: bool) -> int:
    """``query_btf_context()``: 0 with ``ctx.proto``/``ctx.params`` set
    (a tracepoint stub's ``__data`` hidden), or a negative errno."""
    if ctx.proto is not None:
        return 0
    if not ctx.funcname:
        return -errno.EINVAL
    proto = Btf.vmlinux().find_func_proto(ctx.funcname)
    if proto is None:
        return -errno.ENOENT
    ctx.proto = proto
    params = list(proto[2])
    if params and tpoint:
        params = params[1:]
    ctx.params = params
    return 0


def _nth_name(idx: int, suffix: str, ctx, log: ProbeLog, used: int) -> str:
    """``sprint_nth_btf_arg()``"""
    if idx >= len(ctx.params):
        raise log.fail(0, "NO_BTFARG", errno.ENOENT)
    name = ctx.params[idx][0]
    if not name:
        raise log.fail(0, "NO_BTF_ENTRY", errno.ENOENT)
    text = name + suffix
    if used + len(text) >= MAX_BTF_ARGS_LEN:
        raise log.fail(0, "ARGS_2LONG", errno.E2BIG)
    return text


def expand_meta_args(args: list[str], ctx, log: ProbeLog, entry: bool, ret: bool,
                     tpoint: bool):
    """``traceprobe_expand_meta_args()``: the arguments with ``$arg*`` and
    ``$argN`` replaced by parameter names, or None to keep them.  Checks
    as ``argv_has_var_arg()`` first."""
    found, all_idx = False, -1
    for i, a in enumerate(args):
        if not a.startswith("$arg"):
            continue
        log.set_index(i + 2)
        if not entry and not ret:
            raise log.fail(0, "NOFENTRY_ARGS")
        if a[4:5].isdigit():
            found = True
            continue
        if a[4:5] != "*":
            raise log.fail(0, "BAD_VAR")
        if all_idx >= 0:
            raise log.fail(0, "DOUBLE_ARGS")
        found, all_idx = True, i
    if not found:
        return None
    if query_btf_context(ctx, tpoint) < 0 or not ctx.params:
        if all_idx >= 0:
            raise log.fail(0, "NOSUP_BTFARG", errno.EOPNOTSUPP)
        return None
    out: list[str] = []
    used = 0
    for i, a in enumerate(args):
        log.set_index(i + 2)
        if i == all_idx:
            for n in range(len(ctx.params)):
                text = _nth_name(n, "", ctx, log, used)
                out.append(text)
                used += len(text) + 1
            continue
        if a.startswith("$arg"):
            j = 4
            while j < len(a) and a[j].isdigit():
                j += 1
            n = int(a[4:j]) if j > 4 else 0
            suffix = a[j:]
            if suffix and suffix[0] != ":":
                raise log.fail(0, "BAD_VAR", errno.ENOENT)
            if n == 0:
                raise log.fail(0, "BAD_ARG_NUM")
            text = _nth_name(n - 1, suffix, ctx, log, used)
            out.append(text)
            used += len(text) + 1
        else:
            out.append(a)
    return out


def _split_next_field(name: str, ctx, log: ProbeLog):
    """``split_next_field()``: (head, rest or None, arrow?)."""
    cut = min((i for i in (name.find("."), name.find("-")) if i >= 0), default=-1)
    if cut < 0:
        return name, None, False
    if name[cut] == "-":
        if name[cut + 1:cut + 2] != ">":
            raise log.fail(ctx.offset + cut, "BAD_HYPHEN")
        return name[:cut], name[cut + 2:], True
    return name[:cut], name[cut + 1:], False


def _parse_btf_field(fieldname: str, t, code: list, push, ctx, log: ProbeLog) -> None:
    """``parse_btf_field()``: a deref per ``->``, offsets summed over ``.``."""
    btf = Btf.vmlinux()
    while True:
        if t[0] != "ptr":
            raise log.fail(ctx.offset, "NO_PTR_STRCT")
        t, _tid = btf.skip_modifiers(t[1])
        if t is None:
            raise log.fail(ctx.offset, "BAD_BTF_TID")
        bitoffs = 0
        while True:
            head, nxt, arrow = _split_next_field(fieldname, ctx, log)
            if t[0] not in ("struct", "union"):
                raise log.fail(ctx.offset, "BAD_BTF_TID")
            found = btf.find_struct_member(t, head)
            if found is None:
                raise log.fail(ctx.offset, "NO_BTF_FIELD", errno.ENOENT)
            member, anon, _container = found
            bitoffs += anon + member[2]
            ctx.last_bitsize = member[3]
            t, _tid = btf.skip_modifiers(member[1])
            if t is None:
                raise log.fail(ctx.offset, "BAD_BTF_TID")
            if nxt is not None:
                ctx.offset += len(fieldname) - len(nxt)
            fieldname = nxt
            if arrow or fieldname is None:
                break
        push(("deref", bitoffs // 8))
        ctx.last_bitoffs = bitoffs % 8
        ctx.last_type = t
        if fieldname is None:
            return


def parse_btf_arg(varname: str, code: list, push, ctx, log: ProbeLog, entry: bool,
                  ret: bool, tpoint: bool, entry_arg) -> None:
    """``parse_btf_arg()``: a parameter (or ``$retval``) and its fields;
    ``push`` appends a fetch instruction, ``entry_arg(n)`` gives the
    instruction reading parameter ``n`` at a function's exit."""
    if not ctx.funcname:
        raise ProbeError(errno.EINVAL)          # (not logged)
    head, field, arrow = _split_next_field(varname, ctx, log)
    if not arrow and field is not None:
        raise log.fail(ctx.offset + len(head) + 1, "NOSUP_DAT_ARG", errno.EOPNOTSUPP)
    btf = Btf.vmlinux()
    if ret and head == "$retval":
        code.append(("retval",))
        if query_btf_context(ctx, tpoint) == 0:
            if ctx.proto[1] == 0:
                raise log.fail(ctx.offset, "NO_RETVAL", errno.ENOENT)
            tid = ctx.proto[1]
        else:
            if field is not None:
                raise log.fail(ctx.offset + len(head) + 2, "NO_BTF_ENTRY", errno.ENOENT)
            return
    else:
        if ctx.proto is None:
            if query_btf_context(ctx, tpoint) < 0 or not ctx.params:
                raise log.fail(ctx.offset, "NO_BTF_ENTRY", errno.ENOENT)
        for i, (pname, ptype) in enumerate(ctx.params):
            if pname and pname == head:
                if entry:
                    code.append(("arg", i + 1 if tpoint else i))
                elif ret:
                    code.append(entry_arg(i))
                tid = ptype
                break
        else:
            raise log.fail(ctx.offset, "NO_BTFARG", errno.ENOENT)
    t, tid = btf.skip_modifiers(tid)
    if t is None:
        raise log.fail(ctx.offset, "BAD_BTF_TID")
    ctx.last_type = t
    ctx.last_bitoffs = 0
    ctx.last_bitsize = 0
    if field is not None:
        ctx.offset += len(head) + 2
        _parse_btf_field(field, t, code, push, ctx, log)


def fetch_type_name(ctx):
    """``fetch_type_from_btf_type()`` of the last type: a fetch type name or
    None (the default)."""
    t = ctx.last_type
    if t is None:
        return None
    kind = t[0]
    if kind == "enum":
        return "s32"
    if kind == "enum64":
        return "s64"
    if kind == "ptr":
        return "x64"
    if kind == "int":
        bits, signed = t[3], t[5]
        if bits in (8, 16, 32, 64):
            return ("s%d" if signed else "u%d") % bits
        if not signed:
            ctx.last_bitsize = bits
            ctx.last_bitoffs += t[4]
            return "u64"
    return None


def _is_char(t) -> bool:
    return t is not None and t[0] == "int" and not t[5] and t[3] == 8


def prepare_string_fetch(tname: str, code: list, push, ctx, log: ProbeLog) -> None:
    """``check_prepare_btf_string_fetch()``: a ``char *`` is dereferenced
    once more for a string, a ``char []`` read in place, anything else is
    refused."""
    t = ctx.last_type
    if t is None:
        return
    btf = Btf.vmlinux()
    if t[0] == "array":
        elem, _tid = btf.skip_modifiers(t[1])
        if _is_char(elem):
            return
    if t[0] == "ptr":
        target, _tid = btf.skip_modifiers(t[1])
        if _is_char(target):
            push(("uderef" if tname.startswith("u") else "deref", 0))
            return
    raise log.fail(ctx.offset, "BAD_TYPE4STR")


def bitfield(ctx):
    """``parse_btf_bitfield()``: (width, offset) to mask the value with, or
    None when the last field is whole bytes."""
    if ctx.last_bitsize % 8 == 0 and ctx.last_bitoffs == 0:
        return None
    return ctx.last_bitsize, ctx.last_bitoffs
