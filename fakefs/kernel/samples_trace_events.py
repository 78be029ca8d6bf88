"""The trace-events sample module (samples/trace_events/trace-events-sample.c
and .h of 6.12, CONFIG_SAMPLE_TRACE_EVENTS=m): ``trace_events_sample``.

Its events, system ``sample-trace``, registered when it comes
(``trace_module_notify()`` at MODULE_STATE_COMING: the lowest free ids, in
the header's order) and removed when it goes: ``foo_bar`` (every kind of
field: a fixed array, a dynamic int array, strings, a bitmask, a cpumask,
a ``__vstring``, a ``__string_len``), ``foo_bar_with_cond`` (TP_CONDITION
``!(bar % 10)``), ``foo_bar_with_fn`` (TRACE_EVENT_FN), the ``foo_template``
class's ``foo_with_template_simple``, ``_cond`` (``!(bar % 8)``), ``_fn`` and
``_print`` (its own TP_printk), and ``foo_rel_loc`` (``__rel_loc`` fields).
Their formats are what the header makes of them (``Field`` offsets as
stage 4 lays them out; chars are unsigned: the kernel builds with
``-funsigned-char``; the print fmt is TP_printk's text with ``__entry``
as ``REC`` and the TRACE_DEFINE_ENUM names as their values).

Its init starts the kthread ``event-sample``: ``schedule_timeout(HZ)``
(a wheel timer, so the wake-up comes at the timer bucket's expiry), then
the tracepoints with ``cnt`` (0, 1, ...), again and again until the module
goes.  The fn events' registration callback starts ``event-sample-fn``
(and says so in the kernel log) while either of them has a probe: the
model notices the first probe (or the last going) at the step of the
machine it happens in.  The thread's timer and wake-up are not traced
(no timer or sched events of them); the hits are the thread's (its pid),
on the CPU the module was loaded from.
"""

from __future__ import annotations

from .lib.bitmap import bitmap_list_string, bitmap_string
from .module import STATE_COMING, STATE_GOING, ModuleFunc, ModuleImage
from .printk import KERN_INFO
from .timer import HZ, calc_wheel_index
from .trace.event_catalog import EventDesc, Field, load_catalog
from .trace.events_defs import EventDef
from .trace.trace_events import add_event_call, remove_event_call

NAME = "trace_events_sample"
SYSTEM = "sample-trace"
RANDOM_STRINGS = ("Mother Goose", "Snoopy", "Gandalf", "Frodo", "One ring to rule them all")
DEADBEEF = 0xdeadbeef
KTHREAD_NS = 45_000          # kthread_run(): made, woken, running
WAKE_NS = 12_000             # the timer's softirq to the thread running
FN_WAKE_NS = 9_000           # event-sample-fn, woken by the same softirq, runs after it
TP_NS = 1_500                # from one tracepoint to the next in the loop
PFX_LEN = 16

# the events in the header's order: (name, class, fields, TP_printk args)
_FOO_BAR_FMT = (
    '"foo %s %d %s %s %s %s %s %s (%s) (%s) %s [%d] %*pbl", REC->foo, REC->bar, '
    '__print_symbolic(REC->bar, { 0, "zero" }, { 2, "TWO" }, { 4, "FOUR" }, { 8, "EIGHT" }, '
    '{ 10, "TEN" } ), __print_flags(REC->bar, "|", { 1, "BIT1" }, { 2, "BIT2" }, { 4, "BIT3" }, '
    '{ 8, "BIT4" } ), __print_array(__get_dynamic_array(list), '
    '__get_dynamic_array_len(list) / sizeof(int), sizeof(int)), '
    '__print_dynamic_array(list, sizeof(int)), __get_str(str), __get_str(lstr), '
    '__get_bitmask(cpus), __get_cpumask(cpum), __get_str(vstr), __get_dynamic_array_len(cpus), '
    '__get_dynamic_array_len(cpus), __get_dynamic_array(cpus)')
_FOO_FMT = '"foo %s %d", __get_str(foo), REC->bar'
_BAR_FMT = '"bar %s %d", __get_str(foo), REC->bar'
_REL_FMT = ('"foo_rel_loc %s, %d, %s, %s", __get_rel_str(foo), REC->bar, '
            '__get_rel_bitmask(bitmask), __get_rel_cpumask(cpumask)')
# (type, name, size, align, signed, len)
_FOO_BAR_FIELDS = (("char[10]", "foo", 10, 1, 0, 10), ("int", "bar", 4, 4, 1, 0),
                   ("__data_loc int[]", "list", 4, 4, 1, 0),
                   ("__data_loc char[]", "str", 4, 4, 0, 0),
                   ("__data_loc unsigned long[]", "cpus", 4, 4, 0, 0),
                   ("__data_loc cpumask_t", "cpum", 4, 4, 0, 0),
                   ("__data_loc char[]", "vstr", 4, 4, 0, 0),
                   ("__data_loc char[]", "lstr", 4, 4, 0, 0))
_FOO_FIELDS = (("__data_loc char[]", "foo", 4, 4, 0, 0), ("int", "bar", 4, 4, 1, 0))
_REL_FIELDS = (("__rel_loc char[]", "foo", 4, 4, 0, 0), ("int", "bar", 4, 4, 1, 0),
               ("__rel_loc unsigned long[]", "bitmask", 4, 4, 0, 0),
               ("__rel_loc cpumask_t", "cpumask", 4, 4, 0, 0))
EVENTS = (("foo_bar", "foo_bar", _FOO_BAR_FIELDS, _FOO_BAR_FMT),
          ("foo_bar_with_cond", "foo_bar_with_cond", _FOO_FIELDS, _FOO_FMT),
          ("foo_bar_with_fn", "foo_bar_with_fn", _FOO_FIELDS, _FOO_FMT),
          ("foo_with_template_simple", "foo_template", _FOO_FIELDS, _FOO_FMT),
          ("foo_with_template_cond", "foo_template", _FOO_FIELDS, _FOO_FMT),
          ("foo_with_template_fn", "foo_template", _FOO_FIELDS, _FOO_FMT),
          ("foo_with_template_print", "foo_template", _FOO_FIELDS, _BAR_FMT),
          ("foo_rel_loc", "foo_rel_loc", _REL_FIELDS, _REL_FMT))
FN_TRACEPOINTS = ("foo_bar_with_fn", "foo_with_template_fn")


def layout(specs) -> tuple:
    """(Fields, sizeof the entry struct) after the 8 bytes of common fields."""
    off, out, top = 8, [], 4
    for typ, name, size, align, signed, n in specs:
        off = -(-off // align) * align
        out.append(Field(typ, name, off, size, signed, n))
        off += size
        top = max(top, align)
    return tuple(out), -(-off // top) * top


def _ints(b: bytes) -> list:
    return [int.from_bytes(b[i:i + 4], "little", signed=True) for i in range(0, len(b), 4)]


def _array(b: bytes) -> str:
    """``trace_print_array_seq()`` of 4-byte elements."""
    return "{%s}" % ",".join("0x%x" % (v & 0xffffffff) for v in _ints(b))


def _mask(b: bytes) -> str:
    """``trace_print_bitmask_seq()``: ``%*pb`` of the bytes' bits."""
    return bitmap_string(int.from_bytes(b, "little"), len(b) * 8)


def _symbolic(v: int) -> str:
    return {0: "zero", 2: "TWO", 4: "FOUR", 8: "EIGHT", 10: "TEN"}.get(v, "0x%x" % (v & (1 << 64) - 1))


def _flags(v: int) -> str:
    out = []
    for bit, name in ((1, "BIT1"), (2, "BIT2"), (4, "BIT3"), (8, "BIT4")):
        if v & bit:
            out.append(name)
            v &= ~bit
    if v:
        out.append("0x%x" % (v & (1 << 64) - 1))
    return "|".join(out)


class SampleEvent(EventDef):
    """An event of the sample: ``args`` are its fields' values in order
    (strings as str, dynamic arrays and masks as their bytes)."""

    def render(self, a, fmt) -> str:
        name = self.name
        if name == "foo_bar":
            foo, bar, lst, s, cpus, cpum, vstr, lstr = a
            return "foo %s %d %s %s %s %s %s %s (%s) (%s) %s [%d] %s" % (
                foo, bar, _symbolic(bar), _flags(bar), _array(lst), _array(lst), s, lstr,
                _mask(cpus), _mask(cpum), vstr, len(cpus),
                bitmap_list_string(int.from_bytes(cpus, "little") & ((1 << len(cpus)) - 1)))
        if name == "foo_rel_loc":
            foo, bar, bits, cpus = a
            return "foo_rel_loc %s, %d, %s, %s" % (foo, bar, _mask(bits), _mask(cpus))
        return "%s %s %d" % ("bar" if name == "foo_with_template_print" else "foo", a[0], a[1])


def sample_events() -> list:
    cat = load_catalog()
    out = []
    for name, _cls, specs, fmt in EVENTS:
        fields, size = layout(specs)
        ev = SampleEvent(SYSTEM, name, [f.format_line() for f in fields], fmt, size, None)
        ev.desc = EventDesc(SYSTEM, name, NAME, fields, fmt, None, size, True, cat.common_fields)
        out.append(ev)
    return out


def _funcs() -> list:
    """The module's text: its threads' functions, the fn events' callbacks,
    and per tracepoint and event class what TRACE_EVENT makes."""
    names = [("simple_thread", "t"), ("simple_thread_fn", "t"), ("do_simple_thread_func", "t"),
             ("simple_thread_func_fn", "t"), ("foo_bar_reg", "T"), ("foo_bar_unreg", "T")]
    classes = list(dict.fromkeys(c for _n, c, _f, _p in EVENTS))
    for name, _c, _f, _p in EVENTS:
        names += [("__traceiter_" + name, "T"), ("__probestub_" + name, "T")]
    for c in classes:
        names += [("trace_event_raw_event_" + c, "t"), ("perf_trace_" + c, "t"),
                  ("__bpf_trace_" + c, "t")]
    for name, c, _f, _p in EVENTS:
        if name == c or name == "foo_with_template_print":
            names.append(("trace_raw_output_" + name, "t"))
    names.append(("trace_raw_output_foo_template", "t"))
    out, off = [], 0
    for name, typ in names:
        size = 0x30 if name.startswith(("__probestub_", "__traceiter_")) else 0xa0
        out.append(ModuleFunc(off, typ, "__pfx_" + name, PFX_LEN, False))
        out.append(ModuleFunc(off + PFX_LEN, typ, name, size, True))
        off += PFX_LEN + size
    out += [ModuleFunc(off, "t", "__pfx_trace_event_exit", PFX_LEN, False),
            ModuleFunc(off + PFX_LEN, "t", "trace_event_exit", 0x50, False),
            ModuleFunc(off + PFX_LEN, "T", "cleanup_module", 0x50, False),
            ModuleFunc(0, "t", "__pfx_trace_event_init", PFX_LEN, False, True),
            ModuleFunc(PFX_LEN, "t", "trace_event_init", 0x40, True, True),
            ModuleFunc(PFX_LEN, "T", "init_module", 0x40, False, True)]
    return out


class SampleThread:
    """A loop of the sample: asleep for ``schedule_timeout(HZ)``, then its
    tracepoints with its count."""

    def __init__(self, task, cpu: int, t: int, fire, wake_ns: int = WAKE_NS):
        self.task = task
        self.wake_ns = wake_ns
        self.cpu = cpu
        self.cnt = 0
        self.fire = fire                  # fire(thread, t): the loop's tracepoints at t
        self.next = 0
        self.sleep(t)

    def sleep(self, t: int) -> None:
        """``schedule_timeout(HZ)`` from ``t``: awake at the bucket's expiry."""
        tick = 1_000_000_000 // HZ
        now = t // tick
        _idx, expiry = calc_wheel_index(now + HZ, now)
        self.next = expiry * tick + self.wake_ns

    def run(self, t0: int, t1: int, fire: bool) -> None:
        while self.next < t1:
            t = self.next
            if fire and t >= t0:
                t = self.fire(self, t)
            self.cnt += 1
            self.sleep(t)


class TraceEventsSample:
    """The loaded module's state: its events and its threads."""

    def __init__(self, kernel, caller):
        self.kernel = kernel
        self.caller = caller              # samples.caller: who makes the system call, when
        self.events: list = []
        self.thread: SampleThread | None = None
        self.fn_thread: SampleThread | None = None
        self.mod = None

    # --- the loader's side -----------------------------------------------------
    def notify(self, mod, state: str) -> None:
        """``trace_module_notify()``: the events come and go with it."""
        tracing = self.kernel.tracing
        if mod.name != NAME or tracing is None:
            return
        if state == STATE_COMING:
            act = self.kernel.trace_hits            # (made after the loader, at boot)
            if act is not None and self.traced_in not in act.traced_needs:
                act.traced_needs.append(self.traced_in)
                act.late_needs.append(self.traced_in)      # (a timer hook fires them)
            self.events = sample_events()
            # the IDA's lowest free id from __TRACE_LAST_TYPE (the first
            # vmlinux event's) up
            first = min(e.id for e in tracing.events
                        if e.desc is not None and e.desc.fixed_id is None and not e.desc.module)
            for ev in self.events:
                ev.id = next(i for i in range(first, 1 << 16) if i not in tracing.events_by_id)
                add_event_call(tracing, ev)
        elif state == STATE_GOING:
            for ev in self.events:
                remove_event_call(tracing, ev)
            self.events = []

    def init(self, kernel, mod, ctx):
        """``trace_event_init()``: kthread_run(simple_thread, "event-sample")."""
        return self.caller(kernel, ctx, lambda _pid, cpu, ts: self._started(mod, cpu, ts))

    def _started(self, mod, cpu: int, ts: int) -> None:
        self.mod = mod
        self.thread = self._start("event-sample", cpu, ts, self._loop)

    def exit(self, kernel, mod, ctx) -> None:
        for th in (self.thread, self.fn_thread):
            if th is not None:
                kernel.sched.tasks.pop(th.task.pid, None)
        self.thread = self.fn_thread = self.mod = None

    def _start(self, comm: str, cpu: int, t: int, fire, wake_ns: int = WAKE_NS) -> SampleThread:
        sched = self.kernel.sched
        task = sched.spawn(comm, cpu=cpu, kthread=True)
        if self.kernel.tracing is not None:
            self.kernel.tracing.savedcmd.save(task.pid, task.comm)
        return SampleThread(task, cpu, t + KTHREAD_NS, fire, wake_ns)

    # --- time -------------------------------------------------------------------
    def step(self, t0: int, t1: int, fire: bool = True) -> None:
        """The threads' loops in [t0, t1) (skipped time: counted, not fired)."""
        if self.thread is None:
            return
        tps = self.kernel.tracepoints
        probed = any(tps.get(n).probes for n in FN_TRACEPOINTS)
        if probed and self.fn_thread is None:
            self.kernel.printk("Starting thread for foo_bar_fn", KERN_INFO, ts=t0)
            self.fn_thread = self._start("event-sample-fn", self.thread.cpu, t0, self._fn_loop,
                                         WAKE_NS + FN_WAKE_NS)
        elif not probed and self.fn_thread is not None:
            self.kernel.printk("Killing thread for foo_bar_fn", KERN_INFO, ts=t0)
            self.kernel.sched.tasks.pop(self.fn_thread.task.pid, None)
            self.fn_thread = None
        for th in (self.thread, self.fn_thread):
            if th is not None:
                th.run(t0, t1, fire)

    def skip(self, t0: int, t1: int) -> None:
        self.step(t0, t1, fire=False)

    # --- gaps: a hit of a probed tracepoint is simulated and traced --------------
    def _probed(self) -> bool:
        tps = self.kernel.tracepoints
        return self.thread is not None and any(tps.get(n).probes for n, _c, _f, _p in EVENTS)

    def gap_threshold(self) -> int:
        return 1 << 62

    def gap_begins(self, gap) -> None:
        pass

    def gap_ends(self, gap) -> None:
        pass

    def boundary(self):
        return None

    def full_from(self, t: int, gap) -> int:
        """While its tracepoints are probed, a gap is simulated in full: a
        loop's hits are not a rate the skipped time could be counted at."""
        return t if self._probed() else gap.end

    def traced_in(self, t0: int, t1: int) -> bool:
        """... and traced in full (no quiet time before the window)."""
        return self._probed()

    def _hit(self, th: SampleThread, name: str, t: int, args) -> int:
        tp = self.kernel.tracepoints.get(name)
        if tp.probes:
            tp.fire(th.cpu, t, th.task.pid, 0, 0, args)
        return t + TP_NS

    def _loop(self, th: SampleThread, t: int) -> int:
        """``do_simple_thread_func(cnt, "iter=%d", cnt)``"""
        cnt = th.cnt
        n = cnt % 5
        lst = b"".join((i + 1).to_bytes(4, "little") for i in range(n))
        ncpu = self.kernel.nr_cpus
        mask = ((1 << ncpu) - 1).to_bytes(8 * -(-ncpu // 64), "little")
        lstr = "hello"[:min(cnt // 2, 5)]
        t = self._hit(th, "foo_bar", t, ("hello", cnt, lst, RANDOM_STRINGS[n], mask, mask,
                                         "iter=%d" % cnt, lstr))
        t = self._hit(th, "foo_with_template_simple", t, ("HELLO", cnt))
        if cnt % 10 == 0:
            t = self._hit(th, "foo_bar_with_cond", t, ("Some times print", cnt))
        if cnt % 8 == 0:
            t = self._hit(th, "foo_with_template_cond", t, ("prints other times", cnt))
        t = self._hit(th, "foo_with_template_print", t, ("I have to be different", cnt))
        return self._hit(th, "foo_rel_loc", t, ("Hello __rel_loc", cnt,
                                                DEADBEEF.to_bytes(8, "little"), mask))

    def _fn_loop(self, th: SampleThread, t: int) -> int:
        t = self._hit(th, "foo_bar_with_fn", t, ("Look at me", th.cnt))
        return self._hit(th, "foo_with_template_fn", t, ("Look at me too", th.cnt))


def trace_events_sample_init(kernel, mods, caller) -> None:
    """The image, the events' notifier and the threads' time hooks."""
    s = TraceEventsSample(kernel, caller)
    mods.register_notifier(s.notify)
    kernel.add_timer_hook(s.step, skip=s.skip)
    kernel.add_gap_watcher(s)
    mods.add_image(ModuleImage(NAME, 16384, _funcs(), init=s.init, exit=s.exit))
