"""Uprobe events (kernel/trace/trace_uprobe.c): ``uprobe_events``,
``uprobe_profile`` and the ``p``/``r`` commands on ``PATH:OFFSET``.

``p[:[GROUP/]EVENT] PATH:OFFSET[%return][(REF_CTR_OFFSET)] [ARGS]`` (``r``
for a return probe) names code of a file: the path is looked up as the
writing process sees it (``Kernel.host_file``; FILE_NOT_FOUND with the
lookup's errno, NO_REGULAR_FILE), the offsets parsed as the kernel does
(BAD_UPROBE_OFFS, BAD_REFCNT, REFCNT_OPEN_BRACE, BAD_REFCNT_SUFFIX,
BAD_ADDR_SUFFIX).  Events go in ``uprobes``, named ``p_<file>_0x<offset>``
by default (the file's name up to its first ``.``, ``-`` or ``_``).  The
fetch arguments are a user probe's: registers, ``$stack``, ``$retval`` of
a return probe, ``$comm``, ``@ADDR`` and ``@+FILE_OFFSET`` (no symbols),
dereferences, immediates.  Enabling an event registers its probes
(``uprobe_register()``'s errnos: the file's pages must be readable, the
offset inside the file).

Hits: see ``kernel/uprobes.py`` (a probe at an executable's entry point or
``_init`` fires in each followed process that executes it).  Register
values are drawn (the real process's registers and memory are not read:
a user memory read faults).
"""

from __future__ import annotations

import errno

from ..fs.pseudo import TRACE_MODE_READ, TRACE_MODE_WRITE, FileOperations, KernelError
from ..lib.kstrtox import kstrtoul
from ..uprobes import Uprobes, open_plain
from .trace_events_commit import trace_event_commit
from .trace_kprobe import (KprobeEventsOps, ProbeEvent, ProbeEventOps, add_probe_event,
                           event_name_used)
from .trace_probe import (FL_RETURN, FL_USER, MAX_EVENT_NAME_LEN, MAX_TRACE_ARGS, ParseContext,
                          parse_event_name, parse_probe_arg)
from .trace_probe_log import ProbeError, ProbeLog
from .trace_probe_tmpl import (M64, ProbeMemory, ProbeRegs, data_size, fetch_args, mix64,
                               print_args)

UPROBE_EVENT_SYSTEM = "uprobes"
USER_STACK_TOP = 0x7ffc00000000
# the kernel's way to a uprobe's handler: the int3 trap, back to user mode
HIT_PATH = ("uprobe_dispatcher", "handler_chain", "uprobe_notify_resume",
            "irqentry_exit_to_user_mode", "asm_exc_int3")


class UprobeEvent(ProbeEvent):
    """A uprobe event: user addresses in its lines, and its probes
    registered when it is first enabled (which may fail)."""

    def __init__(self, ops, group, name, args, is_return):
        super().__init__(group, name, args, is_return, "uprobe")
        self.ops = ops

    def render(self, a, fmt) -> str:
        if self.is_return:
            where = "(0x%x <- 0x%x)" % (a[1], a[0])
        else:
            where = "(0x%x)" % a[0]
        return where + print_args(self.args, a[self.head:], fmt.kallsyms)

    def first_use(self) -> None:
        """``probe_event_enable()``: each probe's ``uprobe_register()``; on
        a failure the ones done are undone and the enable fails."""
        done = []
        try:
            for tu in self.probes:
                self.ops.arm(tu)
                done.append(tu)
        except KernelError:
            for tu in done:
                self.ops.disarm(tu)
            raise


class TraceUprobe:
    """``struct trace_uprobe``: one probe of an event (a dynamic event),
    which is also its uprobe's consumer."""

    def __init__(self, ops, filename, file, offset, ref_ctr_offset, is_return, args):
        self.ops = ops
        self.event: UprobeEvent | None = None
        self.filename = filename
        self.file = file
        self.offset = offset
        self.ref_ctr_offset = ref_ctr_offset
        self.is_return = is_return
        self.args = args
        self.uprobe = None
        self.nhit = 0

    def place(self) -> str:
        out = "%s:0x%016x" % (self.filename, self.offset)
        if self.ref_ctr_offset:
            out += "(0x%x)" % self.ref_ctr_offset
        return out

    # --- the consumer (uprobe_dispatcher / uretprobe_dispatcher) ----------------------
    def handler(self, task, cpu: int, t: int, vaddr: int) -> None:
        self.nhit += 1
        self.ops.record(self, cpu, t, task, (vaddr,))

    def ret_handler(self, task, cpu: int, t: int, func: int, ret: int) -> None:
        self.nhit += 1
        self.ops.record(self, cpu, t, task, (func, ret))


class UprobeOps(ProbeEventOps):
    """``trace_uprobe_ops`` and the uprobe events of one kernel."""

    def __init__(self, kernel, dyn):
        super().__init__(kernel, dyn)
        self.btf_args = False
        self.uprobes = kernel.uprobes

    def show(self, tu) -> str:
        return "%s:%s/%s %s%s\n" % ("r" if tu.is_return else "p", tu.event.system, tu.event.name,
                                    tu.place(), "".join(" %s=%s" % (a.name, a.comm) for a in tu.args))

    def place_of(self, tu) -> str:
        return tu.place()

    def _unregister(self, tu) -> None:
        self.disarm(tu)
        if tu.file is not None:
            tu.file.close()

    # --- __trace_uprobe_create ------------------------------------------------------
    def _create(self, argv: list[str]) -> None:
        head = argv[0][0]
        if head not in "pr" or len(argv) < 2:
            raise ProbeError(errno.ECANCELED)
        is_return = head == "r"
        if len(argv) - 2 > MAX_TRACE_ARGS:
            raise ProbeError(errno.E2BIG)
        event = argv[0][2:] if argv[0][1:2] == ":" else None
        place = argv[1]
        colon = place.rfind(":")
        if "/" not in place or colon < 0 or not place[colon + 1:colon + 2].isdigit():
            raise ProbeError(errno.ECANCELED)
        log = ProbeLog(self.tracing.global_trace, "trace_uprobe", argv)
        log.set_index(1)
        filename, arg = place[:colon], place[colon + 1:]
        base = colon + 1                         # where ``arg`` starts in the word
        lookup = self.kernel.host_file or open_plain
        try:
            file = lookup(self.dyn.caller_pid, filename)
        except KernelError as e:
            raise log.fail(0, "FILE_NOT_FOUND", e.errno)
        try:
            tu = self._parse(argv, log, event, is_return, filename, file, arg, base)
            self._register(tu, log)
        except ProbeError:
            file.close()
            raise

    def _parse(self, argv, log, event, is_return, filename, file, arg, base):
        if not file.regular:
            raise log.fail(0, "NO_REGULAR_FILE")
        ref_ctr_offset = 0
        lb = arg.find("(")
        if lb >= 0:
            rb = arg.find(")", lb)
            if rb < 0:
                raise log.fail(base + len(arg), "REFCNT_OPEN_BRACE")
            if rb + 1 != len(arg):
                raise log.fail(base + rb + 1, "BAD_REFCNT_SUFFIX")
            try:
                ref_ctr_offset = kstrtoul(arg[lb + 1:rb], 0)
            except ValueError:
                raise log.fail(base + lb + 1, "BAD_REFCNT")
            arg = arg[:lb]
        pct = arg.find("%")
        if pct >= 0:
            if arg[pct:] != "%return":
                raise log.fail(base + pct, "BAD_ADDR_SUFFIX")
            arg, is_return = arg[:pct], True
        try:
            offset = kstrtoul(arg, 0)
        except ValueError:
            raise log.fail(base, "BAD_UPROBE_OFFS")
        log.set_index(0)
        group, name = UPROBE_EVENT_SYSTEM, None
        if event is not None:
            g, name = parse_event_name(event, log, 2)
            group = g or group
        if name is None:
            tail = filename.rsplit("/", 1)[-1]
            cut = min((i for i in (tail.find("."), tail.find("-"), tail.find("_")) if i >= 0),
                      default=len(tail))
            name = ("p_%s_0x%x" % (tail[:cut], offset))[:MAX_EVENT_NAME_LEN - 1]
        pargs, size = [], 0
        for i, a in enumerate(argv[2:]):
            ctx = ParseContext((FL_RETURN if is_return else 0) | FL_USER)
            log.set_index(i + 2)
            parg, size = parse_probe_arg(pargs, i, a, ctx, log, size)
            pargs.append(parg)
        tu = TraceUprobe(self, filename, file, offset, ref_ctr_offset, is_return, pargs)
        tu.group, tu.name = group, name
        return tu

    # --- registration ------------------------------------------------------------
    def _register(self, tu: TraceUprobe, log: ProbeLog) -> None:
        """``register_trace_uprobe()``"""
        group, name = tu.group, tu.name
        for other in self.probes():               # validate_ref_ctr_offset()
            if (other.file.key == tu.file.key and other.offset == tu.offset
                    and other.ref_ctr_offset != tu.ref_ctr_offset):
                raise ProbeError(errno.EINVAL)
        old = self.find_event(group, name)
        if old is not None:
            first = old.probes[0]
            if tu.is_return != first.is_return:
                log.set_index(0)
                raise log.fail(0, "DIFF_PROBE_TYPE", errno.EEXIST)
            self._check_arg_types(tu, first, log)
            for o in old.probes:
                if (o.file.key == tu.file.key and o.offset == tu.offset
                        and all(x.comm == y.comm for x, y in zip(o.args, tu.args))):
                    log.set_index(0)
                    raise log.fail(0, "SAME_PROBE", errno.EEXIST)
            self._add(tu, old)
            return
        if event_name_used(self.tracing, group, name):
            log.set_index(0)
            raise log.fail(0, "EVENT_EXIST", errno.EEXIST)
        ev = UprobeEvent(self, group, name, tu.args, tu.is_return)
        add_probe_event(self.tracing, ev, self.first_dynamic_id)
        self._add(tu, ev)

    # --- enabling and hits -----------------------------------------------------------
    def arm(self, tu: TraceUprobe) -> None:
        if tu.uprobe is None:
            tu.uprobe = self.uprobes.register(tu.file, tu.offset, tu.ref_ctr_offset, tu)

    def disarm(self, tu: TraceUprobe) -> None:
        if tu.uprobe is not None:
            self.uprobes.unregister(tu.uprobe, tu)
            tu.uprobe = None

    def _use_changed(self, tracepoint: str, on: bool) -> None:
        ev = self.event_of(tracepoint)
        if ev is None:
            return
        for tr in self.tracing.arrays():
            if ev in tr.enabled_events:
                ev.was_enabled.add(tr)
        if not on:
            for tu in ev.probes:
                self.disarm(tu)

    def record(self, tu: TraceUprobe, cpu: int, ts: int, task, head: tuple) -> None:
        """``__uprobe_trace_func()``: the record of a hit in each array its
        event records in (a user-mode hit: no flags, no preemption)."""
        ev = tu.event
        trs = [tr for tr in self.tracing.arrays()
               if (tr.event_recording(ev) and tr.cpumask >> cpu & 1) or ev in tr.event_triggers]
        if not trs:
            return
        regs = self._user_regs(tu, cpu, ts, task, head)
        values = fetch_args(tu.args, regs)
        entry = (ts, ev.id, task.pid, 0, 0, head + values, None)
        trace_event_commit(trs, ev, cpu, entry, ev.payload + data_size(tu.args, values),
                           self._stack())

    def _user_regs(self, tu, cpu, ts, task, head) -> ProbeRegs:
        """The registers of the real process at the probe: its ip; the rest
        drawn user-space values (its memory is not read: reads fault)."""
        seed = mix64(self.kernel.seed ^ ts ^ task.pid)
        sp = USER_STACK_TOP | (seed & 0x3ffff0)
        regs = {name: mix64(seed + i) & 0xffff for i, name in enumerate(
            ("r15", "r14", "r13", "r12", "r11", "r10", "r9", "r8", "bx", "cx", "dx", "si",
             "di", "bp", "ax"))}
        ip = head[1] if tu.is_return else head[0]
        regs.update(ip=ip, sp=sp, cs=0x33, ss=0x2b, flags=0x246, orig_ax=M64, ds=0, es=0,
                    fs=0, gs=0)
        mem = ProbeMemory(self.kernel.seed, (0, 0))
        comm = task.comm if task.pid else "swapper/%d" % cpu
        stack = [mix64(seed + 100 + i) & 0xffff for i in range(16)]
        return ProbeRegs(regs, stack, comm, mem, self.kernel.kallsyms, regs["ax"],
                         file_base=(head[0] - tu.offset) & M64)

    def _stack(self) -> tuple:
        ks = self.kernel.kallsyms
        return tuple(a + 0x4 for a in (ks.addr_of(n) for n in HIT_PATH) if a)


class UprobeEventsOps(KprobeEventsOps):
    """uprobe_events: kprobe_events' open/show/write (6.12's two ``probes_open``/
    ``probes_write`` are the same code), on the uprobe ops in ``f.data``."""


class UprobeProfileOps(FileOperations):
    """uprobe_profile: hits per probe"""

    def show(self, f):
        return "".join("  %s %-44s %15d\n" % (tu.filename, tu.event.name, tu.nhit)
                       for tu in f.data.probes())


def init_uprobe_trace(tracing, root, dyn) -> UprobeOps | None:
    """``init_uprobe_trace()``: the files and the p/r commands on files."""
    kernel = tracing.kernel
    if not kernel.config.enabled("UPROBE_EVENTS") or dyn is None:
        return None
    kernel.uprobes = Uprobes(kernel)
    ops = UprobeOps(kernel, dyn)
    dyn.register(ops)
    tree = kernel.tree
    tree.create_file("uprobe_events", TRACE_MODE_WRITE, root, ops, UprobeEventsOps())
    tree.create_file("uprobe_profile", TRACE_MODE_READ, root, ops, UprobeProfileOps())
    return ops

