"""Probe event arguments (kernel/trace/trace_probe.c, trace_probe.h).

What the probe events share (their error log is ``trace_probe_log.py``):
event and group names, and the fetch arguments: ``[name=]fetcharg[:type]``
parsed into a ``ProbeArg`` (a list of fetch instructions, a type, an
array count) with the kernel's checks, error positions and errnos, the
event fields and print format they give, and their evaluation against
the state of a hit (``ProbeRegs``, ``trace_kprobe_regs.py``).
"""

from __future__ import annotations

import errno

from ..lib.kstrtox import kstrtoll, kstrtoul
from . import trace_probe_btf as btf
from .trace_probe_log import ProbeLog


MAX_TRACE_ARGS = 128
MAX_ARGSTR_LEN = 63
MAX_ARRAY_LEN = 64
MAX_ARG_NAME_LEN = 32
MAX_EVENT_NAME_LEN = 64
MAX_PROBE_EVENT_SIZE = 3072
MAX_STRING_SIZE = 4096            # PATH_MAX
FETCH_INSN_MAX = 16
PARAM_MAX_STACK = 16384 // 8      # THREAD_SIZE / sizeof(unsigned long)
FAULT_STRING = "(fault)"
FIELD_STRING_IP = "__probe_ip"
FIELD_STRING_RETIP = "__probe_ret_ip"
FIELD_STRING_FUNC = "__probe_func"
RESERVED_FIELD_NAMES = ("common_type", "common_flags", "common_preempt_count", "common_pid",
                        "common_tgid", FIELD_STRING_IP, FIELD_STRING_RETIP, FIELD_STRING_FUNC)
# x86_64 pt_regs (regoffset_table)
REGISTERS = ("r15", "r14", "r13", "r12", "r11", "r10", "r9", "r8", "bx", "cx", "dx", "si",
             "di", "bp", "ax", "ds", "es", "fs", "gs", "orig_ax", "ip", "cs", "flags", "sp",
             "ss")

# parse context flags (TPARG_FL_*)
FL_RETURN = 1
FL_KERNEL = 2
FL_FENTRY = 4
FL_TEVENT = 8          # an event probe: ``$field`` of the attached event
FL_USER = 16
FL_FPROBE = 32         # fprobe and tracepoint probe: no registers
FL_TPOINT = 64         # a tracepoint probe: $argN skips the stub's data
FL_LOC_MASK = FL_RETURN | FL_KERNEL | FL_FENTRY | FL_TEVENT | FL_USER


def is_function_entry(flags: int) -> bool:
    return flags & FL_LOC_MASK == FL_KERNEL | FL_FENTRY


def is_function_return(flags: int) -> bool:
    return flags & FL_LOC_MASK == FL_KERNEL | FL_RETURN


# --- names ----------------------------------------------------------------------

def _good(name: str, hyphen: bool) -> bool:
    if not name:
        return False
    first = name[0]
    if not (first.isascii() and (first.isalpha() or first == "_" or (hyphen and first == "-"))):
        return False
    return all(c.isascii() and (c.isalnum() or c == "_" or (hyphen and c == "-")) for c in name[1:])


def is_good_name(name: str) -> bool:
    return _good(name, False)


def is_good_system_name(name: str) -> bool:
    return _good(name, True)


def sanitize_event_name(name: str) -> str:
    """``:``, ``.`` and ``*`` become ``_`` (all but the first character)."""
    return name[:1] + "".join("_" if c in ":.*" else c for c in name[1:])


def parse_event_name(text: str, log: ProbeLog, offset: int):
    """``traceprobe_parse_event_name()``: (group or None, event or None)
    of ``[GROUP/]EVENT``; a group with an empty event gives event None."""
    slash = text.find("/")
    if slash < 0:
        slash = text.find(".")
    group = None
    event = text
    if slash >= 0:
        if slash == 0:
            raise log.fail(offset, "NO_GROUP_NAME")
        if slash + 1 > MAX_EVENT_NAME_LEN:
            raise log.fail(offset, "GROUP_TOO_LONG")
        group = text[:slash]
        if not is_good_system_name(group):
            raise log.fail(offset, "BAD_GROUP_NAME")
        event = text[slash + 1:]
        offset += slash + 1
    if not event:
        if slash >= 0:
            return group, None
        raise log.fail(offset, "NO_EVENT_NAME")
    if len(event) >= MAX_EVENT_NAME_LEN:
        raise log.fail(offset, "EVENT_TOO_LONG")
    if not is_good_name(event):
        raise log.fail(offset, "BAD_EVENT_NAME")
    return group, event


# --- numbers ---------------------------------------------------------------------

def simple_strtoul(text: str, start: int = 0) -> tuple[int, int]:
    """``simple_strtoul(s, &end, 0)``: (value, index after the digits)."""
    i = start
    base = 10
    if text[i:i + 2].lower() == "0x" and i + 2 < len(text) and text[i + 2] in "0123456789abcdefABCDEF":
        base, i = 16, i + 2
    elif text[i:i + 1] == "0":
        base = 8
    digits = "0123456789abcdef"[:base]
    val = 0
    while i < len(text) and text[i].lower() in digits:
        val = (val * base + int(text[i], 16)) & (1 << 64) - 1
        i += 1
    return val, i


def split_symbol_offset(symbol: str):
    """``traceprobe_split_symbol_offset()``: (symbol, offset); raises
    ValueError for a bad offset."""
    cut = min((i for i in (symbol.find("+"), symbol.find("-")) if i >= 0), default=-1)
    if cut < 0:
        return symbol, 0
    offset = kstrtoll(symbol[cut:])
    if offset is None:
        raise ValueError(symbol)
    return symbol[:cut], offset


# --- fetch types -----------------------------------------------------------------

class FetchType:
    """``struct fetch_type``: name, size, signedness, print format and the
    type the event's ``format`` shows."""

    __slots__ = ("name", "size", "signed", "is_string", "fmt", "fmttype")

    def __init__(self, name, size, signed, is_string, fmt, fmttype):
        self.name = name
        self.size = size
        self.signed = signed
        self.is_string = is_string
        self.fmt = fmt
        self.fmttype = fmttype


_STR_FMT = '\\"%s\\"'
FETCH_TYPES = {t.name: t for t in [
    FetchType("string", 4, False, True, _STR_FMT, "__data_loc char[]"),
    FetchType("ustring", 4, False, True, _STR_FMT, "__data_loc char[]"),
    FetchType("symstr", 4, False, True, _STR_FMT, "__data_loc char[]"),
    FetchType("u8", 1, False, False, "%u", "u8"),
    FetchType("u16", 2, False, False, "%u", "u16"),
    FetchType("u32", 4, False, False, "%u", "u32"),
    FetchType("u64", 8, False, False, "%Lu", "u64"),
    FetchType("s8", 1, True, False, "%d", "s8"),
    FetchType("s16", 2, True, False, "%d", "s16"),
    FetchType("s32", 4, True, False, "%d", "s32"),
    FetchType("s64", 8, True, False, "%Ld", "s64"),
    FetchType("x8", 1, False, False, "0x%x", "u8"),
    FetchType("x16", 2, False, False, "0x%x", "u16"),
    FetchType("x32", 4, False, False, "0x%x", "u32"),
    FetchType("x64", 8, False, False, "0x%Lx", "u64"),
    FetchType("char", 1, False, False, "'%c'", "u8"),
    FetchType("symbol", 8, False, False, "%pS", "u64"),
]}
DEFAULT_TYPE = "x64"


def find_fetch_type(name: str | None, flags: int = 0):
    if name is not None and flags & FL_USER and name in ("symbol", "symstr"):
        return None                  # no kernel symbols for uprobes
    if name is None:
        name = DEFAULT_TYPE
    if name.startswith("b"):
        slash = name.find("/")
        if slash < 0:
            return None
        try:
            bs = kstrtoul(name[slash + 1:], 0)
        except ValueError:
            return None
        return FETCH_TYPES.get({8: "u8", 16: "u16", 32: "u32", 64: "u64"}.get(bs, ""))
    return FETCH_TYPES.get(name)


# --- arguments ---------------------------------------------------------------------

class ParseContext:
    """``traceprobe_parse_context``: where the probe is (FL_* flags), the
    offset of the text being parsed in its word, the entry data a return
    probe keeps for ``$argN`` (argument numbers, in slot order), for an
    event probe the attached event's own fields (name -> index), and with
    BTF arguments (``btf``: CONFIG_PROBE_EVENTS_BTF_ARGS) the probed
    function's name and what ``trace_probe_btf`` found of it."""

    __slots__ = ("flags", "offset", "entry_args", "event_fields", "btf", "funcname", "proto",
                 "params", "last_type", "last_bitoffs", "last_bitsize")

    def __init__(self, flags: int, event_fields: dict | None = None, btf: bool = False,
                 funcname: str | None = None):
        self.flags = flags
        self.offset = 0
        self.entry_args: list[int] = []
        self.event_fields = event_fields
        self.btf = btf
        self.funcname = funcname
        self.proto = None
        self.params: list = []
        self.last_type = None
        self.last_bitoffs = 0
        self.last_bitsize = 0

    def entry_arg(self, n: int) -> tuple:
        """The instruction reading argument ``n`` at a function's exit (the
        entry data keeps it: ``__store_entry_arg()``)."""
        if n not in self.entry_args:
            self.entry_args.append(n)
        return ("edata", self.entry_args.index(n))


class ProbeArg:
    """One argument: name, the text it was given (``comm``), its type,
    array count, fetch instructions and bitfield."""

    def __init__(self, name: str, comm: str):
        self.name = name
        self.comm = comm
        self.type: FetchType | None = None
        self.count = 0
        self.code: list[tuple] = []
        self.bitfield: tuple[int, int] | None = None     # (width, offset)
        self.offset = 0

    def field_type(self) -> str:
        if self.count:
            return "%s[%d]" % (self.type.fmttype, self.count)
        return self.type.fmttype

    def size(self) -> int:
        return self.type.size * (self.count or 1)

    def same_type(self, other: "ProbeArg") -> bool:
        return (self.name == other.name and self.type is other.type
                and self.count == other.count)


def parse_probe_arg(args: list[ProbeArg], i: int, arg: str, ctx: ParseContext,
                    log: ProbeLog, size: int) -> tuple[ProbeArg, int]:
    """``traceprobe_parse_probe_arg()``: argument ``i`` (after ``args``);
    returns it and the event's data size with it."""
    eq = arg.find("=")
    if eq >= 0:
        if eq > MAX_ARG_NAME_LEN:
            raise log.fail(0, "ARG_NAME_TOO_LONG")
        if eq == 0:
            raise log.fail(0, "NO_ARG_NAME")
        name, body = arg[:eq], arg[eq + 1:]
    else:
        # generate_probe_arg_name(): with BTF a name-like argument names itself
        name = arg.partition(":")[0] if ctx.btf else ""
        if not is_good_name(name):
            name = "arg%d" % (i + 1)
        body = arg
    if not is_good_name(name):
        raise log.fail(0, "BAD_ARG_NAME")
    if name in RESERVED_FIELD_NAMES or any(a.name == name for a in args):
        raise log.fail(0, "USED_ARG_NAME")
    ctx.offset = len(arg) - len(body)
    if len(body) > MAX_ARGSTR_LEN:
        raise log.fail(ctx.offset, "ARG_TOO_LONG", errno.E2BIG)
    if not body:
        raise log.fail(ctx.offset, "NO_ARG_BODY")
    parg = ProbeArg(name, body)
    text, tname = _parse_type(body, parg, ctx, log)
    code: list[tuple] = []
    ctx.last_type = None
    _parse_fetch(text, code, ctx, log)
    if ctx.btf and ctx.last_type is not None:
        # the storing type from BTF
        if tname is None:
            parg.type = find_fetch_type(btf.fetch_type_name(ctx))
        elif "string" in tname:
            btf.prepare_string_fetch(tname, code, lambda op: _push(code, op, ctx, log), ctx, log)
    parg.offset = size
    size += parg.size()
    if size > MAX_PROBE_EVENT_SIZE:
        raise log.fail(ctx.offset, "EVENT_TOO_BIG", errno.E2BIG)
    tofs = len(text) + 1 if tname is not None else 0
    _finalize(code, parg, tname, tofs, ctx, log)
    if tname is None and ctx.btf and ctx.last_type is not None:
        parg.bitfield = btf.bitfield(ctx)
    parg.code = code
    return parg, size


def _parse_type(body: str, parg: ProbeArg, ctx: ParseContext, log: ProbeLog):
    """``parse_probe_arg_type()``: (fetcharg text, type text or None)."""
    colon = body.find(":")
    text, tname = body, None
    if colon >= 0:
        text, tname = body[:colon], body[colon + 1:]
        lb = tname.find("[")
        if lb >= 0:
            t2 = colon + 1 + lb + 1                 # the count's offset in body
            rest = tname[lb + 1:]
            rb = rest.find("]")
            if rb < 0:
                raise log.fail(ctx.offset + t2 + len(rest), "ARRAY_NO_CLOSE")
            if rb + 1 != len(rest):
                raise log.fail(ctx.offset + t2 + rb + 1, "BAD_ARRAY_SUFFIX")
            try:
                count = kstrtoul(rest[:rb], 0)
            except ValueError:
                count = 0
            if not count or count > 0xFFFFFFFF:
                raise log.fail(ctx.offset + t2, "BAD_ARRAY_NUM")
            if count > MAX_ARRAY_LEN:
                raise log.fail(ctx.offset + t2, "ARRAY_TOO_BIG")
            parg.count = count
            tname = tname[:lb]
    offs = colon + 1 if colon >= 0 else 0
    if not ctx.flags & FL_TEVENT and (text in ("$comm", "$COMM") or text.startswith('\\"')):
        if parg.count or (tname is not None and tname != "string"):
            raise log.fail(ctx.offset + offs, "NEED_STRING_TYPE")
        parg.type = FETCH_TYPES["string"]
    else:
        parg.type = find_fetch_type(tname, ctx.flags)
    if parg.type is None:
        raise log.fail(ctx.offset + offs, "BAD_TYPE")
    return text, tname


def _parse_vars(arg: str, code: list, ctx: ParseContext, log: ProbeLog) -> None:
    """``parse_probe_vars()``: ``$retval``, ``$stack[N]``, ``$comm``, ``$argN``."""
    name = arg[1:]
    err = "BAD_VAR"
    if ctx.flags & FL_TEVENT:
        field = ctx.event_fields.get(name)
        if field is not None:
            code.append(("tp_arg",) + field)        # (index, conversion)
        elif name in ("comm", "COMM"):
            code.append(("comm",))
        else:
            raise log.fail(ctx.offset, err)
        return
    if name.startswith("retval"):
        if not ctx.flags & FL_RETURN:
            raise log.fail(ctx.offset, "RETVAL_ON_PROBE")
        if not ctx.flags & FL_KERNEL or not ctx.btf:
            code.append(("retval",))
            return
        _btf_arg(arg, code, ctx, log)
        return
    if name.startswith("stack"):
        rest = name[5:]
        if not rest:
            code.append(("stackp",))
            return
        if rest[0].isdigit():
            try:
                n = kstrtoul(rest, 10)
            except ValueError:
                raise log.fail(ctx.offset, err)
            if ctx.flags & FL_KERNEL and n > PARAM_MAX_STACK:
                raise log.fail(ctx.offset, "BAD_STACK_NUM")
            code.append(("stack", n))
            return
        raise log.fail(ctx.offset, err)
    if name in ("comm", "COMM"):
        code.append(("comm",))
        return
    if name.startswith("arg"):
        try:
            n = kstrtoul(name[3:], 10)
        except ValueError:
            raise log.fail(ctx.offset, err)
        if not n or n > PARAM_MAX_STACK:
            raise log.fail(ctx.offset, "BAD_ARG_NUM")
        n -= 1
        if is_function_entry(ctx.flags):
            # a tracepoint probe's stub has the tracepoint's data first
            code.append(("arg", n + 1 if ctx.flags & FL_TPOINT else n))
        elif is_function_return(ctx.flags):
            if n not in ctx.entry_args:
                ctx.entry_args.append(n)
            code.append(("edata", ctx.entry_args.index(n)))
        else:
            raise log.fail(ctx.offset, "NOFENTRY_ARGS")
        return
    raise log.fail(ctx.offset, err)


def expand_var_args(args: list[str], ctx: ParseContext, log: ProbeLog) -> list[str]:
    """``traceprobe_expand_meta_args()`` for arguments starting at word 2:
    the arguments to parse (with BTF, ``$arg*``/``$argN`` become parameter
    names: a new list; the log keeps the words as written)."""
    if ctx.btf:
        out = btf.expand_meta_args(args, ctx, log, is_function_entry(ctx.flags),
                                   is_function_return(ctx.flags), bool(ctx.flags & FL_TPOINT))
        return args if out is None else out
    check_var_args(args, ctx, log)
    return args


def check_var_args(args: list[str], ctx: ParseContext, log: ProbeLog) -> None:
    """``argv_has_var_arg()`` for arguments starting at word 2 without BTF:
    ``$argN`` needs a function entry or exit; ``$arg*`` needs BTF."""
    found_all = False
    for i, a in enumerate(args):
        if not a.startswith("$arg"):
            continue
        log.set_index(i + 2)
        if not is_function_entry(ctx.flags) and not is_function_return(ctx.flags):
            raise log.fail(0, "NOFENTRY_ARGS")
        if a[4:5].isdigit():
            continue
        if a[4:5] != "*":
            raise log.fail(0, "BAD_VAR")
        if found_all:
            raise log.fail(0, "DOUBLE_ARGS")
        found_all = True
    if found_all:
        raise log.fail(0, "NOSUP_BTFARG", errno.EOPNOTSUPP)


def _push(code: list, op: tuple, ctx: ParseContext, log: ProbeLog) -> None:
    if len(code) >= FETCH_INSN_MAX - 1:
        raise log.fail(ctx.offset, "TOO_MANY_OPS")
    code.append(op)


def _parse_fetch(arg: str, code: list, ctx: ParseContext, log: ProbeLog) -> None:
    """``parse_probe_arg()`` (recursive): appends fetch instructions."""
    c = arg[:1]
    if c == "$":
        _parse_vars(arg, code, ctx, log)
    elif c == "%":
        if ctx.flags & (FL_TEVENT | FL_FPROBE):
            raise log.fail(ctx.offset, "BAD_VAR")     # no registers there
        if arg[1:] not in REGISTERS:
            raise log.fail(ctx.offset, "BAD_REG_NAME")
        code.append(("reg", arg[1:]))
    elif c == "@":
        if arg[1:2].isdigit():
            try:
                addr = kstrtoul(arg[1:], 0)
            except ValueError:
                raise log.fail(ctx.offset, "BAD_MEM_ADDR")
            code.append(("imm", addr))
        elif arg[1:2] == "+":
            if ctx.flags & FL_KERNEL:
                raise log.fail(ctx.offset, "FILE_ON_KPROBE")
            offs = kstrtoll(arg[2:])
            if offs is None:
                raise log.fail(ctx.offset, "BAD_FILE_OFFS")
            code.append(("foffs", offs & (1 << 64) - 1))
        else:
            if not ctx.flags & FL_KERNEL:
                raise log.fail(ctx.offset, "SYM_ON_UPROBE")
            code.append(("symbol", arg[1:]))
            _push(code, ("imm", 0), ctx, log)
        _push(code, ("deref", 0), ctx, log)
    elif c in ("+", "-"):
        user = arg[1:2] == "u"
        if user:
            arg = arg[0] + arg[2:]
        if arg[0] == "+":
            arg = arg[1:]
        lb = arg.find("(")
        if lb < 0:
            raise log.fail(ctx.offset, "DEREF_NEED_BRACE")
        offset = kstrtoll(arg[:lb])
        if offset is None:
            raise log.fail(ctx.offset, "BAD_DEREF_OFFS")
        # (as the kernel counts it: the ``u`` is not)
        ctx.offset += lb + 1 + (1 if arg[0] != "-" else 0)
        inner = arg[lb + 1:]
        rb = inner.rfind(")")
        if rb < 0:
            raise log.fail(ctx.offset + len(inner), "DEREF_OPEN_BRACE")
        cur = ctx.offset
        _parse_fetch(inner[:rb], code, ctx, log)
        ctx.offset = cur
        if code[-1][0] in ("comm", "data"):
            raise log.fail(ctx.offset, "COMM_CANT_DEREF")
        _push(code, ("uderef" if user else "deref", offset), ctx, log)
        ctx.last_type = None
    elif c == "\\":
        if arg[1:2] == '"':
            s = arg[2:]
            if not s or s[-1] != '"':
                raise log.fail(ctx.offset + 2 + len(s), "IMMSTR_NO_CLOSE")
            code.append(("data", s[:-1]))
        else:
            imm = _str_to_immediate(arg[1:])
            if imm is None:
                raise log.fail(ctx.offset + 1, "BAD_IMM")
            code.append(("imm", imm))
    elif c and (c.isascii() and c.isalpha() or c == "_"):
        # a BTF variable: only at a function entry or exit
        if not is_function_entry(ctx.flags) and not is_function_return(ctx.flags):
            raise log.fail(ctx.offset, "NOSUP_BTFARG")
        if not ctx.btf:
            raise log.fail(ctx.offset, "NOSUP_BTFARG", errno.EOPNOTSUPP)
        _btf_arg(arg, code, ctx, log)
    else:
        raise log.fail(ctx.offset, "BAD_FETCH_ARG")


def _btf_arg(arg: str, code: list, ctx: ParseContext, log: ProbeLog) -> None:
    btf.parse_btf_arg(arg, code, lambda op: _push(code, op, ctx, log), ctx, log,
                      is_function_entry(ctx.flags), is_function_return(ctx.flags),
                      bool(ctx.flags & FL_TPOINT), ctx.entry_arg)


def _str_to_immediate(s: str):
    if s[:1].isdigit():
        try:
            return kstrtoul(s, 0)
        except ValueError:
            return None
    v = kstrtoll(s) if s[:1] == "-" else kstrtoll(s[1:]) if s[:1] == "+" else None
    return None if v is None else v & (1 << 64) - 1


def _finalize(code: list, parg: ProbeArg, tname, tofs: int, ctx: ParseContext,
              log: ProbeLog) -> None:
    """``finalize_fetch_insn()``: the store operation, bitfield, array."""
    t = parg.type
    last = code[-1][0]
    if t.is_string:
        if t.name == "symstr":
            if last not in ("reg", "stack", "retval", "arg", "deref", "tp_arg"):
                raise log.fail(ctx.offset + tofs, "BAD_SYMSTRING")
        elif last not in ("deref", "uderef", "imm", "comm", "data", "tp_arg"):
            raise log.fail(ctx.offset + tofs, "BAD_STRING")
        # a ustring, or a string behind a user dereference, is read from the
        # task's user memory (FETCH_OP_ST_USTRING)
        user = t.name == "ustring" or last == "uderef"
        if t.name == "symstr":
            _push(code, ("st_symstr",), ctx, log)
        elif last in ("imm", "comm", "data", "tp_arg") or parg.count:
            _push(code, ("st_string", user), ctx, log)
        else:
            code[-1] = ("st_string_at", code[-1][1], user)
    elif last in ("deref", "uderef"):
        code[-1] = ("st_mem", code[-1][1], last == "uderef")
    else:
        _push(code, ("st_raw",), ctx, log)
    if tname is not None and tname.startswith("b"):
        bw, i = simple_strtoul(tname, 1)
        ok = bw != 0 and tname[i:i + 1] == "@"
        if ok:
            bo, j = simple_strtoul(tname, i + 1)
            ok = j != i + 1 and tname[j:j + 1] == "/" and bw + bo <= t.size * 8
        if not ok:
            raise log.fail(ctx.offset + tofs, "BAD_BITFIELD")
        parg.bitfield = (bw, bo)
    if parg.count:
        if code[-1][0] not in ("st_mem", "st_string_at", "st_string"):
            raise log.fail(ctx.offset + tofs, "BAD_STRING")
