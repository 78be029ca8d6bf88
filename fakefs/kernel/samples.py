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
"""

from __future__ import annotations

from .module import ModuleFunc, ModuleImage, modules_init
from .trace.ftrace_module import ftrace_module_notify
from .trace.trace_buffer_files import marker_writer
from .trace.trace_entries import TRACE_FLAG_HARDIRQ, TRACE_FLAG_IRQS_OFF
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


def caller(kernel, f):
    """(pid, cpu, ns) of the task making the system call ``f`` (everything
    the machine did before is traced before it)."""
    tracing = kernel.tracing
    if f is not None and tracing is not None and getattr(f, "pid", 0):
        return marker_writer(tracing.global_trace, f)
    return (0, 0, kernel.sim_time)


def _trace_printk_init(kernel, mod, f):
    pid, cpu, ts = caller(kernel, f)
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
    kernel.advance_to(t)


def trace_printk_image() -> ModuleImage:
    text = funcs([("trace_printk_irq_work", 0x70, True, ()),
                  ("trace_printk_exit", 0x10, False, ("cleanup_module",))])
    init = funcs([("trace_printk_init", 0xa0, True, ("init_module",))], init=True)
    return ModuleImage("trace_printk", 12288, text + init, TP_FORMATS, init=_trace_printk_init)


def samples_init(kernel) -> None:
    """The initcall: the loader (module.py) with its ftrace and
    trace_printk notifiers, and the sample images.  It runs before
    tracefs's initcalls, so ftrace's notifier is the first (its records
    are made before the others run, as ``prepare_coming_module()`` does)."""
    mods = modules_init(kernel)
    mods.register_notifier(ftrace_module_notify(kernel))
    mods.register_notifier(module_notify(kernel))
    mods.add_image(trace_printk_image())
