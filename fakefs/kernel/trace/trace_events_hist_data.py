"""A hist trigger's description (``struct hist_trigger_data`` and
``struct hist_trigger_attrs`` of kernel/trace/trace_events_hist.c): the
``key=value`` attributes of the command, its fields in the kernel's order
(hitcount, values, variables, keys), the sort keys and the map.

``create_hist_data()`` follows the kernel's ``create_hist_data()`` step by
step, so a bad command fails at the same step, with the same errno and
``error_log`` entry.  Actions (``onmatch``/``onmax``/``onchange``) and the
references to other triggers' variables are ``trace_events_hist_actions.py``.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..lib.kstrtox import RangeError, kstrtoul
from .trace_events_hist_fields import (FL_BUCKET, FL_CPU, FL_EXECNAME, FL_GRAPH,
                                       FL_HITCOUNT, FL_KEY, FL_LOG2, FL_PERCENT, FL_STACKTRACE, FL_STRING,
                                       FL_SYM, FL_SYM_OFFSET, FL_SYSCALL, FL_VAR, FL_VAR_REF,
                                       HIST_STACKTRACE_DEPTH, MAX_FILTER_STR_VAL, FieldParser,
                                       HistErr, create_hist_field, hist_field_name, strsep)
from .trace_events_hist_actions import (actions_match, create_alias, find_var_field,
                                        parse_actions, parse_var_ref)
from .tracing_map import (TRACING_MAP_BITS_DEFAULT, TRACING_MAP_BITS_MAX, TRACING_MAP_BITS_MIN,
                          TRACING_MAP_KEYS_MAX, TRACING_MAP_SORT_KEYS_MAX, TRACING_MAP_VALS_MAX,
                          TRACING_MAP_VARS_MAX, SortKey, TracingMap, cmp_none, cmp_num,
                          cmp_string)

HIST_ACTIONS_MAX = 8
HIST_KEY_SIZE_MAX = MAX_FILTER_STR_VAL + HIST_STACKTRACE_DEPTH * 8


class HistAttrs:
    """``struct hist_trigger_attrs``: the command's parts."""

    def __init__(self):
        self.keys_str = None
        self.vals_str = None
        self.sort_key_str = None
        self.name = None            # "name=<name>", as the kernel keeps it
        self.clock = None
        self.pause = False
        self.cont = False
        self.clear = False
        self.no_hitcount = False
        self.map_bits = 0
        self.assignments: list[str] = []
        self.actions: list[str] = []


def parse_map_size(s: str) -> int:
    """``parse_map_size()``: map bits, or a raised KernelError."""
    try:
        size = kstrtoul(s, 0)
    except RangeError:
        raise KernelError(errno.ERANGE)
    except ValueError:
        raise KernelError(errno.EINVAL)
    bits = (size - 1).bit_length() if size > 1 else 0      # ilog2(roundup_pow_of_two())
    if not TRACING_MAP_BITS_MIN <= bits <= TRACING_MAP_BITS_MAX:
        raise KernelError(errno.EINVAL)
    return bits


def _parse_assignment(err: HistErr, s: str, attrs: HistAttrs) -> None:
    for prefix, attr in (("key=", "keys_str"), ("keys=", "keys_str"), ("val=", "vals_str"),
                         ("vals=", "vals_str"), ("values=", "vals_str"),
                         ("sort=", "sort_key_str")):
        if s.startswith(prefix):
            setattr(attrs, attr, s[len(prefix):])
            return
    if s.startswith("name="):
        attrs.name = s
    elif s.startswith("clock="):
        attrs.clock = s[len("clock="):].strip()
    elif s.startswith("size="):
        attrs.map_bits = parse_map_size(s[len("size="):])
    else:
        if len(attrs.assignments) == TRACING_MAP_VARS_MAX:
            err.fail("TOO_MANY_VARS", s)
        attrs.assignments.append(s)


def parse_hist_trigger_attrs(err: HistErr, param: str) -> HistAttrs:
    attrs = HistAttrs()
    rest = param
    while rest is not None:
        s, rest = strsep(rest, ":")
        eq = s.find("=")
        if eq >= 0:
            if eq + 1 == len(s):
                err.fail("EMPTY_ASSIGNMENT", s)
            _parse_assignment(err, s, attrs)
        elif s in ("nohitcount", "NOHC"):
            attrs.no_hitcount = True
        elif s == "pause":
            attrs.pause = True
        elif s in ("cont", "continue"):
            attrs.cont = True
        elif s == "clear":
            attrs.clear = True
        elif (len(attrs.actions) < HIST_ACTIONS_MAX
              and s.startswith(("onmatch(", "onmax(", "onchange("))):
            attrs.actions.append(s)
        else:
            raise KernelError(errno.EINVAL)
    if attrs.keys_str is None:
        raise KernelError(errno.EINVAL)
    if attrs.clock is None:
        attrs.clock = "global"
    return attrs


class HistData:
    """``struct hist_trigger_data``.  ``fields`` are hitcount, the values,
    the variables, then the keys; ``n_vals`` counts the first three kinds."""

    def __init__(self, tr, ev, attrs: HistAttrs, remove: bool):
        self.tr = tr
        self.event = ev
        self.attrs = attrs
        self.remove = remove
        self.fields: list = []
        self.n_vals = 0
        self.n_vars = 0
        self.key_size = 0
        self.sort_keys: list[SortKey] = [SortKey()]
        self.enable_timestamps = False
        self.ts_in_usecs = False
        self.var_defs: list[tuple[str, str]] = []
        self.map: TracingMap | None = None
        self.fields_dict: dict = {}      # the event's fields by name
        self.var_refs: list = []         # references to variables (HistField FL_VAR_REF)
        self.actions: list = []          # trace_events_hist_actions.Action
        self.ref_vals: list = []         # the references' values of the hit being handled
        self.stack = None                # the stack of the hit being handled
        self.others = tuple              # () -> (event, HistData) of the array's registered triggers
        self.run_hist = None             # (event, glob, cmd): a hist command on another event
        self.field_var_hists: list = []  # (event, cmd) of the triggers made for field variables
        self.filter_str = None           # its trigger's filter
        self.dying = False               # being freed: its references no longer count

    def find_var_field(self, name: str):
        return find_var_field(self, name)

    def registered(self):
        return self.others()

    def parse_var_ref(self, err, system, event, var_name):
        return parse_var_ref(err, self, system, event, var_name)

    @staticmethod
    def alias(ref, var_name):
        return create_alias(ref, var_name)

    def has_execname(self) -> bool:
        return any(f.flags & FL_EXECNAME for f in self.fields)

    @property
    def key_fields(self) -> list:
        return self.fields[self.n_vals:]


def _parse_var_defs(err: HistErr, hd: HistData) -> None:
    for assignment in hd.attrs.assignments:
        rest = assignment
        for _ in range(TRACING_MAP_VARS_MAX):
            field_str, rest = strsep(rest, ",")
            if field_str is None:
                break
            var_name, expr = strsep(field_str, "=")
            if expr is None:
                err.fail("MALFORMED_ASSIGNMENT", var_name)
            if len(hd.var_defs) == TRACING_MAP_VARS_MAX:
                err.fail("TOO_MANY_VARS", var_name)
            hd.var_defs.append((var_name, expr))


def _create_val_field(err, parser, hd: HistData, field_str: str, var_name=None, flags=0):
    hf = parser.parse_expr(field_str, flags, var_name, [0])
    if hf.flags & FL_VAR:
        bad = FL_GRAPH | FL_PERCENT | FL_BUCKET | FL_LOG2
    else:
        bad = FL_BUCKET | FL_LOG2 | FL_SYM | FL_SYM_OFFSET | FL_SYSCALL | FL_STACKTRACE
    if hf.flags & bad:
        err.fail("BAD_FIELD_MODIFIER", field_str)
    hd.fields.append(hf)
    hd.n_vals += 1
    return hf


def _create_val_fields(err, parser, hd: HistData) -> None:
    hd.fields.append(create_hist_field(None, FL_HITCOUNT))
    hd.n_vals = 1
    j = 1
    rest = hd.attrs.vals_str
    if rest is not None:
        n_hitcount = 0
        i = 0
        while i < TRACING_MAP_VALS_MAX and j < TRACING_MAP_VALS_MAX:
            i += 1
            field_str, rest = strsep(rest, ",")
            if field_str is None:
                break
            if field_str == "hitcount":
                n_hitcount += 1
                if n_hitcount == 1:
                    continue
            j += 1
            _create_val_field(err, parser, hd, field_str)
        if rest is not None and rest != "hitcount":
            raise KernelError(errno.EINVAL)
    if j == 1 and hd.attrs.no_hitcount:
        err.fail("NEED_NOHC_VAL", 0, errno.ENOENT)


def _create_var_fields(err, parser, hd: HistData, others: list) -> None:
    for var_name, expr in hd.var_defs:
        taken = hd.find_var_field(var_name) or any(
            o.find_var_field(var_name) for o in others)
        if taken and not hd.remove:
            err.fail("DUPLICATE_VAR", var_name)
        hd.n_vars += 1
        hf = _create_val_field(err, parser, hd, expr, var_name, FL_VAR)
        if hf.flags & FL_EXECNAME:
            # update_var_execname(): the variable holds the comm
            hf.flags = FL_STRING | FL_VAR | FL_EXECNAME
            hf.size, hf.is_signed, hf.fn = MAX_FILTER_STR_VAL, 0, "execname"


def _has_hist_vars(hf, level: int) -> bool:
    """``field_has_hist_vars()``: a key cannot read variables."""
    if level > 3 or hf is None:
        return False
    if hf.flags & (FL_VAR | FL_VAR_REF):
        return True
    return any(_has_hist_vars(op, level + 1) for op in hf.operands)


def _create_key_fields(err, parser, hd: HistData) -> None:
    rest = hd.attrs.keys_str
    for _ in range(TRACING_MAP_KEYS_MAX):
        field_str, rest = strsep(rest, ",")
        if field_str is None:
            break
        if field_str == "stacktrace":
            hf = create_hist_field(None, FL_KEY | FL_STACKTRACE)
            size = HIST_STACKTRACE_DEPTH * 8
        else:
            hf = parser.parse_expr(field_str, FL_KEY, None, [0])
            if _has_hist_vars(hf, 0):
                err.fail("INVALID_REF_KEY", field_str)
            size = hf.size
        size = (size + 7) & ~7
        hf.size, hf.offset = size, hd.key_size
        hd.fields.append(hf)
        hd.key_size += size
        if hd.key_size > HIST_KEY_SIZE_MAX:
            raise KernelError(errno.EINVAL)
    if rest is not None:
        raise KernelError(errno.EINVAL)


def _is_descending(err: HistErr, s) -> bool:
    if s is None or s == "ascending":
        return False
    if s == "descending":
        return True
    err.fail("INVALID_SORT_MODIFIER", s)


def _create_sort_keys(err: HistErr, hd: HistData) -> None:
    rest = hd.attrs.sort_key_str
    if rest is None:
        return
    keys = []
    for i in range(TRACING_MAP_SORT_KEYS_MAX):
        field_str, rest = strsep(rest, ",")
        if field_str is None:
            break
        if not field_str:
            err.fail("EMPTY_SORT_FIELD", "sort=")
        if i == TRACING_MAP_SORT_KEYS_MAX - 1 and rest is not None:
            err.fail("TOO_MANY_SORT_FIELDS", "sort=")
        field_name, modifier = strsep(field_str, ".")
        if not field_name:
            err.fail("EMPTY_SORT_FIELD", "sort=")
        if field_name == "hitcount":
            keys.append(SortKey(0, _is_descending(err, modifier)))
            continue
        k = 1
        for hf in hd.fields[1:]:
            if hf.flags & FL_VAR:
                continue
            idx, k = k, k + 1
            if field_name == hist_field_name(hf, 0):
                keys.append(SortKey(idx, _is_descending(err, modifier)))
                break
        else:
            err.fail("INVALID_SORT_FIELD", field_name)
    hd.sort_keys = keys or [SortKey()]


def _key_cmp(hf):
    field = hf.field
    if hf.flags & FL_STACKTRACE:
        return cmp_none
    if field is None or hf.flags & FL_CPU:
        return cmp_num(hf.size, hf.is_signed)
    if field.is_string:
        return cmp_string
    return cmp_num(field.size, field.signed)


def _create_tracing_map_fields(hd: HistData) -> None:
    m = hd.map
    idx = 0
    for hf in hd.fields:
        if hf.flags & FL_KEY:
            idx = m.add_key_field(_key_cmp(hf))
        elif not hf.flags & FL_VAR:
            idx = m.add_sum_field()
        if idx < 0:
            raise KernelError(errno.EINVAL)
        if hf.flags & FL_VAR:
            idx = m.add_var()
            if idx < 0:
                raise KernelError(errno.EINVAL)
            hf.var_idx = idx
            hf.var_hist = hd


def create_hist_data(err: HistErr, tr, ev, fields: dict, attrs: HistAttrs, remove: bool,
                     others: list, others_fn=None) -> HistData:
    """``create_hist_data()``; ``others`` are the HistData of the event's
    other hist triggers (their variables' names are taken); ``others_fn()``
    gives (event, HistData) of every registered hist trigger of the array
    (where references find variables)."""
    hd = HistData(tr, ev, attrs, remove)
    hd.fields_dict = fields
    if others_fn is not None:
        hd.others = others_fn
    hd.actions = parse_actions(err, tr, attrs)
    parser = FieldParser(err, fields, hd)
    _parse_var_defs(err, hd)
    _create_val_fields(err, parser, hd)
    _create_var_fields(err, parser, hd, others)
    _create_key_fields(err, parser, hd)
    hd.var_defs = []
    _create_sort_keys(err, hd)
    hd.map = TracingMap(attrs.map_bits or TRACING_MAP_BITS_DEFAULT)
    _create_tracing_map_fields(hd)
    if len(hd.map.fields) < 2:                     # tracing_map_init()
        raise KernelError(errno.EINVAL)
    return hd


def _compatible_field(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    return (a.name, a.type, a.size, a.signed) == (b.name, b.type, b.size, b.signed)


def hist_data_match(a: HistData, b: HistData) -> bool:
    """The field and sort-key half of ``hist_trigger_match()``."""
    if (a.n_vals, len(a.fields), len(a.sort_keys)) != (b.n_vals, len(b.fields),
                                                       len(b.sort_keys)):
        return False
    if not actions_match(a.actions, b.actions):
        return False
    for fa, fb in zip(a.fields, b.fields):
        if fa.flags != fb.flags or not _compatible_field(fa.field, fb.field):
            return False
        if (fa.offset, fa.size, bool(fa.is_signed)) != (fb.offset, fb.size, bool(fb.is_signed)):
            return False
        if fa.var_name != fb.var_name:
            return False
    for sa, sb in zip(a.sort_keys, b.sort_keys):
        if (sa.field_idx, sa.descending) != (sb.field_idx, sb.descending):
            return False
    return True


__all__ = ["HistAttrs", "HistData", "create_hist_data", "hist_data_match",
           "parse_hist_trigger_attrs"]
