"""Dynamic ftrace: kernel/trace/ftrace.c and the function probe commands.

* The records (``struct dyn_ftrace``): every traceable function of the
  symbol table, in address order, module functions after the core ones —
  what ``available_filter_functions`` lists.  Not traceable: padding
  symbols, init text (freed after boot), the entry, noinstr and cpuidle
  text, static-call trampolines and thunks, and whatever the workload's
  call graph marks ``%notrace``.
* Per trace array, an :class:`FtraceOps`: the filter and notrace function
  sets (``set_ftrace_filter``, ``set_ftrace_notrace``) with cached
  ``:mod:`` commands, the function probes registered through
  ``set_ftrace_filter`` (``traceon``, ``traceoff``, ``stacktrace``,
  ``enable_event``, ``disable_event``, each with or without a count), and
  the pid lists (``set_ftrace_pid``, ``set_ftrace_notrace_pid``; the
  simulated tasks never fork, so ``function-fork`` has nothing to add to
  them, and ``pid_files_wanted()`` tells when the files exist).  While any
  of that is set it is the array's ``tr.ftrace_ops``: ``match(ip, pid)``
  decides whether the function tracer records a call, ``after_call()``
  runs the probes of the function called.  ``call_targets()`` tells the
  activity generator which functions' calls matter now (see
  ``trace_activity.py``: a filtered tracer or a probe sees every call of
  its functions, not a thinned sample).

Differences from the kernel, on purpose: a filter file's function set is
updated by each write (the kernel updates it when the file is closed; FUSE
delivers RELEASE after ``close()`` has returned, so a following command
could still see the old set), and a word left unterminated at the end of
the writes is processed at FLUSH, errors ignored (as the kernel ignores
them at release).  ``snapshot``, ``dump`` and ``cpudump`` probes are not
there (no snapshot buffer, no console to dump to): like a kernel without
those commands, they are refused with EINVAL and README does not list them.
"""

from __future__ import annotations

import errno
from bisect import bisect_right

from ..lib.glob import glob_regex
from ..fs.pseudo import FileOperations, KernelError, TRACE_MODE_READ, TRACE_MODE_WRITE
from ..params import kstrtoul
from ..workload import FENTRY_IP

# trace_parser size of the filter files (KSYM_SYMBOL_LEN + 4)
FTRACE_BUFF_MAX = 670
# trace_pid_write(): one pid word
PID_BUF_SIZE = 127
PID_MAX_LIMIT = 4 * 1024 * 1024

# filter_parse_regex() types
MATCH_FULL, MATCH_FRONT_ONLY, MATCH_MIDDLE_ONLY, MATCH_END_ONLY, MATCH_GLOB, MATCH_INDEX = range(6)

ALL_ENABLED = "#### all functions enabled ####\n"
NONE_DISABLED = "#### no functions disabled ####\n"
NO_PID = "no pid\n"

# symbols that are text but never ftrace records
_SKIP_PREFIXES = ("__pfx_", "__cfi_", "__pi_", "__SCT__", "__x86_indirect_", "__x86_return_thunk",
                  "srso_", "retbleed_")
_SKIP_RANGES = (("__entry_text_start", "__entry_text_end"),
                ("__noinstr_text_start", "__noinstr_text_end"),
                ("__cpuidle_text_start", "__cpuidle_text_end"),
                ("__static_call_text_start", "_etext"),
                ("_sinittext", "_einittext"))


# --------------------------------------------------------------- matching
def filter_parse_regex(buff: str):
    """(type, search, not) the way ``filter_parse_regex()`` reads a glob."""
    neg = buff.startswith("!")
    if neg:
        buff = buff[1:]
    if buff[:1].isdigit():
        return MATCH_INDEX, buff, neg
    typ = MATCH_FULL
    n = len(buff)
    for i, ch in enumerate(buff):
        if ch == "*":
            if i == 0:
                typ = MATCH_END_ONLY
            elif i == n - 1:
                typ = MATCH_MIDDLE_ONLY if typ == MATCH_END_ONLY else MATCH_FRONT_ONLY
                buff = buff[:i]
                break
            else:
                return MATCH_GLOB, buff, neg
        elif ch in "[?\\":
            return MATCH_GLOB, buff, neg
    if buff.startswith("*"):
        buff = buff[1:]
    return typ, buff, neg


class Glob:
    """``struct ftrace_glob``: a parsed pattern and ``ftrace_match()``."""

    __slots__ = ("type", "search", "_re")

    def __init__(self, typ, search):
        self.type = typ
        self.search = search
        self._re = glob_regex(search) if typ == MATCH_GLOB else None

    def __len__(self):
        return len(self.search)

    def match(self, s: str) -> bool:
        t = self.type
        if t == MATCH_FULL:
            return s == self.search
        if t == MATCH_FRONT_ONLY:
            return s.startswith(self.search)
        if t == MATCH_MIDDLE_ONLY:
            return self.search in s
        if t == MATCH_END_ONLY:
            return s.endswith(self.search)
        if t == MATCH_GLOB:
            return self._re.fullmatch(s) is not None
        return False


# --------------------------------------------------------------- records
class FtraceRecords:
    """The dyn_ftrace records of the running kernel (one per kernel)."""

    def __init__(self, kernel):
        ks = kernel.kallsyms
        notrace = set()
        wl = kernel.workload
        if wl is not None:
            for tok in wl.graph.notrace:
                for alt in tok.split("|"):
                    name = ks.resolve(alt)
                    if name is not None:
                        notrace.add(name)
        spans = []
        for lo, hi in _SKIP_RANGES:
            a, b = ks.addr_of(lo), ks.addr_of(hi)
            if a is not None and b is not None and a < b:
                spans.append([a, b])
        spans.sort()
        merged = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        bounds = [x for span in merged for x in span]     # inside: odd bisect
        markers = {"_stext", "_text", "_etext", "_sinittext", "_einittext"}
        self.names: list[str] = []
        self.mods: list[str | None] = []
        self.addrs: list[int] = []
        core = []
        modrecs = []
        for addr, typ, name, mod in ks.symbols():
            if (name.startswith(_SKIP_PREFIXES) or name in markers or name in notrace
                    or name.endswith(("_text_start", "_text_end")) or ".cold" in name):
                # (``foo.cold``: the unlikely part gcc splits off a function,
                # entered by a jump, with no __fentry__ call of its own)
                continue
            if mod is None:
                if bisect_right(bounds, addr) & 1:
                    continue
                core.append((addr, name))
            else:
                modrecs.append((addr, name, mod))
        core.sort(key=lambda r: r[0])           # ftrace_process_locs() sorts
        seen = set()
        for addr, name in core:
            if addr in seen:                    # aliases share one record
                continue
            seen.add(addr)
            self.names.append(name)
            self.mods.append(None)
            self.addrs.append(addr)
        for addr, name, mod in modrecs:
            if addr in seen:
                continue
            seen.add(addr)
            self.names.append(name)
            self.mods.append(mod)
            self.addrs.append(addr)
        self.modules = frozenset(m for m in self.mods if m)
        self.by_addr = {a: i for i, a in enumerate(self.addrs)}
        self.by_name: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            self.by_name.setdefault(n, []).append(i)
        self._ks = ks
        self._ip_cache: dict[int, int | None] = {}
        self._avail = None
        self._avail_addrs = None

    def __len__(self):
        return len(self.names)

    def display(self, i: int) -> str:
        """``%ps`` of a record: ``name`` or ``name [module]``."""
        m = self.mods[i]
        return self.names[i] if m is None else "%s [%s]" % (self.names[i], m)

    def ip(self, i: int) -> int:
        """The record's ip: the ``__fentry__`` call after ``endbr64``."""
        return self.addrs[i] + FENTRY_IP

    def rec_of_ip(self, ip: int):
        """The record of the function holding ``ip`` (None if untraceable)."""
        c = self._ip_cache
        r = c.get(ip, -1)
        if r == -1:
            hit = self._ks.lookup(ip)
            r = self.by_addr.get(ip - hit[1]) if hit is not None else None
            if len(c) > 1 << 16:
                c.clear()
            c[ip] = r
        return r

    def avail_text(self) -> str:
        if self._avail is None:
            self._avail = "".join(self.display(i) + "\n" for i in range(len(self.names)))
        return self._avail

    def avail_addrs_text(self) -> str:
        if self._avail_addrs is None:
            self._avail_addrs = "".join("%x %s\n" % (self.ip(i), self.display(i))
                                        for i in range(len(self.names)))
        return self._avail_addrs

    def match(self, func: str | None, mod: str | None):
        """``match_records()`` without the hash: (matching record indices,
        clear) — ``clear`` when ``func`` starts with ``!``."""
        clear = False
        fg = Glob(MATCH_FULL, "")
        if func is not None:
            t, s, clear = filter_parse_regex(func)
            fg = Glob(t, s)
        if fg.type == MATCH_INDEX:
            try:
                idx = kstrtoul(fg.search, 0) - 1
            except ValueError:
                return [], clear
            return ([idx] if 0 <= idx < len(self.names) else []), clear
        if mod is None:
            if fg.type == MATCH_FULL:
                return list(self.by_name.get(fg.search, ())), clear
            m = fg.match
            return [i for i, n in enumerate(self.names) if m(n)], clear
        mt, ms, exclude = filter_parse_regex(mod)
        mg = Glob(mt if mt != MATCH_INDEX else MATCH_FULL, ms)
        out = []
        for i, n in enumerate(self.names):
            modname = self.mods[i]
            if not len(mg):
                # blank module: any module's functions (or, with '!', the core's)
                if (not exclude) == (modname is None):
                    continue
            else:
                mod_matches = modname is not None and mg.match(modname)
                if (not mod_matches) == (not exclude):
                    continue
            if not len(fg) or fg.match(n):
                out.append(i)
        return out, clear


def ftrace_records(kernel) -> FtraceRecords:
    tracing = kernel.tracing
    r = tracing.ftrace_records
    if r is None:
        r = tracing.ftrace_records = FtraceRecords(kernel)
    return r


# --------------------------------------------------------------- probes
class EventProbeData:
    """``struct event_probe_data``: one enable_event/disable_event command."""

    __slots__ = ("ev", "enable", "count", "ref")

    def __init__(self, ev, enable, count):
        self.ev = ev
        self.enable = enable
        self.count = count
        self.ref = 0


class FuncProbe:
    """``struct ftrace_func_probe``: the functions one probe type runs on.
    ``entries``: record -> count (traceon/traceoff/stacktrace with a count,
    None without) or EventProbeData."""

    __slots__ = ("cmd", "counted", "entries")

    def __init__(self, cmd, counted):
        self.cmd = cmd
        self.counted = counted
        self.entries: dict[int, object] = {}

    def line(self, records, rec) -> str:
        name = records.display(rec)
        data = self.entries[rec]
        if self.cmd in ("enable_event", "disable_event"):
            ev = data.ev
            head = "%s:%s:%s:%s" % (name, self.cmd, ev.system, ev.name)
            if data.count == -1:
                return head + ":unlimited\n"
            return head + ":count=%d\n" % data.count
        if data is None:
            return "%s:%s:unlimited\n" % (name, self.cmd)
        return "%s:%s:count=%d\n" % (name, self.cmd, data)


PROBE_COMMANDS = ("traceon", "traceoff", "stacktrace", "enable_event", "disable_event")


class FtraceOps:
    """Per trace array: function filters, probes and pid lists."""

    def __init__(self, tr):
        self.tr = tr
        self.kernel = tr.kernel
        self.filter: set[int] = set()
        self.notrace: set[int] = set()
        self.mod_trace: list[tuple[str, str]] = []      # newest first
        self.mod_notrace: list[tuple[str, str]] = []
        self.pids: frozenset | None = None
        self.no_pids: frozenset | None = None
        self.probes: list[FuncProbe] = []               # newest first
        self._probe_index: dict | None = None
        self._targets_key = None
        self._targets = frozenset()

    @property
    def records(self) -> FtraceRecords:
        return ftrace_records(self.kernel)

    # --- state ------------------------------------------------------------
    def filtering(self) -> bool:
        """The filter hash is not empty (functions, or cached ``:mod:``)."""
        return bool(self.filter) or bool(self.mod_trace)

    def changed(self) -> None:
        self._probe_index = None
        self._targets_key = None
        tr = self.tr
        active = (self.filtering() or self.notrace or self.pids is not None
                  or self.no_pids is not None or self.probes)
        tr.ftrace_ops = self if active else None

    def clear_functions(self, notrace: bool) -> None:
        """O_TRUNC open of set_ftrace_filter/notrace: the functions and the
        cached module commands go, the probes stay."""
        if notrace:
            self.notrace = set()
            self.mod_notrace = []
        else:
            self.filter = set()
            self.mod_trace = []
        self.changed()

    def destroy(self) -> None:
        """The array goes away: drop every probe (and its event soft modes)."""
        for probe in list(self.probes):
            self._unregister_all(probe)
        self.filter, self.notrace = set(), set()
        self.mod_trace, self.mod_notrace = [], []
        self.pids = self.no_pids = None
        self.changed()

    # --- the tracer's view -------------------------------------------------
    def match(self, ip: int, pid: int) -> bool:
        """Does the function tracer of this array record this call?"""
        if self.filtering() or self.notrace:
            rec = self.records.rec_of_ip(ip)
            if self.filtering() and rec not in self.filter:
                return False
            if rec is not None and rec in self.notrace:
                return False
        if self.pids is not None and pid not in self.pids:
            return False
        if self.no_pids is not None and pid in self.no_pids:
            return False
        return True

    def _index(self) -> dict:
        idx = self._probe_index
        if idx is None:
            idx = {}
            for probe in self.probes:
                for rec in probe.entries:
                    idx.setdefault(rec, []).append(probe)
            self._probe_index = idx
        return idx

    def after_call(self, tr, cpu, ts, ip, stack) -> None:
        """Run the probes of the function just called."""
        if not self.probes:
            return
        rec = self.records.rec_of_ip(ip)
        probes = self._index().get(rec)
        if not probes:
            return
        for probe in probes:
            if rec in probe.entries:
                self._fire(probe, rec, cpu, ts, stack)

    def _fire(self, probe, rec, cpu, ts, stack) -> None:
        tr = self.tr
        cmd = probe.cmd
        data = probe.entries[rec]
        if cmd in ("traceon", "traceoff"):
            on = cmd == "traceon"
            if data is None:
                if tr.tracing_is_on() != on:
                    tr.set_tracing_on(on)
                return
            if data <= 0 or tr.tracing_is_on() == on:
                return
            tr.set_tracing_on(on)
            probe.entries[rec] = data - 1
            self._targets_key = None
        elif cmd == "stacktrace":
            if data is not None:
                # the counted variant looks at the top-level tracing_on
                if not tr.tracing.global_trace.tracing_is_on() or not data:
                    return
                probe.entries[rec] = data - 1
                self._targets_key = None
            self._trace_stack(cpu, ts, stack)
        else:
            ev = data.ev
            if probe.counted:
                if not data.count:
                    return
                if data.enable == (ev not in tr.soft_disabled):
                    return
                if data.count != -1:
                    data.count -= 1
                    self._targets_key = None
            if data.enable:
                tr.soft_disabled.discard(ev)
            else:
                tr.soft_disabled.add(ev)

    def _trace_stack(self, cpu, ts, stack) -> None:
        tr = self.tr
        if not tr.cpumask >> cpu & 1:
            return                       # tracing_cpumask: that CPU records nothing
        k = self.kernel
        task = k.workload.current(cpu)
        act = k.trace_activity
        flags, pc = act.context_flags(stack) if act is not None else (0, 0)
        tr.trace_stack(cpu, ts, task.pid, flags, pc, stack)

    def call_targets(self, tracing_fn: bool) -> frozenset:
        """Addresses of the functions whose calls can make a difference now:
        the filtered functions when this array's function tracer records
        (``tracing_fn``), and the functions of probes that could act."""
        tr = self.tr
        on = tr.tracing_is_on()
        key = (tracing_fn, on)
        if key == self._targets_key:
            return self._targets
        recs = set()
        if tracing_fn and self.filter:
            recs |= self.filter - self.notrace
        kinds = {p.cmd for p in self.probes}
        can_on = "traceon" in kinds
        can_off = "traceoff" in kinds
        for probe in self.probes:
            cmd = probe.cmd
            if cmd == "traceon" and on and not can_off:
                continue
            if cmd == "traceoff" and not on and not can_on:
                continue
            if cmd == "stacktrace" and not on and not can_on:
                continue
            for rec, data in probe.entries.items():
                if probe.counted:
                    if isinstance(data, EventProbeData):
                        if not data.count:
                            continue
                    elif data is not None and data <= 0:
                        continue
                recs.add(rec)
        addrs = self.records.addrs
        self._targets = frozenset(addrs[r] for r in recs)
        self._targets_key = key
        return self._targets

    # --- writes ---------------------------------------------------------------
    def process_regex(self, word: str, enable: bool) -> None:
        """``ftrace_process_regex()`` for one word written to
        set_ftrace_filter (``enable``) or set_ftrace_notrace."""
        func, sep, rest = word.partition(":")
        if not sep:
            recs, clear = self.records.match(func, None)
            if not recs:
                raise KernelError(errno.EINVAL)
            self._enter(recs, clear, enable)
            return
        command, sep2, param = rest.partition(":")
        if not sep2:
            param = None
        if command == "mod":
            self._mod_command(func, param, enable)
        elif command in ("traceon", "traceoff", "stacktrace"):
            self._trace_probe_command(func, command, param, enable)
        elif command in ("enable_event", "disable_event"):
            self._event_probe_command(func, command, param, enable)
        else:
            raise KernelError(errno.EINVAL)

    def _enter(self, recs, clear, enable) -> None:
        target = self.filter if enable else self.notrace
        if clear:
            target.difference_update(recs)
        else:
            target.update(recs)
        self.changed()

    def _mod_command(self, func, module, enable) -> None:
        """``ftrace_mod_callback()``; a module not loaded is remembered."""
        recs, clear = self.records.match(func, module)
        if recs:
            self._enter(recs, clear, enable)
            return
        if module is None:
            raise KernelError(errno.EINVAL)
        head = self.mod_trace if enable else self.mod_notrace
        if func.startswith("!"):
            f = func[1:]
            keep = [(fn, m) for fn, m in head
                    if not (m == module and (f == "*" or fn == f))]
            if len(keep) == len(head):
                raise KernelError(errno.EINVAL)
            head[:] = keep
        else:
            if module in self.records.modules:
                raise KernelError(errno.EINVAL)
            head.insert(0, (func, module))
        self.changed()

    def _find_probe(self, cmd, counted):
        for p in self.probes:
            if p.cmd == cmd and p.counted == counted:
                return p
        return None

    def _trace_probe_command(self, glob, cmd, param, enable) -> None:
        """traceon/traceoff/stacktrace (``ftrace_trace_probe_callback()``)."""
        if not enable:
            raise KernelError(errno.EINVAL)
        counted = param is not None
        if glob.startswith("!"):
            self._unregister(glob[1:], cmd, counted)
            return
        count = -1
        if param:
            number = param.split(":", 1)[0]
            if number:
                try:
                    count = kstrtoul(number, 0)
                except ValueError:
                    raise KernelError(errno.EINVAL)
        self._register(glob, cmd, counted, lambda: count if counted else None)

    def _event_probe_command(self, glob, cmd, param, enable) -> None:
        """enable_event/disable_event:<system>:<event>[:count]
        (``event_enable_func()``)."""
        if not enable or param is None:
            raise KernelError(errno.EINVAL)
        system, sep, rest = param.partition(":")
        if not sep:
            raise KernelError(errno.EINVAL)
        event, sep, rest = rest.partition(":")
        param = rest if sep else None
        tr = self.tr
        ev = next((e for e in tr.tracing.events if e.system == system and e.name == event), None)
        if ev is None:
            raise KernelError(errno.EINVAL)
        on = cmd == "enable_event"
        counted = param is not None
        if glob.startswith("!"):
            self._unregister(glob[1:], cmd, counted)
            return
        data = EventProbeData(ev, on, -1)
        if param is not None:
            number = param.split(":", 1)[0]
            if not number:
                raise KernelError(errno.EINVAL)
            try:
                data.count = kstrtoul(number, 0)
            except ValueError:
                raise KernelError(errno.EINVAL)
        tr.event_enable_disable(ev, True, True)
        try:
            self._register(glob, cmd, counted, lambda: data, edata=data)
        except KernelError:
            if not data.ref:
                tr.event_enable_disable(ev, False, True)
            raise

    def _register(self, glob, cmd, counted, init, edata=None) -> None:
        """``register_ftrace_function_probe()``: every matching function
        not yet in the probe gets it; nothing new is an error."""
        recs, _clear = self.records.match(glob, None)
        if not recs:
            raise KernelError(errno.EINVAL)
        probe = self._find_probe(cmd, counted)
        new = probe is None
        if new:
            probe = FuncProbe(cmd, counted)
        added = 0
        for rec in recs:
            if rec in probe.entries:
                continue
            probe.entries[rec] = init()
            if edata is not None:
                edata.ref += 1
            added += 1
        if not added:
            raise KernelError(errno.EINVAL)
        if new:
            self.probes.insert(0, probe)
        self.changed()

    def _unregister(self, glob, cmd, counted) -> None:
        """``unregister_ftrace_function_probe_func()``."""
        probe = self._find_probe(cmd, counted)
        if probe is None:
            raise KernelError(errno.ENODEV)
        if glob in ("", "*"):
            recs = list(probe.entries)
        else:
            t, s, neg = filter_parse_regex(glob)
            if neg:
                raise KernelError(errno.EINVAL)
            g = Glob(t, s)
            names = self.records.names
            recs = [r for r in probe.entries if g.match(names[r])]
        if not recs:
            raise KernelError(errno.EINVAL)
        for rec in recs:
            self._free_entry(probe, probe.entries.pop(rec))
        if not probe.entries:
            self.probes.remove(probe)
        self.changed()

    def _unregister_all(self, probe) -> None:
        for rec in list(probe.entries):
            self._free_entry(probe, probe.entries.pop(rec))
        if probe in self.probes:
            self.probes.remove(probe)

    def _free_entry(self, probe, data) -> None:
        if isinstance(data, EventProbeData):
            data.ref -= 1
            if not data.ref:
                self.tr.event_enable_disable(data.ev, False, True)   # leaves soft mode

    # --- listings ---------------------------------------------------------------
    def filter_text(self, notrace: bool) -> str:
        recs = self.records
        out = []
        funcs = self.notrace if notrace else self.filter
        mods = self.mod_notrace if notrace else self.mod_trace
        empty = not funcs if notrace else not self.filtering()
        if empty:
            out.append(NONE_DISABLED if notrace else ALL_ENABLED)
        else:
            out.extend(recs.display(i) + "\n" for i in sorted(funcs))
        out.extend("%s:mod:%s\n" % (fn, m) for fn, m in mods)
        if not notrace:
            for probe in self.probes:
                out.extend(probe.line(recs, rec) for rec in sorted(probe.entries))
        return "".join(out)

    def write_pids(self, text: str, notrace: bool) -> None:
        """``trace_pid_write()``: all or nothing; an empty result clears."""
        cur = self.no_pids if notrace else self.pids
        new = set(cur or ())
        n = len(new)
        for word in text.split():
            if len(word) > PID_BUF_SIZE:
                raise KernelError(errno.EINVAL)
            try:
                pid = kstrtoul(word, 0)
            except ValueError:
                raise KernelError(errno.EINVAL)
            pid &= 0xffffffff
            if pid >= PID_MAX_LIMIT:
                raise KernelError(errno.EPERM)
            new.add(pid)
            n += 1
        result = frozenset(new) if n else None
        if notrace:
            self.no_pids = result
        else:
            self.pids = result
        self.changed()

    def clear_pids(self, notrace: bool) -> None:
        if notrace:
            self.no_pids = None
        else:
            self.pids = None
        self.changed()

    def pids_text(self, notrace: bool) -> str:
        pids = self.no_pids if notrace else self.pids
        if pids is None:
            return NO_PID
        return "".join("%d\n" % p for p in sorted(pids))


# --------------------------------------------------------------- files
def ops_of(tr) -> FtraceOps:
    ops = tr.ftrace
    if ops is None:
        ops = tr.ftrace = FtraceOps(tr)
    return ops


def _catch_up(tr) -> None:
    tr.kernel.run_until_now()    # calls so far were made under the old settings


class _Parser:
    """``struct trace_parser``: the word being read across writes."""

    __slots__ = ("buf", "cont")

    def __init__(self):
        self.buf = ""
        self.cont = False


class FtraceFilterOps(FileOperations):
    """set_ftrace_filter / set_ftrace_notrace (``ftrace_filter_fops``)."""

    def __init__(self, notrace: bool):
        self.notrace = notrace

    def open(self, f):
        f.private = _Parser()
        if f.trunc:
            _catch_up(f.data)
            ops_of(f.data).clear_functions(self.notrace)

    def show(self, f):
        return ops_of(f.data).filter_text(self.notrace)

    def write(self, f, data):
        if not data:
            return 0
        tr = f.data
        ops = ops_of(tr)
        p = f.private
        text = data.decode("latin-1")
        i, n = 0, len(text)
        _catch_up(tr)
        while i < n:
            if not p.cont:
                while i < n and (text[i].isspace() or text[i] == "\0"):
                    i += 1
                if i >= n:
                    break
                p.buf = ""
            j = i
            while j < n and not text[j].isspace() and text[j] != "\0":
                j += 1
            p.buf += text[i:j]
            if len(p.buf) >= FTRACE_BUFF_MAX:
                p.buf, p.cont = "", False
                raise KernelError(errno.EINVAL)
            if j >= n:                   # the word may go on in the next write
                p.cont = True
                break
            p.cont = False
            word, p.buf = p.buf, ""
            i = j
            if word:
                ops.process_regex(word, not self.notrace)
        return len(data)

    def flush(self, f):
        """What ``ftrace_regex_release()`` does with an unfinished word: it
        is processed, errors go unreported."""
        p = f.private
        if p is None or not p.buf:
            return
        word, p.buf, p.cont = p.buf, "", False
        try:
            ops_of(f.data).process_regex(word, not self.notrace)
        except KernelError:
            pass

    def release(self, f):
        self.flush(f)


class FtracePidOps(FileOperations):
    """set_ftrace_pid / set_ftrace_notrace_pid (``ftrace_pid_fops``)."""

    def __init__(self, notrace: bool):
        self.notrace = notrace

    def open(self, f):
        if f.trunc:
            _catch_up(f.data)
            ops_of(f.data).clear_pids(self.notrace)

    def show(self, f):
        return ops_of(f.data).pids_text(self.notrace)

    def write(self, f, data):
        if not data:
            return 0
        _catch_up(f.data)
        ops_of(f.data).write_pids(data.decode("latin-1"), self.notrace)
        return len(data)


class AvailableFilterFunctionsOps(FileOperations):
    def __init__(self, addrs: bool = False):
        self.addrs = addrs

    def show(self, f):
        recs = ftrace_records(f.data.kernel)
        return recs.avail_addrs_text() if self.addrs else recs.avail_text()


def pid_files_wanted(kernel) -> bool:
    """set_ftrace_pid and set_ftrace_notrace_pid filter on pids.  Only the
    simulated tasks call functions here: the processes that use the mount
    (ftracetest's shell writing its own pid) are not tasks of this kernel,
    so the files are there only once the kernel tracks them
    (``kernel.host_tasks``)."""
    return kernel.host_tasks


def ftrace_create_files(tr, d) -> None:
    """The function-tracing files of a trace array (``ftrace_create_filter_files()``,
    ``ftrace_init_tracefs()``; for the top level also
    ``ftrace_init_dyn_tracefs()``)."""
    k = tr.kernel
    cfg = k.config
    if not cfg.enabled("FUNCTION_TRACER"):
        return
    ops_of(tr)
    f = k.tree.create_file
    W, R = TRACE_MODE_WRITE, TRACE_MODE_READ
    if cfg.enabled("DYNAMIC_FTRACE"):
        if tr.is_top:
            f("available_filter_functions", R, d, tr, AvailableFilterFunctionsOps())
            f("available_filter_functions_addrs", R, d, tr, AvailableFilterFunctionsOps(True))
        f("set_ftrace_filter", W, d, tr, FtraceFilterOps(False))
        f("set_ftrace_notrace", W, d, tr, FtraceFilterOps(True))
    if pid_files_wanted(k):
        f("set_ftrace_pid", W, d, tr, FtracePidOps(False))
        f("set_ftrace_notrace_pid", W, d, tr, FtracePidOps(True))
