"""Kprobe events (kernel/trace/trace_kprobe.c): ``kprobe_events``,
``kprobe_profile`` and the ``p``/``r`` commands of ``dynamic_events``.

A command makes a :class:`TraceKprobe` (one probe: where, its arguments)
on a :class:`ProbeEvent` (the event ``events/<group>/<event>/``, which
more probes with the same argument types may share).  Parsing follows
``__trace_kprobe_create()``: maxactive, the probed symbol or address with
``+offset`` and ``%return``, the event name (``p_<symbol>_<offset>`` when
none is given), the fetch arguments (``trace_probe.py``), then the event
and the kprobe are registered (``kprobes.py``), each failure with its
errno and error_log entry.  While the event is enabled in some array its
kprobes are armed: each call of the probed function is a hit, whose
arguments come from the registers and memory of the call
(``trace_kprobe_regs.py``).
"""

from __future__ import annotations

import errno
import fnmatch

from ..fs.pseudo import TRACE_MODE_READ, TRACE_MODE_WRITE, FileOperations, KernelError
from ..fs.vfs import DENTRY_NAME, FILE_DENTRY
from ..cpu import online_cpu
from ..kprobes import Kprobe
from ..lib.kstrtox import kstrtoul
from ..module import STATE_COMING, STATE_GOING
from ..lib.vsprintf import hashed_ptr
from .events_defs import EventDef
from .trace_dynevent import (DynamicEventsOps, DynEventOps, DynEvents, parse_run_command,
                             parse_run_steps)
from .trace_events import add_event_call, remove_event_call
from .trace_events_commit import trace_event_commit
from .trace_kprobe_regs import ModelCall, caller_task, hit_regs, return_regs
from .trace_probe import (FIELD_STRING_FUNC, FIELD_STRING_IP, FIELD_STRING_RETIP, FL_FENTRY,
                          FL_KERNEL, FL_RETURN, MAX_EVENT_NAME_LEN, MAX_TRACE_ARGS, ParseContext,
                          expand_var_args, parse_event_name, parse_probe_arg, sanitize_event_name,
                          split_symbol_offset)
from .trace_probe_log import ProbeError, ProbeLog, run_probe_command
from .trace_probe_tmpl import (DIRECT_MAP, data_size, fetch_args, field_line, mix64, print_args,
                               print_fmt, update_arg)

KPROBE_EVENT_SYSTEM = "kprobes"
KRETPROBE_MAXACTIVE_MAX = 4096
UINT_MAX = 0xFFFFFFFF
# who calls eventfs_create_dir() when a probe event is made, innermost first
EVENT_DIR_CALLERS = ("event_create_dir", "__trace_add_new_event", "trace_add_event_call",
                     "trace_probe_register_event_call", "register_trace_kprobe",
                     "__trace_kprobe_create", "trace_probe_create", "create_or_delete_trace_kprobe",
                     "trace_parse_run_command", "vfs_write", "ksys_write", "do_syscall_64")


class ProbeEvent(EventDef):
    """``trace_probe_event`` and its ``trace_event_call``: the event, its
    fields and print format (from its first probe's arguments), its probes."""

    def __init__(self, group: str, name: str, args: list, is_return: bool, kind: str = "kprobe"):
        head = ([field_line("unsigned long", FIELD_STRING_FUNC, 8, 8, False),
                 field_line("unsigned long", FIELD_STRING_RETIP, 16, 8, False)] if is_return
                else [field_line("unsigned long", FIELD_STRING_IP, 8, 8, False)])
        base = 8 + len(head) * 8
        fields = head + [field_line(a.field_type(), a.name, base + a.offset, a.size(), a.type.signed)
                         for a in args]
        super().__init__(group, name, fields, print_fmt(args, is_return), base, None)
        self.tracepoint = "\0%s:%s/%s" % (kind, group, name)     # no tracepoint: probes
        self.args = args
        self.is_return = is_return
        self.head = len(head)
        self.probes: list[TraceKprobe] = []
        self.was_enabled: set = set()          # arrays (EVENT_FILE_FL_WAS_ENABLED)

    def render(self, a, fmt) -> str:
        addr = fmt.tr.flag("sym-addr")
        if self.is_return:
            where = "(%s <- %s)" % (fmt.sym(a[1], True, addr), fmt.sym(a[0], False, addr))
        else:
            where = "(%s)" % fmt.sym(a[0], True, addr)
        return where + print_args(self.args, a[self.head:], fmt.kallsyms)


def add_probe_event(tracing, ev, first_id: int) -> bool:
    """``trace_probe_register_event_call()`` of a new event: the first free
    dynamic id, its directories; True when its system is new."""
    ids = tracing.events_by_id
    ev.id = next(i for i in range(first_id, 1 << 16) if i not in ids)
    new_system = not tracing.event_systems.get(ev.system)
    add_event_call(tracing, ev)
    return new_system


def event_name_used(tracing, group: str, name: str) -> bool:
    return (group, name) in tracing.events_by_key


class TraceKprobe:
    """``struct trace_kprobe``: one probe of an event (a dynamic event)."""

    def __init__(self, ops, symbol, offset, addr, is_return, maxactive, args, entry_args):
        self.ops = ops
        self.event: ProbeEvent | None = None
        self.symbol = symbol
        self.offset = offset
        self.addr = addr
        self.is_return = is_return
        self.maxactive = maxactive
        self.args = args
        self.entry_args = entry_args
        self.nhit = 0
        self.kp = Kprobe(addr, symbol, offset, is_return, ops.hit, self)

    def place(self) -> str:
        if self.symbol is None:
            return "0x" + hashed_ptr(self.addr)
        if self.offset:
            return "%s+%u" % (self.symbol, self.offset)
        return self.symbol


def _expand_dentry_args(args: list[str]) -> None:
    """``traceprobe_expand_dentry_args()``: ``ARG:%pd``/``%pD`` become the
    fetch of the dentry's name (of a file's dentry)."""
    for i, a in enumerate(args):
        if not fnmatch.fnmatchcase(a, "*:%p[dD]"):
            continue
        eq = a.find("=")
        name = a[:eq + 1] if eq >= 0 else ""
        var = a[eq + 1:-4] if eq >= 0 else a[:-4]
        if a[-1] == "d":
            args[i] = "%s+0x0(+0x%x(%s)):string" % (name, DENTRY_NAME, var)
        else:
            args[i] = "%s+0x0(+0x%x(+0x%x(%s))):string" % (name, DENTRY_NAME, FILE_DENTRY, var)


def probe_args(argv: list[str], ctx: ParseContext, log: ProbeLog) -> list[str]:
    """The arguments (words from 2) to parse: ``$arg*``/``$argN`` expanded
    (``traceprobe_expand_meta_args()``), at most MAX_TRACE_ARGS (E2BIG),
    ``%pd``/``%pD`` expanded.  Unless BTF made a new list, the expansions
    show in the words the error log quotes, as the kernel's argv."""
    args = argv[2:]
    new = expand_var_args(args, ctx, log)
    if len(new) > MAX_TRACE_ARGS:
        raise ProbeError(errno.E2BIG)
    _expand_dentry_args(new)
    if new is args:
        argv[2:] = args
    return new


class ProbeEventOps(DynEventOps):
    """What the kinds of probe event share (trace_probe.c and each kind's
    ``dyn_event_operations``): the events of the kind, a command's create,
    matching a removal, freeing a probe, appending one to an event."""

    def __init__(self, kernel, dyn):
        self.kernel = kernel
        self.tracing = kernel.tracing
        self.kprobes = kernel.kprobes
        self.dyn = dyn
        self.first_dynamic_id = dyn.first_dynamic_id
        self.btf_args = kernel.config.enabled("PROBE_EVENTS_BTF_ARGS")
        self.tracing.probe_hooks.append(self._use_changed)

    def _use_changed(self, tracepoint: str, on: bool) -> None:
        raise NotImplementedError

    def event_of(self, tracepoint: str):
        """This kind's event whose (internal) tracepoint is ``tracepoint``
        (``"\\0kind:group/name"``), or None."""
        group, _, name = tracepoint.partition(":")[2].partition("/")
        ev = self.find_event(group, name)
        return ev if ev is not None and ev.tracepoint == tracepoint else None

    def place_of(self, p) -> str:
        """Where probe ``p`` is, as a removal command names it."""
        raise NotImplementedError

    def _unregister(self, p) -> None:
        """The probe ``p`` stops firing."""
        raise NotImplementedError

    def probes(self) -> list:
        return self.dyn.of(self)

    def events(self) -> list:
        """The probes' events, each once, in the probes' order."""
        return list(dict.fromkeys(p.event for p in self.probes()))

    def find_event(self, group: str, name: str):
        """This kind's event ``group/name`` (``tracing.events_by_key``), or None."""
        ev = self.tracing.events_by_key.get((group, name))
        probes = getattr(ev, "probes", None)
        return ev if probes and probes[0].ops is self else None

    # --- dyn_event_operations ----------------------------------------------------
    def create(self, raw: str) -> None:
        run_probe_command(raw, self._create)

    def _create(self, argv: list[str]) -> None:
        raise NotImplementedError

    def is_busy(self, p) -> bool:
        return p.event.tracepoint in self.tracing.tracepoint_users

    def match(self, system, event, argv, p) -> bool:
        """``trace_probe_match_command_args()`` after the event's name."""
        ev = p.event
        if event and event != ev.name:
            return False
        if system is not None and system != ev.system:
            return False
        if not argv:
            return True
        if argv[0] != self.place_of(p):
            return False
        rest = argv[1:]
        if len(p.args) < len(rest):
            return False
        return all(w == "%s=%s" % (a.name, a.comm) for w, a in zip(rest, p.args))

    def free(self, p) -> None:
        """The last probe of an event takes the event with it, unless it is
        enabled or referenced (EBUSY)."""
        ev = p.event
        if len(ev.probes) == 1:
            if self.is_busy(p) or self.dyn.referenced(ev):
                raise KernelError(errno.EBUSY)
            for tr in list(ev.was_enabled):
                if tr in self.tracing.arrays():
                    tr.reset_buffer()         # tracing_reset_all_online_cpus()
            remove_event_call(self.tracing, ev)
        self._unregister(p)
        ev.probes.remove(p)
        self.dyn.remove(p)

    @staticmethod
    def _check_arg_types(p, first, log: ProbeLog) -> None:
        """``trace_probe_compare_arg_type()`` of a probe appended to an event
        whose first probe is ``first``: DIFF_ARG_TYPE where they differ."""
        a, b = p.args, first.args
        if len(a) != len(b):
            diff = min(len(a), len(b)) + 1
        else:
            diff = next((i + 1 for i in range(len(a)) if not a[i].same_type(b[i])), 0)
        if diff:
            log.set_index(diff + 1)
            raise log.fail(0, "DIFF_ARG_TYPE", errno.EEXIST)

    def _add(self, p, ev) -> None:
        """Probe ``p`` belongs to event ``ev`` now."""
        p.event = ev
        ev.probes.append(p)
        self.dyn.add(p)

    def _record(self, p, kp, cpu, ts, stack, task, context=None, call=None) -> None:
        """Probe ``p`` hit by a call at ``kp``: its record in each array its
        event records in (``context``: flags and preempt count, else from
        the stack)."""
        p.nhit += 1
        ev = p.event
        trs = [tr for tr in self.tracing.arrays()
               if (tr.event_recording(ev) and tr.cpumask >> cpu & 1) or ev in tr.event_triggers]
        if not trs:
            return
        for tr in trs:
            ev.was_enabled.add(tr)
        regs = hit_regs(self.kernel, kp, cpu, ts, stack, task, call)
        if p.is_return:
            regs = return_regs(regs, p.entry_args, kp)
            head = (kp.addr, stack[1] if len(stack) > 1 else 0)
        else:
            head = (kp.addr,)
        values = fetch_args(p.args, regs)
        if context is None:
            act = self.kernel.trace_hits
            context = act.context_flags(stack) if act is not None else (0, 0)
        flags, pc = context
        entry = (ts, ev.id, task.pid, flags, pc, head + values, None)
        trace_event_commit(trs, ev, cpu, entry, ev.payload + data_size(p.args, values), stack)



class KprobeOps(ProbeEventOps):
    """``trace_kprobe_ops`` and the kprobe events of one kernel."""

    def __init__(self, kernel, dyn):
        self._name_counts: tuple | None = None
        super().__init__(kernel, dyn)

    def show(self, tk) -> str:
        head = "r" if tk.is_return else "p"
        if tk.is_return and tk.maxactive:
            head += "%d" % tk.maxactive
        return "%s:%s/%s %s%s\n" % (head, tk.event.system, tk.event.name, tk.place(),
                                    "".join(" %s=%s" % (a.name, a.comm) for a in tk.args))

    def place_of(self, tk) -> str:
        return tk.place()

    def _unregister(self, tk) -> None:
        self.kprobes.unregister(tk.kp)

    # --- __trace_kprobe_create ----------------------------------------------------
    def _create(self, argv: list[str]) -> None:
        is_return = argv[0][0] == "r"
        if argv[0][0] not in "pr" or len(argv) < 2:
            raise ProbeError(errno.ECANCELED)
        log = ProbeLog(self.tracing.global_trace, "trace_kprobe", argv)
        colon = argv[0].find(":", 1)
        event = argv[0][colon + 1:] if colon >= 0 else None
        maxactive = 0
        if argv[0][1:2].isdigit():
            if not is_return:
                raise log.fail(1, "BAD_MAXACT_TYPE")
            text = argv[0][1:colon] if colon >= 0 else argv[0][1:]
            if len(text) > MAX_EVENT_NAME_LEN - 1:
                raise log.fail(1, "BAD_MAXACT")
            try:
                maxactive = kstrtoul(text, 0)
            except ValueError:
                maxactive = 0
            if not maxactive or maxactive > UINT_MAX:
                raise log.fail(1, "BAD_MAXACT")
            if maxactive > KRETPROBE_MAXACTIVE_MAX:
                raise log.fail(1, "MAXACT_TOO_BIG")
        symbol, offset, addr = None, 0, None
        flags = FL_KERNEL
        try:
            addr = kstrtoul(argv[1], 0)
        except ValueError:
            log.set_index(1)
            if "/" in argv[1] and ":" in argv[1]:
                raise ProbeError(errno.ECANCELED)     # an uprobe
            symbol = argv[1]
            pct = symbol.find("%")
            if pct >= 0:
                if symbol[pct:] != "%return":
                    raise log.fail(pct, "BAD_ADDR_SUFFIX")
                symbol, is_return = symbol[:pct], True
            try:
                symbol, offset = split_symbol_offset(symbol)
            except ValueError:
                offset = -1
            if offset < 0 or offset > UINT_MAX:
                raise log.fail(0, "BAD_PROBE_ADDR")
            ret = self._validate_symbol(symbol)
            if ret:
                raise log.fail(0, "NON_UNIQ_SYMBOL" if ret == -errno.EADDRNOTAVAIL
                               else "BAD_PROBE_ADDR")
            if is_return:
                flags |= FL_RETURN
            ret = self.kprobes.on_func_entry(symbol, offset)
            if ret == 0 and not is_return:
                flags |= FL_FENTRY
            if ret == -errno.EINVAL and is_return:
                raise log.fail(0, "BAD_RETPROBE")
        if is_return and addr is not None:
            flags |= FL_RETURN
        log.set_index(0)
        group, name = KPROBE_EVENT_SYSTEM, None
        if event is not None:
            g, name = parse_event_name(event, log, colon + 1)
            group = g or group
        if name is None:
            if symbol is not None:
                name = "%s_%s_%d" % ("r" if is_return else "p", symbol, offset)
            else:
                name = "%s_0x%s" % ("r" if is_return else "p", hashed_ptr(addr))
            name = sanitize_event_name(name[:MAX_EVENT_NAME_LEN - 1])
        ctx = ParseContext(flags, btf=self.btf_args, funcname=symbol)
        args = probe_args(argv, ctx, log)
        pargs, size = [], 0
        for i, a in enumerate(args):
            log.set_index(i + 2)
            ctx.offset = 0
            parg, size = parse_probe_arg(pargs, i, a, ctx, log, size)
            pargs.append(parg)
        tk = TraceKprobe(self, symbol, offset, addr, is_return, maxactive, pargs, ctx.entry_args)
        self._register(tk, group, name, log)

    def _validate_symbol(self, symbol: str) -> int:
        """``validate_probe_symbol()``: 0, -ENOENT or -EADDRNOTAVAIL; a
        symbol of a module not loaded is left for later (0)."""
        mod, sep, name = symbol.partition(":")
        counts = self._counts()
        if sep:
            if mod not in counts[1]:
                return 0
            count = counts[0].get((mod, name), 0)
        else:
            count = counts[0].get(symbol, 0) + counts[0].get((None, symbol), 0)
        if count > 1:
            return -errno.EADDRNOTAVAIL
        return 0 if count else -errno.ENOENT

    def _counts(self):
        """How many symbols have each name (``number_of_same_symbols()``):
        vmlinux's by name, modules' by (module, name); the modules."""
        if self._name_counts is None:
            by: dict = {}
            mods = set()
            for _a, _t, n, m in self.kernel.kallsyms.symbols():
                key = n if m is None else (m, n)
                by[key] = by.get(key, 0) + 1
                if m is not None:
                    by[(None, n)] = by.get((None, n), 0) + 1
                    mods.add(m)
            self._name_counts = (by, mods)
        return self._name_counts

    # --- registration ----------------------------------------------------------
    def _register(self, tk: TraceKprobe, group: str, name: str, log: ProbeLog) -> None:
        """``register_trace_kprobe()``"""
        old = self.find_event(group, name)
        if old is not None:
            if tk.is_return != old.is_return:
                log.set_index(0)
                raise log.fail(0, "DIFF_PROBE_TYPE", errno.EEXIST)
            self._append(tk, old, log)
            return
        if event_name_used(self.tracing, group, name):
            log.set_index(0)
            raise log.fail(0, "EVENT_EXIST", errno.EEXIST)
        ev = ProbeEvent(group, name, tk.args, tk.is_return)
        new_system = add_probe_event(self.tracing, ev, self.first_dynamic_id)
        self._created_dirs(ev, new_system)
        try:
            self._register_kprobe(tk, log)
        except ProbeError:
            remove_event_call(self.tracing, ev)
            raise
        self._add(tk, ev)

    def _created_dirs(self, ev: ProbeEvent, new_system: bool) -> None:
        """``event_create_dir()`` in each array: the eventfs directories of
        the system (when new) and of the event are made by
        ``eventfs_create_dir(name, parent, entries, size, data)``."""
        if not self.kprobes.armed_on("eventfs_create_dir"):
            return
        pid = self.dyn.caller_pid
        task = caller_task(self.kernel, pid)
        cpu = online_cpu(self.kernel, pid % self.kernel.nr_cpus)
        base = DIRECT_MAP | (mix64(ev.id) & 0x3fffff) << 12
        for i, tr in enumerate(self.tracing.arrays()):
            names = ([ev.system] if new_system else []) + [ev.name]
            for j, name in enumerate(names):
                ptr = base + 0x100 * (2 * i + j)
                call = ModelCall((ptr, base + 0x80000 + 0x40 * i, base + 0x90000, 5, base + 0xa0000),
                                 {ptr: name.encode("latin-1") + b"\0"})
                self.kprobes.fire("eventfs_create_dir", EVENT_DIR_CALLERS, cpu, task, call)

    def _append(self, tk: TraceKprobe, ev: ProbeEvent, log: ProbeLog) -> None:
        """``append_trace_kprobe()``"""
        self._check_arg_types(tk, ev.probes[0], log)
        for other in ev.probes:
            if ((other.symbol or "unknown") == (tk.symbol or "unknown") and other.offset == tk.offset
                    and all(x.comm == y.comm for x, y in zip(other.args, tk.args))):
                log.set_index(0)
                raise log.fail(0, "SAME_PROBE", errno.EEXIST)
        self._register_kprobe(tk, log)
        self._add(tk, ev)
        if self.is_busy(tk):
            self.kprobes.enable(tk.kp)

    def _register_kprobe(self, tk: TraceKprobe, log: ProbeLog) -> None:
        """``__register_trace_kprobe()``; a failure is logged at the probe
        point as ``__trace_kprobe_create()`` does."""
        ret = 0
        kps = self.kprobes
        try:
            addr, _func, entry = kps.kprobe_addr(tk.addr, tk.symbol, tk.offset)
            if kps.notrace(addr) or (tk.is_return and not entry):
                ret = -errno.EINVAL
        except KernelError as e:
            ret = -e.errno
        if not ret:
            for parg in tk.args:
                ret = update_arg(parg, self._lookup)
                if ret:
                    break
        if not ret:
            try:
                kps.register(tk.kp)
            except KernelError as e:
                ret = -e.errno
        if ret == -errno.ENOENT and tk.symbol is not None and ":" in tk.symbol \
                and not self._module_loaded(tk.symbol):
            return                     # registered when the module comes
        if ret:
            log.set_index(1)
            name = {-errno.EILSEQ: "BAD_INSN_BNDRY", -errno.ENOENT: "BAD_PROBE_ADDR"}.get(
                ret, "FAIL_REG_PROBE")
            raise log.fail(0, name, -ret)

    def module_notify(self, mod, state: str) -> None:
        """``trace_kprobe_module_callback()``: the probes on a coming
        module's functions are registered; ``kprobes_module_callback()``:
        those in a going module's text are gone (taken off the kprobe
        table here; the events stay, and arm again when it comes back)."""
        self._name_counts = None
        if state == STATE_COMING:
            for tk in self.probes():
                if (tk.symbol and tk.symbol.partition(":")[0] == mod.name
                        and not tk.kp.registered):
                    try:
                        self.kprobes.register(tk.kp)
                    except KernelError:
                        pass            # "Failed to re-register probe" (a warning)
        elif state == STATE_GOING:
            ks = self.kernel.kallsyms
            for tk in self.probes():
                hit = ks.lookup(tk.kp.addr) if tk.kp.registered and tk.kp.addr else None
                if hit is not None and hit[3] == mod.name:
                    self.kprobes.unregister(tk.kp)

    def _lookup(self, name: str):
        return self.kernel.kallsyms.addr_of(name)

    def _module_loaded(self, symbol: str) -> bool:
        return symbol.partition(":")[0] in self._counts()[1]

    # --- enabling and hits -------------------------------------------------------
    def _use_changed(self, tracepoint: str, on: bool) -> None:
        """An event was enabled in a first array, or disabled in the last:
        arm or disarm its kprobes (``enable_trace_kprobe()``)."""
        ev = self.event_of(tracepoint)
        if ev is None:
            return
        for tr in self.tracing.arrays():
            if ev in tr.enabled_events:
                ev.was_enabled.add(tr)
        for tk in ev.probes:
            if on:
                self.kprobes.enable(tk.kp)
            else:
                self.kprobes.disable(tk.kp)

    def hit(self, kp, cpu: int, ts: int, stack: tuple, task, call=None) -> None:
        """A call reached the probe: ``kprobe_dispatcher()`` /
        ``kretprobe_dispatcher()``; ``call`` gives the arguments and memory
        of a call the model makes itself."""
        self._record(kp.owner, kp, cpu, ts, stack, task, None, call)

class KprobeEventsOps(FileOperations):
    """kprobe_events"""

    def open(self, f):
        if f.trunc:
            ops = f.data
            ops.dyn.release_all(ops)

    def show(self, f):
        ops = f.data
        return ops.dyn.show(ops)

    def write(self, f, data):
        f.data.dyn.caller_pid = f.pid
        return parse_run_command(data, lambda line: self._run(f.data, line))

    def write_steps(self, f, data, pause=None):
        f.data.dyn.caller_pid = f.pid
        return (yield from parse_run_steps(data, lambda line: self._run(f.data, line), pause))

    @staticmethod
    def _run(ops, line: str) -> None:
        if line[:1] == "-":
            ops.dyn.release(line, ops)
            return
        try:
            ops.create(line)
        except KernelError as e:
            raise KernelError(errno.EINVAL if e.errno == errno.ECANCELED else e.errno)


class KprobeProfileOps(FileOperations):
    """kprobe_profile: hits and misses per probe"""

    def show(self, f):
        ops = f.data
        return "".join("  %-44s %15d %15d\n" % (tk.event.name, tk.nhit, tk.kp.nmissed)
                       for tk in ops.probes())


def init_kprobe_trace(tracing, root) -> DynEvents:
    """``init_kprobe_trace()`` and ``init_dynamic_event()``: the files;
    the dynamic events' list, for the other kinds to register with."""
    kernel = tracing.kernel
    dyn = DynEvents()
    dyn.first_dynamic_id = max(tracing.events_by_id) + 1
    ops = KprobeOps(kernel, dyn)
    dyn.register(ops)
    if kernel.modules is not None:
        kernel.modules.register_notifier(ops.module_notify)
    tree = kernel.tree
    tree.create_file("dynamic_events", TRACE_MODE_WRITE, root, dyn, DynamicEventsOps())
    tree.create_file("kprobe_events", TRACE_MODE_WRITE, root, ops, KprobeEventsOps())
    tree.create_file("kprobe_profile", TRACE_MODE_READ, root, ops, KprobeProfileOps())
    return dyn
