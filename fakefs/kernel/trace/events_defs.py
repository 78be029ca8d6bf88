"""Tracepoints of the simulated kernel (include/trace/events/sched.h, kmem.h, signal.h).

Each :class:`EventDef` gives what tracefs shows for a TRACE_EVENT(): its
system, name, field layout (``format``), print fmt, the text printer, the
payload size in the ring buffer, and the stack kind where the machine's walk
finds its stacks.  The events that come at rates of their own (not from a
modelled code path) are the machine's: how often, and what their fields
hold, fakefs/sim/rated_events.py.

The gfp flag table in the kmem print fmts is taken as a newer kernel prints
it (data/show_gfp_flags.txt); 6.12 lists the same flags in another order.
"""

from __future__ import annotations

import os

from ._trace_commit import record_size
from .trace_export import COMMON_FIELDS, _field

with open(os.path.join(os.path.dirname(__file__), "data", "show_gfp_flags.txt")) as _fh:
    SHOW_GFP_FLAGS = _fh.read().strip()

GFP_KERNEL = 0xcc0
GFP_ATOMIC = 0x820
GFP_NOWAIT = 0x2800
GFP_ZERO_BIT = 0x100
GFP_ACCOUNT_BIT = 0x400000
GFP_NAMES = [(GFP_KERNEL | GFP_ACCOUNT_BIT, "GFP_KERNEL_ACCOUNT"), (GFP_KERNEL, "GFP_KERNEL"),
             (GFP_ATOMIC, "GFP_ATOMIC"), (GFP_NOWAIT, "GFP_NOWAIT"), (GFP_ZERO_BIT, "__GFP_ZERO"),
             (0x2000, "__GFP_NOWARN"), (0x10000, "__GFP_NORETRY"), (0x40000, "__GFP_COMP"),
             (GFP_ACCOUNT_BIT, "__GFP_ACCOUNT")]



def show_gfp(flags: int) -> str:
    if not flags:
        return "none"
    out = []
    rest = flags
    for mask, name in GFP_NAMES:
        if rest & mask == mask:
            out.append(name)
            rest &= ~mask
    if rest:
        out.append("0x%x" % rest)
    return "|".join(out)


TASK_STATES = [(0, "R"), (1, "S"), (2, "D")]
# prev_state as the field holds it (__trace_sched_switch_state()): a bit per
# state, TASK_REPORT_MAX for a preempted task ("R+")
PREV_STATE_VALUES = {"R": 0, "S": 0x1, "D": 0x2, "T": 0x4, "t": 0x8, "X": 0x10, "Z": 0x20,
                     "P": 0x40, "I": 0x80, "R+": 0x100}


class EventDef:
    # field name -> function from the value kept in ``args`` to the value the
    # ring buffer holds, for fields ``args`` keeps in another form (filters
    # compare the latter)
    filter_values: dict = {}
    # field name -> {value kept in ``args``: the number the ring buffer
    # holds}, for those of ``filter_values`` that are such a table (one
    # number each: a record's field read back as the value; _trace_events_raw)
    filter_codes: dict = {}

    def __init__(self, system, name, fields, print_fmt, payload, kind):
        self.system = system
        self.name = name
        self.fields = fields
        self.print_fmt = print_fmt
        self.payload = payload
        self.kind = kind          # the machine's stack kind (where its walk finds them)
        self.tracepoint = name    # the tracepoint whose hits it records
        self.id = 0
        self.desc = None          # the catalogue's description, when there is one
        self.filter_fields = None  # trace_events_filter_fields.event_fields(), once computed
        self._dynamic = None      # indexes of its __data_loc fields, once computed

    def record_size(self, args) -> int:
        """Bytes a hit's record takes: the struct, plus the strings of its
        ``__data_loc`` fields (each with its NUL) that go after it
        (compiled: ``_trace_commit.record_size``)."""
        return record_size(self, args)

    def dynamic_fields(self) -> tuple:
        """The indexes of its ``__data_loc`` fields (computed once)."""
        dyn = self._dynamic
        if dyn is None:
            fields = self.desc.fields if self.desc is not None else ()
            dyn = self._dynamic = tuple(i for i, f in enumerate(fields) if f.is_dynamic)
        return dyn

    def format_text(self) -> str:
        if self.desc is not None:
            return self.desc.format_text(self.id)
        return ("name: %s\nID: %d\nformat:\n%s\n%s\nprint fmt: %s\n"
                % (self.name, self.id, COMMON_FIELDS, "".join(self.fields), self.print_fmt))

    def render(self, args, fmt) -> str:
        raise NotImplementedError

    def text(self, args, fmt) -> str:
        """The line's text after the context (``trace_event_raw_output_*``)."""
        return "%s: %s\n" % (self.name, self.render(args, fmt))


class SchedSwitch(EventDef):
    filter_values = {"prev_state": lambda s: PREV_STATE_VALUES.get(s, 0)}
    filter_codes = {"prev_state": PREV_STATE_VALUES}

    def render(self, a, fmt):
        pc, ppid, pprio, pstate, nc, npid, nprio = a
        return ("prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s "
                "next_pid=%d next_prio=%d" % (pc, ppid, pprio, pstate, nc, npid, nprio))



class SchedWake(EventDef):
    def render(self, a, fmt):
        return "comm=%s pid=%d prio=%d target_cpu=%03d" % a



class KmemCacheAlloc(EventDef):
    def render(self, a, fmt):
        cs, ptr, req, alloc, gfp, node, acct = a
        return ("call_site=%s ptr=%s bytes_req=%d bytes_alloc=%d gfp_flags=%s node=%d accounted=%s"
                % (fmt.sym(cs, True, False), fmt.ptr(ptr), req, alloc, show_gfp(gfp), node,
                   "true" if acct else "false"))



class Kmalloc(EventDef):
    def render(self, a, fmt):
        cs, ptr, req, alloc, gfp, node = a
        return ("call_site=%s ptr=%s bytes_req=%d bytes_alloc=%d gfp_flags=%s node=%d accounted=%s"
                % (fmt.sym(cs, True, False), fmt.ptr(ptr), req, alloc, show_gfp(gfp), node,
                   "true" if gfp & GFP_ACCOUNT_BIT else "false"))



class KmemCacheFree(EventDef):
    def render(self, a, fmt):
        cs, ptr, name = a
        return "call_site=%s ptr=%s name=%s" % (fmt.sym(cs, True, False), fmt.ptr(ptr), name)



class Kfree(EventDef):
    def render(self, a, fmt):
        cs, ptr = a
        return "call_site=%s ptr=%s" % (fmt.sym(cs, True, False), fmt.ptr(ptr))



class SignalGenerate(EventDef):
    def render(self, a, fmt):
        return "sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d" % a



_F = _field
_SCHED_WAKE_FIELDS = [_F("char comm[16]", 8, 16, 0), _F("pid_t pid", 24, 4, 1),
                      _F("int prio", 28, 4, 1), _F("int target_cpu", 32, 4, 1)]
_KMEM_ALLOC_FMT = ('"call_site=%%pS ptr=%%p bytes_req=%%zu bytes_alloc=%%zu gfp_flags=%%s node=%%d '
                   'accounted=%%s", (void *)REC->call_site, REC->ptr, REC->bytes_req, '
                   'REC->bytes_alloc, (REC->gfp_flags) ? %s : "none", REC->node, %s')
_SWITCH_FMT = ('"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s '
               'next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, '
               '(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | '
               '0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? '
               '__print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | '
               '0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), '
               '"|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, '
               '{ 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, '
               '{ 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & '
               '(((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | '
               '0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, '
               'REC->next_prio')


def all_events() -> list[EventDef]:
    """Fresh definitions, in the order their IDs are assigned."""
    gfp = SHOW_GFP_FLAGS
    return [
        SchedSwitch("sched", "sched_switch",
                    [_F("char prev_comm[16]", 8, 16, 0), _F("pid_t prev_pid", 24, 4, 1),
                     _F("int prev_prio", 28, 4, 1), _F("long prev_state", 32, 8, 1),
                     _F("char next_comm[16]", 40, 16, 0), _F("pid_t next_pid", 56, 4, 1),
                     _F("int next_prio", 60, 4, 1)],
                    _SWITCH_FMT, 64, "sched_switch"),
        SchedWake("sched", "sched_waking", _SCHED_WAKE_FIELDS,
                  '"comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, '
                  'REC->target_cpu', 36, "sched_waking"),
        SchedWake("sched", "sched_wakeup", _SCHED_WAKE_FIELDS,
                  '"comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, '
                  'REC->target_cpu', 36, "sched_wakeup"),
        KmemCacheFree("kmem", "kmem_cache_free",
                      [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0),
                       _F("__data_loc char[] name", 24, 4, 0)],
                      '"call_site=%pS ptr=%p name=%s", (void *)REC->call_site, REC->ptr, '
                      '__get_str(name)', 48, "kmem_cache_free"),
        Kfree("kmem", "kfree",
              [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0)],
              '"call_site=%pS ptr=%p", (void *)REC->call_site, REC->ptr', 24, "kfree"),
        Kmalloc("kmem", "kmalloc",
                [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0),
                 _F("size_t bytes_req", 24, 8, 0), _F("size_t bytes_alloc", 32, 8, 0),
                 _F("unsigned long gfp_flags", 40, 8, 0), _F("int node", 48, 4, 1)],
                _KMEM_ALLOC_FMT % (gfp, '(1 && (REC->gfp_flags & ( unsigned long)(( gfp_t)'
                                        '((((1UL))) << (22))))) ? "true" : "false"'),
                56, "kmalloc"),
        KmemCacheAlloc("kmem", "kmem_cache_alloc",
                       [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0),
                        _F("size_t bytes_req", 24, 8, 0), _F("size_t bytes_alloc", 32, 8, 0),
                        _F("unsigned long gfp_flags", 40, 8, 0), _F("int node", 48, 4, 1),
                        _F("bool accounted", 52, 1, 0)],
                       _KMEM_ALLOC_FMT % (gfp, 'REC->accounted ? "true" : "false"'),
                       56, "kmem_cache_alloc"),
        SignalGenerate("signal", "signal_generate",
                       [_F("int sig", 8, 4, 1), _F("int errno", 12, 4, 1), _F("int code", 16, 4, 1),
                        _F("char comm[16]", 20, 16, 0), _F("pid_t pid", 36, 4, 1),
                        _F("int group", 40, 4, 1), _F("int result", 44, 4, 1)],
                       '"sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d", REC->sig, '
                       'REC->errno, REC->code, REC->comm, REC->pid, REC->group, REC->result',
                       48, "signal_generate"),
    ]
