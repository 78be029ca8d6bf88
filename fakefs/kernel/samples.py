"""The sample modules the simulated kernel can load (samples/ of the 6.12
tree, built as modules, as a tracing developer's kernel has them).

Each is a :class:`~fakefs.kernel.module.ModuleImage`: its functions as
the compiled module has them (an ``__pfx_`` padding symbol before each;
the ``module_init``/``module_exit`` aliases ``init_module`` and
``cleanup_module``; ``__exit`` functions are notrace), its constant
``trace_printk()`` formats, and a model of what its init and exit do.

``trace_printk`` (samples/trace_printk/trace-printk.c): its init prints
two messages from process context (a constant string: ``trace_bputs``,
and a string in a variable: ``trace_puts``), queues an irq_work on its
CPU and waits for it: the work, in hard interrupt context (the self-IPI
of ``irq_work_queue()``, still inside its preempt-disabled section),
prints the four ``(irq)`` messages from ``trace_printk_irq_work``; then
the init prints two formatted messages (a constant format:
``trace_bprintk``; a format in a variable: ``trace_printk``).  Its exit
does nothing.

``preemptirq_delay_test`` (kernel/trace/preemptirq_delay_test.c, with the
irqsoff or preempt tracer built): the sections of irqs or preemption off
the latency tracers measure (see ``_preemptirq_init``).
"""

from __future__ import annotations

from .fs.pseudo import later
from .module import ModuleFunc, ModuleImage, ModuleParam, modules_init
from .printk import KERN_ERR
from .samples_ftrace_direct import ftrace_direct_images
from .samples_trace_events import trace_events_sample_init
from .sched import Task
from .trace.ftrace_direct import ftrace_direct_init
from .trace.ftrace_module import ftrace_module_notify
from .trace.trace_buffer_files import marker_writer
from .trace.trace_entries import TRACE_FLAG_HARDIRQ, TRACE_FLAG_IRQS_OFF
from .trace.trace_irqsoff import TRACER_IRQS_OFF, TRACER_PREEMPT_OFF, section_tracer
from .trace.trace_kprobe_regs import caller_task
from .trace.trace_printk import module_notify, trace_printk

PFX_LEN = 16

# the work's way in: the self-IPI of irq_work_queue() (innermost first)
IRQ_WORK_CALLERS = ("irq_work_single", "irq_work_run_list", "irq_work_run", "__sysvec_irq_work",
                    "sysvec_irq_work", "asm_sysvec_irq_work")
# ns between the prints of the sample (a trace_printk() of a short string
# takes about a microsecond), and from the queueing to the work running
PRINT_NS = 900
IPI_NS = 2_500

TP_GLOBAL_STR = "This is a dynamic string that will use trace_puts\n"
TP_GLOBAL_STR_IRQ = "(irq) This is a dynamic string that will use trace_puts\n"
TP_GLOBAL_STR_FMT = "%sThis is a %s that will use trace_printk\n"
TP_FORMATS = ("(irq) This is a static string that will use trace_bputs\n",
              "(irq) This is a %s that will use trace_bprintk()\n",
              "This is a static string that will use trace_bputs\n",
              "This is a %s that will use trace_bprintk()\n")


def funcs(layout, init=False) -> list:
    """ModuleFuncs of ``(name, size, traceable, aliases)`` laid out one
    after the other, each after its 16 bytes of padding."""
    out = []
    off = 0
    for name, size, traceable, aliases in layout:
        out.append(ModuleFunc(off, "t", "__pfx_" + name, PFX_LEN, False, init))
        off += PFX_LEN
        out.append(ModuleFunc(off, "t", name, size, traceable, init))
        for alias in aliases:
            out.append(ModuleFunc(off, "T", alias, size, False, init))
        off += size
    return out


def caller(kernel, f, then):
    """``then(pid, cpu, ns)`` of the task making the system call ``f``
    (everything the machine did before is traced before it: a ``Later``
    while the machine has yet to get there)."""
    tracing = kernel.tracing
    if f is not None and tracing is not None and getattr(f, "pid", 0):
        return marker_writer(tracing.global_trace, f, then)
    return then(0, 0, kernel.sim_time)


def _trace_printk_init(kernel, mod, f):
    return caller(kernel, f, lambda pid, cpu, ts: _trace_printk_run(kernel, mod, pid, cpu, ts))


def _trace_printk_run(kernel, mod, pid, cpu, ts):
    init = mod.addr_of("trace_printk_init")
    work = mod.addr_of("trace_printk_irq_work")
    t = ts

    def put(ip, text, flags=0, pc=0):
        nonlocal t
        trace_printk(kernel, (pid, cpu, t), ip, text, flags, pc)
        t += PRINT_NS

    put(init + 0x1c, TP_FORMATS[2])
    put(init + 0x2f, TP_GLOBAL_STR)
    t += IPI_NS
    kps = kernel.kprobes
    if kps is not None:
        kps.fire("trace_printk_irq_work", IRQ_WORK_CALLERS, cpu, caller_task(kernel, pid), None)
    irq = TRACE_FLAG_IRQS_OFF | TRACE_FLAG_HARDIRQ
    put(work + 0x12, TP_FORMATS[0], irq, 1)
    put(work + 0x25, TP_GLOBAL_STR_IRQ, irq, 1)
    put(work + 0x3b, TP_FORMATS[1].replace("%s", "static string"), irq, 1)
    put(work + 0x56, TP_GLOBAL_STR_FMT % ("(irq) ", "dynamic string"), irq, 1)
    put(init + 0x5a, TP_FORMATS[3].replace("%s", "static string"))
    put(init + 0x78, TP_GLOBAL_STR_FMT % ("", "dynamic string"))
    return later(kernel, t, lambda: None)          # the loader waits for its init


def trace_printk_image() -> ModuleImage:
    text = funcs([("trace_printk_irq_work", 0x70, True, ()),
                  ("trace_printk_exit", 0x10, False, ("cleanup_module",))])
    init = funcs([("trace_printk_init", 0xa0, True, ("init_module",))], init=True)
    return ModuleImage("trace_printk", 12288, text + init, TP_FORMATS, init=_trace_printk_init)


# preemptirq_delay_test (kernel/trace/preemptirq_delay_test.c, built as a
# module with the latency tracers): its init starts a kernel thread
# "<test_mode>_test" and waits for it; the thread runs ``burst_size`` (at
# most 10) of its test functions, each a busy loop of ``delay`` us with
# interrupts (``irq``), preemption (``preempt``) or, by turns, one and the
# other (``alternate``) off; any other mode does nothing.  The loop reads
# the clock and calls kthread_should_stop() until the time is up.
PIRQ_TESTS = 10
PIRQ_KTHREAD_NS = 45_000      # kthread_run(): kthreadd makes it, it is woken and runs
PIRQ_STOP_NS = 30_000         # complete(), the init woken, kthread_stop()
PIRQ_ITER_NS = 160            # one turn of busy_wait(): the clock and the traced call
PIRQ_ENTER_NS = 900           # from a test function's entry to its loop
PIRQ_LEAVE_NS = 400
# return addresses in the module's functions: in preemptirqtest_N after the
# disable, after kthread_should_stop(), after the enable; in
# preemptirq_delay_run after the call of testfuncs[i]
PIRQ_OFF_DISABLE, PIRQ_OFF_CALL, PIRQ_OFF_ENABLE = 0x1c, 0x3e, 0x5b
PIRQ_OFF_RUN_CALL = 0x8d
# the thread's stack under the test function (kthread(): ret_from_fork)
PIRQ_KTHREAD_RET = (("kthread", 0xe8), ("ret_from_fork", 0x31), ("ret_from_fork_asm", 0x1a))


def _pirq_section(kernel, mod, task, cpu: int, idx: int, irq: bool, t: int, delay_us: int,
                  rng) -> int:
    """One test function: its busy loop with irqs or preemption off, as
    the latency tracer measuring that kind sees it; returns when it ends."""
    fn = mod.addr_of("preemptirqtest_%d" % idx)
    run = mod.addr_of("preemptirq_delay_run")
    ks = kernel.kallsyms
    t0 = t + PIRQ_ENTER_NS
    want = delay_us * 1000
    n = max(1, -(-want // PIRQ_ITER_NS))             # a do-while: once at least
    first = t0 + PIRQ_ITER_NS // 2
    t1 = first + n * PIRQ_ITER_NS + int(rng.random() * PIRQ_ITER_NS)
    tracer = section_tracer(kernel, TRACER_IRQS_OFF if irq else TRACER_PREEMPT_OFF)
    if tracer is not None:
        flags, pc = (TRACE_FLAG_IRQS_OFF, 0) if irq else (0, 1)
        if tracer.start(cpu, t0, task.pid, flags, pc, fn + PIRQ_OFF_DISABLE, run + PIRQ_OFF_RUN_CALL):
            kss = ks.addr_of("kthread_should_stop")
            if kss is not None:
                tracer.calls(cpu, task.pid, flags, pc, kss + 4, fn + PIRQ_OFF_CALL,
                             range(first, first + n * PIRQ_ITER_NS, PIRQ_ITER_NS))
            stack = (fn + PIRQ_OFF_ENABLE, run + PIRQ_OFF_RUN_CALL) + tuple(
                ks.addr_of(name) + off for name, off in PIRQ_KTHREAD_RET if ks.addr_of(name))
            tracer.stop(cpu, t1, task, flags, pc, fn + PIRQ_OFF_ENABLE, run + PIRQ_OFF_RUN_CALL,
                        stack)
    return t1 + PIRQ_LEAVE_NS


def _preemptirq_init(kernel, mod, f):
    """``preemptirq_delay_init()``: ``preemptirq_run_test()`` in the loading
    task (its kobject and sysfs ``trigger`` file are not made here)."""
    return caller(kernel, f, lambda _pid, cpu, ts: _preemptirq_run(kernel, mod, cpu, ts))


def _preemptirq_run(kernel, mod, cpu, ts):
    p = mod.params
    mode = p["test_mode"]
    sched = kernel.sched
    task = Task(sched.alloc_pid(), "%s_test" % mode, cpu=cpu, kthread=True)
    if kernel.tracing is not None:
        kernel.tracing.savedcmd.save(task.pid, task.comm)
    t = ts + PIRQ_KTHREAD_NS
    aff = p["cpu_affinity"]
    if aff > -1:
        if aff < kernel.nr_cpus:
            cpu = task.cpu = aff
        else:
            kernel.printk("cpu_affinity:%d, failed" % aff, KERN_ERR, ts=t)
    rng = kernel.subsystem_rng("preemptirq_delay_test")
    for i in range(min(p["burst_size"], PIRQ_TESTS)):
        if mode == "irq" or (mode == "alternate" and i % 2 == 0):
            t = _pirq_section(kernel, mod, task, cpu, i, True, t, p["delay"], rng)
        elif mode == "preempt" or mode == "alternate":
            t = _pirq_section(kernel, mod, task, cpu, i, False, t, p["delay"], rng)
    return later(kernel, t + PIRQ_STOP_NS, lambda: None)    # the loader waits for its test


def preemptirq_delay_image() -> ModuleImage:
    tests = [("preemptirqtest_%d" % i, 0x70, True, ()) for i in range(PIRQ_TESTS)]
    text = funcs(tests + [("preemptirq_delay_run", 0x110, True, ()),
                          ("preemptirq_run_test", 0xb0, True, ()),
                          ("trigger_store", 0x30, True, ()),
                          ("preemptirq_delay_exit", 0x30, False, ("cleanup_module",))])
    init = funcs([("preemptirq_delay_init", 0x90, True, ("init_module",))], init=True)
    params = (ModuleParam("delay", "ulong", 100), ModuleParam("test_mode", "string", "irq", 12),
              ModuleParam("burst_size", "uint", 1), ModuleParam("cpu_affinity", "int", -1))
    return ModuleImage("preemptirq_delay_test", 16384, text + init, init=_preemptirq_init,
                       params=params)


def samples_init(kernel) -> None:
    """The initcall: the loader (module.py) with its ftrace and
    trace_printk notifiers, and the sample images.  It runs before
    tracefs's initcalls, so ftrace's notifier is the first (its records
    are made before the others run, as ``prepare_coming_module()`` does)."""
    mods = modules_init(kernel)
    mods.register_notifier(ftrace_module_notify(kernel))
    mods.register_notifier(module_notify(kernel))
    mods.add_image(trace_printk_image())
    if kernel.config.enabled("DYNAMIC_FTRACE") and kernel.config.enabled("KPROBES"):
        ftrace_direct_init(kernel)
        for image in ftrace_direct_images():       # (direct calls reach them as kprobes do)
            mods.add_image(image)
    trace_events_sample_init(kernel, mods, caller)
    if kernel.config.enabled("IRQSOFF_TRACER") or kernel.config.enabled("PREEMPT_TRACER"):
        mods.add_image(preemptirq_delay_image())
