"""The fields of a hist trigger (``struct hist_field`` of
kernel/trace/trace_events_hist.c): parsing a key, value or variable
expression, naming it back, and evaluating it on an entry.

An expression is parsed as the kernel parses it: the root operator is the
*rightmost* ``+``/``-`` (else the rightmost ``*``/``/``), so ``16-8-4-2``
is ``((16-8)-4)-2``; at most three subexpressions; unary minus only as
``-(...)`` over a whole operand; two constants fold into one (with the
kernel's integer arithmetic: a division by a constant that is not a power
of two multiplies and shifts, ``10/3`` is 4).  Errors are logged through
:class:`HistErr` at the position of the first occurrence of the failing
text in the command (``err_pos()``).

Event fields come from ``trace_events_filter_fields.event_fields()``; a
field's value is read from the entry tuple by the same expression a
compiled filter uses.  Values are u64 (strings are bytes).
"""

from __future__ import annotations

import errno
import zlib

from ..fs.pseudo import KernelError
from ..lib.kstrtox import kstrtoul
from .trace_events_filter_fields import (GENERIC, FILTER_COMM, FILTER_CPU, FILTER_PTR_STRING,
                                         FILTER_STACKTRACE, FILTER_STATIC_STRING,
                                         FILTER_TRACE_FN)

# --- errors (the ERRORS table of trace_events_hist.c, in its order) ----------
ERRORS = [
    ("NONE", "No error"),
    ("DUPLICATE_VAR", "Variable already defined"),
    ("VAR_NOT_UNIQUE", "Variable name not unique, need to use fully qualified name "
                       "(subsys.event.var) for variable"),
    ("TOO_MANY_VARS", "Too many variables defined"),
    ("MALFORMED_ASSIGNMENT", "Malformed assignment"),
    ("NAMED_MISMATCH", "Named hist trigger doesn't match existing named trigger "
                       "(includes variables)"),
    ("TRIGGER_EEXIST", "Hist trigger already exists"),
    ("TRIGGER_ENOENT_CLEAR", "Can't clear or continue a nonexistent hist trigger"),
    ("SET_CLOCK_FAIL", "Couldn't set trace_clock"),
    ("BAD_FIELD_MODIFIER", "Invalid field modifier"),
    ("TOO_MANY_SUBEXPR", "Too many subexpressions (3 max)"),
    ("TIMESTAMP_MISMATCH", "Timestamp units in expression don't match"),
    ("TOO_MANY_FIELD_VARS", "Too many field variables defined"),
    ("EVENT_FILE_NOT_FOUND", "Event file not found"),
    ("HIST_NOT_FOUND", "Matching event histogram not found"),
    ("HIST_CREATE_FAIL", "Couldn't create histogram for field"),
    ("SYNTH_VAR_NOT_FOUND", "Couldn't find synthetic variable"),
    ("SYNTH_EVENT_NOT_FOUND", "Couldn't find synthetic event"),
    ("SYNTH_TYPE_MISMATCH", "Param type doesn't match synthetic event field type"),
    ("SYNTH_COUNT_MISMATCH", "Param count doesn't match synthetic event field count"),
    ("FIELD_VAR_PARSE_FAIL", "Couldn't parse field variable"),
    ("VAR_CREATE_FIND_FAIL", "Couldn't create or find variable"),
    ("ONX_NOT_VAR", "For onmax(x) or onchange(x), x must be a variable"),
    ("ONX_VAR_NOT_FOUND", "Couldn't find onmax or onchange variable"),
    ("ONX_VAR_CREATE_FAIL", "Couldn't create onmax or onchange variable"),
    ("FIELD_VAR_CREATE_FAIL", "Couldn't create field variable"),
    ("TOO_MANY_PARAMS", "Too many action params"),
    ("PARAM_NOT_FOUND", "Couldn't find param"),
    ("INVALID_PARAM", "Invalid action param"),
    ("ACTION_NOT_FOUND", "No action found"),
    ("NO_SAVE_PARAMS", "No params found for save()"),
    ("TOO_MANY_SAVE_ACTIONS", "Can't have more than one save() action per hist"),
    ("ACTION_MISMATCH", "Handler doesn't support action"),
    ("NO_CLOSING_PAREN", "No closing paren found"),
    ("SUBSYS_NOT_FOUND", "Missing subsystem"),
    ("INVALID_SUBSYS_EVENT", "Invalid subsystem or event name"),
    ("INVALID_REF_KEY", "Using variable references in keys not supported"),
    ("VAR_NOT_FOUND", "Couldn't find variable"),
    ("FIELD_NOT_FOUND", "Couldn't find field"),
    ("EMPTY_ASSIGNMENT", "Empty assignment"),
    ("INVALID_SORT_MODIFIER", "Invalid sort modifier"),
    ("EMPTY_SORT_FIELD", "Empty sort field"),
    ("TOO_MANY_SORT_FIELDS", "Too many sort fields (Max = 2)"),
    ("INVALID_SORT_FIELD", "Sort field must be a key or a val"),
    ("INVALID_STR_OPERAND", "String type can not be an operand in expression"),
    ("EXPECT_NUMBER", "Expecting numeric literal"),
    ("UNARY_MINUS_SUBEXPR", "Unary minus not supported in sub-expressions"),
    ("DIVISION_BY_ZERO", "Division by zero"),
    ("NEED_NOHC_VAL", "Non-hitcount value is required for 'nohitcount'"),
]
ERR_TEXT = [text for _name, text in ERRORS]
E = {name: i for i, (name, _text) in enumerate(ERRORS)}

HIST_PREFIX = "hist:"
MAX_FILTER_STR_VAL = 256
HIST_STACKTRACE_DEPTH = 16
HIST_STACKTRACE_SIZE = HIST_STACKTRACE_DEPTH * 8
HIST_DIV_SHIFT = 20
U64 = (1 << 64) - 1

# enum hist_field_flags
(FL_HITCOUNT, FL_KEY, FL_STRING, FL_HEX, FL_SYM, FL_SYM_OFFSET, FL_EXECNAME, FL_SYSCALL,
 FL_STACKTRACE, FL_LOG2, FL_TIMESTAMP, FL_TIMESTAMP_USECS, FL_VAR, FL_EXPR, FL_VAR_REF, FL_CPU,
 FL_ALIAS, FL_BUCKET, FL_CONST, FL_PERCENT, FL_GRAPH) = (1 << i for i in range(21))

# enum field_op_id
OP_NONE, OP_PLUS, OP_MINUS, OP_UNARY_MINUS, OP_DIV, OP_MULT = range(6)
OP_CHAR = {OP_MINUS: "-", OP_PLUS: "+", OP_DIV: "/", OP_MULT: "*"}


class HistErr:
    """``hist_err()`` with the command being parsed (``last_cmd``) and its
    location ``hist:<system>:<event>``."""

    def __init__(self, tr, system: str, event: str, param: str):
        self.tr = tr
        self.cmd = HIST_PREFIX + param
        self.loc = "%s%s:%s" % (HIST_PREFIX, system, event)

    def pos(self, s) -> int:
        """``errpos()``: where ``s`` first occurs in the command, else 0."""
        if not s:
            return 0
        i = self.cmd.find(s)
        return i if i >= 0 else 0

    def log(self, err: str, pos: int = 0) -> None:
        self.tr.log_err(self.loc, self.cmd, ERR_TEXT, E[err], pos)

    def fail(self, err: str, where=None, code: int = errno.EINVAL):
        """Log ``err`` at the first occurrence of ``where`` and fail."""
        self.log(err, self.pos(where) if isinstance(where, str) else (where or 0))
        raise KernelError(code)


def strsep(s: str | None, delims: str):
    """C ``strsep()``: (token, rest or None)."""
    if s is None:
        return None, None
    for i, c in enumerate(s):
        if c in delims:
            return s[:i], s[i + 1:]
    return s, None


class HistField:
    """One key, value, variable or (sub)expression."""

    def __init__(self, field=None, flags: int = 0, var_name: str | None = None):
        self.field = field              # trace_events_filter_fields.Field or None
        self.flags = flags
        self.buckets = 0
        self.operands: list = [None, None]
        self.fn = "nop"                 # enum hist_field_fn, by name
        self.size = 0
        self.offset = 0
        self.is_signed = 0
        self.var_name = var_name
        self.var_idx = -1
        self.operator = OP_NONE
        self.name = None                # the text of an expression
        self.constant = 0
        self.div_multiplier = 0
        self.var_hist = None            # a variable's or a reference's HistData
        self.var_ref_idx = -1           # a reference's index in its trigger's var_refs
        self.read_once = False          # an operand: the variable is unset once read
        self.system = None              # a reference's system.event, when named
        self.event_name = None
        self.var_type = None            # a reference's variable's type, for synthetic fields


# where a string or a stack would sit in kernel memory: what such a value is as a number
_ADDR_BASE = 0xffff888100000000


def as_u64(v) -> int:
    """A value kept in another form (a string, a stack) as the u64 the
    kernel has for it: where it is kept (the same for the same contents)."""
    if v is None:
        return 0
    if isinstance(v, str):
        v = v.encode("latin-1", "replace")
    if isinstance(v, tuple):
        v = b"".join((x & U64).to_bytes(8, "little") for x in v)
    if isinstance(v, bytes):
        return _ADDR_BASE + (zlib.crc32(v) << 4)
    return int(v)


def select_value_fn(size: int, signed) -> str:
    if size in (1, 2, 4, 8):
        return ("s%d" if signed else "u%d") % (size * 8)
    return "nop"


def create_hist_field(field, flags: int, var_name=None) -> HistField | None:
    """``create_hist_field()``: None where the kernel returns NULL."""
    if field is not None and field.filter_type == FILTER_TRACE_FN:
        return None
    hf = HistField(None, 0, var_name)
    if flags & (FL_EXPR | FL_ALIAS):
        pass
    elif flags & FL_HITCOUNT:
        hf.fn, hf.size = "counter", 8
    elif flags & FL_CONST:
        hf.fn, hf.size = "const", 8
    elif flags & FL_STACKTRACE:
        hf.fn = "stack" if field is not None else "nop"
        hf.size = HIST_STACKTRACE_SIZE
    elif flags & (FL_LOG2 | FL_BUCKET):
        op = create_hist_field(field, flags & ~(FL_LOG2 | FL_BUCKET))
        if op is None:
            return None
        hf.fn = "log2" if flags & FL_LOG2 else "bucket"
        hf.operands[0] = op
        hf.size = op.size
    elif flags & FL_TIMESTAMP:
        hf.fn, hf.size = "timestamp", 8
    elif flags & FL_CPU:
        hf.fn, hf.size = "cpu", 4
    elif field is None:
        pass
    elif field.is_string and field.filter_type != FILTER_PTR_STRING:
        flags |= FL_STRING
        hf.size, hf.fn = MAX_FILTER_STR_VAL, "string"
        if field.filter_type == FILTER_STATIC_STRING:
            hf.size = field.size
    elif field.filter_type == FILTER_STACKTRACE:
        flags |= FL_STACKTRACE
        hf.size, hf.fn = MAX_FILTER_STR_VAL, "stack"
    else:
        hf.size, hf.is_signed = field.size, field.signed
        hf.fn = select_value_fn(field.size, field.signed)
        if hf.fn == "nop":
            return None
    hf.field = field
    hf.flags = flags
    return hf


# --- names (hist_field_name, expr_str, hist_field_print) ---------------------

def hist_field_name(f: HistField, level: int = 0) -> str:
    if level > 1:
        return ""
    if f.field is not None:
        return f.field.name
    if f.flags & (FL_LOG2 | FL_ALIAS | FL_BUCKET):
        return hist_field_name(f.operands[0], level + 1)
    if f.flags & FL_CPU:
        return "common_cpu"
    if f.flags & (FL_EXPR | FL_VAR_REF):
        if f.system:
            return "%s.%s.%s" % (f.system, f.event_name, f.name)
        return f.name or ""
    if f.flags & FL_TIMESTAMP:
        return "common_timestamp"
    if f.flags & FL_STACKTRACE:
        return "common_stacktrace"
    if f.flags & FL_HITCOUNT:
        return "hitcount"
    return ""


def field_flags_str(f: HistField) -> str | None:
    """``get_hist_field_flags()``."""
    for bit, s in ((FL_HEX, "hex"), (FL_SYM, "sym"), (FL_SYM_OFFSET, "sym-offset"),
                   (FL_EXECNAME, "execname"), (FL_SYSCALL, "syscall"), (FL_LOG2, "log2"),
                   (FL_BUCKET, "buckets"), (FL_TIMESTAMP_USECS, "usecs"),
                   (FL_PERCENT, "percent"), (FL_GRAPH, "graph"),
                   (FL_STACKTRACE, "stacktrace")):
        if f.flags & bit:
            return s
    return None


def expr_field_str(f: HistField) -> str:
    out = ""
    if f.flags & FL_VAR_REF:
        out += "$"
    elif f.flags & FL_CONST:
        out += "%d" % f.constant
    out += hist_field_name(f, 0)
    if f.flags and not f.flags & FL_VAR_REF:
        fl = field_flags_str(f)
        if fl:
            out += "." + fl
    return out


def expr_str(f: HistField, level: int = 0) -> str:
    if level > 1:
        raise KernelError(errno.EINVAL)
    if f.operands[0] is None:
        return expr_field_str(f)
    if f.operator == OP_UNARY_MINUS:
        return "-(%s)" % expr_str(f.operands[0], level + 1)
    return expr_field_str(f.operands[0]) + OP_CHAR[f.operator] + expr_field_str(f.operands[1])


def hist_field_print(f: HistField) -> str:
    out = "%s=" % f.var_name if f.var_name else ""
    name = hist_field_name(f, 0)
    if f.flags & FL_CPU:
        out += "common_cpu"
    elif f.flags & FL_CONST:
        out += "%d" % f.constant
    elif name:
        if f.flags & (FL_VAR_REF | FL_ALIAS):
            out += "$"
        out += name
    elif f.flags & FL_TIMESTAMP:
        out += "common_timestamp"
    if f.flags and not f.flags & (FL_VAR_REF | FL_EXPR | FL_STACKTRACE):
        fl = field_flags_str(f)
        if fl:
            out += "." + fl
    if f.buckets:
        out += "=%d" % f.buckets
    return out


# --- parsing -------------------------------------------------------------------

def contains_operator(s: str):
    """(operator, index of the root operator or -1)."""
    minus = s.rfind("-")
    if minus == 0:
        return OP_UNARY_MINUS, 0
    op, sep = OP_NONE, -1
    if minus > 0:
        op, sep = OP_MINUS, minus
    plus = s.rfind("+")
    if plus >= 0 or minus >= 0:
        if plus > minus:
            op, sep = OP_PLUS, plus
        return op, sep
    div = s.rfind("/")
    if div >= 0:
        op, sep = OP_DIV, div
    mult = s.rfind("*")
    if mult > div:
        op, sep = OP_MULT, mult
    return op, sep


class FieldParser:
    """Builds hist fields for one trigger command on one event.

    ``hist`` is the HistData being built: its ``var_defs`` (name, expr)
    give local references (``$v`` where ``v=<field>``), and parsing
    ``common_timestamp`` sets its ``enable_timestamps``/``ts_in_usecs``.
    """

    def __init__(self, err: HistErr, fields: dict, hist):
        self.err = err
        self.fields = fields
        self.hist = hist

    def parse_field(self, field_str: str, flags: int):
        """``parse_field()``: (event field or None, flags, buckets)."""
        err = self.err
        field = None
        buckets = 0
        stack_modifier = False
        field_name, modifier = strsep(field_str, ".")
        if modifier is not None:
            if modifier == "hex":
                flags |= FL_HEX
            elif modifier == "sym":
                flags |= FL_SYM
            elif modifier == "symXoffset":
                flags |= FL_SYM_OFFSET
            elif modifier == "execname" and field_name == "common_pid":
                flags |= FL_EXECNAME
            elif modifier == "syscall":
                flags |= FL_SYSCALL
            elif modifier == "stacktrace":
                flags |= FL_STACKTRACE
                stack_modifier = True
            elif modifier == "log2":
                flags |= FL_LOG2
            elif modifier == "usecs":
                flags |= FL_TIMESTAMP_USECS
            elif modifier.startswith("bucket"):
                m = modifier[6:]
                if m.startswith("s"):
                    m = m[1:]
                try:
                    if not m.startswith("="):
                        raise ValueError(m)
                    buckets = kstrtoul(m[1:], 0)
                    if not buckets:
                        raise ValueError(m)
                except ValueError:
                    err.fail("BAD_FIELD_MODIFIER", modifier)
                flags |= FL_BUCKET
            elif modifier.startswith("percent") and not flags & (FL_VAR | FL_KEY):
                flags |= FL_PERCENT
            elif modifier.startswith("graph") and not flags & (FL_VAR | FL_KEY):
                flags |= FL_GRAPH
            else:
                err.fail("BAD_FIELD_MODIFIER", modifier)
        if field_name == "common_timestamp":
            flags |= FL_TIMESTAMP
            self.hist.enable_timestamps = True
            if flags & FL_TIMESTAMP_USECS:
                self.hist.ts_in_usecs = True
        elif field_name == "common_stacktrace":
            flags |= FL_STACKTRACE
        elif field_name == "common_cpu":
            flags |= FL_CPU
        elif field_name == "hitcount":
            flags |= FL_HITCOUNT
        else:
            field = self.fields.get(field_name)
            if field is None or not self._has_size(field):
                if field is not None and field.filter_type == FILTER_CPU:
                    flags |= FL_CPU
                elif field is not None and field.filter_type == FILTER_STACKTRACE:
                    flags |= FL_STACKTRACE
                    field = None
                else:
                    err.fail("FIELD_NOT_FOUND", field_name)
        if stack_modifier and (field is None or field.filter_type != FILTER_STACKTRACE):
            err.fail("BAD_FIELD_MODIFIER", field_str)
        return field, flags, buckets

    @staticmethod
    def _has_size(field) -> bool:
        """The generic fields (``CPU``, ``comm``, ``stacktrace``) have no
        size in the kernel's field list, nor have ``char buf[]`` arrays (a
        synthetic event's ``unsigned long[]`` stack has its size)."""
        if field.filter_type in (FILTER_CPU, FILTER_COMM) or any(field is g for g in GENERIC):
            return False
        return bool(field.size)

    def parse_atom(self, s: str, flags: int, var_name):
        if s[:1] and s[0] in "0123456789":
            try:
                constant = kstrtoul(s, 0)
            except ValueError:
                self.err.fail("EXPECT_NUMBER", s)
            hf = create_hist_field(None, flags | FL_CONST, var_name)
            hf.constant = constant
            return hf
        ref_system = ref_event = None
        ref_var = s
        dot = s.find(".")
        if dot >= 0 and s.find(".", dot + 1) >= 0:
            ref_system, rest = strsep(s, ".")
            ref_event, ref_var = strsep(rest, ".")
            if ref_var is None:
                raise KernelError(errno.EINVAL)
            s = ref_var
        local = self.local_field_var_ref(ref_system, ref_event, ref_var)
        if local is None:
            ref = self.hist.parse_var_ref(self.err, ref_system, ref_event, ref_var)
            if ref is not None:
                return self.hist.alias(ref, var_name) if var_name else ref
        else:
            s = local
        field, flags, buckets = self.parse_field(s, flags)
        hf = create_hist_field(field, flags, var_name)
        if hf is None:
            raise KernelError(errno.ENOMEM)
        hf.buckets = buckets
        return hf

    def local_field_var_ref(self, system, event, var_name):
        if system and event:
            ev = self.hist.event
            if system != ev.system or event != ev.name:
                return None
        if bool(system) != bool(event):
            return None
        if len(var_name) < 2 or var_name[0] != "$":
            return None
        name = var_name[1:]
        for vname, expr in self.hist.var_defs:
            if vname == name:
                if contains_operator(expr)[0] != OP_NONE or (len(expr) >= 2 and expr[0] == "$"):
                    continue
                return expr
        return None

    def parse_unary(self, s: str, flags: int, var_name, n: list):
        err = self.err
        n[0] += 1
        if n[0] > 3:
            err.fail("TOO_MANY_SUBEXPR", s)
        s = s[1:]
        if "(" not in s:
            raise KernelError(errno.EINVAL)
        s = s[1:]
        close = s.rfind(")")
        if close < 0:
            raise KernelError(errno.EINVAL)
        if close + 1 != len(s):
            err.fail("UNARY_MINUS_SUBEXPR", s)
        inner = s[:close]
        expr = create_hist_field(None, flags | FL_EXPR, var_name)
        op = self.parse_expr(inner, 0, None, n)
        if op.flags & FL_STRING:
            err.fail("INVALID_STR_OPERAND", inner)
        expr.flags |= op.flags & (FL_TIMESTAMP | FL_TIMESTAMP_USECS)
        expr.fn = "uminus"
        expr.operands[0] = op
        expr.size, expr.is_signed = op.size, op.is_signed
        expr.operator = OP_UNARY_MINUS
        expr.name = expr_str(expr, 0)
        return expr

    def parse_expr(self, s: str, flags: int, var_name, n: list):
        """``parse_expr()``; ``n`` is the count of subexpressions so far."""
        err = self.err
        if n[0] > 3:
            err.fail("TOO_MANY_SUBEXPR", s)
        op, sep = contains_operator(s)
        if op == OP_NONE:
            return self.parse_atom(s, flags, var_name)
        if op == OP_UNARY_MINUS:
            return self.parse_unary(s, flags, var_name, n)
        n[0] += 1
        lhs, rhs = s[:sep], s[sep + 1:]
        if not lhs or not rhs:
            raise KernelError(errno.EINVAL)
        op1 = self.parse_expr(lhs, 0, None, n)
        if op1.flags & FL_STRING:
            err.fail("INVALID_STR_OPERAND", lhs)
        op2 = self.parse_expr(rhs, 0, None, n)
        if op2.flags & FL_STRING:
            err.fail("INVALID_STR_OPERAND", rhs)
        fn = {OP_MINUS: "minus", OP_PLUS: "plus", OP_DIV: "div", OP_MULT: "mult"}[op]
        if (op1.flags & FL_TIMESTAMP_USECS) != (op2.flags & FL_TIMESTAMP_USECS):
            err.fail("TIMESTAMP_MISMATCH", 0)
        combine = op1.flags & op2.flags & FL_CONST
        flags |= FL_CONST if combine else FL_EXPR
        flags |= op1.flags & (FL_TIMESTAMP | FL_TIMESTAMP_USECS)
        expr = create_hist_field(None, flags, var_name)
        op1.read_once = op2.read_once = True
        expr.operands = [op1, op2]
        if op == OP_DIV and op2.flags & FL_CONST:
            if not op2.constant:
                err.fail("DIVISION_BY_ZERO", rhs, errno.EDOM)
            fn = div_fn(op2)
        expr.fn = fn
        if combine:
            expr.constant = evaluate_const(expr)
            expr.fn = "const"
            expr.operands = [None, None]
            expr.name = expr_str(expr, 0)
        else:
            expr.size, expr.is_signed = op1.size, op1.is_signed
            expr.operator = op
            expr.name = expr_str(expr, 0)
        return expr


def div_fn(divisor: HistField) -> str:
    """``hist_field_get_div_fn()`` for a constant divisor."""
    d = divisor.constant
    if not d & (d - 1):
        return "div_power2"
    if d > 1 << HIST_DIV_SHIFT:
        return "div_not_power2"
    divisor.div_multiplier = (1 << HIST_DIV_SHIFT) // d
    return "div_mult_shift"


def binary_op(fn: str, v1: int, v2: int, divisor: HistField | None = None) -> int:
    """The arithmetic of ``hist_field_plus()`` & co. on u64."""
    if fn == "plus":
        return (v1 + v2) & U64
    if fn == "minus":
        return (v1 - v2) & U64
    if fn == "mult":
        return (v1 * v2) & U64
    if fn == "div":
        if not v2:
            return U64
        if not v2 & (v2 - 1):
            return v1 >> (v2 & -v2).bit_length() - 1
        return v1 // v2
    d = divisor.constant
    if fn == "div_power2":
        return v1 >> (d & -d).bit_length() - 1
    if fn == "div_not_power2":
        return v1 // d
    if v1 < 1 << HIST_DIV_SHIFT:                      # div_mult_shift
        return (v1 * divisor.div_multiplier + (1 << HIST_DIV_SHIFT) - 1) >> HIST_DIV_SHIFT
    return v1 // d


def evaluate_const(expr: HistField) -> int:
    op1, op2 = expr.operands
    return binary_op(expr.fn, op1.constant, op2.constant, op2)
