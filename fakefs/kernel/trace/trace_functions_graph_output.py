"""The function graph tracer's text (``print_graph_function()`` and
``print_graph_headers()`` of kernel/trace/trace_functions_graph.c).

A reader (an open of ``trace``, or of ``trace_pipe``) keeps per CPU the
last pid shown, the depth and the function entered at each depth
(``struct fgraph_data``).  An entry whose next entry on its CPU is its own
return (same task, same function) is a leaf: one line, ``func();`` with
its duration, and the return is taken with it.  Otherwise ``func() {`` and
later ``}`` (``} /* func */`` when the entry was not seen at that depth,
or with ``funcgraph-tail``).  Other entries are comments (``/* ... */``),
the function tracer's and stacks print as usual.
"""

from __future__ import annotations

import heapq

from .trace_entries import TRACE_FN, TRACE_GRAPH_ENT, TRACE_GRAPH_RET, TRACE_PRINT, TRACE_STACK
from .trace_output import lat_fmt, trace_find_mark

PROCINFO_LENGTH = 14          # TRACE_GRAPH_PROCINFO_LENGTH
INDENT = 2                    # TRACE_GRAPH_INDENT
FILL_FULL = "              |  "


ULONG_MASK = (1 << 64) - 1


def graph_duration(ns: int) -> str:
    """``trace_print_graph_duration()``: microseconds with up to 7 digits
    in all, then `` us `` and spaces to the column's width."""
    usecs, rem = divmod(ns, 1000)
    s = "%d" % usecs
    n = len(s)
    if n < 7:
        frac = ("%03d" % rem)[:min(5, 8 - n) - 1]
        s += "." + frac
        n += len(frac) + 1
    return s + " us " + " " * max(0, 8 - n)


class GraphView:
    """One reader's ``fgraph_data`` and the options as the read began."""

    def __init__(self, tr, formatter, lat: bool):
        self.tr = tr
        self.fmt = formatter
        n = tr.kernel.nr_cpus
        self.last_pid = [-1] * n
        self.depth = [0] * n
        self.enter_funcs: list[dict] = [{} for _ in range(n)]
        self.normal = formatter.printer(lat)
        self.cpu_width = len("%u" % (n - 1))
        opts = tr.current.opts if tr.current.name == "function_graph" else \
            tr.tracers["function_graph"].opts
        self.opts = dict(opts)
        self.context = tr.flag("context-info")
        self.lat = tr.flag("latency-format")
        self.ks = tr.kernel.kallsyms
        self.events = tr.tracing.events_by_id

    # --- the header ---------------------------------------------------------
    def header(self, nonempty: bool, lat_header) -> str:
        """``print_graph_headers_flags()``; ``lat_header()`` the latency
        format's trace header (shown for a buffer that is not empty)."""
        if not self.context:
            return ""
        o = self.opts
        out = []
        if self.lat:
            if not nonempty:
                return ""
            out.append(lat_header())
            size = (16 if o["funcgraph-abstime"] else 0) + (4 if o["funcgraph-cpu"] else 0) \
                + (17 if o["funcgraph-proc"] else 0)
            sp = " " * size
            out.append("#%s  _-----=> irqs-off        \n" % sp)
            out.append("#%s / _----=> need-resched    \n" % sp)
            out.append("#%s| / _---=> hardirq/softirq \n" % sp)
            out.append("#%s|| / _--=> preempt-depth   \n" % sp)
            out.append("#%s||| /                      \n" % sp)
        a = ["#"]
        b = ["#"]
        if o["funcgraph-abstime"]:
            a.append("     TIME       ")
            b.append("      |         ")
        if o["funcgraph-cpu"]:
            a.append(" CPU")
            b.append(" |  ")
        if o["funcgraph-proc"]:
            a.append("  TASK/PID       ")
            b.append("   |    |        ")
        if self.lat:
            a.append("||||   ")
            b.append("||||   ")
        if o["funcgraph-duration"]:
            a.append("  DURATION   ")
            b.append("   |   |      ")
        a.append("               FUNCTION CALLS\n")
        b.append("               |   |   |   |\n")
        out.append("".join(a))
        out.append("".join(b))
        return "".join(out)

    # --- the lines ----------------------------------------------------------
    def _cpu(self, cpu: int) -> str:
        return " %*d) " % (self.cpu_width, cpu)

    def _proc(self, pid: int) -> str:
        """``print_graph_proc()``: comm (7 chars at most)-pid, centred in 14."""
        s = "%s-%d" % (self.fmt.comm(pid)[:7], pid)
        spaces = max(0, PROCINFO_LENGTH - len(s))
        return " " * (spaces // 2) + s + " " * (spaces - spaces // 2)

    def _prologue(self, e, cpu: int) -> str:
        pid = e[2]
        out = ""
        last = self.last_pid[cpu]
        if last != pid:                               # verif_pid()
            self.last_pid[cpu] = pid
            if last != -1:
                out = (" ------------------------------------------\n" + self._cpu(cpu)
                       + self._proc(last) + " => " + self._proc(pid)
                       + "\n ------------------------------------------\n\n")
        if not self.context:
            return out
        o = self.opts
        if o["funcgraph-abstime"]:
            sec, ns = divmod(e[0], 1_000_000_000)
            out += "%5d.%06d |  " % (sec, ns // 1000)
        if o["funcgraph-cpu"]:
            out += self._cpu(cpu)
        if o["funcgraph-proc"]:
            out += self._proc(pid) + " | "
        if self.lat:
            out += " " + lat_fmt(e[3], e[4]) + " | "
        return out

    def _duration(self, ns: int | None) -> str:
        """``print_graph_duration()``; None: the column filled with spaces."""
        if not (self.opts["funcgraph-duration"] and self.context):
            return ""
        if ns is None:
            return FILL_FULL
        mark = "%s " % trace_find_mark(ns) if self.opts["funcgraph-overhead"] else "  "
        return mark + graph_duration(ns) + "|  "

    def _sym(self, ip: int) -> str:
        return self.ks.sprint_symbol_no_offset(ip)

    def line(self, e, cpu: int, nxt) -> tuple[str, bool]:
        """The text of entry ``e`` on ``cpu`` and whether it took ``nxt``
        (the next entry of that CPU: a leaf's return)."""
        t = e[1]
        if t == TRACE_GRAPH_ENT:
            func, depth = e[5], e[6]
            head = self._prologue(e, cpu)
            indent = " " * (depth * INDENT)
            if (nxt is not None and nxt[1] == TRACE_GRAPH_RET and nxt[2] == e[2]
                    and nxt[5][0] == func):
                ret = nxt[5]
                self.depth[cpu] = depth - 1
                self.enter_funcs[cpu].pop(depth, None)
                out = head + self._duration(ret[4] - ret[3]) + indent
                if self.opts.get("funcgraph-retval"):
                    return out + self._retval(ret[5], func, True), True
                return out + self._sym(func) + "();\n", True
            self.depth[cpu] = depth
            self.enter_funcs[cpu][depth] = func
            return head + self._duration(None) + indent + self._sym(func) + "() {\n", False
        if t == TRACE_GRAPH_RET:
            func, depth, overrun, calltime, rettime, retval = e[5]
            self.depth[cpu] = depth - 1
            match = self.enter_funcs[cpu].pop(depth, None) == func
            out = self._prologue(e, cpu) + self._duration(rettime - calltime) + " " * (depth * INDENT)
            if self.opts.get("funcgraph-retval"):
                out += self._retval(retval, func, False)
            elif match and not self.opts["funcgraph-tail"]:
                out += "}\n"
            else:
                out += "} /* %s */\n" % self._sym(func)
            if self.opts["funcgraph-overrun"]:
                out += " (Overruns: %u)\n" % overrun
            return out, False
        if t in (TRACE_FN, TRACE_STACK):
            return self.normal(e, cpu), False
        if t == TRACE_PRINT:
            text = e[6]
        else:
            ev = self.events.get(t)
            if ev is None:
                return self.normal(e, cpu), False
            text = ev.text(e[5], self.fmt)
        return self._comment(e, cpu, text), False

    def _retval(self, retval: int, func: int, leaf: bool) -> str:
        return print_graph_retval(self._sym(func), retval, leaf,
                                  bool(self.opts.get("funcgraph-retval-hex")))

    def lines(self, streams):
        """The text of per-CPU ``streams`` ([(cpu, iterator)]), merged."""
        return graph_lines(self, streams)

    def _comment(self, e, cpu: int, text: str) -> str:
        """``print_graph_comment()``"""
        depth = self.depth[cpu]
        out = self._prologue(e, cpu) + self._duration(None)
        if depth > 0:
            out += " " * ((depth + 1) * INDENT)
        if text.endswith("\n"):
            text = text[:-1]
        return out + "/* " + text + " */\n"


def print_graph_retval(name: str, retval: int, leaf: bool, hex_format: bool) -> str:
    """``print_graph_retval()``: a value that reads as an error code
    (-4095..-1, as a long or as an int in the low half) in decimal, anything
    else in hex; with funcgraph-retval-hex always hex."""
    retval &= ULONG_MASK
    err = 0
    if not hex_format and retval:
        err = retval - (1 << 32) if retval & (1 << 31) and not retval >> 32 else retval
        if err > ULONG_MASK - 4095:
            err -= 1 << 64
        if not -4095 <= err < 0:
            err = 0
    value = "%d" % err if err else "0x%x" % retval
    if leaf:
        return "%s(); /* = %s */\n" % (name, value)
    return "} /* %s = %s */\n" % (name, value)


def graph_lines(view: GraphView, streams):
    """The lines of the entries of per-CPU ``streams`` ([(cpu, iterator)],
    each in time order), merged by timestamp; a leaf's return is taken
    from its CPU's stream with its entry."""
    heads = []
    for cpu, it in streams:
        e = next(it, None)
        if e is not None:
            heads.append((e[0], cpu, e, it))
    heapq.heapify(heads)
    while heads:
        _ts, cpu, e, it = heads[0]
        nxt = next(it, None)
        text, took = view.line(e, cpu, nxt)
        if took:
            nxt = next(it, None)
        if nxt is None:
            heapq.heappop(heads)
        else:
            heapq.heapreplace(heads, (nxt[0], cpu, nxt, it))
        yield text
