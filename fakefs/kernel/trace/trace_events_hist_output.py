"""What hist triggers print (kernel/trace/trace_events_hist.c):
``event_hist_trigger_print()`` (the trigger file's line) and
``hist_trigger_show()`` (one histogram of an event's ``hist`` file), with
``hist_trigger_print_key()``/``hist_trigger_print_val()``'s formats.

``Symbols`` resolves what keys print by name: ``%ps``/``%pS`` through the
kernel's kallsyms and ``.syscall`` through the system call table (a number
has a name when the kernel has syscall metadata for it, i.e. its
``syscalls:sys_enter_<name>`` event).
"""

from __future__ import annotations

from ..entry_common import syscall_table
from .trace_events_hist_actions import (ACTION_SAVE, ACTION_SNAPSHOT, ACTION_TRACE,
                                        HANDLER_ONMATCH, HANDLER_ONMAX)
from .trace_events_hist_fields import (FL_BUCKET, FL_EXECNAME, FL_EXPR, FL_GRAPH, FL_HEX, FL_LOG2,
                                       FL_PERCENT, FL_STACKTRACE, FL_STRING, FL_SYM,
                                       FL_SYM_OFFSET, FL_SYSCALL, FL_VAR, HIST_PREFIX,
                                       HIST_STACKTRACE_DEPTH, hist_field_name, hist_field_print)

UINT_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
BAR_CHAR = "#"


class Symbols:
    """Names for addresses and system call numbers, for one read."""

    def __init__(self, kallsyms, events):
        self.kallsyms = kallsyms
        names = {(ev.system, ev.name) for ev in events}
        self.syscalls = {nr: name for nr, name in syscall_table()[1].items()
                         if ("syscalls", "sys_enter_" + name[4:]) in names}

    def ps(self, addr: int) -> str:
        return self.kallsyms.sprint_symbol_no_offset(addr)

    def pS(self, addr: int) -> str:
        return self.kallsyms.sprint_symbol(addr)


def _cstr(b: bytes) -> str:
    return b.decode("latin-1")


# --- event_hist_trigger_print ------------------------------------------------

def trigger_listing(t) -> str:
    """The ``trigger`` file's line for hist trigger ``t``."""
    hd = t.hist
    out = [HIST_PREFIX]
    if t.name:
        out.append("%s:" % t.name)
    out.append("keys=")
    for i, f in enumerate(hd.key_fields):
        if i:
            out.append(",")
        if f.flags & FL_STACKTRACE:
            out.append("%s.stacktrace" % f.field.name if f.field is not None
                       else "common_stacktrace")
        else:
            out.append(hist_field_print(f))
    out.append(":vals=")
    have_var = show_val = False
    for i, f in enumerate(hd.fields[:hd.n_vals]):
        if f.flags & FL_VAR:
            have_var = True
            continue
        if i == 0:
            if hd.attrs.no_hitcount:
                continue
            out.append("hitcount")
        else:
            if show_val:
                out.append(",")
            out.append(hist_field_print(f))
        show_val = True
    if have_var:
        out.append(":")
        out.append(",".join(hist_field_print(f) for f in hd.fields[:hd.n_vals]
                            if f.flags & FL_VAR))
    out.append(":sort=")
    first_key_idx = hd.n_vals - hd.n_vars
    for i, sk in enumerate(hd.sort_keys):
        if i:
            out.append(",")
        idx = sk.field_idx
        if idx == 0:
            out.append("hitcount")
        else:
            if idx >= first_key_idx:
                idx += hd.n_vars
            out.append(hist_field_print(hd.fields[idx]))
        if sk.descending:
            out.append(".descending")
    out.append(":size=%d" % (1 << hd.map.map_bits))
    if hd.enable_timestamps:
        out.append(":clock=%s" % hd.attrs.clock)
    if hd.attrs.no_hitcount:
        out.append(":nohitcount")
    out.append(_actions_spec(hd))
    if t.filter_str is not None:
        out.append(" if %s" % t.filter_str)
    out.append(" [paused]" if t.paused else " [active]")
    out.append("\n")
    return "".join(out)


def _action_spec(data) -> str:
    if data.action == ACTION_SAVE:
        return ",".join(name for name, _hf, _idx in data.save_vars)
    if data.action == ACTION_TRACE:
        parts = ([data.synth_event_name] if data.use_trace_keyword else []) + data.params
        return ",".join(parts)
    return ""


def _actions_spec(hd) -> str:
    """``print_actions_spec()``"""
    out = []
    for data in hd.actions:
        if data.handler == HANDLER_ONMATCH:
            out.append(":onmatch(%s.%s)." % (data.match_system, data.match_event))
        else:
            out.append(":%s(%s)." % ("onmax" if data.handler == HANDLER_ONMAX else "onchange",
                                     data.var_str))
        out.append("%s(%s)" % (data.action_name, _action_spec(data)))
    return "".join(out)


def _print_actions(hd, elt) -> str:
    """``print_actions()``/``track_data_print()``"""
    out = []
    for data in hd.actions:
        if data.action == ACTION_SNAPSHOT or data.handler == HANDLER_ONMATCH:
            continue
        track = elt.vars[data.track_var_idx]
        out.append("\n\t%s: %10d" % ("max" if data.handler == HANDLER_ONMAX else "changed",
                                      track & U64_MAX))
        for d in hd.actions:
            for name, hf, idx in d.save_vars:
                v = elt.vars[idx]
                if hf.flags & FL_STRING:
                    out.append("  %s: %-32s" % (name, _cstr(v) if isinstance(v, bytes) else v))
                else:
                    out.append("  %s: %10d" % (name, v & U64_MAX if isinstance(v, int) else 0))
    return "".join(out)


def _snapshot_details(t, hd, sym) -> str:
    """``track_data_snapshot_print()``"""
    cond = hd.tr.cond_snapshot
    if cond is None or cond[0] is not hd:
        return ""
    data = cond[1]
    snap = data.snap
    if snap is None or not snap.updated:
        return ""

    class _Elt:
        key, private = snap.key, snap.comm
    return ("\nSnapshot taken (see tracing/snapshot).  Details:\n"
            "\ttriggering value { %s(%s) }: %10d\ttriggered by event with key: %s\n"
            % ("onmax" if data.handler == HANDLER_ONMAX else "onchange", data.var_str,
               snap.track_val & U64_MAX, _print_key(hd, _Elt, sym)))


# --- hist_trigger_show -------------------------------------------------------

def _print_key(hd, elt, sym: Symbols) -> str:
    out = ["{ "]
    multiline = False
    for i, f in enumerate(hd.key_fields):
        if i:
            out.append(", ")
        name = hist_field_name(f, 0)
        v = elt.key[i]
        fl = f.flags
        if fl & FL_HEX:
            out.append("%s: %x" % (name, v))
        elif fl & FL_SYM:
            out.append("%s: [%x] %-45s" % (name, v, sym.ps(v)))
        elif fl & FL_SYM_OFFSET:
            out.append("%s: [%x] %-55s" % (name, v, sym.pS(v)))
        elif fl & FL_EXECNAME:
            out.append("%s: %-16s[%10d]" % (name, _cstr(elt.private), v))
        elif fl & FL_SYSCALL:
            out.append("%s: %-30s[%3d]" % (name, sym.syscalls.get(v, "unknown_syscall"), v))
        elif fl & FL_STACKTRACE:
            out.append("%s.stacktrace" % f.field.name if f.field is not None
                       else "common_stacktrace:\n")
            for addr in v[:HIST_STACKTRACE_DEPTH]:
                if not addr:
                    break
                out.append("%9s%s\n" % ("", sym.pS(addr)))
            multiline = True
        elif fl & FL_LOG2:
            out.append("%s: ~ 2^%-2d" % (name, v))
        elif fl & FL_BUCKET:
            out.append("%s: ~ %d-%d" % (name, v, (v + f.buckets - 1) & U64_MAX))
        elif fl & FL_STRING:
            out.append("%s: %-50s" % (name, _cstr(v)))
        else:
            out.append("%s: %10d" % (name, v))
    if not multiline:
        out.append(" ")
    out.append("}")
    return "".join(out)


def get_percentage(val: int, total: int) -> int:
    """``__get_percentage()``: 100 times the percentage."""
    if not total:
        return UINT_MAX if val else 0
    if val < U64_MAX // 10000:
        return (val * 10000 // total) & UINT_MAX
    total //= 10000
    if not total:
        return UINT_MAX if val else 0
    return (val // total) & UINT_MAX


def fill_bar(val: int, maxv: int, size: int = 20) -> str:
    n = get_percentage(val, maxv)
    if n == UINT_MAX:
        return "[ERROR]"
    n = n * size // 10000
    return (BAR_CHAR * min(n, size)).ljust(size)


def _print_val(name: str, flags: int, val: int, stat) -> str:
    if flags & FL_PERCENT:
        pc = get_percentage(val, stat[1])
        if pc == UINT_MAX:
            return " %s (%%):[ERROR]" % name
        return " %s (%%): %3d.%02d" % (name, pc // 100, pc % 100)
    if flags & FL_GRAPH:
        return " %s: %20s" % (name, fill_bar(val, stat[0]))
    if flags & FL_HEX:
        return " %s: %10x" % (name, val)
    return " %s: %10d" % (name, val)


def _print_entries(hd, sym: Symbols) -> tuple[str, int]:
    entries = hd.map.sort_entries(hd.sort_keys)
    vals = hd.fields[:hd.n_vals]
    stats = {}
    for j, f in enumerate(vals):
        if f.flags & (FL_PERCENT | FL_GRAPH):
            sums = [e.sums[j] for e in entries]
            stats[j] = (max(sums, default=0), sum(sums))
    lines = []
    for e in entries:
        out = [_print_key(hd, e, sym)]
        if not hd.attrs.no_hitcount:
            out.append(_print_val("hitcount", 0, e.sums[0], stats.get(0)))
        for i in range(1, hd.n_vals):
            f = vals[i]
            if f.flags & (FL_VAR | FL_EXPR):
                continue
            out.append(" ")
            out.append(_print_val(hist_field_name(f, 0), f.flags, e.sums[i], stats.get(i)))
        if hd.actions:
            out.append(_print_actions(hd, e))
        out.append("\n")
        lines.append("".join(out))
    return "".join(lines), len(entries)


def hist_trigger_show(t, n: int, sym: Symbols) -> str:
    """The ``hist`` file's part for trigger ``t``, the ``n``-th hist
    trigger of its event."""
    hd = t.hist
    body, n_entries = _print_entries(hd, sym)
    if hd.actions:
        body += _snapshot_details(t, hd, sym)
    return ("%s# event histogram\n#\n# trigger info: %s#\n\n%s"
            "\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: %d\n"
            % ("\n\n" if n > 0 else "", trigger_listing(t), body, hd.map.hits, n_entries,
               hd.map.drops))
