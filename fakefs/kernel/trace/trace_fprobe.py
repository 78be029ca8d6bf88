"""Fprobe events and tracepoint probe events (kernel/trace/trace_fprobe.c):
the ``f`` and ``t`` commands of ``dynamic_events``.

``f[N][:[GROUP/][EVENT]] FUNC[%return] [ARGS]`` probes a function at its
entry, or at its exit (``%return``, or ``$retval`` among the arguments),
through its ftrace site: FUNC is an ftrace filter (a name or a glob of
``available_filter_functions``; nothing matched: EINVAL, "Failed to
register probe event").  ``t[:[GROUP/][EVENT]]
TRACEPOINT [ARGS]`` probes a tracepoint through its ``__probestub_``
function: a tracepoint not in the kernel (a module's, maybe loaded later)
is taken and armed when it appears.  Neither takes registers (``%reg``):
``$argN``, ``$retval`` (exit), ``$stackN``, ``$comm``, memory and
immediates.  Events go in ``fprobes`` and ``tracepoints`` by default,
named ``FUNC__entry``/``FUNC__exit`` and ``TRACEPOINT``.

A probe is a :class:`TraceFprobe` on a :class:`ProbeEvent` (more probes
with the same argument types may share one).  While its event is enabled
an fprobe has an (unlisted) kprobe on the function's ftrace site, so each
call of the function in the simulated machine is a hit; a tracepoint
probe is a probe on the tracepoint (``TraceHits.add_tp_hook``), so each
hit of it the simulated machine makes is one, whether or not an event
records it.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..kprobes import Kprobe
from ..lib.kstrtox import kstrtoul
from .ftrace_records import ftrace_records
from .trace_events import remove_event_call
from .trace_kprobe import ProbeEvent, ProbeEventOps, add_probe_event, event_name_used, probe_args
from .trace_probe import (FL_FENTRY, FL_FPROBE, FL_KERNEL, FL_RETURN, FL_TPOINT, MAX_EVENT_NAME_LEN,
                          ParseContext,
                          parse_event_name, parse_probe_arg, sanitize_event_name)
from .trace_probe_log import ProbeError, ProbeLog
from .trace_probe_tmpl import update_arg

FPROBE_EVENT_SYSTEM = "fprobes"
TRACEPOINT_EVENT_SYSTEM = "tracepoints"
RETHOOK_MAXACTIVE_MAX = 4096
UINT_MAX = 0xFFFFFFFF
PROBESTUB = "__probestub_"


class TraceFprobe:
    """``struct trace_fprobe``: one probe of an event (a dynamic event)."""

    __slots__ = ("ops", "event", "symbol", "is_return", "is_tracepoint", "maxactive", "args",
                 "entry_args", "kp", "kps", "armed", "nhit")

    def __init__(self, ops, symbol, is_return, is_tracepoint, maxactive, args, entry_args):
        self.ops = ops
        self.event: ProbeEvent | None = None
        self.symbol = symbol
        self.is_return = is_return
        self.is_tracepoint = is_tracepoint
        self.maxactive = maxactive
        self.args = args
        self.entry_args = entry_args
        self.kp: Kprobe | None = None      # a tracepoint probe's stub
        self.kps: list[Kprobe] = []        # an fprobe's: one per function it matched
        self.armed = False                 # a tracepoint probe on its tracepoint
        self.nhit = 0


class FprobeOps(ProbeEventOps):
    """``trace_fprobe_ops`` and the fprobe/tprobe events of one kernel."""

    def show(self, tf) -> str:
        head = "t" if tf.is_tracepoint else "f"
        if tf.is_return and tf.maxactive:
            head += "%d" % tf.maxactive
        return "%s:%s/%s %s%s%s\n" % (head, tf.event.system, tf.event.name, tf.symbol,
                                      "%return" if tf.is_return else "",
                                      "".join(" %s=%s" % (a.name, a.comm) for a in tf.args))

    def place_of(self, tf) -> str:
        return tf.symbol

    def _unregister(self, tf) -> None:
        self._disarm(tf)

    # --- __trace_fprobe_create ------------------------------------------------------
    def _create(self, argv: list[str]) -> None:
        kind = argv[0][0]
        if kind not in "ft" or len(argv) < 2:
            raise ProbeError(errno.ECANCELED)
        is_tracepoint = kind == "t"
        group = TRACEPOINT_EVENT_SYSTEM if is_tracepoint else FPROBE_EVENT_SYSTEM
        log = ProbeLog(self.tracing.global_trace, "trace_fprobe", argv)
        colon = argv[0].find(":", 1)
        event = argv[0][colon + 1:] if colon >= 0 else None
        maxactive = 0
        if argv[0][1:2].isdigit():
            text = argv[0][1:colon] if colon >= 0 else argv[0][1:]
            if len(text) > MAX_EVENT_NAME_LEN - 1:
                raise log.fail(1, "BAD_MAXACT")
            try:
                maxactive = kstrtoul(text, 0)
            except ValueError:
                maxactive = 0
            if not maxactive or maxactive > UINT_MAX:
                raise log.fail(1, "BAD_MAXACT")
            if maxactive > RETHOOK_MAXACTIVE_MAX:
                raise log.fail(1, "MAXACT_TOO_BIG")
        log.set_index(1)
        symbol, is_return = self._symbol_and_return(argv, is_tracepoint, log)
        if not is_return and maxactive:
            log.set_index(0)
            raise log.fail(1, "BAD_MAXACT_TYPE")
        log.set_index(0)
        name = None
        if event is not None:
            g, name = parse_event_name(event, log, colon + 1)
            group = g or group
        if name is None:
            if is_tracepoint:
                name = ("_" if symbol[:1].isdigit() else "") + symbol
            else:
                name = "%s__%s" % (symbol, "exit" if is_return else "entry")
            name = sanitize_event_name(name[:MAX_EVENT_NAME_LEN - 1])
        flags = FL_KERNEL | FL_FPROBE | (FL_RETURN if is_return else FL_FENTRY)
        if is_tracepoint:
            flags |= FL_TPOINT
        # a tracepoint's prototype is its stub's (the tracepoint's data first)
        funcname = PROBESTUB + symbol if is_tracepoint else symbol
        ctx = ParseContext(flags, btf=self.btf_args, funcname=funcname)
        args = probe_args(argv, ctx, log)
        pargs, size = [], 0
        for i, a in enumerate(args):
            log.set_index(i + 2)
            ctx.offset = 0
            parg, size = parse_probe_arg(pargs, i, a, ctx, log, size)
            pargs.append(parg)
        tf = TraceFprobe(self, symbol, is_return, is_tracepoint, maxactive, pargs, ctx.entry_args)
        self._register(tf, group, name, log)

    @staticmethod
    def _symbol_and_return(argv, is_tracepoint: bool, log: ProbeLog):
        """``parse_symbol_and_return()``: (symbol, is_return)."""
        place = argv[1]
        is_return = False
        pct = place.find("%")
        if pct >= 0:
            if is_tracepoint or place[pct:] != "%return":
                raise log.fail(pct, "BAD_ADDR_SUFFIX")
            return place[:pct], True
        if is_tracepoint:
            bad = next((i for i, c in enumerate(place) if not (c.isascii() and c.isalnum() or c == "_")), -1)
            if bad >= 0:
                raise log.fail(bad, "BAD_TP_NAME")
        for i, a in enumerate(argv[2:], 2):
            at = a.find("$retval")
            if at >= 0:
                nxt = a[at + 7:at + 8]
                if nxt and (nxt.isalnum() or nxt == "_"):
                    continue
                if is_tracepoint:
                    log.set_index(i)
                    raise log.fail(at, "RETVAL_ON_PROBE")
                is_return = True
                break
        return place, is_return

    # --- registration ------------------------------------------------------------
    def _register(self, tf: TraceFprobe, group: str, name: str, log: ProbeLog) -> None:
        """``register_trace_fprobe()``"""
        old = self.find_event(group, name)
        if old is not None:
            self._append(tf, old, log)
            return
        if event_name_used(self.tracing, group, name):
            log.set_index(0)
            raise log.fail(0, "EVENT_EXIST", errno.EEXIST)
        ev = ProbeEvent(group, name, tf.args, tf.is_return, "fprobe")
        add_probe_event(self.tracing, ev, self.first_dynamic_id)
        try:
            self._register_fprobe(tf, log)
        except ProbeError:
            remove_event_call(self.tracing, ev)
            raise
        self._add(tf, ev)

    def _append(self, tf: TraceFprobe, ev: ProbeEvent, log: ProbeLog) -> None:
        """``append_trace_fprobe()``"""
        first = ev.probes[0]
        if tf.is_return != first.is_return or tf.is_tracepoint != first.is_tracepoint:
            log.set_index(0)
            raise log.fail(0, "DIFF_PROBE_TYPE", errno.EEXIST)
        self._check_arg_types(tf, first, log)
        for other in ev.probes:
            if other.symbol == tf.symbol and all(x.comm == y.comm for x, y in zip(other.args, tf.args)):
                log.set_index(0)
                raise log.fail(0, "SAME_PROBE", errno.EEXIST)
        self._register_fprobe(tf, log)
        self._add(tf, ev)
        if self.is_busy(tf):
            self._arm(tf)

    def _register_fprobe(self, tf: TraceFprobe, log: ProbeLog) -> None:
        """``__register_trace_fprobe()``: the arguments' symbols, then the
        function's ftrace site (ENOENT when ftrace has no such function) or
        the tracepoint's stub (a tracepoint not there yet waits for it)."""
        ret = 0
        for parg in tf.args:
            ret = update_arg(parg, self.kernel.kallsyms.addr_of)
            if ret:
                break
        if not ret and not tf.is_tracepoint and not self._sites(tf):
            ret = -errno.EINVAL        # ftrace_set_filter(): no function matched
        if ret:
            log.set_index(1)
            raise log.fail(0, "BAD_PROBE_ADDR" if ret == -errno.ENOENT else "FAIL_REG_PROBE", -ret)

    def _site(self, tf: TraceFprobe):
        """Where a tracepoint probe sits: the tracepoint's ``__probestub_``
        (None while the tracepoint is not in the kernel)."""
        return self.kernel.kallsyms.addr_of(PROBESTUB + tf.symbol)

    def _sites(self, tf: TraceFprobe) -> list:
        """The functions an fprobe's symbol selects: it is an ftrace filter
        (``register_fprobe()``: a name, a glob, an index as in
        set_ftrace_filter; a ``!`` filter selects nothing here)."""
        recs = ftrace_records(self.kernel)
        idx, clear = recs.match(tf.symbol, None)
        return [] if clear else [recs.addrs[i] for i in idx]

    # --- enabling and hits -------------------------------------------------------------
    def _use_changed(self, tracepoint: str, on: bool) -> None:
        ev = self.event_of(tracepoint)
        if ev is None:
            return
        for tr in self.tracing.arrays():
            if ev in tr.enabled_events:
                ev.was_enabled.add(tr)
        for tf in ev.probes:
            if on:
                self._arm(tf)
            else:
                self._disarm(tf)

    def _arm(self, tf: TraceFprobe) -> None:
        if tf.is_tracepoint:
            act = self.kernel.trace_hits
            if not tf.armed and act is not None and self._site(tf) is not None:
                tf.kp = self._stub_probe(tf)
                act.add_tp_hook(tf.symbol, tf.kp.handler)
                tf.armed = True
            return
        if not tf.kps:
            for func in self._sites(tf):
                kp = Kprobe(func, None, 0, tf.is_return, self.hit, tf)
                kp.listed = False
                kp.disabled = False
                try:
                    self.kprobes.register(kp)
                except KernelError:
                    continue
                tf.kps.append(kp)

    def _disarm(self, tf: TraceFprobe) -> None:
        if tf.is_tracepoint:
            if tf.armed:
                self.kernel.trace_hits.remove_tp_hook(tf.symbol, tf.kp.handler)
                tf.armed = False
            return
        for kp in tf.kps:
            self.kprobes.unregister(kp)
        tf.kps = []

    def _stub_probe(self, tf: TraceFprobe) -> Kprobe:
        """The tracepoint's stub as a probe site, with the handler its
        tracepoint's replayed hits call (``TraceHits.tp_hooks``)."""
        ks = self.kernel.kallsyms
        stub = PROBESTUB + tf.symbol
        func = ks.addr_of(stub)
        addr = self.kprobes.kprobe_addr(None, stub, 0)[0]     # its ftrace site
        kp = Kprobe(addr, None, 0, False, None, tf)
        kp.func, kp.func_name, kp.func_offset, kp.ftrace = func, stub, addr - func, True
        kp.listed = False

        def on_tracepoint(cpu, ts, task, flags, pc, _args, stack, _kp=kp):
            # the stub is called from the traced function: its frame on top
            self._record(tf, _kp, cpu, ts, (addr,) + tuple(stack or ())[1:], task, (flags, pc))
        kp.handler = on_tracepoint
        return kp

    def module_notify(self, mod, state: str) -> None:
        """A module's tracepoints come and go with it: probes waiting for
        one are armed when it comes."""
        for tf in self.probes():
            if tf.is_tracepoint and self.is_busy(tf):
                if tf.armed and self._site(tf) is None:
                    self._disarm(tf)
                elif not tf.armed:
                    self._arm(tf)

    def hit(self, kp, cpu: int, ts: int, stack: tuple, task, call=None) -> None:
        """A call reached the fprobe (``fentry_dispatcher()`` /
        ``fexit_dispatcher()``)."""
        self._record(kp.owner, kp, cpu, ts, stack, task, None, call)


def init_fprobe_trace(tracing, dyn) -> FprobeOps | None:
    """``init_fprobe_trace_early()``: the f and t commands of dynamic_events."""
    kernel = tracing.kernel
    if not kernel.config.enabled("FPROBE_EVENTS") or kernel.kprobes is None:
        return None
    ops = FprobeOps(kernel, dyn)
    dyn.register(ops)
    if kernel.modules is not None:
        kernel.modules.register_notifier(ops.module_notify)
    return ops
