"""The binary record of a ring-buffer entry: the bytes an event's ``format``
file describes (the ``struct trace_event_raw_<event>`` that
include/trace/trace_events.h lays out for a tracepoint, the structs of
kernel/trace/trace_entries.h for the ftrace-internal entry types, and the
record of a kprobe event).

Every record starts with ``struct trace_entry`` (type u16, flags u8,
preempt_count u8, pid s32); the fields follow at the offsets and sizes
their ``format`` gives, little endian (x86-64).  A ``__data_loc`` field is
a u32 of ``length << 16 | offset``, the offset counted from the record's
start; a ``__rel_loc`` one counts it from the end of the field.  The
dynamic data goes where the struct's flexible ``__data[]`` starts, right
after the last field (inside the struct's tail padding), and the record is
``sizeof()`` the struct plus that data, as the kernel reserves it.

Values come from the entry tuple ``(ts, type, pid, flags, preempt_count,
args, extra)``: a tracepoint's ``args`` hold its fields in order (what
``trace_events_filter_fields`` also relies on), converted by the event's
``filter_values`` where the model keeps a field in another form (the
``prev_state`` of sched_switch kept as its letter).  A string of a
``__data_loc`` field that is None (a probe's fetch that faulted) has
length 0, which the kernel prints as ``(fault)``.

The ftrace entry types (``trace_entries.py``):

* ``function``: ip, parent_ip.
* ``kernel_stack``: ``int size`` (the number of callers) then that many
  addresses from offset 16 (the format says ``caller[8]``; 6.12 reserves
  ``size`` of them).
* ``user_stack``: the tgid, then ``caller[8]`` (zeros after the last).
* ``stack_id`` (the stackmap series): the id.
* ``print``: ip, then ``buf`` (what was written, with the newline the
  kernel adds) and its NUL.  Records shorter than the kernel's minimum
  reservation (``"<faulted>"`` must fit) are padded with zeros like its
  zeroed sub-buffers.
* ``raw_data``: the id, then ``buf[]`` as the model keeps it (the bytes
  written and the reservation's padding).
* ``func_repeats`` (``func-no-repeats``): ip, parent_ip, the u16 count and
  the delta since the last repeat split in a u16 (bits 32..47) and a u32.

An entry of a type none of these nor any registered event is raises
:class:`RecordError` (a reader gets EIO): a new entry type needs its record
here.
"""

from __future__ import annotations

import re
import struct

from . import trace_entries as te
from ._trace_events_raw import FIXED_KINDS

FAULTED_SIZE = len("<faulted>")

_HDR = struct.Struct("<HBBi")
_FN = struct.Struct("<HBBiQQ")
_STACK_HDR = struct.Struct("<HBBii4x")
_STACK_ID = struct.Struct("<HBBi")
_PRINT_HDR = struct.Struct("<HBBiQ")
_RAW_HDR = struct.Struct("<HBBiI")
_REPEATS = struct.Struct("<HBBiQQHHI")
_CTX = struct.Struct("<HBBiIIIBBBB")     # struct ctx_switch_entry
_USTACK = struct.Struct("<HBBiI4x8Q")
_GRAPH_ENT = struct.Struct("<HBBiQi")
# struct ftrace_graph_ret_entry: the trailing calltime and rettime are never set
# by __trace_graph_return() (zeros here); RETVAL: retval after func
_GRAPH_RET = struct.Struct("<HBBiQiIQQ16x")
_GRAPH_RET_RETVAL = struct.Struct("<HBBiQQiIQQ16x")

ULONG_MASK = (1 << 64) - 1

_FIELD_RE = re.compile(r"\tfield:(.*);\toffset:(\d+);\tsize:(\d+);\tsigned:(\d+);")

# field kinds
INT, STR, ARRAY, DATA_LOC, REL_LOC = range(5)


class RecordError(ValueError):
    """An entry whose values do not fit its event's format."""


class FieldSlot:
    """Where one field goes: kind, offset, size, element size and count,
    whether signed, and the conversion of its value (or None)."""

    __slots__ = ("name", "kind", "offset", "size", "elem", "count", "signed", "conv", "text",
                 "boolean")

    def __init__(self, name, kind, offset, size, elem, count, signed, conv, text, boolean=False):
        self.name = name
        self.kind = kind
        self.offset = offset
        self.size = size
        self.elem = elem
        self.count = count
        self.signed = signed
        self.conv = conv
        self.text = text          # a char (byte) array or a char string
        self.boolean = boolean    # a ``bool``


def _slot(type_: str, name: str, offset: int, size: int, signed: int, conv,
          length: int = 0) -> FieldSlot:
    text = "char" in type_
    if type_.startswith("__data_loc"):
        return FieldSlot(name, DATA_LOC, offset, size, 0, 0, signed, conv, text)
    if type_.startswith("__rel_loc"):
        return FieldSlot(name, REL_LOC, offset, size, 0, 0, signed, conv, text)
    if "[" in type_:
        dim = type_[type_.index("[") + 1:type_.index("]")]
        count = length or (int(dim) if dim.isdigit() else 0)
        if text and size == count:
            return FieldSlot(name, STR, offset, size, 1, count, signed, conv, True)
        elem = size // count if count else 0
        return FieldSlot(name, ARRAY, offset, size, elem, count, signed, conv, text)
    return FieldSlot(name, INT, offset, size, size, 1, signed, conv, False, type_.strip() == "bool")


def event_slots(ev) -> tuple[list, int, int]:
    """(field slots in the event's order, where the dynamic data starts,
    the fixed size of the record) for a tracepoint or probe event."""
    convs = ev.filter_values
    slots = []
    desc = ev.desc
    if desc is not None:
        for f in desc.fields:
            slots.append(_slot(f.type, f.name, f.offset, f.size, f.signed, convs.get(f.name),
                               f.len))
    else:
        for line in ev.fields:
            m = _FIELD_RE.match(line)
            if m is None:
                raise RecordError("%s: bad field line %r" % (ev.name, line))
            type_, _, name = m.group(1).rpartition(" ")
            if "[" in name:
                name, _, dim = name.partition("[")
                type_ = type_ + "[" + dim
            name = name.strip()
            slots.append(_slot(type_.strip(), name, int(m.group(2)), int(m.group(3)),
                               int(m.group(4)), convs.get(name)))
    dyn = max([s.offset + s.size for s in slots], default=te.TRACE_ENTRY_HDR)
    fixed = max(dyn, ev.payload or 0) if desc is not None else dyn
    return slots, dyn, fixed


def fixed_fields(ev):
    """The layout of an event's record whose fields are of fixed size
    (numbers, char arrays, arrays of numbers, ``filter_codes`` values) with
    ``__data_loc char[]`` strings after them, as the compiled writer puts
    the record in its sub-buffer's bytes (``_trace_events_raw.FixedRecord``):
    ([(offset, width, kind, count, codes), ...] in its args' order, the
    kinds ``FIXED_KINDS``'s, a coded field's table; the record's size
    without dynamic data; where that goes); None for any other (other
    dynamic data, a ``filter_values`` field that is no such table)."""
    codes = ev.filter_codes
    if any(name not in codes for name in ev.filter_values):
        return None
    slots, dyn, fixed = event_slots(ev)
    out = []
    for s in slots:
        count = 1
        if s.kind == STR:
            kind = "text"
        elif s.kind == DATA_LOC and s.text and s.size == 4:
            kind = "dynamic text"
        elif s.kind == ARRAY and not s.text and s.elem in (1, 2, 4, 8) and s.count > 0 \
                and s.elem * s.count == s.size:
            kind, count = "array signed" if s.signed else "array unsigned", s.count
        elif s.kind != INT or s.size not in (1, 2, 4, 8):
            return None
        elif s.name in codes:
            kind = "code signed" if s.signed else "code unsigned"
        elif s.boolean:
            kind = "bool"
        else:
            kind = "signed" if s.signed else "unsigned"
        out.append((s.offset, s.size // count, FIXED_KINDS[kind], count, codes.get(s.name)))
    return out, fixed, dyn


def _int_bytes(v, size: int, where) -> bytes:
    if isinstance(v, bool):
        v = int(v)
    if not isinstance(v, int):
        raise RecordError("%s: %r is not a number" % (where, v))
    return (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def _text_bytes(v) -> bytes:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    return str(v).encode("latin-1", "replace")


_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}


def packed_layout(slots, fixed: int):
    """For a record of numbers and fixed-size strings only: one
    ``struct.Struct`` for all of it (header, fields at their offsets, the
    padding zeroed), per field in offset order (its index in the entry's
    args, its conversion, the mask of a number or None for bytes), and
    whether the args go in as they are (numbers in their order, none
    converted: packed at once when each is in its field's range, as masking
    it would give); None when a field needs more (arrays of numbers,
    dynamic data)."""
    fmt = ["<HBBi"]
    pos = te.TRACE_ENTRY_HDR
    plan = []
    for s in sorted(slots, key=lambda s: s.offset):
        if s.offset < pos:
            return None
        if s.kind == INT and s.size in _UNSIGNED:
            code, mask = _UNSIGNED[s.size], (1 << (8 * s.size)) - 1
        elif s.kind == STR or (s.kind == ARRAY and s.text and s.elem == 1):
            code, mask = "%ds" % s.size, None
        else:
            return None
        if s.offset > pos:
            fmt.append("%dx" % (s.offset - pos))
        fmt.append(code)
        plan.append((slots.index(s), s.conv, mask))
        pos = s.offset + s.size
    if fixed > pos:
        fmt.append("%dx" % (fixed - pos))
    direct = all(conv is None and mask is not None and i == j
                 for j, (i, conv, mask) in enumerate(plan))
    return struct.Struct("".join(fmt)), tuple(plan), direct


class RecordEncoder:
    """Binary records of the entries of one kernel's tracing."""

    def __init__(self, tracing):
        self.tracing = tracing
        self.graph_retval = tracing is not None and tracing.kernel.config.enabled(
            "FUNCTION_GRAPH_RETVAL")
        self._layouts: dict = {}      # event -> (slots, dyn, fixed)
        self._packed: dict = {}       # event -> packed_layout() (or None)

    def layout(self, ev):
        got = self._layouts.get(ev)
        if got is None:
            got = self._layouts[ev] = event_slots(ev)
        return got

    def _fast(self, ev):
        try:
            return self._packed[ev]
        except KeyError:
            slots, _dyn, fixed = self.layout(ev)
            got = self._packed[ev] = packed_layout(slots, fixed)
            return got

    def encode(self, entry) -> bytes:
        """The record of ``entry`` (RecordError if it cannot be made)."""
        t = entry[1]
        pid, flags, pc = entry[2], entry[3] & 0xff, entry[4] & 0xff
        if t > te.TRACE_LAST_TYPE:             # an event's (ids from __TRACE_LAST_TYPE up)
            ev = self.tracing.events_by_id.get(t) if self.tracing is not None else None
            if ev is None:
                raise RecordError("no event of type %d" % t)
            return self.event_record(ev, entry, flags, pc)
        if t == te.TRACE_FN:
            return _FN.pack(t, flags, pc, pid, entry[5], entry[6])
        if t == te.TRACE_STACK:
            stack = entry[5]
            return _STACK_HDR.pack(t, flags, pc, pid, len(stack)) + b"".join(
                (ip & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little") for ip in stack)
        if t == te.TRACE_USER_STACK:
            callers = tuple(entry[6][:8]) + (0,) * (8 - len(entry[6][:8]))
            return _USTACK.pack(t, flags, pc, pid, entry[5] & 0xFFFFFFFF, *callers)
        if t == te.TRACE_STACK_ID:
            return _STACK_ID.pack(t, flags, pc, pid) + _int_bytes(entry[5], 4, "stack_id")
        if t == te.TRACE_PRINT:
            return self._print(entry, flags, pc)
        if t in (te.TRACE_CTX, te.TRACE_WAKE):
            prev_pid, prev_prio, prev_state, next_pid, next_prio, next_state, next_cpu = entry[5]
            return _CTX.pack(t, flags, pc, pid, prev_pid & 0xFFFFFFFF, next_pid & 0xFFFFFFFF,
                             next_cpu & 0xFFFFFFFF, prev_prio & 0xff, prev_state & 0xff,
                             next_prio & 0xff, next_state & 0xff)
        if t == te.TRACE_FUNC_REPEATS:
            ip, parent, count = entry[5]
            delta = entry[6]
            return _REPEATS.pack(t, flags, pc, pid, ip, parent, count & 0xffff,
                                 (delta >> 32) & 0xffff, delta & 0xFFFFFFFF)
        if t == te.TRACE_GRAPH_ENT:
            return _GRAPH_ENT.pack(t, flags, pc, pid, entry[5], entry[6])
        if t == te.TRACE_GRAPH_RET:
            func, depth, overrun, calltime, rettime, retval = entry[5]
            if self.graph_retval:
                return _GRAPH_RET_RETVAL.pack(t, flags, pc, pid, func, retval & ULONG_MASK, depth,
                                              overrun, calltime, rettime)
            return _GRAPH_RET.pack(t, flags, pc, pid, func, depth, overrun, calltime, rettime)
        if t == te.TRACE_RAW_DATA:
            return _RAW_HDR.pack(t, flags, pc, pid, entry[5] & 0xFFFFFFFF) + bytes(entry[6])
        ev = self.tracing.events_by_id.get(t)
        if ev is None:
            raise RecordError("no event of type %d" % t)
        return self.event_record(ev, entry, flags, pc)

    @staticmethod
    def _print(entry, flags, pc) -> bytes:
        buf = _text_bytes(entry[6]) + b"\0"
        if len(buf) < FAULTED_SIZE + 1:
            buf = buf.ljust(FAULTED_SIZE + 1, b"\0")
        return _PRINT_HDR.pack(te.TRACE_PRINT, flags, pc, entry[2], entry[5]) + buf

    def event_record(self, ev, entry, flags, pc) -> bytes:
        args = entry[5]
        if not isinstance(args, tuple):
            args = (args,)
        fast = self._fast(ev)
        if fast is not None and len(args) == len(fast[1]):
            if fast[2]:
                try:
                    return fast[0].pack(entry[1], flags, pc, entry[2], *args)
                except struct.error:        # a value out of its range: masked below
                    pass
            values = []
            for i, conv, mask in fast[1]:
                v = args[i]
                if conv is not None:
                    v = conv(v)
                if mask is None:
                    if isinstance(v, str):
                        v = v.encode("latin-1", "replace")
                    elif not isinstance(v, (bytes, bytearray)):
                        break               # a char array given as numbers
                elif type(v) is int or type(v) is bool:
                    v &= mask
                else:
                    break                   # not a number: said by the field walk
                values.append(v)
            else:
                return fast[0].pack(entry[1], flags, pc, entry[2], *values)
        return self._record_by_fields(ev, entry, args, flags, pc)

    def _record_by_fields(self, ev, entry, args, flags, pc) -> bytes:
        slots, dyn_start, fixed = self.layout(ev)
        if len(args) != len(slots):
            raise RecordError("%s:%s: %d values for %d fields"
                              % (ev.system, ev.name, len(args), len(slots)))
        rec = bytearray(fixed)
        _HDR.pack_into(rec, 0, entry[1], flags, pc, entry[2])
        dyn = bytearray()
        for s, v in zip(slots, args):
            if s.conv is not None:
                v = s.conv(v)
            where = "%s:%s.%s" % (ev.system, ev.name, s.name)
            kind = s.kind
            if kind == INT:
                rec[s.offset:s.offset + s.size] = _int_bytes(v, s.size, where)
            elif kind == STR:
                b = _text_bytes(v)[:s.size]
                rec[s.offset:s.offset + len(b)] = b
            elif kind == ARRAY:
                if isinstance(v, (bytes, bytearray, str)):
                    b = _text_bytes(v)[:s.size]
                    rec[s.offset:s.offset + len(b)] = b
                    continue
                if len(v) > s.count:
                    raise RecordError("%s: %d elements for %d" % (where, len(v), s.count))
                for i, x in enumerate(v):
                    off = s.offset + i * s.elem
                    rec[off:off + s.elem] = _int_bytes(x, s.elem, where)
            else:
                data = self._dynamic(v, where)
                pos = dyn_start + len(dyn)
                rel = pos if kind == DATA_LOC else pos - (s.offset + s.size)
                rec[s.offset:s.offset + 4] = ((len(data) << 16) | rel).to_bytes(4, "little")
                dyn += data
        if not dyn:
            return bytes(rec)
        return bytes(rec[:dyn_start] + dyn + rec[dyn_start:])

    @staticmethod
    def _dynamic(v, where) -> bytes:
        if v is None:
            return b""                    # a fetch that faulted: length 0
        if isinstance(v, str):
            return v.encode("latin-1", "replace") + b"\0"
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        raise RecordError("%s: no bytes for %r" % (where, v))
