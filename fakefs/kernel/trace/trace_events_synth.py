"""Synthetic events (kernel/trace/trace_events_synth.c): the
``synthetic_events`` file, the ``s:`` command of ``dynamic_events`` and the
``events/synthetic/<name>/`` events that hist trigger actions generate.

A command ``<name> <type> <field>[; <type> <field>]...`` makes a
:class:`SynthEvent` (parsed as ``__create_synth_event()`` does, failures
logged to the global ``error_log`` at the kernel's positions); ``!<name>``
(or ``-:[synthetic/]<name>`` in ``dynamic_events``) removes it unless a
histogram refers to it (``ref``) or it is enabled somewhere (EBUSY).

A field is a number (``u8``..``s64``, ``char``, ``int``, ``long``,
``pid_t``, ``gfp_t``, ``bool``, with ``unsigned``), a string
``char name[N]`` (N <= 256, kept in 256 bytes of the record), a dynamic
string ``char name[]`` or a stack ``unsigned long[] name`` (both
``__data_loc``).  :meth:`SynthEvent.fire` writes a record from the values a
hist action hands over (``trace_event_raw_event_synth()``).
"""

from __future__ import annotations

import errno

from ..fs.pseudo import TRACE_MODE_WRITE, FileOperations, KernelError
from ..lib.kstrtox import kstrtoul
from .events_defs import EventDef
from .trace_dynevent import DynEventOps, parse_run_command
from .trace_events import add_event_call, remove_event_call
from .trace_events_commit import nested_commit
from .trace_events_filter_fields import (COMMON, FILTER_STACKTRACE, GENERIC, Field,
                                         filter_assign_type)
from .trace_events_hist_fields import as_u64
from .trace_probe import is_good_name
from .trace_probe_tmpl import field_line

SYNTH_SYSTEM = "synthetic"
SYNTH_FIELDS_MAX = 64
STR_VAR_LEN_MAX = 256
HIST_STACKTRACE_DEPTH = 16
ERR_LOC = "synthetic_events"

ERRORS = [
    ("BAD_NAME", "Illegal name"),
    ("INVALID_CMD", "Command must be of the form: <name> field[;field] ..."),
    ("INVALID_DYN_CMD", "Command must be of the form: s or -:[synthetic/]<name> field[;field] ..."),
    ("EVENT_EXISTS", "Event already exists"),
    ("TOO_MANY_FIELDS", "Too many fields"),
    ("INCOMPLETE_TYPE", "Incomplete type"),
    ("INVALID_TYPE", "Invalid type"),
    ("INVALID_FIELD", "Invalid field"),
    ("INVALID_ARRAY_SPEC", "Invalid array specification"),
]
ERR_TEXT = [t for _n, t in ERRORS]
E = {n: i for i, (n, _t) in enumerate(ERRORS)}

# type -> (size, printf format); synth_field_size() and synth_field_fmt()
_TYPES = {
    "s64": (8, "%lld"), "u64": (8, "%llu"), "s32": (4, "%d"), "u32": (4, "%u"),
    "s16": (2, "%d"), "u16": (2, "%u"), "s8": (1, "%d"), "u8": (1, "%u"),
    "char": (1, "%d"), "unsigned char": (1, "%u"), "int": (4, "%d"),
    "unsigned int": (4, "%u"), "long": (8, "%ld"), "unsigned long": (8, "%lu"),
    "bool": (1, "%d"), "pid_t": (4, "%d"), "gfp_t": (4, "%x"),
}


class SynthError(Exception):
    def __init__(self, err: str, pos: int, code: int = errno.EINVAL):
        super().__init__(err)
        self.err = err
        self.pos = pos
        self.errno = code


def _is_string(t: str) -> bool:
    return "char[" in t


def _is_stack(t: str) -> bool:
    return "long[" in t


def _string_size(t: str) -> int:
    """``synth_field_string_size()``: N of ``char[N]``, 0 for ``char[]``,
    -1 for a bad specification."""
    start = t.find("char[") + len("char[")
    end = t.find("]")
    if end < 0 or end < start or len(t) > end + 1:
        return -1
    spec = t[start:end]
    if len(spec) > 3:
        return -1
    if not spec:
        return 0
    try:
        size = kstrtoul(spec, 0)
    except ValueError:
        return -1
    return -1 if size > STR_VAR_LEN_MAX else size


def synth_field_size(t: str) -> int:
    if t in _TYPES:
        return _TYPES[t][0]
    if _is_string(t):
        return _string_size(t)
    return 0


def synth_field_fmt(t: str) -> str:
    if t in _TYPES:
        return _TYPES[t][1]
    return "%s" if _is_string(t) or _is_stack(t) else "%llu"


class SynthField:
    """``struct synth_field``"""

    __slots__ = ("type", "name", "size", "is_signed", "is_string", "is_dynamic", "is_stack",
                 "offset")

    def __init__(self, type_: str, name: str, size: int, dynamic: bool):
        self.type = type_
        self.name = name
        self.size = size
        self.is_dynamic = dynamic
        self.is_string = _is_string(type_)
        self.is_stack = not self.is_string and _is_stack(type_)
        self.is_signed = not type_.startswith("u") and type_ != "gfp_t"
        self.offset = 0                  # in u64 words of the record's fields

    def desc_type(self) -> str:
        """The type as ``synthetic_events`` shows it (no ``__data_loc``)."""
        return self.type[len("__data_loc "):] if self.type.startswith("__data_loc ") else self.type


class SynthEvent(EventDef):
    """``struct synth_event`` and its ``trace_event_call``."""

    def __init__(self, ops, name: str, fields: list):
        lines, offset, n_u64 = [], 8, 0
        for f in fields:
            lines.append(field_line(f.type, f.name, offset, f.size, f.is_signed))
            f.offset = n_u64
            step = STR_VAR_LEN_MAX if f.is_string and not f.is_dynamic else 8
            offset += step
            n_u64 += step // 8
        fmt = '"%s"' % ", ".join("%s=%s" % (f.name, synth_field_fmt(f.type)) for f in fields)
        for f in fields:
            if f.is_string and f.is_dynamic:
                fmt += ", __get_str(%s)" % f.name
            elif f.is_stack:
                fmt += ", __get_stacktrace(%s)" % f.name
            else:
                fmt += ", REC->%s" % f.name
        super().__init__(SYNTH_SYSTEM, name, lines, fmt, offset, None)
        self.tracepoint = "\0synth:%s" % name
        self.ops = ops
        self.synth_fields = fields
        self.n_u64 = n_u64
        self.ref = 0                     # histograms that generate it
        self.filter_fields = self._filter_fields()
        # a stack's record (trace_stack()): its length, then the addresses
        self.filter_values = {f.name: _stack_bytes for f in fields if f.is_stack}

    def _filter_fields(self) -> dict:
        out: dict = {}
        for i, f in enumerate(self.synth_fields):
            ftype = FILTER_STACKTRACE if f.is_stack else filter_assign_type(f.type)
            out.setdefault(f.name, Field(f.name, f.type, f.size, int(f.is_signed), ftype,
                                         "a[%d]" % i))
        for f in GENERIC + COMMON:
            out.setdefault(f.name, f)
        return out

    # --- output (print_synth_event) ----------------------------------------------
    def render(self, a, fmt) -> str:
        verbose = fmt.tr.flag("verbose")
        out = []
        n = len(self.synth_fields)
        for i, (f, v) in enumerate(zip(self.synth_fields, a)):
            sep = "" if i == n - 1 else " "
            if verbose:
                out.append(synth_field_fmt(f.type) + " ")
            if f.is_string:
                out.append("%s=%s%s" % (f.name, _cstr(v), sep))
            elif f.is_stack:
                out.append("%s=STACK:\n" % f.name)
                for addr in v:
                    out.append("=> %s\n" % fmt.kallsyms.sprint_symbol(addr))
            else:
                out.append("%s=%s%s" % (f.name, _num(f, v), sep))
        return "".join(out)

    # --- trace_event_raw_event_synth ------------------------------------------------
    def fire(self, tracing, cpu: int, ctx, values: list) -> None:
        """Write a record with ``values`` (one per field: ints, bytes/str,
        a tuple of return addresses) in every array where the event is
        enabled or triggered; ``ctx`` is the firing entry (ts, type, pid,
        flags, pc, ...)."""
        trs = [tr for tr in tracing.arrays()
               if (tr.event_recording(self) and tr.cpumask >> cpu & 1) or self in tr.event_triggers]
        if not trs:
            return
        args, size = [], self.payload
        for f, v in zip(self.synth_fields, values):
            if f.is_string:
                s = v if isinstance(v, (bytes, str)) else b""
                if isinstance(s, bytes):
                    s = s.split(b"\0", 1)[0].decode("latin-1")
                limit = STR_VAR_LEN_MAX - 1 if f.is_dynamic else min(f.size, STR_VAR_LEN_MAX) - 1
                s = s[:max(limit, 0)]
                if f.is_dynamic:
                    size += len(s) + 1
                args.append(s)
            elif f.is_stack:
                st = tuple(v)[:HIST_STACKTRACE_DEPTH] if isinstance(v, (tuple, list)) else ()
                size += (len(st) + 1) * 8
                args.append(st)
            else:
                v = (v if type(v) is int else as_u64(v)) & ((1 << (8 * f.size)) - 1)
                if f.is_signed and v >> (8 * f.size - 1):
                    v -= 1 << (8 * f.size)
                args.append(v)
        entry = (ctx[0], self.id, ctx[2], ctx[3], ctx[4], tuple(args), None)
        nested_commit(tracing, trs, self, cpu, entry, size)


def _stack_bytes(v) -> bytes:
    return b"".join((x & ((1 << 64) - 1)).to_bytes(8, "little") for x in (len(v),) + tuple(v))


def _cstr(v) -> str:
    if isinstance(v, bytes):
        return v.split(b"\0", 1)[0].decode("latin-1")
    return str(v)


def _num(f: SynthField, v: int) -> str:
    """``print_synth_event_num_val()``: the value as its C format prints
    the stored width."""
    bits = 8 * f.size
    u = v & ((1 << bits) - 1)
    fmt = synth_field_fmt(f.type)
    if fmt == "%x":
        return "%x" % u
    if fmt in ("%d", "%ld", "%lld"):
        # the printf argument is the unsigned stored value widened: %d reads 32 bits
        width = 64 if fmt != "%d" else 32
        w = u & ((1 << width) - 1)
        return "%d" % (w - (1 << width) if w >> (width - 1) else w)
    return "%d" % u


# --- parsing (__create_synth_event) ------------------------------------------------

def _errpos(cmd: str, s: str | None) -> int:
    if not s:
        return 0
    i = cmd.find(s)
    return i if i >= 0 else 0


def parse_synth_field(cmd: str, argv: list) -> tuple:
    """``parse_synth_field()``: (SynthField, words consumed)."""
    prefix = ""
    ftype = argv[0]
    if ftype == "unsigned":
        if len(argv) < 3:
            raise SynthError("INCOMPLETE_TYPE", _errpos(cmd, ftype))
        prefix, ftype, fname, used = "unsigned ", argv[1], argv[2], 3
    else:
        fname, used = (argv[1] if len(argv) > 1 else None), 2
    if fname is None:
        raise SynthError("INVALID_FIELD", _errpos(cmd, ftype))
    lb = fname.find("[")
    array = fname[lb:] if lb >= 0 else ""
    name = fname[:lb] if lb >= 0 else fname
    if not is_good_name(name):
        raise SynthError("BAD_NAME", _errpos(cmd, fname))
    full = prefix + ftype + array
    size = synth_field_size(full)
    dynamic = False
    if size < 0:
        raise SynthError("INVALID_ARRAY_SPEC" if array else "INVALID_TYPE",
                         _errpos(cmd, fname if array else ftype))
    if size == 0:
        if not (_is_string(full) or _is_stack(full)):
            raise SynthError("INVALID_TYPE", _errpos(cmd, ftype))
        full = "__data_loc " + full
        dynamic, size = True, 8
    return SynthField(full, name, size, dynamic), used


def check_command(raw: str) -> bool:
    """``check_command()``: the name and a first field before any ``;``."""
    head = raw.split(";", 1)[0]
    if head.startswith("!"):
        return True
    return len(head.split()) >= 3


def parse_fields(cmd: str, raw_fields: str) -> list:
    fields: list = []
    for field_str in raw_fields.split(";"):
        argv = field_str.split()
        if not argv:
            continue
        consumed = 0
        while len(argv) > consumed:
            f, used = parse_synth_field(cmd, argv[consumed:])
            consumed += used
            if len(fields) == SYNTH_FIELDS_MAX:
                raise SynthError("TOO_MANY_FIELDS", 0)
            fields.append(f)
        if consumed < len(argv):
            raise SynthError("INVALID_CMD", 0)
    if not fields:
        raise SynthError("INVALID_CMD", 0)
    return fields


class SynthEventOps(DynEventOps):
    """``synth_event_ops`` and the synthetic events of one kernel."""

    def __init__(self, tracing, dyn, first_id: int):
        self.tracing = tracing
        self.dyn = dyn
        self.first_id = first_id

    def events(self) -> list:
        return self.dyn.of(self)

    def find(self, name: str):
        return next((e for e in self.events() if e.name == name), None)

    def _log(self, cmd: str, e: SynthError) -> KernelError:
        self.tracing.global_trace.log_err(ERR_LOC, cmd, ERR_TEXT, E[e.err], e.pos)
        return KernelError(e.errno)

    # --- dyn_event_operations ----------------------------------------------------
    def create(self, raw: str) -> None:
        """``create_synth_event()``: ``s:[synthetic/]<name> <fields>``."""
        cmd = raw.lstrip(" \t\n\v\f\r")
        if not cmd:
            return
        if not cmd.startswith("s:"):
            raise KernelError(errno.ECANCELED)
        try:
            name = cmd[2:]
            cut = min((i for i in (cmd.find(" "), cmd.find("\t")) if i >= 0), default=-1)
            if cut < 0:
                raise SynthError("INVALID_CMD", 0)
            fields = cmd[cut:].lstrip()
            if "/" in name:
                if not name.startswith(SYNTH_SYSTEM + "/"):
                    raise SynthError("INVALID_DYN_CMD", 0)
                name = name[len(SYNTH_SYSTEM) + 1:]
            start = len(cmd) - len(name)
            if not check_command(cmd[start:]):
                raise SynthError("INVALID_CMD", 0)
            self._create(cmd, cmd[start:cut], fields)
        except SynthError as e:
            raise self._log(cmd, e)

    def show(self, ev) -> str:
        return "s:%s/%s" % (SYNTH_SYSTEM, _desc(ev))

    def is_busy(self, ev) -> bool:
        return ev.ref != 0

    def match(self, system, event, argv, ev) -> bool:
        return ev.name == event and (system is None or system == SYNTH_SYSTEM)

    def free(self, ev) -> None:
        """``synth_event_release()``"""
        if ev.ref or ev.tracepoint in self.tracing.tracepoint_users:
            raise KernelError(errno.EBUSY)
        remove_event_call(self.tracing, ev)
        self.dyn.remove(ev)

    # --- synthetic_events ---------------------------------------------------------
    def command(self, raw: str) -> None:
        """``create_or_delete_synth_event()``"""
        cmd = raw.lstrip(" \t\n\v\f\r")
        if not cmd:
            return
        try:
            if not check_command(cmd):
                raise SynthError("INVALID_CMD", 0)
            cut = min((i for i in (cmd.find(" "), cmd.find("\t")) if i >= 0), default=-1)
            if cut < 0 and not cmd.startswith("!"):
                raise SynthError("INVALID_CMD", 0)
            name = cmd[:cut] if cut >= 0 else cmd
            if name.startswith("!"):
                ev = self.find(name[1:])
                if ev is None:
                    raise KernelError(errno.ENOENT)
                self.free(ev)
                return
            self._create(cmd, name, cmd[cut:].lstrip())
        except SynthError as e:
            raise self._log(cmd, e)

    def _create(self, cmd: str, name: str, raw_fields: str) -> None:
        if not name:
            raise SynthError("INVALID_CMD", 0)
        if not is_good_name(name):
            raise SynthError("BAD_NAME", _errpos(cmd, name))
        if self.find(name) is not None:
            raise SynthError("EVENT_EXISTS", _errpos(cmd, name), errno.EEXIST)
        fields = parse_fields(cmd, raw_fields)
        if any(e.system == SYNTH_SYSTEM and e.name == name for e in self.tracing.events):
            raise KernelError(errno.EEXIST)
        ev = SynthEvent(self, name, fields)
        ids = self.tracing.events_by_id
        ev.id = next(i for i in range(self.first_id, 1 << 16) if i not in ids)
        add_event_call(self.tracing, ev)
        self.dyn.add(ev)


def _desc(ev: SynthEvent) -> str:
    """``__synth_event_show()``"""
    return "%s\t%s\n" % (ev.name, "; ".join("%s %s" % (f.desc_type(), f.name)
                                            for f in ev.synth_fields))


class SynthEventsOps(FileOperations):
    """synthetic_events"""

    def open(self, f):
        if f.writable and f.trunc:
            ops = f.data
            ops.dyn.release_all(ops)

    def show(self, f):
        ops = f.data
        return "".join(_desc(ev) for ev in ops.events())

    def write(self, f, data):
        ops = f.data
        return parse_run_command(data, ops.command)


def find_synth_event(tracing, name: str):
    ops = getattr(tracing, "synth_ops", None)
    return ops.find(name) if ops is not None else None


def init_synth_trace(tracing, root, dyn) -> SynthEventOps:
    """``trace_events_synth_init()``: the kind registered with the dynamic
    events, and the ``synthetic_events`` file."""
    ops = SynthEventOps(tracing, dyn, max(tracing.events_by_id) + 1)
    dyn.register(ops)
    tracing.synth_ops = ops
    tracing.kernel.tree.create_file("synthetic_events", TRACE_MODE_WRITE, root, ops,
                                    SynthEventsOps())
    return ops


__all__ = ["SynthEvent", "SynthEventOps", "SynthField", "find_synth_event", "init_synth_trace"]
