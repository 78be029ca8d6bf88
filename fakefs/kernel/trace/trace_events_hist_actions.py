"""Inter-event histograms (kernel/trace/trace_events_hist.c): variable
references across hist triggers and the handlers and actions of a trigger.

* References: ``$var`` (or ``system.event.$var``) names a variable of a
  hist trigger of the same array (``find_event_var()``: the ``onmatch``
  events first, then the one trigger that defines it; two make it
  ambiguous).  A reference reads the other histogram's element of the
  *same key*; a reference in an expression reads it once
  (``read_once``): it is unset afterwards.
* Handlers: ``onmatch(system.event)`` runs its action whenever the
  references of the trigger resolve; ``onmax($var)``/``onchange($var)`` when
  the variable exceeds / differs from what the element tracked
  (``__max``/``__change``).
* Actions: ``trace(<synth>,params)`` or ``<synth>(params)`` generate a
  synthetic event (``trace_events_synth.py``), ``save(fields)`` keeps fields
  of the event in the element (shown after ``max:``/``changed:``),
  ``snapshot()`` takes a conditional snapshot of the array.

Each failure is the kernel's, with its ``error_log`` entry
(``HistErr``).
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from .trace_events_hist_fields import (FL_ALIAS, FL_EXECNAME, FL_STACKTRACE,
                                       FL_TIMESTAMP, FL_TIMESTAMP_USECS, FL_VAR, FL_VAR_REF,
                                       HistField, as_u64, expr_field_str, strsep)
from .trace_events_trigger import PRINT_EVENT
from .trace_snapshot import arm_snapshot, disarm_snapshot, update_max_tr
from .tracing_map import TRACING_MAP_VARS_MAX

SYNTH_FIELDS_MAX = 64
HANDLER_ONMATCH, HANDLER_ONMAX, HANDLER_ONCHANGE = 1, 2, 3
ACTION_SAVE, ACTION_TRACE, ACTION_SNAPSHOT = 1, 2, 3


class Action:
    """``struct action_data``"""

    __slots__ = ("handler", "action", "action_name", "params", "use_trace_keyword",
                 "synth_event_name", "synth_event", "var_ref_idx", "match_system", "match_event",
                 "var_str", "var_ref", "track_var_idx", "save_vars", "snap")

    def __init__(self, handler: int):
        self.handler = handler
        self.action = 0
        self.action_name = ""
        self.params: list[str] = []
        self.use_trace_keyword = False
        self.synth_event_name = None
        self.synth_event = None
        self.var_ref_idx: list = []      # per synthetic field: a var_refs index, or a field reader
        self.match_system = None
        self.match_event = None
        self.var_str = None
        self.var_ref = None              # the tracked variable's reference
        self.track_var_idx = -1
        self.save_vars: list = []        # (name, HistField, map var index)
        self.snap = None                 # SnapshotTrack of a snapshot() action


class SnapshotTrack:
    """``struct track_data`` of a ``snapshot()`` action (the array's
    conditional snapshot)."""

    __slots__ = ("track_val", "key", "comm", "updated")

    def __init__(self):
        self.track_val = 0
        self.key = None
        self.comm = None
        self.updated = False


# --- parsing (parse_actions, onmatch_parse, track_data_parse, action_parse) -------

def _parse_params(err, params: str, data: Action) -> None:
    first = True
    rest = params
    while rest is not None:
        if len(data.params) >= SYNTH_FIELDS_MAX:
            err.fail("TOO_MANY_PARAMS", 0)
        param, rest = strsep(rest, ",")
        param = param.strip()
        if len(param) < 2:
            err.fail("INVALID_PARAM", param)
        if first and data.use_trace_keyword:
            data.synth_event_name = param
            first = False
            continue
        first = False
        data.params.append(param)


def _action_parse(err, s, data: Action, handler: int) -> None:
    _h, s = strsep(s, ".")
    if s is None:
        err.fail("ACTION_NOT_FOUND", 0)
    action_name, s = strsep(s, "(")
    if s is None:
        err.fail("ACTION_NOT_FOUND", 0)
    if action_name.startswith("save"):
        params, s = strsep(s, ")")
        _parse_params(err, params, data)
        if handler == HANDLER_ONMATCH:
            err.fail("ACTION_MISMATCH", action_name)
        data.action = ACTION_SAVE
    elif action_name.startswith("snapshot"):
        params, s = strsep(s, ")")
        if s is None:
            err.fail("NO_CLOSING_PAREN", params)
        if handler == HANDLER_ONMATCH:
            err.fail("ACTION_MISMATCH", action_name)
        data.action = ACTION_SNAPSHOT
    else:
        params, s = strsep(s, ")")
        data.use_trace_keyword = action_name.startswith("trace")
        _parse_params(err, params, data)
        data.action = ACTION_TRACE
    data.action_name = action_name
    data.handler = handler


def parse_actions(err, tr, attrs) -> list:
    """``parse_actions()``: the Action of each ``on...`` part."""
    events = {(ev.system, ev.name) for ev in tr.tracing.events}
    events.update(("ftrace", d.name) for d in tr.tracing.ftrace_events)
    out = []
    for s in attrs.actions:
        if s.startswith("onmatch("):
            data = Action(HANDLER_ONMATCH)
            match_event, rest = strsep(s[len("onmatch("):], ")")
            if rest is None:
                err.fail("NO_CLOSING_PAREN", match_event)
            system, event = strsep(match_event, ".")
            if event is None:
                err.fail("SUBSYS_NOT_FOUND", system)
            if (system, event) not in events:
                err.fail("INVALID_SUBSYS_EVENT", event)
            data.match_system, data.match_event = system, event
            _action_parse(err, rest, data, HANDLER_ONMATCH)
        else:
            handler = HANDLER_ONMAX if s.startswith("onmax(") else HANDLER_ONCHANGE
            data = Action(handler)
            var_str, rest = strsep(s[s.index("(") + 1:], ")")
            if rest is None:
                raise KernelError(errno.EINVAL)
            data.var_str = var_str
            _action_parse(err, rest, data, handler)
        out.append(data)
    return out


# --- variables (find_var_field, find_event_var, create_var_ref) --------------------

def find_var_field(hd, name: str):
    for f in hd.fields:
        if f.flags & FL_VAR and f.var_name == name:
            return f
    return None


def _find_var_file(err, hd, system, event, var):
    """``find_var_file()``: the event whose hist triggers define ``var``."""
    if system:
        if (system, event) == (PRINT_EVENT.system, PRINT_EVENT.name):
            return PRINT_EVENT
        return next((ev for ev in hd.tr.tracing.events
                     if ev.system == system and ev.name == event), None)
    found = None
    for ev, other in hd.registered():
        if ev is found:
            continue
        if find_var_field(other, var) is not None:
            if found is not None:
                err.log("VAR_NOT_UNIQUE", err.pos(var))
                return None
            found = ev
    return found


def _find_file_var(hd, ev, var):
    for e, other in hd.registered():
        if e is ev:
            f = find_var_field(other, var)
            if f is not None:
                return f
    return None


def find_event_var(err, hd, system, event, var):
    """``find_event_var()``"""
    if not system or not event:
        found = None
        for data in hd.actions:
            if data.handler != HANDLER_ONMATCH:
                continue
            ev = _find_var_file(err, hd, data.match_system, data.match_event, var)
            if ev is None:
                continue
            f = _find_file_var(hd, ev, var)
            if f is not None:
                if found is not None:
                    err.log("VAR_NOT_UNIQUE", err.pos(var))
                    return None
                found = f
        if found is not None:
            return found
    ev = _find_var_file(err, hd, system, event, var)
    return _find_file_var(hd, ev, var) if ev is not None else None


def create_var_ref(hd, var: HistField, system=None, event=None):
    """``create_var_ref()``: one reference per variable and trigger."""
    for ref in hd.var_refs:
        if ref.var_idx == var.var_idx and ref.var_hist is var.var_hist:
            return ref
    if len(hd.var_refs) >= TRACING_MAP_VARS_MAX:
        return None
    ref = HistField(None, FL_VAR_REF)
    ref.fn = "var_ref"
    init_var_ref(ref, var, system, event)
    ref.var_ref_idx = len(hd.var_refs)
    hd.var_refs.append(ref)
    return ref


def init_var_ref(ref: HistField, var: HistField, system, event) -> None:
    ref.var_idx = var.var_idx
    ref.var_hist = var.var_hist
    ref.size, ref.is_signed = var.size, var.is_signed
    ref.flags |= var.flags & (FL_TIMESTAMP | FL_TIMESTAMP_USECS | FL_STACKTRACE)
    ref.system, ref.event_name = system, event
    ref.name = var.var_name or var.name
    ref.var_type = var.var_type


def parse_var_ref(err, hd, system, event, var_name: str):
    """``parse_var_ref()``: a reference, or None (logged)."""
    if len(var_name) < 2 or var_name[0] != "$":
        return None
    name = var_name[1:]
    var = find_event_var(err, hd, system, event, name)
    ref = create_var_ref(hd, var, system, event) if var is not None else None
    if ref is None:
        err.log("VAR_NOT_FOUND", err.pos(name))
    return ref


def create_alias(ref: HistField, var_name: str) -> HistField:
    """``create_alias()``: ``v=$ref`` is a variable reading the reference."""
    alias = HistField(None, FL_ALIAS | FL_VAR, var_name)
    alias.fn = "var_ref"
    alias.operands[0] = ref
    init_var_ref(alias, ref, ref.system, ref.event_name)
    alias.var_ref_idx = ref.var_ref_idx
    return alias


def find_target_event_var(hd, system, event, var):
    if system and event:
        ev = hd.event
        if system != ev.system or event != ev.name:
            return None
    elif system or event:
        return None
    return find_var_field(hd, var)


# --- creation (create_actions) ---------------------------------------------------

def _create_var(err, hd, name: str) -> int:
    if find_var_field(hd, name) is not None and not hd.remove:
        err.fail("ONX_VAR_CREATE_FAIL", 0)
    idx = hd.map.add_var()
    if idx < 0:
        err.fail("ONX_VAR_CREATE_FAIL", 0)
    return idx


def _field_reader(err, hd, parser, param: str):
    """A field of the event being defined, as a synthetic event's or
    ``save()``'s param (``create_target_field_var()``): its HistField."""
    if "." in param or param.startswith("$"):
        return None
    if param not in hd.fields_dict or param == "common_timestamp":
        return None
    try:
        return parser.parse_expr(param, 0, None, [0])
    except KernelError:
        return None


def _event_of(hd, system: str, event: str):
    if (system, event) == (PRINT_EVENT.system, PRINT_EVENT.name):
        return PRINT_EVENT
    return next((ev for ev in hd.tr.tracing.events if ev.system == system and ev.name == event),
                None)


def _compatible_keys(target, hd) -> bool:
    """``compatible_keys()``"""
    a, b = hd.key_fields, target.key_fields
    if len(a) != len(b):
        return False
    return all(_type_of(x) == _type_of(y) and x.size == y.size
               and bool(x.is_signed) == bool(y.is_signed) for x, y in zip(a, b))


def _field_var_hist(err, hd, system: str, event: str, field: str):
    """``create_field_var_hist()``: a hist trigger on the other event with
    the keys (and filter) of its first compatible one and the variable
    ``synthetic_<field>=<field>``; the variable."""
    ev = _event_of(hd, system, event)
    if ev is None:
        err.fail("EVENT_FILE_NOT_FOUND", field)
    compat = next((o for e, o in hd.registered() if e is ev and _compatible_keys(hd, o)), None)
    if compat is None:
        err.fail("HIST_NOT_FOUND", field)
    name = "synthetic_" + field
    var = find_event_var(err, hd, system, event, name)
    if var is not None:
        return var
    cmd = "keys=%s:%s=%s" % (",".join(expr_field_str(k) for k in compat.key_fields), name, field)
    if compat.filter_str is not None:
        cmd += " if %s" % compat.filter_str
    try:
        hd.run_hist(ev, "hist", cmd)
    except KernelError as e:
        err.fail("HIST_CREATE_FAIL", field, e.errno)
    hd.field_var_hists.append((ev, cmd))
    var = find_event_var(err, hd, system, event, name)
    if var is None:
        err.fail("SYNTH_VAR_NOT_FOUND", field)
    return var


def unregister_field_var_hists(hd) -> None:
    """``unregister_field_var_hists()``: the triggers made for field
    variables go with the trigger that made them."""
    hists, hd.field_var_hists = hd.field_var_hists, []
    for ev, cmd in hists:
        try:
            hd.run_hist(ev, "!hist", cmd)
        except KernelError:
            pass                       # (the kernel warns once)


def _type_of(hf: HistField) -> str:
    f = hf.field
    if hf.var_type:
        return hf.var_type
    if f is not None:
        return f.type
    if hf.flags & (FL_TIMESTAMP | FL_EXECNAME):
        return "u64" if hf.flags & FL_TIMESTAMP else "char[16]"
    return "u64"


def _check_synth_field(sf, hf: HistField) -> bool:
    """``check_synth_field()``"""
    htype = _type_of(hf)
    if "char[" in htype and sf.is_string and sf.is_dynamic:
        return True
    if bool(hf.flags & FL_STACKTRACE) != sf.is_stack:
        return False
    if sf.is_stack:
        return True
    if sf.type != htype:
        if sf.size != hf.size or (not sf.is_string and bool(sf.is_signed) != bool(hf.is_signed)):
            return False
    return True


def _trace_create(err, hd, parser, data: Action, find_synth) -> None:
    name = data.synth_event_name if data.use_trace_keyword else data.action_name
    se = find_synth(name)
    if se is None:
        err.fail("SYNTH_EVENT_NOT_FOUND", name)
    se.ref += 1
    try:
        pos = 0
        for p in data.params:
            system, rest = strsep(p, ".")
            if rest is None:
                param, system, event = system, None, None
            else:
                event, param = strsep(rest, ".")
                if param is None:
                    raise KernelError(errno.EINVAL)
            if param.startswith("$"):
                hf = find_target_event_var(hd, system, event, param[1:])
                if hf is None:
                    if not system and data.handler == HANDLER_ONMATCH:
                        system, event = data.match_system, data.match_event
                    hf = find_event_var(err, hd, system, event, param[1:])
                if hf is None:
                    err.fail("PARAM_NOT_FOUND", param[1:])
                ok = pos < len(se.synth_fields) and _check_synth_field(se.synth_fields[pos], hf)
                if ok:
                    ref = create_var_ref(hd, hf, system, event)
                    if ref is None:
                        raise KernelError(errno.ENOMEM)
                    data.var_ref_idx.append(ref.var_ref_idx)
            else:
                hf = None
                if not system or (system == hd.event.system and event == hd.event.name):
                    hf = _field_reader(err, hd, parser, param)
                local = hf is not None
                if not local:
                    # a field of another event: a variable of a hist trigger
                    # made there for it (create_field_var_hist)
                    if not system and data.handler == HANDLER_ONMATCH:
                        system, event = data.match_system, data.match_event
                    if not event:
                        raise KernelError(errno.EINVAL)
                    hf = _field_var_hist(err, hd, system, event, param)
                ok = pos < len(se.synth_fields) and _check_synth_field(se.synth_fields[pos], hf)
                if ok and local:
                    data.var_ref_idx.append(hf)
                elif ok:
                    ref = create_var_ref(hd, hf, system, event)
                    if ref is None:
                        raise KernelError(errno.ENOMEM)
                    data.var_ref_idx.append(ref.var_ref_idx)
            if not ok:
                err.fail("SYNTH_TYPE_MISMATCH", param)
            pos += 1
        if pos != len(se.synth_fields):
            err.fail("SYNTH_COUNT_MISMATCH", se.name)
    except KernelError:
        se.ref -= 1
        raise
    data.synth_event = se


def create_actions(err, hd, parser, find_synth) -> None:
    """``create_actions()``; on failure what was taken is given back."""
    try:
        for data in hd.actions:
            if data.handler != HANDLER_ONMATCH:
                if not data.var_str.startswith("$"):
                    err.fail("ONX_NOT_VAR", data.var_str)
                var = find_target_event_var(hd, None, None, data.var_str[1:])
                if var is None:
                    err.fail("ONX_VAR_NOT_FOUND", data.var_str[1:])
                data.var_ref = create_var_ref(hd, var)
                data.track_var_idx = _create_var(
                    err, hd, "__max" if data.handler == HANDLER_ONMAX else "__change")
            if data.action == ACTION_TRACE:
                _trace_create(err, hd, parser, data, find_synth)
            elif data.action == ACTION_SNAPSHOT:
                tr = hd.tr
                if tr.current.use_max_tr or tr.cond_snapshot is not None:
                    raise KernelError(errno.EBUSY)    # tracing_snapshot_cond_enable()
                arm_snapshot(tr)
                data.snap = SnapshotTrack()
                tr.cond_snapshot = (hd, data)
            elif data.action == ACTION_SAVE:
                if any(d.save_vars for d in hd.actions):
                    err.fail("TOO_MANY_SAVE_ACTIONS", 0, errno.EEXIST)
                saves = []
                for p in data.params:
                    hf = _field_reader(err, hd, parser, p)
                    if hf is None:
                        err.fail("FIELD_VAR_CREATE_FAIL", p)
                    idx = hd.map.add_var()
                    if idx < 0:
                        err.fail("FIELD_VAR_CREATE_FAIL", p)
                    saves.append((p, hf, idx))
                data.save_vars = saves
    except KernelError:
        destroy_actions(hd)
        unregister_field_var_hists(hd)
        raise


def destroy_actions(hd) -> None:
    """``action_data_destroy()``/``track_data_destroy()`` of each action."""
    for data in hd.actions:
        if data.synth_event is not None:
            data.synth_event.ref -= 1
            data.synth_event = None
        if data.snap is not None:
            tr = hd.tr
            if tr.cond_snapshot is not None and tr.cond_snapshot[0] is hd:
                tr.cond_snapshot = None
                disarm_snapshot(tr)
            data.snap = None


def actions_match(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if (x.handler, x.action, x.params) != (y.handler, y.action, y.params):
            return False
        nx = x.synth_event_name if x.use_trace_keyword else x.action_name
        ny = y.synth_event_name if y.use_trace_keyword else y.action_name
        if nx != ny:
            return False
        if x.handler == HANDLER_ONMATCH:
            if (x.match_system, x.match_event) != (y.match_system, y.match_event):
                return False
        elif x.var_str != y.var_str:
            return False
    return True


# --- running (hist_trigger_actions) --------------------------------------------------

def run_actions(t, hd, elt, entry, a, cpu, key, vals) -> None:
    """Each action once the references resolved; ``vals`` their values."""
    for data in hd.actions:
        if data.handler == HANDLER_ONMATCH:
            _trace(t, hd, data, elt, entry, a, cpu, vals)
            continue
        v = vals[data.var_ref.var_ref_idx]
        if type(v) is not int:
            v = as_u64(v)                 # a string or stack variable: where it is kept
        track = elt.vars[data.track_var_idx]
        if data.handler == HANDLER_ONMAX:
            if not v > track:
                continue
        elif v == track:
            continue
        elt.vars[data.track_var_idx] = v
        if data.action == ACTION_SAVE:
            for _name, hf, idx in data.save_vars:
                elt.vars[idx] = t.evaluate(hf, entry, a, cpu, elt)
        elif data.action == ACTION_TRACE:
            _trace(t, hd, data, elt, entry, a, cpu, vals)
        elif data.action == ACTION_SNAPSHOT:
            _snapshot(t, hd, data, elt, key, entry, cpu)


def _trace(t, hd, data: Action, elt, entry, a, cpu, vals) -> None:
    se = data.synth_event
    values = []
    for ref in data.var_ref_idx:
        values.append(vals[ref] if isinstance(ref, int) else t.evaluate(ref, entry, a, cpu, elt))
    se.fire(hd.tr.tracing, cpu, entry, values)


def _snapshot(t, hd, data: Action, elt, key, entry, cpu) -> None:
    """``tracing_snapshot_cond()`` with ``cond_snapshot_update()``."""
    tr = hd.tr
    snap = data.snap
    v = elt.vars[data.track_var_idx]
    if data.handler == HANDLER_ONMAX and not v > snap.track_val:
        return
    if data.handler == HANDLER_ONCHANGE and v == snap.track_val:
        return
    snap.track_val = v
    snap.key = key
    snap.comm = elt.private
    snap.updated = True
    update_max_tr(tr)


__all__ = ["Action", "actions_match", "create_actions", "create_alias", "destroy_actions",
           "find_var_field", "parse_actions", "parse_var_ref", "run_actions",
           "unregister_field_var_hists"]
