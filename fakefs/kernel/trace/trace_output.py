"""Text rendering of trace entries (kernel/trace/trace_output.c).

``TraceFormatter(tr).printer()`` gives ``line(entry, cpu)``, the text the
``trace`` and ``trace_pipe`` files show for one entry: the context columns
(``comm-pid [cpu] flags timestamp: ``) then the entry's own printer.
"""

from __future__ import annotations

import struct

from ..cpu import num_online_cpus
from ..lib.vsprintf import hashed_ptr
from ..mm.mmap import find_vma
from . import trace_entries as te
from .trace_export import FTRACE_EVENTS
from .trace_events_raw import RecordEncoder, RecordError
from .trace_output_fields import EventFields, fields_text
from .trace_clock import clock_in_ns
from .trace_entries import (TRACE_FN, TRACE_FUNC_REPEATS, TRACE_PRINT, TRACE_RAW_DATA, TRACE_STACK, TRACE_STACK_ID,
                            TRACE_FLAG_BH_OFF, TRACE_FLAG_HARDIRQ, TRACE_FLAG_IRQS_NOSUPPORT,
                            TRACE_FLAG_IRQS_OFF, TRACE_FLAG_NEED_RESCHED, TRACE_FLAG_NMI,
                            TRACE_FLAG_PREEMPT_RESCHED, TRACE_FLAG_SOFTIRQ)


def lat_fmt(flags: int, pc: int) -> str:
    """``trace_print_lat_fmt()``: irqs-off, need-resched, hard/softirq, preempt, migrate."""
    bh_off = flags & TRACE_FLAG_BH_OFF
    irqs = flags & TRACE_FLAG_IRQS_OFF
    if irqs and bh_off:
        c1 = "D"
    elif irqs:
        c1 = "d"
    elif bh_off:
        c1 = "b"
    elif flags & TRACE_FLAG_IRQS_NOSUPPORT:
        c1 = "X"
    else:
        c1 = "."
    nr = flags & (TRACE_FLAG_NEED_RESCHED | TRACE_FLAG_PREEMPT_RESCHED)
    c2 = {TRACE_FLAG_NEED_RESCHED | TRACE_FLAG_PREEMPT_RESCHED: "N",
          TRACE_FLAG_NEED_RESCHED: "n", TRACE_FLAG_PREEMPT_RESCHED: "p"}.get(nr, ".")
    nmi = flags & TRACE_FLAG_NMI
    hard = flags & TRACE_FLAG_HARDIRQ
    soft = flags & TRACE_FLAG_SOFTIRQ
    if nmi and hard:
        c3 = "Z"
    elif nmi:
        c3 = "z"
    elif hard and soft:
        c3 = "H"
    elif hard:
        c3 = "h"
    elif soft:
        c3 = "s"
    else:
        c3 = "."
    c4 = "%x" % (pc & 0xF) if pc & 0xF else "."
    c5 = "%x" % (pc >> 4) if pc & 0xF0 else "."
    return c1 + c2 + c3 + c4 + c5


class TraceFormatter:
    def __init__(self, tr):
        self.tr = tr
        self.kallsyms = tr.kernel.kallsyms
        self._sym_cache: dict[int, str] = {}
        self._sym_generation = self.kallsyms.generation    # modules (un)loaded since: names change
        self._fields = None          # (EventFields, RecordEncoder), made when first asked

    def comm(self, pid: int) -> str:
        if pid == 0:
            return "<idle>"
        return self.tr.find_cmdline(pid)

    def ptr(self, value: int) -> str:
        """An event's ``%p``: hashed while ``hash-ptr`` is set (the
        default), else the address itself (``trace_event_format()`` makes it
        ``%px``)."""
        if self.tr.flag("hash-ptr"):
            return hashed_ptr(value)
        return "%016x" % value

    def sym(self, ip: int, offset: bool, addr: bool) -> str:
        if not ip:
            return "0"
        key = ip * 4 + (2 if offset else 0) + (1 if addr else 0)
        s = self._sym_cache.get(key)
        if s is None:
            ks = self.kallsyms
            if offset:
                s = ks.sprint_symbol(ip)
            else:                       # kallsyms_lookup(): the name alone, no [module]
                hit = ks.lookup(ip)
                s = hit[0] if hit is not None else "0x%08x" % ip
            if addr:
                s += " <%016x>" % ip
            self._sym_cache[key] = s
        return s

    def printer(self, lat: bool = False, ring=None):
        """``line(entry, cpu, next_ts, idx)``: the text of one entry
        (``print_trace_line()``), with the options as they are now (taken
        once for a whole read, not per line).  ``lat``: the latency format
        the reader was opened with (``TRACE_FILE_LAT_FMT``), whose columns
        need the next entry's timestamp and the entry's index, and count
        from ``ring``'s start (the buffer read; the array's own if None).  The
        ``bin`` output is bytes carried as latin-1 text, as all the text is."""
        tr = self.tr
        if self._sym_generation != self.kallsyms.generation:
            self._sym_cache.clear()
            self._sym_generation = self.kallsyms.generation
        flag = tr.flag
        context, tgid, irq = flag("context-info"), flag("record-tgid"), flag("irq-info")
        offset, addr, parent = flag("sym-offset"), flag("sym-addr"), flag("print-parent")
        verbose = flag("verbose")
        userobj = flag("sym-userobj")
        msg_only = flag("trace_printk") and flag("printk-msg-only")
        mode = "bin" if flag("bin") else "hex" if flag("hex") else "raw" if flag("raw") else ""
        fields = self.fields_printer() if flag("fields") else None
        time_start = (tr.buffer if ring is None else ring).time_start
        in_ns = clock_in_ns(tr.clock)           # TRACE_FILE_TIME_IN_NS
        comm, sym, find_tgid = self.comm, self.sym, tr.find_tgid
        events = tr.tracing.events_by_id
        flags_text: dict = {}
        heads: dict = {}        # (pid, cpu) -> "comm-pid (tgid) [cpu] ": one read sees one table

        def lat_flags(entry) -> str:
            key = (entry[3], entry[4])
            f = flags_text.get(key)
            if f is None:
                f = flags_text[key] = lat_fmt(*key)
            return f

        def body(entry) -> str:
            t = entry[1]
            if t == TRACE_FN:
                if parent and entry[6]:
                    return sym(entry[5], offset, addr) + " <-" + sym(entry[6], offset, addr) + "\n"
                return sym(entry[5], offset, addr) + "\n"
            if t == TRACE_STACK_ID:
                return "<stack_id %d>\n" % entry[5]
            if t == te.TRACE_CTX or t == te.TRACE_WAKE:
                return ctxwake_text(entry, comm)
            if t == TRACE_FUNC_REPEATS:          # trace_func_repeats_print()
                rip, rparent, count = entry[5]
                s = sym(rip, offset, addr)
                if parent and rparent:
                    s += " <-" + sym(rparent, offset, addr)
                last = entry[0] - entry[6]
                if in_ns:
                    us = ns2usecs(last)
                    when = " %5d.%06d" % (us // 1_000_000, us % 1_000_000)
                else:
                    when = " %12d" % last
                return "%s (repeats: %d, last_ts:%s)\n" % (s, count, when)
            if t == TRACE_STACK:
                return "<stack trace>\n" + "".join([" => " + sym(ip, offset, addr) + "\n" for ip in entry[5]])
            if t == te.TRACE_USER_STACK:
                return self.user_stack_text(entry, userobj, addr)
            if t == TRACE_PRINT:
                return sym(entry[5], offset, addr) + ": " + entry[6]
            if t == TRACE_RAW_DATA:
                return raw_data_text(entry)
            ev = events.get(t)
            if ev is not None:
                return ev.text(entry[5], self)
            return "Unknown type %d\n" % t

        def context_columns(entry, cpu: int) -> str:
            """``trace_print_context()``"""
            pid = entry[2]
            key = (pid, cpu, entry[3], entry[4]) if irq else (pid, cpu)
            s = heads.get(key)
            if s is None:
                s = "%16s-%-7d " % (comm(pid), pid)
                if tgid:
                    t = find_tgid(pid)
                    s += "(%7d) " % t if t else "(-------) "
                s += "[%03d] " % cpu
                if irq:
                    s += lat_flags(entry)
                heads[key] = s
            if not in_ns:
                return "%s %12d: " % (s, entry[0])
            usecs = ns2usecs(entry[0])
            return "%s %5d.%06d: " % (s, usecs // 1_000_000, usecs % 1_000_000)

        def lat_columns(entry, cpu: int, next_ts, idx: int) -> str:
            """``trace_print_lat_context()``: the delay mark looks at the
            next entry the reader will show (none: this one)."""
            pid, ts = entry[2], entry[0]
            if verbose:
                s = "%16s %7d %3d %d %08x %08x " % (comm(pid), pid, cpu, entry[3], entry[4] & 0xF, idx)
            else:
                s = "%8.8s-%-7d %3d" % (comm(pid), pid, cpu) + lat_flags(entry)
            rel = (ts if next_ts is None else next_ts) - ts
            if not in_ns:                        # the clock's own units
                if verbose:
                    return s + "[%016x] %d (+%d): " % (ts, ts - time_start, rel)
                return s + " %4d: " % (ts - time_start)
            abs_us = ns2usecs(ts - time_start)
            rel_us = ns2usecs(rel)
            if verbose:
                return s + "[%08x] %d.%03dms (+%d.%03dms): " % (ns2usecs(ts), abs_us // 1000, abs_us % 1000,
                                                               rel_us // 1000, rel_us % 1000)
            return s + " %4dus%s: " % (abs_us, trace_find_mark(rel_us * 1000))

        def raw_line(entry, cpu: int) -> str:
            """``print_raw_fmt()``: the raw printer of the entry's event (the
            function and print entries have one; the rest print their type)."""
            s = "%d %d %d " % (entry[2], cpu, entry[0]) if context else ""
            t = entry[1]
            if t == TRACE_FN:
                return s + "%x %x\n" % (entry[5], entry[6])
            if t == TRACE_PRINT:
                return s + "# %x %s" % (entry[5], entry[6])
            if t == TRACE_FUNC_REPEATS:
                return s + "%d %d %d %d\n" % (entry[5] + (entry[6],))
            if t == te.TRACE_CTX or t == te.TRACE_WAKE:     # trace_ctx_raw(), trace_wake_raw()
                pp, pprio, ps, np_, nprio, ns, ncpu = entry[5]
                return s + "%d %d %c %d %d %d %c\n" % (
                    pp, pprio, "+" if t == te.TRACE_WAKE else state_char(ps), ncpu, np_, nprio,
                    state_char(ns))
            return s + nop_text(t)

        def hex_line(entry, cpu: int) -> str:
            """``print_hex_fmt()``: each field's bytes in hex, most
            significant first, then a newline."""
            s = "%08x %08x %016x " % (entry[2] & MASK32, cpu, entry[0]) if context else ""
            t = entry[1]
            if t == TRACE_FN:
                return s + "%016x %016x \n" % (entry[5], entry[6])
            if t == te.TRACE_CTX or t == te.TRACE_WAKE:     # trace_ctxwake_hex()
                pp, pprio, ps, np_, nprio, ns, ncpu = entry[5]
                s_char = ord("+") if t == te.TRACE_WAKE else ord(state_char(ps))
                return s + "%08x %02x %02x %08x %08x %02x %02x \n" % (
                    pp & MASK32, pprio & 0xff, s_char, ncpu & MASK32, np_ & MASK32, nprio & 0xff,
                    ord(state_char(ns)))
            return s + nop_text(t) + "\n"

        def bin_line(entry, cpu: int) -> str:
            """``print_bin_fmt()``: the fields' bytes as they are in memory."""
            s = struct.pack("<iiQ", entry[2], cpu, entry[0]) if context else b""
            t = entry[1]
            if t == TRACE_FN:
                return (s + struct.pack("<QQ", entry[5], entry[6])).decode("latin-1")
            if t == te.TRACE_CTX or t == te.TRACE_WAKE:     # trace_ctxwake_bin()
                pp, pprio, ps, np_, nprio, ns, ncpu = entry[5]
                return (s + struct.pack("<IBBIIBB", pp & MASK32, pprio & 0xff, ps & 0xff,
                                        ncpu & MASK32, np_ & MASK32, nprio & 0xff,
                                        ns & 0xff)).decode("latin-1")
            return s.decode("latin-1") + nop_text(t)

        if not msg_only and not mode and fields is None and context and not lat:
            def plain_line(entry, cpu: int, next_ts=None, idx: int = 0) -> str:
                return context_columns(entry, cpu) + body(entry)
            return plain_line

        def line(entry, cpu: int, next_ts=None, idx: int = 0) -> str:
            if msg_only and entry[1] == TRACE_PRINT:
                return entry[6]            # trace_print_printk_msg_only()
            if mode == "bin":
                return bin_line(entry, cpu)
            if mode == "hex":
                return hex_line(entry, cpu)
            if mode == "raw":
                return raw_line(entry, cpu)
            text = body(entry) if fields is None else fields(entry, body)
            if not context:
                return text
            if lat:
                return lat_columns(entry, cpu, next_ts, idx) + text
            return context_columns(entry, cpu) + text
        return line

    def user_stack_text(self, entry, userobj: bool, addr: bool) -> str:
        """``trace_user_stack_print()``: each address up to the first 0, as
        ``<object>[+0xoff]`` (with ``sym-userobj``, when the process still
        runs and a mapping holds it) and/or `` <address>``."""
        k = self.tr.kernel
        task = k.sched.find(entry[5]) if userobj and entry[5] else None
        out = ["<user stack trace>\n"]
        for ip in entry[6][:8]:
            if not ip:
                break
            s = " => "
            vma = find_vma(k.seed, task, ip) if task is not None else None
            if vma is not None:
                s += "%s[+0x%x]" % (vma.path, ip - vma.start)
            if addr or vma is None:
                s += " <%016x>" % ip
            out.append(s + "\n")
        return "".join(out)

    def fields_printer(self):
        """``fields(entry, body)``: the ``fields`` option's text of an entry
        (``print_event_fields()``), ``body(entry)`` where its record cannot
        be made."""
        if self._fields is None:
            self._fields = (EventFields(self.tr.tracing, FTRACE_EVENTS), RecordEncoder(self.tr.tracing))
        known, encoder = self._fields
        ks = self.kallsyms

        def fields(entry, body) -> str:
            t = entry[1]
            got = known.of(t)
            if got is None:
                if t <= te.TRACE_LAST_TYPE:
                    return "UNKNOWN TYPE %d\n" % t
                return "Unknown type %d\n" % t
            try:
                rec = encoder.encode(entry)
            except RecordError:
                return body(entry)
            return fields_text(got[0], got[1], rec, ks.sprint_symbol)
        return fields


def ns2usecs(ns: int) -> int:
    """``ns2usecs()``: nanoseconds to the nearest microsecond."""
    return (ns + 500) // 1000


# trace_find_mark(): the delay marks, largest first (nanoseconds)
DELAY_MARKS = ((1_000_000_000, "$"), (100_000_000, "@"), (10_000_000, "*"),
               (1_000_000, "#"), (100_000, "!"), (10_000, "+"))
MASK32 = 0xFFFFFFFF


def trace_find_mark(delay_ns: int) -> str:
    for limit, mark in DELAY_MARKS:
        if delay_ns > limit:
            return mark
    return " "


def state_char(index: int) -> str:
    """``task_index_to_char()``"""
    chars = te.TASK_STATE_CHARS
    return chars[index] if 0 <= index < len(chars) else "?"


def ctxwake_text(entry, comm) -> str:
    """``trace_ctx_print()`` / ``trace_wake_print()``: the delimiter
    ``==>`` for a switch, ``  +`` for a wakeup; the next task's comm from
    the saved cmdlines."""
    pp, pprio, ps, np_, nprio, ns, ncpu = entry[5]
    delim = "==>" if entry[1] == te.TRACE_CTX else "  +"
    return " %7d:%3d:%c %s [%03d] %7d:%3d:%c %s\n" % (pp, pprio, state_char(ps), delim, ncpu,
                                                     np_, nprio, state_char(ns), comm(np_))


def nop_text(type_id: int) -> str:
    """``trace_nop_print()``: what an event without a raw/hex/binary printer shows."""
    return "type: %d\n" % type_id


def raw_data_text(entry) -> str:
    """trace_raw_data(): ``# <id> buf:`` and the bytes in hex."""
    return "# %x buf:%s\n" % (entry[5], "".join([" %02x" % b for b in entry[6]]))


# print_lat_help_header(): the latency format's column header
LAT_HELP_HEADER = ("#                    _------=> CPU#            \n"
                   "#                   / _-----=> irqs-off/BH-disabled\n"
                   "#                  | / _----=> need-resched    \n"
                   "#                  || / _---=> hardirq/softirq \n"
                   "#                  ||| / _--=> preempt-depth   \n"
                   "#                  |||| / _-=> migrate-disable \n"
                   "#                  ||||| /     delay           \n"
                   "#  cmd     pid     |||||| time  |   caller     \n"
                   "#     \\   /        ||||||  \\    |    /       \n")
# preempt_model_*() as print_trace_header() names it: the simulated kernel
# is Debian's PREEMPT_DYNAMIC build booted with its default, voluntary
PREEMPT_MODEL = "desktop"


def print_trace_header(tr, entries: int, total: int, ring=None) -> str:
    """``print_trace_header()``: the record of the buffer's CPU (a
    latency tracer's max buffer: the worst section's, trace_snapshot.MaxData);
    a buffer no latency tracer recorded into has an empty one (no task,
    0 us, CPU 0)."""
    k = tr.kernel
    data = None
    cpu = 0
    if ring is not None and ring is tr.max_buffer:
        cpu = tr.max_cpu
        data = tr.max_data.get(cpu)
    out = ["# %s latency trace v1.1.5 on %s\n" % (tr.current.name, k.config.release),
           "# " + "-" * 68 + "\n",
           "# latency: %d us, #%d/%d, CPU#%d | (M:%s VP:0, KP:0, SP:0 HP:0 #P:%d)\n"
           % ((data.saved_latency // 1000) if data else 0, entries, total, cpu, PREEMPT_MODEL,
              num_online_cpus(k)),
           "#    -----------------\n"]
    if data is None:
        out.append("#    | task: -0 (uid:0 nice:0 policy:0 rt_prio:0)\n")
    else:
        out.append("#    | task: %.16s-%d (uid:%d nice:%d policy:%d rt_prio:%d)\n"
                   % (data.comm, data.pid, data.uid, data.nice, data.policy, data.rt_priority))
    out.append("#    -----------------\n")
    if data is not None and data.critical_start:
        f = tr.tracing.global_trace.flag            # sym_flags: the top level's options
        sym = TraceFormatter(tr).sym                # names as they are now
        offset, addr = f("sym-offset"), f("sym-addr")
        out.append("#  => started at: %s\n" % sym(data.critical_start, offset, addr))
        out.append("#  => ended at:   %s\n#\n" % sym(data.critical_end, offset, addr))
    out.append("#\n")
    return "".join(out)


def func_help_header(tr, entries: int, total: int, nr_cpus: int) -> str:
    """The column header of ``trace`` (print_func_help_header[_irq])."""
    out = ["# entries-in-buffer/entries-written: %d/%d   #P:%d\n" % (entries, total, nr_cpus),
           "#\n"]
    tgid = tr.flag("record-tgid")
    if tr.flag("irq-info"):
        sp = " " * (12 if tgid else 2)
        out.append("#                            %s  _-----=> irqs-off/BH-disabled\n" % sp)
        out.append("#                            %s / _----=> need-resched\n" % sp)
        out.append("#                            %s| / _---=> hardirq/softirq\n" % sp)
        out.append("#                            %s|| / _--=> preempt-depth\n" % sp)
        out.append("#                            %s||| / _-=> migrate-disable\n" % sp)
        out.append("#                            %s|||| /     delay\n" % sp)
        out.append("#           TASK-PID  %s CPU#  |||||  TIMESTAMP  FUNCTION\n"
                   % ("     TGID   " if tgid else "  "))
        out.append("#              | |    %s   |   |||||     |         |\n"
                   % ("       |    " if tgid else "  "))
    else:
        out.append("#           TASK-PID    %s CPU#     TIMESTAMP  FUNCTION\n"
                   % ("   TGID   " if tgid else ""))
        out.append("#              | |      %s   |         |         |\n"
                   % ("     |    " if tgid else ""))
    return "".join(out)
