"""Hist triggers (kernel/trace/trace_events_hist.c): the ``hist`` event
command and the ``hist`` file.

API for the trigger framework (``trace_events_trigger.py``)
------------------------------------------------------------
* ``HistRegistry()`` — one per ``Tracing``: the kernel-wide list of named
  triggers (``named_triggers``), shared by all trace arrays.
* ``event_hist_trigger_parse(reg, tr, ev, glob, param, triggers, fields=None,
  set_filter=None, registered=None, run_hist=None) -> HistOp`` — the
  command's ``parse`` (``registered()``: every hist trigger of the array, where
  references find variables; ``run_hist(ev, glob, cmd)``: a hist command on
  another event, for field variables; see trace_events_hist_actions.py): ``glob`` is
  ``"hist"`` or ``"!hist"``, ``param`` the text after ``hist:`` as
  ``trigger_process_regex()`` hands it over (None when there is none),
  ``triggers`` the event file's hist triggers in list order.  Raises
  ``KernelError`` (after logging to ``tr``'s error_log as stock does), or
  returns ``HistOp(kind, trigger)``:

  - ``"add"``: append ``trigger`` at the *tail* of the event's trigger list
    and enable the event in soft mode (``hist_trigger_enable``);
  - ``"remove"``: ``!hist:...`` matched ``trigger``; it was freed, take it
    off the list (and drop the soft-mode reference);
  - ``"none"``: nothing to add or remove (``pause``/``cont``/``clear`` of an
    existing trigger, or ``!hist`` matching nothing: success as stock).
  ``fields`` defaults to ``event_fields(ev)``; ``set_filter(text)`` compiles
  the trigger's ``if`` filter (default: the event filter language, errors
  logged as ``event filter parse error``); ``ftrace_print_fields()`` are
  those of ``ftrace/print``.
* ``HistTrigger.hit(entry, cpu, stack=None)`` — the event fired (called
  after the record exists: hist is a post-record trigger with
  ``EVENT_CMD_FL_NEEDS_REC``).  Paused triggers and entries the filter
  rejects are skipped here.  ``stack`` (return addresses, innermost
  first) is only read for ``stacktrace`` keys; without it they are 0.
* ``HistTrigger.listing()`` — the trigger file line (``...[active]\\n``).
* ``HistTrigger.free()`` — when the framework drops a trigger without
  ``!hist`` (O_TRUNC of the trigger file: ``hist_unreg_all``, or the event
  going away).
* ``HistTrigger.pause()/cont()/clear()`` — as ``enable_hist``/``disable_hist``
  and ``:pause``/``:cont``/``:clear`` do.
* ``hist_text(tr, triggers) -> str`` — the ``hist`` file of an event.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from .trace_clock import clock_in_ns
from .trace_events_filter import filters_of
from .trace_events_filter_fields import (COMMON, FILTER_OTHER, FILTER_STATIC_STRING, GENERIC,
                                         Field, event_fields)
from .trace_events_filter_parse import ERR_TEXT as FILTER_ERR_TEXT, FILT_ERR_ERRNO, FilterError
from .trace_events_hist_data import create_hist_data, hist_data_match, parse_hist_trigger_attrs
from .trace_events_hist_actions import (create_actions, destroy_actions, run_actions,
                                        unregister_field_var_hists)
from .trace_events_hist_fields import (FL_STACKTRACE, FL_STRING, FL_VAR,
                                       HIST_STACKTRACE_DEPTH, U64, FieldParser, HistErr, binary_op)
from .trace_events_hist_fields import as_u64 as _as_u64
from .trace_events_hist_output import Symbols, hist_trigger_show, trigger_listing

FILTER_ERR_LOC = "event filter parse error"


class HistRegistry:
    """The kernel's ``named_triggers`` list (newest first)."""

    def __init__(self):
        self.named: list = []

    def find_named(self, name):
        for t in self.named:
            if t.named_data is None and t.name == name:
                return t
        return None

    def is_named(self, t) -> bool:
        return any(n is t for n in self.named)

    def save(self, name: str, t) -> None:
        t.name = name
        self.named.insert(0, t)

    def delete(self, t) -> None:
        t.name = None
        self.named = [n for n in self.named if n is not t]


class HistOp:
    def __init__(self, kind: str, trigger=None):
        self.kind = kind
        self.trigger = trigger


def _comm_of(tr):
    """The comm an ``execname`` key keeps: the task's, else the saved one."""
    sched, savedcmd = tr.kernel.sched, tr.tracing.savedcmd

    def comm(pid):
        t = sched.find(pid) if pid else None
        return savedcmd.find(pid) if t is None else t.comm
    return comm


def _event_time_stamp(hd, ns: int) -> int:
    """``common_timestamp``: the event's stamp in the array's clock (the
    entry is stamped when committed, after its triggers: a counter's next
    reading), in microseconds with ``.usecs`` for the clocks counting ns."""
    tr = hd.tr
    t = tr.next_stamp(ns)
    return (t + 500) // 1000 if hd.ts_in_usecs and clock_in_ns(tr.clock) else t


def _order_base_2(v: int) -> int:
    return (v - 1).bit_length() if v > 1 else 0


def _num(g):
    """``g``'s value as the u64 an operand is (a string or a stack is
    where it is kept: ``as_u64``)."""
    def value(e, a, cpu, elt):
        v = g(e, a, cpu, elt)
        return v if type(v) is int else _as_u64(v)
    return value


class _Compiler:
    """Evaluators of hist fields over entries of one event."""

    def __init__(self, hd, fields: dict):
        self.hd = hd
        self.fields = fields
        # no hist field reads the generic comm (it has no size): no comm() here
        self.env = {"cv_" + f.name: f.conv for f in fields.values() if f.conv is not None}

    def read(self, field):
        """The value of event field ``field`` (by name on this event)."""
        f = self.fields.get(field.name, field)
        return eval("lambda e, a, cpu: " + f.expr, self.env)

    def build(self, hf):
        fn = hf.fn
        if fn == "counter":
            return lambda e, a, cpu, elt: 1
        if fn == "const":
            c = hf.constant
            return lambda e, a, cpu, elt: c
        if fn == "cpu":
            return lambda e, a, cpu, elt: cpu
        if fn == "execname":
            return lambda e, a, cpu, elt: elt.private
        if fn == "timestamp":
            hd = self.hd
            return lambda e, a, cpu, elt: _event_time_stamp(hd, e[0])
        if fn == "stack" and hf.field is not None:
            r = self.read(hf.field)
            return lambda e, a, cpu, elt: tuple(r(e, a, cpu) or ())
        if fn == "var_ref":
            hd, i = self.hd, hf.var_ref_idx
            return lambda e, a, cpu, elt: hd.ref_vals[i]
        if hf.flags & FL_STACKTRACE and hf.field is None:
            hd = self.hd
            return lambda e, a, cpu, elt: tuple(hd.stack or ())[:HIST_STACKTRACE_DEPTH]
        if fn in ("log2", "bucket", "uminus"):
            g = _num(self.build(hf.operands[0]))
            if fn == "log2":
                return lambda e, a, cpu, elt: _order_base_2(g(e, a, cpu, elt))
            if fn == "uminus":
                return lambda e, a, cpu, elt: -g(e, a, cpu, elt) & U64
            b = hf.buckets
            return lambda e, a, cpu, elt: g(e, a, cpu, elt) // b * b
        if fn in ("plus", "minus", "mult", "div", "div_power2", "div_not_power2",
                  "div_mult_shift"):
            g1, g2 = _num(self.build(hf.operands[0])), _num(self.build(hf.operands[1]))
            d = hf.operands[1]
            return lambda e, a, cpu, elt: binary_op(fn, g1(e, a, cpu, elt), g2(e, a, cpu, elt), d)
        if fn == "string":
            r = self.read(hf.field)
            return lambda e, a, cpu, elt: str(r(e, a, cpu)).encode("latin-1", "replace")
        if fn[0] in "su" and fn[1:].isdigit():
            r = self.read(hf.field)
            bits = int(fn[1:])
            mask, sign = (1 << bits) - 1, 1 << (bits - 1)
            if fn[0] == "s":
                return lambda e, a, cpu, elt: (((_as_u64(r(e, a, cpu)) & mask) ^ sign) - sign) & U64
            return lambda e, a, cpu, elt: _as_u64(r(e, a, cpu)) & mask
        return lambda e, a, cpu, elt: 0


def _key_part(hf, v, stack):
    """(key value, its bytes in the compound key) of key field ``hf``."""
    if hf.flags & FL_STACKTRACE:
        frames = tuple(stack or ())[:HIST_STACKTRACE_DEPTH]
        frames += (0,) * (HIST_STACKTRACE_DEPTH - len(frames))
        return frames, b"".join(x.to_bytes(8, "little") for x in frames)
    if hf.flags & FL_STRING:
        s = v.split(b"\0", 1)[0][:hf.size - 1]
        return s, s.ljust(hf.size, b"\0")
    return v, v.to_bytes(8, "little")


class HistTrigger:
    """One hist trigger on one event (``struct event_trigger_data`` whose
    private data is the histogram, shared by the triggers of one name)."""

    def __init__(self, reg: HistRegistry, tr, hist, fields: dict):
        self.reg = reg
        self.tr = tr
        self.hist = hist
        self.fields = fields
        self.name = None            # "name=<name>" once registered as named
        self.named_data = None      # the named trigger whose histogram this shares
        self.ref = 0
        self.paused = False
        self.filter_str = None
        self.filter = None
        self.comm = _comm_of(tr)
        self.synth = None           # the synthetic event it is on (holds a reference)
        self.takes_stack = False    # a stacktrace key: hit() wants the stack
        self._execname = False      # an execname field: elements keep the comm
        self._keys: list = []
        self._vals: list = []
        self._compile()

    def _compile(self) -> None:
        hd = self.hist
        c = _Compiler(hd, self.fields)
        self._keys = [(hf, c.build(hf)) for hf in hd.key_fields]
        self._vals = [(i, hf, c.build(hf)) for i, hf in enumerate(hd.fields[:hd.n_vals])]
        self._compiler = c
        self.takes_stack = any(hf.flags & FL_STACKTRACE for hf in hd.fields)
        self._execname = hd.has_execname()

    def share(self, named) -> None:
        """Use the histogram of named trigger ``named``."""
        self.named_data = named
        self.hist = named.hist
        self._compile()

    # -- event_hist_trigger -------------------------------------------------
    def hit(self, entry, cpu: int, stack=None) -> None:
        if self.paused:
            return
        if self.filter is not None and not self.filter(entry, cpu):
            return
        a = entry[5]
        key, raw = [], []
        for hf, g in self._keys:
            if hf.flags & FL_STACKTRACE:
                # a stack field's stored stack, else the event's own
                k, b = _key_part(hf, None, g(entry, a, cpu, None) if hf.field else stack)
            else:
                k, b = _key_part(hf, g(entry, a, cpu, None), stack)
            key.append(k)
            raw.append(b)
        new_private = None
        if self._execname:
            comm, pid = self.comm, entry[2]
            new_private = lambda: comm(pid)[:15].encode("latin-1", "replace")  # noqa: E731
        hd = self.hist
        m = hd.map
        key = tuple(key)
        raw = b"".join(raw)
        if hd.var_refs:
            # resolve_var_refs(): the other triggers' variables of this key
            hd.ref_vals = [0] * len(hd.var_refs)
            if not _resolve(hd, raw, False):
                return
        hd.stack = stack
        elt = m.insert(key, raw, new_private)
        if elt is None:
            return
        for i, hf, g in self._vals:
            v = g(entry, a, cpu, elt)
            if hf.flags & FL_VAR:
                m.set_var(elt, hf.var_idx, v)
            else:
                m.update_sum(elt, i, v if isinstance(v, int) else _as_u64(v))
        if hd.actions and _resolve(hd, raw, True):
            run_actions(self, hd, elt, entry, a, cpu, key, hd.ref_vals)

    def evaluate(self, hf, entry, a, cpu: int, elt):
        """The value of field ``hf`` (an action's param) for this hit."""
        return self._compiler.build(hf)(entry, a, cpu, elt)

    # -- state -----------------------------------------------------------------
    def listing(self) -> str:
        return trigger_listing(self)

    def pause(self) -> None:
        self.paused = True

    def cont(self) -> None:
        self.paused = False

    def clear(self) -> None:
        self.hist.map.clear()

    def init(self) -> None:
        """``event_hist_trigger_init`` / ``_named_init``."""
        named = self.named_data
        if named is not None:
            named.init()
            self.ref += 1
            self.reg.save(named.name, self)
            return
        if not self.ref and self.hist.attrs.name:
            self.reg.save(self.hist.attrs.name, self)
        self.ref += 1

    def free(self) -> None:
        """``event_hist_trigger_free`` / ``_named_free``."""
        if self.ref <= 0:
            return
        if self.named_data is not None:
            self.named_data.free()
        self.ref -= 1
        if not self.ref and self.name:
            self.reg.delete(self)
        if not self.ref and self.named_data is None:
            self.hist.dying = True
            destroy_actions(self.hist)
            unregister_field_var_hists(self.hist)
        if not self.ref and self.synth is not None:
            self.synth.ref -= 1
            self.synth = None


def _resolve(hd, key: bytes, self_refs: bool) -> bool:
    """``resolve_var_refs()``: the values of the references to the
    triggers' (``self_refs``: this one's) variables for ``key``, into
    ``hd.ref_vals``; False when one is not set."""
    vals = hd.ref_vals
    if len(vals) != len(hd.var_refs):
        vals = hd.ref_vals = [0] * len(hd.var_refs)
    for i, ref in enumerate(hd.var_refs):
        var_hd = ref.var_hist
        if var_hd is None:
            return False
        if (var_hd is hd) != self_refs:
            continue
        m = var_hd.map
        elt = m.lookup(key[:var_hd.key_size])
        if elt is None or not m.var_set(elt, ref.var_idx):
            return False
        if self_refs or not ref.read_once:
            vals[i] = m.read_var(elt, ref.var_idx)
        else:
            vals[i] = m.read_var_once(elt, ref.var_idx)
    return True


def check_var_refs(hd, reg_triggers) -> bool:
    """``check_var_refs()``: a variable of ``hd`` is referenced by another
    registered trigger."""
    for _ev, other in reg_triggers:
        if other is hd or other.dying:
            continue
        if any(ref.var_hist is hd for ref in other.var_refs):
            return True
    return False


def hist_trigger_match(reg: HistRegistry, data: HistTrigger, test: HistTrigger, named,
                       ignore_filter: bool) -> bool:
    if named is not None and named is not test and named is not test.named_data:
        return False
    if named is None and reg.is_named(test):
        return False
    if not ignore_filter and (data.filter_str is None) != (test.filter_str is None):
        return False
    if not hist_data_match(data.hist, test.hist):
        return False
    if not ignore_filter and data.filter_str is not None and data.filter_str != test.filter_str:
        return False
    return True


def _separate_filter(param: str):
    """(trigger text, filter text starting with ``if`` or None)."""
    p = 0
    while True:
        p = param.find("if", p)
        if p < 0:
            return param, None
        if p == 0:
            raise KernelError(errno.EINVAL)
        if param[p - 1] not in " \t":
            p += 1
            continue
        if p >= len(param) - 3:
            raise KernelError(errno.EINVAL)
        if param[p + 2] not in " \t":
            p += 1
            continue
        return param[:p - 1].strip(), param[p:].strip()


def _event_filter(tr, ev):
    def set_filter(text: str):
        try:
            return filters_of(tr).build(ev, text)
        except FilterError as e:
            if e.lasterr > 0:
                tr.log_err(FILTER_ERR_LOC, text, FILTER_ERR_TEXT, e.lasterr, e.pos)
            else:
                tr.log_err(FILTER_ERR_LOC, text, FILTER_ERR_TEXT, FILT_ERR_ERRNO, 0)
            raise KernelError(e.errno)
    return set_filter


def _set_trigger_filter(t: HistTrigger, text: str, set_filter) -> None:
    """``set_trigger_filter()``: ``text`` is ``if <filter>``."""
    cut = min((i for i in (text.find(" "), text.find("\t")) if i >= 0), default=-1)
    if cut < 0 or text[:cut] != "if":
        raise KernelError(errno.EINVAL)
    rest = text[cut + 1:]
    t.filter = set_filter(rest)
    t.filter_str = t.hist.filter_str = rest


def _set_clock(err: HistErr, tr, clock: str) -> None:
    """``tracing_set_clock()`` (a new clock empties the buffers)."""
    try:
        tr.set_clock(clock)
    except KernelError:
        err.fail("SET_CLOCK_FAIL", clock)


def _update_only(reg, t: HistTrigger, triggers: list) -> bool:
    """``existing_hist_update_only()``: pause, continue or clear."""
    attrs = t.hist.attrs
    if not (attrs.pause or attrs.cont or attrs.clear):
        return False
    named = reg.find_named(attrs.name) if attrs.name else None
    if named is not None and not hist_trigger_match(reg, t, named, named, True):
        return False
    if attrs.name and named is None:
        return False
    for test in triggers:
        if hist_trigger_match(reg, t, test, named, False):
            if attrs.pause:
                test.pause()
            elif attrs.cont:
                test.cont()
            else:
                test.clear()
            return True
    return False


def _register(reg, err: HistErr, t: HistTrigger, triggers: list) -> HistOp:
    """``hist_register_trigger()`` and the trigger's ``init``."""
    hd = t.hist
    attrs = hd.attrs
    named = reg.find_named(attrs.name) if attrs.name else None
    if named is not None and not hist_trigger_match(reg, t, named, named, True):
        err.fail("NAMED_MISMATCH", attrs.name)
    if not (attrs.name and named is None):
        for test in triggers:
            if hist_trigger_match(reg, t, test, named, False):
                err.fail("TRIGGER_EEXIST", 0, errno.EEXIST)
    if attrs.cont or attrs.clear:
        err.fail("TRIGGER_ENOENT_CLEAR", 0, errno.ENOENT)
    if attrs.pause:
        t.paused = True
    if named is not None:
        t.share(named)
    if hd.enable_timestamps:
        _set_clock(err, t.tr, attrs.clock)
    t.init()
    ops = t.tr.tracing.synth_ops
    se = ops.find(hd.event.name) if ops is not None and hd.event.system == "synthetic" else None
    if se is hd.event:
        se.ref += 1
        t.synth = se
    return HistOp("add", t)


def _find_synth(tr):
    ops = tr.tracing.synth_ops
    return (lambda name: None) if ops is None else ops.find


def event_hist_trigger_parse(reg: HistRegistry, tr, ev, glob: str, param, triggers: list,
                             fields: dict | None = None, set_filter=None,
                             registered=None, run_hist=None) -> HistOp:
    """The ``hist`` command (see the module's doc).  ``registered()``
    gives (event, HistData) of every hist trigger of the array,
    ``run_hist(event, glob, cmd)`` runs a hist command on another event
    (the triggers of field variables)."""
    if param is None:
        raise KernelError(errno.EINVAL)
    err = HistErr(tr, ev.system, ev.name, param)
    remove = glob.startswith("!")
    param, filter_text = _separate_filter(param)
    param = param.replace(".sym-offset", ".symXoffset")
    attrs = parse_hist_trigger_attrs(err, param)
    if fields is None:
        fields = event_fields(ev)
    hd = create_hist_data(err, tr, ev, fields, attrs, remove, [o.hist for o in triggers],
                          registered)
    t = HistTrigger(reg, tr, hd, fields)
    hd.run_hist = run_hist
    if filter_text is not None:
        _set_trigger_filter(t, filter_text, set_filter or _event_filter(tr, ev))
    if remove:
        named = reg.find_named(attrs.name) if attrs.name else None
        for test in triggers:
            if hist_trigger_match(reg, t, test, named, False):
                if registered is not None and check_var_refs(test.hist, registered()):
                    raise KernelError(errno.EBUSY)
                test.free()
                return HistOp("remove", test)
        return HistOp("none")
    if _update_only(reg, t, triggers):
        return HistOp("none")
    create_actions(err, hd, FieldParser(err, fields, hd), _find_synth(tr))
    try:
        return _register(reg, err, t, triggers)
    except KernelError:
        destroy_actions(hd)
        unregister_field_var_hists(hd)
        raise


def ftrace_print_fields() -> dict:
    """The fields of ``ftrace/print`` (``struct print_entry``: ``ip`` and the
    ``char buf[]`` of size 0, which a hist cannot use) over the records
    its triggers see, ``(ts, TRACE_PRINT, pid, flags, pc, (ip, buf), None)``
    (``trace_events_commit.trace_print_commit``)."""
    out = {"ip": Field("ip", "unsigned long", 8, 0, FILTER_OTHER, "a[0]"),
           "buf": Field("buf", "char[]", 0, 0, FILTER_STATIC_STRING, "a[1]")}
    for f in GENERIC + COMMON:
        out.setdefault(f.name, f)
    return out


def hist_text(tr, triggers: list) -> str:
    """``hist_show()``: the ``hist`` file of an event with these hist
    triggers (in the event's trigger-list order)."""
    sym = Symbols(tr.kernel.kallsyms, tr.tracing.events)
    return "".join(hist_trigger_show(t, n, sym) for n, t in enumerate(triggers))


__all__ = ["ftrace_print_fields", "HistOp", "HistRegistry", "HistTrigger", "event_hist_trigger_parse",
           "hist_text"]
