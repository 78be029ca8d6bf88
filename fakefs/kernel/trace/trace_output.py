"""Text rendering of trace entries (kernel/trace/trace_output.c).

``TraceFormatter(tr).printer()`` gives ``line(entry, cpu)``, the text the
``trace`` and ``trace_pipe`` files show for one entry: the context columns
(``comm-pid [cpu] flags timestamp: ``) then the entry's own printer.
"""

from __future__ import annotations

from .trace_entries import (TRACE_FN, TRACE_PRINT, TRACE_RAW_DATA, TRACE_STACK, TRACE_STACK_ID,
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

    def comm(self, pid: int) -> str:
        if pid == 0:
            return "<idle>"
        return self.tr.find_cmdline(pid)

    def sym(self, ip: int, offset: bool, addr: bool) -> str:
        if not ip:
            return "0"
        key = ip * 4 + (2 if offset else 0) + (1 if addr else 0)
        s = self._sym_cache.get(key)
        if s is None:
            ks = self.kallsyms
            s = ks.sprint_symbol(ip) if offset else ks.sprint_symbol_no_offset(ip)
            if addr:
                s += " <%016x>" % ip
            self._sym_cache[key] = s
        return s

    def printer(self):
        """``line(entry, cpu)``: the text of one entry, with the options as
        they are now (taken once for a whole read, not per line)."""
        tr = self.tr
        flag = tr.flag
        context, tgid, irq = flag("context-info"), flag("record-tgid"), flag("irq-info")
        offset, addr, raw, parent = flag("sym-offset"), flag("sym-addr"), flag("raw"), flag("print-parent")
        comm, sym, find_tgid = self.comm, self.sym, tr.find_tgid
        events = tr.tracing.events_by_id
        lat: dict = {}
        heads: dict = {}        # (pid, cpu) -> "comm-pid (tgid) [cpu] ": one read sees one table

        def body(entry) -> str:
            t = entry[1]
            if t == TRACE_FN:
                if raw:
                    return "%x %x\n" % (entry[5], entry[6])
                if parent and entry[6]:
                    return sym(entry[5], offset, addr) + " <-" + sym(entry[6], offset, addr) + "\n"
                return sym(entry[5], offset, addr) + "\n"
            if t == TRACE_STACK_ID:
                return "<stack_id %d>\n" % entry[5]
            if t == TRACE_STACK:
                return "<stack trace>\n" + "".join([" => " + sym(ip, offset, addr) + "\n" for ip in entry[5]])
            if t == TRACE_PRINT:
                msg = entry[6]
                return msg if msg.endswith("\n") else msg + "\n"
            if t == TRACE_RAW_DATA:
                return raw_data_text(entry)
            ev = events.get(t)
            if ev is not None:
                return ev.text(entry[5], self)
            return "Unknown type %d\n" % t

        def line(entry, cpu: int) -> str:
            if not context:
                return body(entry)
            pid = entry[2]
            s = heads.get((pid, cpu))
            if s is None:
                s = "%16s-%-7d " % (comm(pid), pid)
                if tgid:
                    t = find_tgid(pid)
                    s += "(%7d) " % t if t else "(-------) "
                s = heads[pid, cpu] = s + "[%03d] " % cpu
            if irq:
                key = (entry[3], entry[4])
                f = lat.get(key)
                if f is None:
                    f = lat[key] = lat_fmt(*key)
                s += f
            usecs = entry[0] // 1000
            return "%s %5d.%06d: %s" % (s, usecs // 1_000_000, usecs % 1_000_000, body(entry))
        return line


def raw_data_text(entry) -> str:
    """trace_raw_data(): ``# <id> buf:`` and the bytes in hex."""
    return "# %x buf:%s\n" % (entry[5], "".join([" %02x" % b for b in entry[6]]))


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
