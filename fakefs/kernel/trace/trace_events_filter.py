"""Event filters (kernel/trace/trace_events_filter.c).

A filter is a logical expression over the fields of one event:
predicates ``field op value`` (``== != < <= > >= &`` for numbers, ``== !=
~`` for strings, ``~`` being a glob), joined with ``&&`` and ``||``, negated
with ``!`` and grouped with parentheses.  ``field.function == name`` (or an
address) tests whether an address field lies inside a function;
``field == CPUS{list}`` tests a CPU against a cpulist.  Besides an event's
own fields every event has the common fields (``common_pid`` ...) and the
generic ones (``CPU``/``cpu``/``common_cpu``, ``COMM``/``comm``,
``stacktrace``).

The parser follows 6.12 step by step, because what users see of it is
exact: which strings are refused, with which errno (some refusals return
``-1``/``-2``/``-3`` from deep inside the parser, i.e. EPERM, ENOENT,
ESRCH), the error text and the caret position written to ``error_log`` and
shown in the ``filter`` file.  A filter that parses is compiled into one
Python function ``flt(entry, cpu=None) -> bool`` over the ring-buffer entry
tuple ``(ts, type, pid, flags, preempt_count, args, _)``; the predicates
are inlined, so a filtered tracepoint hit costs one call.

Semantics kept from the kernel where they are surprising:

* numbers are compared at the field's width and signedness (``common_pid
  < 0xffffffff`` compares with -1);
* ``*suffix`` globs on fixed-size char arrays (``prev_comm``, ``comm``)
  only match strings that fill the array (the end match looks at the end of
  the array, not of the string);
* after a failed write the event keeps no filter at all: its ``filter``
  file shows the expression, a caret line and ``parse_error: <text>``;
* a subsystem filter gives every event of the system either the filter or
  that error text, and the write succeeds either way.
"""

from __future__ import annotations

import errno
import re

from ..lib.glob import glob_regex
from ..fs.pseudo import KernelError

# --- the operators, in the order they are tried ("<=" before "<") ---------
OPS = ("~", "!=", "==", "<=", "<", ">=", ">", "&")
OP_GLOB, OP_NE, OP_EQ, OP_LE, OP_LT, OP_GE, OP_GT, OP_BAND = range(8)
_PY_CMP = {OP_LT: "<", OP_LE: "<=", OP_GT: ">", OP_GE: ">="}

# --- error texts (err_text[]), indexed by FILT_ERR_* -----------------------
ERR_TEXT = (
    "No error",
    "Invalid operator",
    "Too many '('",
    "Too few '('",
    "Missing matching quote",
    "Missing '{'",
    "Missing '}'",
    "Operand too long",
    "Expecting string field",
    "Expecting numeric field",
    "Illegal operation for field type",
    "Field not found",
    "Illegal integer value",
    "Couldn't find or set field in one of a subsystem's events",
    "Too many terms in predicate expression",
    "Meaningless filter expression",
    "Invalid cpulist",
    "Only 'ip' field is supported for function trace",
    "Invalid value (did you forget quotes)?",
    "Function not found",
    "Error",
    "No filter found",
)
(FILT_ERR_NONE, FILT_ERR_INVALID_OP, FILT_ERR_TOO_MANY_OPEN, FILT_ERR_TOO_MANY_CLOSE,
 FILT_ERR_MISSING_QUOTE, FILT_ERR_MISSING_BRACE_OPEN, FILT_ERR_MISSING_BRACE_CLOSE,
 FILT_ERR_OPERAND_TOO_LONG, FILT_ERR_EXPECT_STRING, FILT_ERR_EXPECT_DIGIT,
 FILT_ERR_ILLEGAL_FIELD_OP, FILT_ERR_FIELD_NOT_FOUND, FILT_ERR_ILLEGAL_INTVAL,
 FILT_ERR_BAD_SUBSYS_FILTER, FILT_ERR_TOO_MANY_PREDS, FILT_ERR_INVALID_FILTER,
 FILT_ERR_INVALID_CPULIST, FILT_ERR_IP_FIELD_ONLY, FILT_ERR_INVALID_VALUE,
 FILT_ERR_NO_FUNCTION, FILT_ERR_ERRNO, FILT_ERR_NO_FILTER) = range(len(ERR_TEXT))

ERR_LOC = "event filter parse error"

DEFAULT_SYS_FILTER_MESSAGE = (
    "### global filter ###\n"
    "# Use this to set filters for multiple events.\n"
    "# Only events with the given fields will be affected.\n"
    "# If no events are modified, an error message will be displayed here")

MAX_FILTER_STR_VAL = 256
NUM_BUF = 24                     # room for "0xfeedfacedeadbeef" and a sign
PAGE_SIZE = 4096

# --- field kinds (enum filter_type) -----------------------------------------
(FILTER_OTHER, FILTER_STATIC_STRING, FILTER_DYN_STRING, FILTER_RDYN_STRING,
 FILTER_PTR_STRING, FILTER_TRACE_FN, FILTER_CPUMASK, FILTER_COMM, FILTER_CPU,
 FILTER_STACKTRACE) = range(10)
_STRING_TYPES = frozenset({FILTER_STATIC_STRING, FILTER_DYN_STRING, FILTER_RDYN_STRING,
                           FILTER_PTR_STRING, FILTER_COMM})

TASK_COMM_LEN = 16

# --- the kernel's ctype (Latin-1 aware) -------------------------------------
_SPACE = frozenset("\t\n\v\f\r \xa0")
_DIGIT = frozenset("0123456789")
_ALNUM = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   + "".join(chr(c) for c in range(192, 256) if c not in (215, 247)))
_IDENT = _ALNUM | {"_"}
_XDIGIT = frozenset("0123456789abcdefABCDEF")


def strstrip(text: str) -> str:
    """What ``strstrip()`` leaves in the buffer: trailing space removed."""
    end = len(text)
    while end and text[end - 1] in _SPACE:
        end -= 1
    return text[:end]


def skip_spaces(text: str) -> str:
    i = 0
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return text[i:]


# --- fields -----------------------------------------------------------------

class Field:
    """One field a predicate can name (``struct ftrace_event_field``).

    ``expr`` is the Python expression giving its value inside a compiled
    filter, where ``e`` is the entry, ``a`` its field tuple, ``cpu`` the CPU
    and ``comm(pid)`` the comm of a task.
    """

    __slots__ = ("name", "type", "size", "signed", "filter_type", "expr", "conv")

    def __init__(self, name, type_, size, signed, filter_type, expr, conv=None):
        self.name = name
        self.type = type_
        self.size = size
        self.signed = signed
        self.filter_type = filter_type
        self.expr = expr
        self.conv = conv

    @property
    def is_string(self) -> bool:
        return self.filter_type in _STRING_TYPES


def filter_assign_type(type_: str) -> int:
    if "__data_loc" in type_:
        if "char" in type_:
            return FILTER_DYN_STRING
        if "cpumask_t" in type_:
            return FILTER_CPUMASK
    if "__rel_loc" in type_ and "char" in type_:
        return FILTER_RDYN_STRING
    if "[" in type_ and "char" in type_:
        return FILTER_STATIC_STRING
    if type_ in ("char *", "const char *"):
        return FILTER_PTR_STRING
    return FILTER_OTHER


_FIELD_RE = re.compile(r"\tfield:(.*);\toffset:(\d+);\tsize:(\d+);\tsigned:(\d+);")

# the common fields of every entry, and where the entry tuple keeps them
COMMON = [Field("common_type", "unsigned short", 2, 0, FILTER_OTHER, "e[1]"),
          Field("common_flags", "unsigned char", 1, 0, FILTER_OTHER, "e[3]"),
          Field("common_preempt_count", "unsigned char", 1, 0, FILTER_OTHER, "e[4]"),
          Field("common_pid", "int", 4, 1, FILTER_OTHER, "e[2]")]
# generic fields: no storage in the entry (trace_define_generic_fields())
_HEADER64 = "(e[1] | e[3] << 16 | e[4] << 24 | (e[2] & 0xffffffff) << 32)"
GENERIC = [Field("CPU", "int", 4, 1, FILTER_CPU, "cpu"),
           Field("cpu", "int", 4, 1, FILTER_CPU, "cpu"),
           Field("common_cpu", "int", 4, 1, FILTER_CPU, "cpu"),
           Field("COMM", "char *", 8, 0, FILTER_COMM, "comm(e[2])"),
           Field("comm", "char *", 8, 0, FILTER_COMM, "comm(e[2])"),
           # a stacktrace field sits at offset 0: a number compares the header
           Field("stacktrace", "char *", 8, 0, FILTER_STACKTRACE, _HEADER64),
           Field("STACKTRACE", "char *", 8, 0, FILTER_STACKTRACE, _HEADER64)]


def parse_field_decl(line: str):
    """(type, name, size, signed) of one ``format`` field line."""
    m = _FIELD_RE.match(line)
    if m is None:
        raise ValueError("bad field line %r" % line)
    decl, size, signed = m.group(1), int(m.group(3)), int(m.group(4))
    type_, _, name = decl.rpartition(" ")
    if "[" in name:
        name, _, dim = name.partition("[")
        type_ = type_ + "[" + dim
    return type_.strip(), name, size, signed


def event_fields(ev) -> dict:
    """name -> Field for a tracepoint, in ``trace_find_event_field()`` order:
    the event's own fields, then the generic, then the common ones."""
    cached = ev.filter_fields
    if cached is not None:
        return cached
    convs = ev.filter_values
    out: dict[str, Field] = {}
    for idx, line in enumerate(ev.fields):
        type_, name, size, signed = parse_field_decl(line)
        conv = convs.get(name)
        expr = "a[%d]" % idx if conv is None else "cv_%s(a[%d])" % (name, idx)
        out.setdefault(name, Field(name, type_, size, signed, filter_assign_type(type_),
                                   expr, conv))
    for f in GENERIC + COMMON:
        out.setdefault(f.name, f)
    ev.filter_fields = out
    return out


# --- number parsing (kstrtoull / kstrtoll with base 0) ----------------------

def _parse_ull(s: str):
    """``_kstrtoull(s, 0)``: the value, or None (-EINVAL / -ERANGE)."""
    if s[:1] == "0":
        if s[1:2] in ("x", "X") and s[2:3] in _XDIGIT:
            base, s = 16, s[2:]
        else:
            base = 8
    else:
        base = 10
    val = 0
    n = 0
    for ch in s:
        c = ch.lower()
        if "0" <= c <= "9":
            d = ord(c) - 48
        elif "a" <= c <= "f":
            d = ord(c) - 87
        else:
            break
        if d >= base:
            break
        val = val * base + d
        n += 1
    if not n:
        return None
    rest = s[n:]
    if rest == "\n":
        rest = ""
    if rest or val >= 1 << 64:
        return None
    return val


def kstrtoull(s: str):
    if s[:1] == "+":
        s = s[1:]
    return _parse_ull(s)


def kstrtoll(s: str):
    if s[:1] == "-":
        v = _parse_ull(s[1:])
        if v is None or v > 1 << 63:
            return None
        return -v
    v = kstrtoull(s)
    if v is None or v >= 1 << 63:
        return None
    return v


def _to_width(val: int, size: int, signed: bool) -> int:
    bits = size * 8
    val &= (1 << bits) - 1
    if signed and val >> (bits - 1):
        val -= 1 << bits
    return val


# --- cpulist_parse() (bitmap_parselist) ---------------------------------------

def cpulist_parse(text: str, nbits: int):
    """The set of CPUs of a cpulist (``0-3,5``, ``0-7:2/4``, ``N``, ``all``),
    or None when the kernel refuses it."""
    s = text + "\0"
    i = 0
    out = set()
    last = nbits - 1

    def getnum(i):
        if s[i] == "N":
            return last, i + 1
        j = i
        while s[j] in _DIGIT:
            j += 1
        if j == i:
            return None, i
        n = int(s[i:j])
        if n >= 1 << 32:
            return None, i
        return n, j

    def end_of_region(c):
        return c in _SPACE or c in ",\0\n"

    while True:
        while s[i] in _SPACE or s[i] == ",":
            i += 1
        if s[i] in "\0\n":
            return out
        if s[i:i + 3].lower() == "all":
            start, end, i = 0, last, i + 3
        else:
            start, i = getnum(i)
            if start is None:
                return None
            if end_of_region(s[i]):
                end = start
            elif s[i] != "-":
                return None
            else:
                end, i = getnum(i + 1)
                if end is None:
                    return None
        if end_of_region(s[i]):
            off = grp = end + 1
        elif s[i] != ":":
            return None
        else:
            off, i = getnum(i + 1)
            if off is None or s[i] != "/":
                return None
            grp, i = getnum(i + 1)
            if grp is None:
                return None
        if start > end or grp == 0 or off > grp:
            return None
        if end >= nbits:
            return None
        b = start
        while b <= end:
            out.update(range(b, b + min(end - b + 1, off)))
            b += grp




# --- errors ---------------------------------------------------------------------

class FilterError(Exception):
    """A refused filter: the errno the write returns and, when the parser
    recorded one, the FILT_ERR_* and its position (``filter_parse_error``)."""

    def __init__(self, err: int, lasterr: int = 0, pos: int = 0):
        super().__init__(err, lasterr, pos)
        self.errno = err
        self.lasterr = lasterr
        self.pos = pos


def _perr(lasterr: int, pos: int, err: int = errno.EINVAL):
    return FilterError(err, lasterr, pos)


# --- the parser -----------------------------------------------------------------

class Pred:
    """One compiled predicate: a Python expression and its constants."""

    __slots__ = ("code", "consts", "uses_cpu", "uses_args")

    def __init__(self, code, consts=(), field=None):
        self.code = code
        self.consts = consts
        self.uses_cpu = field is not None and "cpu" == field.expr
        self.uses_args = field is not None and "a[" in field.expr


def calc_stack(s: str):
    """(nr_parens, nr_preds) or a FilterError (``calc_stack()``)."""
    is_pred = False
    nr_preds = 0
    open_ = 1
    last_quote = 0
    max_open = 1
    quote = None
    n = len(s)
    for i in range(n):
        c = s[i]
        if c in _SPACE:
            continue
        if quote:
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
            last_quote = i
        elif c in "|&":
            if i + 1 < n and s[i + 1] == c:
                is_pred = False
                continue
        elif c == "(":
            is_pred = False
            open_ += 1
            max_open = max(max_open, open_)
            continue
        elif c == ")":
            is_pred = False
            if open_ == 1:
                return _perr(FILT_ERR_TOO_MANY_CLOSE, i, errno.EPERM)
            open_ -= 1
            continue
        if not is_pred:
            nr_preds += 1
            is_pred = True
    if quote:
        return _perr(FILT_ERR_MISSING_QUOTE, last_quote, errno.ESRCH)
    if open_ != 1:
        level = open_
        for i in range(n - 1, 0, -1):
            c = s[i]
            if quote:
                if c == quote:
                    quote = None
                continue
            if c == "(":
                if level == open_:
                    return _perr(FILT_ERR_TOO_MANY_OPEN, i, errno.ENOENT)
                level -= 1
            elif c == ")":
                level += 1
            elif c in "'\"":
                quote = c
        return _perr(FILT_ERR_TOO_MANY_OPEN, 0, errno.ENOENT)
    return max_open, nr_preds


class Parser:
    """Parses one filter string for one event (``process_preds()``)."""

    def __init__(self, fields: dict, kallsyms=None, nr_cpus: int = 1):
        self.fields = fields
        self.kallsyms = kallsyms
        self.nr_cpus = nr_cpus

    # -- predicate_parse() -------------------------------------------------
    def parse(self, text: str):
        """The expression tree of ``text`` or a raised FilterError."""
        r = calc_stack(text)
        if isinstance(r, FilterError):
            raise r
        nr_parens, nr_preds = r
        if not nr_preds:
            raise FilterError(errno.EINVAL)
        S = text + "\0"
        ptr = 0
        depth = 0
        n_preds = 0
        pending = False                   # an odd number of '!' before the next term
        frames = [[False, [], []]]        # [negated, or-terms, current and-terms]
        while S[ptr] != "\0":
            nxt = ptr
            ptr += 1
            c = S[nxt]
            if c in _SPACE:
                continue
            if c == "(":
                if depth >= nr_parens - 1:
                    raise FilterError(errno.EINVAL)
                depth += 1
                frames.append([pending, [], []])
                pending = False
                continue
            if c == "!" and S[nxt + 1] not in "=~":
                pending = not pending
                continue
            if n_preds >= nr_preds:
                raise _perr(FILT_ERR_TOO_MANY_PREDS, nxt, errno.EPERM)
            end, pred = self.parse_pred(S, nxt)
            term = ("not", ("pred", pred)) if pending else ("pred", pred)
            ptr = end
            n_preds += 1
            while True:
                nxt = ptr
                ptr += 1
                c = S[nxt]
                if c in _SPACE:
                    continue
                if c in "&|":
                    if S[nxt + 1] != c:
                        raise _perr(FILT_ERR_TOO_MANY_PREDS, nxt, errno.EPERM)
                    ptr += 1
                elif c not in ")\0":
                    raise _perr(FILT_ERR_TOO_MANY_PREDS, nxt, errno.EPERM)
                pending = False
                frame = frames[-1]
                frame[2].append(term)
                if c == "&":
                    break
                if c == "|":
                    frame[1].append(frame[2])
                    frame[2] = []
                    break
                if c == "\0":
                    return self._finish(frames, depth, n_preds, ptr)
                if not depth:
                    raise _perr(FILT_ERR_TOO_MANY_CLOSE, ptr, errno.EPERM)
                frames.pop()
                depth -= 1
                frame[1].append(frame[2])
                term = _group(frame[1])
                if frame[0]:
                    term = ("not", term)
        # the input ended where a term was expected
        if n_preds:
            raise _perr(FILT_ERR_INVALID_FILTER, ptr)
        return self._finish(frames, depth, n_preds, ptr)

    @staticmethod
    def _finish(frames, depth, n_preds, ptr):
        if depth:
            raise _perr(FILT_ERR_TOO_MANY_OPEN, ptr, errno.EPERM)
        if not n_preds:
            raise _perr(FILT_ERR_NO_FILTER, ptr)
        frame = frames[0]
        frame[1].append(frame[2])
        return _group(frame[1])

    # -- parse_pred() ------------------------------------------------------
    def parse_pred(self, S: str, start: int):
        """(index after the predicate, Pred).  Error positions are one past
        the offending character, as the kernel's are."""
        j = start
        while S[j] in _SPACE:
            j += 1
        s = j
        while S[j] in _IDENT:
            j += 1
        if j == s:
            raise FilterError(errno.EPERM)         # "return -1"
        field = self.fields.get(S[s:j])
        if field is None:
            raise _perr(FILT_ERR_FIELD_NOT_FOUND, j + 1)
        ustring = function = False
        if S.startswith(".ustring", j):
            ustring = True
            j += 8
        if S.startswith(".function", j):
            function = True
            j += 9
        while S[j] in _SPACE:
            j += 1
        for op, tok in enumerate(OPS):
            if S.startswith(tok, j):
                break
        else:
            raise _perr(FILT_ERR_INVALID_OP, j + 1)
        j += len(tok)
        while S[j] in _SPACE:
            j += 1
        s = j
        c = S[j]
        if function:
            return self._function_pred(S, j, s, op, field)
        if S.startswith("CPUS", j):
            return self._cpus_pred(S, j, op, field)
        if c in "'\"":
            return self._string_pred(S, j, s, op, field, ustring)
        if c in _DIGIT or c == "-":
            return self._number_pred(S, j, s, op, field)
        raise _perr(FILT_ERR_INVALID_VALUE, j + 1)

    def _function_pred(self, S, j, s, op, field):
        if field.size != 8:
            raise _perr(FILT_ERR_ILLEGAL_FIELD_OP, j + 1)
        if op not in (OP_NE, OP_EQ):
            raise _perr(FILT_ERR_INVALID_OP, j + 1)
        ks = self.kallsyms
        if S[j] in _DIGIT:
            while S[j] in _ALNUM:
                j += 1
            if j - s >= NUM_BUF:
                raise _perr(FILT_ERR_OPERAND_TOO_LONG, j + 1)
            ip = kstrtoull(S[s:j])
            if ip is None:
                raise _perr(FILT_ERR_INVALID_VALUE, j + 1)
        else:
            s = j
            while S[j] != "\0" and S[j] not in _SPACE:
                j += 1
            name = S[s:j]
            ip = (ks.addr_of(name) if ks is not None and name else None) or 0
            if not ip:
                raise _perr(FILT_ERR_NO_FUNCTION, j + 1)
        hit = ks.lookup(ip) if ks is not None else None
        if hit is None:
            raise _perr(FILT_ERR_NO_FUNCTION, j + 1)
        start = ip - hit[1]
        end = start + hit[2]
        # generic fields sit at offset 0: the address read is the header
        v = _HEADER64 if field.filter_type in (FILTER_COMM, FILTER_STACKTRACE) else field.expr
        code = "%d <= %s < %d" % (start, v, end)
        if op == OP_NE:
            code = "not (%s)" % code
        return j, Pred(code, (), field)

    def _cpus_pred(self, S, j, op, field):
        if field.filter_type not in (FILTER_CPUMASK, FILTER_CPU, FILTER_OTHER):
            raise _perr(FILT_ERR_ILLEGAL_FIELD_OP, j + 1)
        if op not in (OP_EQ, OP_NE, OP_BAND):
            raise _perr(FILT_ERR_ILLEGAL_FIELD_OP, j + 1)
        j += 4
        c = S[j]
        j += 1
        if c != "{":
            raise _perr(FILT_ERR_MISSING_BRACE_OPEN, j + 1)
        maskstart = j
        while S[j] != "\0" and S[j] != "}":
            j += 1
        if S[j] != "}":
            raise _perr(FILT_ERR_MISSING_BRACE_CLOSE, j + 1)
        if maskstart == j:
            raise _perr(FILT_ERR_INVALID_CPULIST, j + 1)
        mask = cpulist_parse(S[maskstart:j], self.nr_cpus)
        if mask is None:
            raise _perr(FILT_ERR_INVALID_CPULIST, j + 1)
        j += 1
        v = field.expr
        if len(mask) == 1:
            cpu = next(iter(mask))
            if op == OP_BAND:
                op = OP_EQ
            if field.filter_type == FILTER_OTHER and field.size not in (1, 2, 4, 8):
                return j, Pred("False", (), field)
            if field.filter_type == FILTER_OTHER and field.signed:
                cpu = _to_width(cpu, field.size, True)
            return j, Pred("%s %s %d" % (v, "==" if op == OP_EQ else "!=", cpu), (), field)
        if field.filter_type == FILTER_CPUMASK:
            return j, Pred("False", (), field)      # no cpumask fields here
        # a mask of several CPUs never equals one CPU
        if op == OP_EQ:
            return j, Pred("False", (), field)
        if field.filter_type == FILTER_CPU:
            if op == OP_NE:
                return j, Pred("True", (), field)
            return j, Pred("%s in K%%d" % v, (frozenset(mask),), field)
        if field.size not in (1, 2, 4, 8):
            return j, Pred("False", (), field)
        # the field is read as an unsigned int; one beyond the CPUs matches nothing
        v = "(%s & %d)" % (v, (1 << min(field.size * 8, 32)) - 1)
        if op == OP_NE:
            return j, Pred("%s < %d" % (v, self.nr_cpus), (), field)
        return j, Pred("%s in K%%d" % v, (frozenset(mask),), field)

    def _string_pred(self, S, j, s, op, field, ustring):
        q = S[j]
        negate = False
        if op == OP_NE:
            negate = True
        elif op not in (OP_GLOB, OP_EQ):
            raise _perr(FILT_ERR_ILLEGAL_FIELD_OP, j + 1)
        if not field.is_string:
            raise _perr(FILT_ERR_EXPECT_DIGIT, j + 1)
        j += 1
        while S[j] != "\0" and S[j] != q:
            j += 1
        if S[j] == "\0":
            raise _perr(FILT_ERR_MISSING_QUOTE, j + 1)
        s += 1
        if j - s >= MAX_FILTER_STR_VAL:
            raise _perr(FILT_ERR_OPERAND_TOO_LONG, j + 1)
        pattern = S[s:j]
        j += 1
        kind = "full"
        if op == OP_GLOB:
            kind, pattern, negate = filter_parse_regex(pattern)
        # the length the match function is given: the array for fixed-size
        # strings and comm, strlen + 1 for the others
        if field.filter_type == FILTER_COMM:
            flen = TASK_COMM_LEN
        elif field.filter_type == FILTER_STATIC_STRING:
            flen = field.size
        else:
            flen = 0
        v = field.expr
        plen = len(pattern)
        consts = (pattern,)
        if kind == "full":
            code = "%s == K%%d" % v if not flen or plen < flen else "False"
        elif kind == "front":
            code = "%s.startswith(K%%d)" % v if not flen or plen <= flen else "False"
        elif kind == "middle":
            code = "K%%d in %s" % v
        elif kind == "end":
            if not flen:
                code = "%s.endswith(K%%d)" % v
            elif not plen:
                code = "True"
            elif plen <= flen - 1:
                # the kernel looks at the end of the array, not of the string
                code = "(len(%s) == %d and %s.endswith(K%%d))" % (v, flen - 1, v)
            else:
                code = "False"
        else:
            consts = (glob_regex(pattern),)
            code = "K%%d.fullmatch(%s) is not None" % v
        if negate:
            code = "not (%s)" % code
        return j, Pred(code, consts if "K%d" in code else (), field)

    def _number_pred(self, S, j, s, op, field):
        if field.is_string:
            raise _perr(FILT_ERR_EXPECT_STRING, j + 1)
        if op == OP_GLOB:
            raise _perr(FILT_ERR_ILLEGAL_FIELD_OP, j + 1)
        if S[j] == "-":
            j += 1
        while S[j] in _ALNUM:
            j += 1
        if j - s >= NUM_BUF:
            raise _perr(FILT_ERR_OPERAND_TOO_LONG, j + 1)
        num = S[s:j]
        val = kstrtoll(num) if field.signed else kstrtoull(num)
        if val is None:
            raise _perr(FILT_ERR_ILLEGAL_INTVAL, s + 1)
        v = field.expr
        if field.filter_type == FILTER_CPU:
            cmp = _to_width(val, 4, True)
            if op == OP_BAND:
                return j, Pred("False", (), field)
            pyop = {OP_EQ: "==", OP_NE: "!="}.get(op) or _PY_CMP[op]
            return j, Pred("%s %s %d" % (v, pyop, cmp), (), field)
        if field.size not in (1, 2, 4, 8):
            return j, Pred("False", (), field)
        if op in (OP_EQ, OP_NE):
            # equality is unsigned at the field's width
            cmp = _to_width(val, field.size, bool(field.signed))
            return j, Pred("%s %s %d" % (v, "==" if op == OP_EQ else "!=", cmp), (), field)
        cmp = _to_width(val, field.size, bool(field.signed))
        if op == OP_BAND:
            return j, Pred("(%s & %d) != 0" % (v, cmp), (), field)
        return j, Pred("%s %s %d" % (v, _PY_CMP[op], cmp), (), field)


def filter_parse_regex(pattern: str):
    """(kind, search string, negated) of a ``~`` pattern
    (``filter_parse_regex()``): full, front (``abc*``), middle (``*abc*``),
    end (``*abc``) or glob."""
    negate = False
    if pattern[:1] == "!":
        negate = True
        pattern = pattern[1:]
    if pattern[:1] in _DIGIT:
        return "full", pattern, negate            # MATCH_INDEX
    kind = "full"
    n = len(pattern)
    for i, c in enumerate(pattern):
        if c == "*":
            if not i:
                kind = "end"
            elif i == n - 1:
                kind = "middle" if kind == "end" else "front"
                pattern = pattern[:i]
                break
            else:
                return "glob", pattern, negate
        elif c in "[?\\":
            return "glob", pattern, negate
    if pattern[:1] == "*":
        pattern = pattern[1:]
    return kind, pattern, negate


def _group(or_terms):
    ands = [t[0] if len(t) == 1 else ("and", t) for t in or_terms]
    return ands[0] if len(ands) == 1 else ("or", ands)


# --- compilation ---------------------------------------------------------------

def _walk_preds(node):
    if node[0] == "pred":
        yield node[1]
    elif node[0] == "not":
        yield from _walk_preds(node[1])
    else:
        for n in node[1]:
            yield from _walk_preds(n)


def _source(node, consts: list) -> str:
    kind = node[0]
    if kind == "pred":
        p = node[1]
        code = p.code
        if p.consts:
            base = len(consts)
            consts.extend(p.consts)
            code = code % tuple(range(base, base + len(p.consts)))
        return "(" + code + ")"
    if kind == "not":
        return "(not " + _source(node[1], consts) + ")"
    sep = " and " if kind == "and" else " or "
    return "(" + sep.join(_source(n, consts) for n in node[1]) + ")"


def _closure(node, env):
    """A slower evaluator for trees Python cannot compile in one piece."""
    kind = node[0]
    if kind == "pred":
        consts: list = []
        src = "lambda e, a, cpu: " + _source(node, consts)
        ns = dict(env)
        ns.update(("K%d" % i, c) for i, c in enumerate(consts))
        return eval(src, ns)
    if kind == "not":
        f = _closure(node[1], env)
        return lambda e, a, cpu: not f(e, a, cpu)
    fs = [_closure(n, env) for n in node[1]]
    if kind == "and":
        return lambda e, a, cpu: all(f(e, a, cpu) for f in fs)
    return lambda e, a, cpu: any(f(e, a, cpu) for f in fs)


def compile_filter(tree, fields: dict, comm_of=None, cpu_of=None):
    """``flt(entry, cpu=None) -> bool`` for an expression tree.  ``cpu``
    tells the CPU the event fires on; without it ``cpu_of(entry)`` guesses."""
    preds = list(_walk_preds(tree))
    uses_cpu = any(p.uses_cpu for p in preds)
    uses_args = any(p.uses_args for p in preds)
    env = {"comm": comm_of or (lambda pid: ""), "cpu_of": cpu_of or (lambda e: -1)}
    for f in fields.values():
        if f.conv is not None:
            env["cv_" + f.name] = f.conv
    consts: list = []
    try:
        body = _source(tree, consts)
        lines = ["def flt(e, cpu=None):"]
        if uses_args:
            lines.append("    a = e[5]")
        if uses_cpu:
            lines.append("    if cpu is None:\n        cpu = cpu_of(e)")
        lines.append("    return " + body)
        ns = dict(env)
        ns.update(("K%d" % i, c) for i, c in enumerate(consts))
        exec(compile("\n".join(lines), "<event filter>", "exec"), ns)
        return ns["flt"]
    except (SyntaxError, RecursionError, MemoryError):
        f = _closure(tree, env)

        def flt(e, cpu=None):
            if cpu is None and uses_cpu:
                cpu = cpu_of(e) if cpu_of else -1
            return f(e, e[5], cpu)
        return flt


# --- the per-array filter state (event_filter / trace_subsystem_dir) -------

class _SeqBuf:
    """A trace_seq: one page; a write that does not fit sets ``full``."""

    def __init__(self):
        self.buf = []
        self.len = 0
        self.full = False

    def puts(self, s: str, strict: bool = False) -> None:
        if self.full:
            return
        left = PAGE_SIZE - self.len
        if len(s) > left or (strict and len(s) >= left):
            self.full = True
            return
        self.buf.append(s)
        self.len += len(s)

    def text(self) -> str:
        return "".join(self.buf)


class EventFilters:
    """Filter strings of one trace array's events and systems.

    ``strings[ev]`` is what ``events/<sys>/<ev>/filter`` shows (absent:
    ``none``).  A system's ``filter`` file always shows the global-filter
    help: the kernel keeps a string there only when a system has no events
    or memory runs out.  Compiled filters live in ``tr.event_filters``,
    where the tracepoint code looks for them.
    """

    def __init__(self, tr):
        self.tr = tr
        self.strings: dict = {}

    # -- helpers --------------------------------------------------------------
    def _kernel(self):
        return self.tr.kernel

    def _parser(self, ev) -> Parser:
        k = self._kernel()
        return Parser(event_fields(ev), k.kallsyms, k.nr_cpus)

    def _comm_of(self):
        k = self._kernel()
        sched = k.sched
        saved = self.tr.tracing.saved_cmdlines

        def comm(pid):
            t = sched.find(pid)
            if t is not None:
                return t.comm
            return saved.get(pid, "")
        return comm

    def _cpu_of(self):
        sched = self._kernel().sched

        def cpu_of(e):
            pid = e[2]
            if pid:
                for c, t in enumerate(sched.curr):
                    if t.pid == pid:
                        return c
            return -1
        return cpu_of

    def build(self, ev, text: str):
        """Parse and compile ``text`` for ``ev``: the filter function, or a
        raised FilterError."""
        tree = self._parser(ev).parse(text)
        return compile_filter(tree, event_fields(ev), self._comm_of(), self._cpu_of())

    def _error_text(self, text: str, err: FilterError) -> str:
        """``append_filter_err()``: the string the filter file shows, and the
        error_log entry."""
        seq = _SeqBuf()
        seq.puts(text)
        if err.lasterr > 0:
            pos = min(err.pos, len(text))
            if pos:
                pos += 1
            seq.puts("\n" + "^".rjust(pos), strict=True)
            seq.puts("\nparse_error: %s\n" % ERR_TEXT[err.lasterr], strict=True)
            self.tr.log_err(ERR_LOC, text, ERR_TEXT, err.lasterr, err.pos)
        else:
            seq.puts("\nError: (%d)\n" % err.lasterr, strict=True)
            self.tr.log_err(ERR_LOC, text, ERR_TEXT, FILT_ERR_ERRNO, 0)
        return seq.text()

    # -- apply_event_filter() -------------------------------------------------
    def apply_event_filter(self, ev, raw: str) -> None:
        text = strstrip(raw)
        if skip_spaces(text) == "0":
            self.strings.pop(ev, None)
            self.tr.event_filters.pop(ev, None)
            return
        try:
            flt = self.build(ev, text)
        except FilterError as e:
            # the event loses its filter and shows the error instead
            self.tr.event_filters.pop(ev, None)
            self.strings[ev] = self._error_text(text, e)
            raise KernelError(e.errno)
        self.strings[ev] = text
        self.tr.event_filters[ev] = flt

    # -- apply_subsystem_event_filter() ---------------------------------------
    def apply_subsystem_filter(self, system: str, raw: str) -> None:
        events = [ev for ev in self.tr.tracing.events if ev.system == system]
        if not events:
            raise KernelError(errno.ENODEV)
        text = strstrip(raw)
        if skip_spaces(text) == "0":
            for ev in events:
                self.strings.pop(ev, None)
                self.tr.event_filters.pop(ev, None)
            return
        for ev in events:
            try:
                flt = self.build(ev, text)
            except FilterError:
                self.tr.event_filters.pop(ev, None)
                self.strings[ev] = self._error_text(
                    text, FilterError(errno.EINVAL, FILT_ERR_BAD_SUBSYS_FILTER, 0))
                continue
            self.strings[ev] = text
            self.tr.event_filters[ev] = flt

    # -- reads ------------------------------------------------------------------
    def event_text(self, ev) -> str:
        s = self.strings.get(ev)
        return "none\n" if s is None else s + "\n"

    def system_text(self, system: str) -> str:
        return DEFAULT_SYS_FILTER_MESSAGE + "\n"


def filters_of(tr) -> EventFilters:
    st = tr.filter_state
    if st is None:
        st = tr.filter_state = EventFilters(tr)
    return st


def write_text(data: bytes) -> str:
    """The C string a filter write hands over (up to the first NUL)."""
    if len(data) >= PAGE_SIZE:
        raise KernelError(errno.EINVAL)
    text = data.decode("latin-1")
    nul = text.find("\0")
    return text if nul < 0 else text[:nul]

