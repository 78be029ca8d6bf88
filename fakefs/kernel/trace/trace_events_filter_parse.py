"""The event filter language: ``predicate_parse()`` and ``parse_pred()`` of
kernel/trace/trace_events_filter.c.

A filter is a logical expression over the fields of one event:
predicates ``field op value`` (``== != < <= > >= &`` for numbers, ``== !=
~`` for strings, ``~`` being a glob), joined with ``&&`` and ``||``, negated
with ``!`` and grouped with parentheses.  ``field.function == name`` (or an
address) tests whether an address field lies inside a function;
``field == CPUS{list}`` tests a CPU against a cpulist.  The fields a
predicate can name are ``trace_events_filter_fields.py``.

The parser follows 6.12 step by step, because what users see of it is
exact: which strings are refused, with which errno (some refusals return
``-1``/``-2``/``-3`` from deep inside the parser, i.e. EPERM, ENOENT,
ESRCH), the error text and the caret position (a :class:`FilterError`).
What it yields is an expression tree of :class:`Pred` (``("pred", p)``,
``("not", t)``, ``("and", [t...])``, ``("or", [t...])``), each predicate
already a Python expression at the field's width and signedness, for
``trace_events_filter_compile.py`` to turn into one function.

Semantics kept from the kernel where they are surprising:

* numbers are compared at the field's width and signedness (``common_pid
  < 0xffffffff`` compares with -1);
* ``*suffix`` globs on fixed-size char arrays (``prev_comm``, ``comm``)
  only match strings that fill the array (the end match looks at the end of
  the array, not of the string).
"""

from __future__ import annotations

import errno

from ..lib.bitmap import cpulist_parse
from ..lib.ctype import ALNUM, DIGIT, SPACE
from ..lib.glob import glob_regex
from ..lib.kstrtox import kstrtoll, kstrtoull
from .trace_events_filter_fields import (FILTER_COMM, FILTER_CPU, FILTER_CPUMASK, FILTER_OTHER,
                                         FILTER_STACKTRACE, FILTER_STATIC_STRING, HEADER64,
                                         TASK_COMM_LEN)

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

MAX_FILTER_STR_VAL = 256
NUM_BUF = 24                     # room for "0xfeedfacedeadbeef" and a sign

_IDENT = ALNUM | {"_"}


def _to_width(val: int, size: int, signed: bool) -> int:
    bits = size * 8
    val &= (1 << bits) - 1
    if signed and val >> (bits - 1):
        val -= 1 << bits
    return val


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
        if c in SPACE:
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
            if c in SPACE:
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
                if c in SPACE:
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
        while S[j] in SPACE:
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
        while S[j] in SPACE:
            j += 1
        for op, tok in enumerate(OPS):
            if S.startswith(tok, j):
                break
        else:
            raise _perr(FILT_ERR_INVALID_OP, j + 1)
        j += len(tok)
        while S[j] in SPACE:
            j += 1
        s = j
        c = S[j]
        if function:
            return self._function_pred(S, j, s, op, field)
        if S.startswith("CPUS", j):
            return self._cpus_pred(S, j, op, field)
        if c in "'\"":
            return self._string_pred(S, j, s, op, field, ustring)
        if c in DIGIT or c == "-":
            return self._number_pred(S, j, s, op, field)
        raise _perr(FILT_ERR_INVALID_VALUE, j + 1)

    def _function_pred(self, S, j, s, op, field):
        if field.size != 8:
            raise _perr(FILT_ERR_ILLEGAL_FIELD_OP, j + 1)
        if op not in (OP_NE, OP_EQ):
            raise _perr(FILT_ERR_INVALID_OP, j + 1)
        ks = self.kallsyms
        if S[j] in DIGIT:
            while S[j] in ALNUM:
                j += 1
            if j - s >= NUM_BUF:
                raise _perr(FILT_ERR_OPERAND_TOO_LONG, j + 1)
            ip = kstrtoull(S[s:j])
            if ip is None:
                raise _perr(FILT_ERR_INVALID_VALUE, j + 1)
        else:
            s = j
            while S[j] != "\0" and S[j] not in SPACE:
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
        v = HEADER64 if field.filter_type in (FILTER_COMM, FILTER_STACKTRACE) else field.expr
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
        while S[j] in ALNUM:
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
    if pattern[:1] in DIGIT:
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
