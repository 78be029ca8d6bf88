"""Booting tracing: ``tracer_init_tracefs()`` (kernel/trace/trace.c).

Applies the boot options (``trace_buf_size``, ``ftrace_stackmap.bits``,
``trace_options``, ``ftrace=``, ``tracing_thresh``; parsed by ``register_params``),
creates the tracefs tree of the top-level trace array, and starts what
writes the ring buffers.  Kept apart from ``trace.py`` so that the trace
array core imports none of the files built on it.
"""

from __future__ import annotations

from ..fs.pseudo import TRACE_MODE_WRITE, KernelError
from ..lib.kstrtox import kstrtoul
from .trace import TRACE_BUF_SIZE_DEFAULT, Tracing
from .trace_hits import register_trace_hits
from .trace_events_pid import register_pid_follow
from .trace_files import create_top_level_files, init_tracer_tracefs
from .trace_functions import FunctionTracer
from .trace_functions_graph import GraphTracer, graph_tracefs
from .trace_irqsoff import irqsoff_tracers
from .trace_sched_wakeup import wakeup_tracers
from .trace_dynevent import DynamicEventsOps, DynEvents
from .trace_eprobe import init_eprobe_trace
from .trace_events_synth import init_synth_trace
from .trace_fprobe import init_fprobe_trace
from .trace_kprobe import init_kprobe_trace
from .trace_uprobe import init_uprobe_trace
from .trace_stackmap import BITS_DEFAULT, FtraceStackMap


def register_params(kernel) -> None:
    """The boot parameters tracing reads (the ``__setup()``s of trace.c)."""
    def stackmap_bits(val):
        try:
            bits = kstrtoul(val or "", 0)
        except ValueError:
            return          # -EINVAL: the default stays
        kernel.setup["ftrace_stackmap.bits"] = max(10, min(18, bits))

    def trace_options(val):
        kernel.setup["trace_options"] = (val or "").split(",")

    def trace_buf_size(val):
        try:
            kernel.setup["trace_buf_size"] = _memparse(val)
        except (TypeError, ValueError):
            pass

    def ftrace(val):
        kernel.setup["ftrace"] = val

    kernel.early_param("ftrace_stackmap.bits", stackmap_bits)
    kernel.early_param("trace_options", trace_options)
    kernel.early_param("trace_buf_size", trace_buf_size)
    kernel.early_param("ftrace", ftrace)

    def tracing_thresh(val):
        try:
            kernel.setup["tracing_thresh"] = kstrtoul(val or "", 0) * 1000 & ((1 << 64) - 1)
        except ValueError:
            pass

    kernel.early_param("tracing_thresh", tracing_thresh)
    def fn_rate(val):
        try:
            kernel.setup["fakefs.fn_rate"] = kstrtoul(val or "", 0)
        except ValueError:
            pass

    kernel.early_param("fakefs.fn_rate", fn_rate)


def _memparse(text: str) -> int:
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    if t and t[-1] in mult:
        return int(t[:-1], 0) * mult[t[-1]]
    return int(t, 0)


def tracer_init_tracefs(kernel) -> None:
    """Boot-time setup: apply boot options, create the tracefs tree."""
    if not kernel.config.enabled("TRACING"):
        return
    tracers = [FunctionTracer] if kernel.config.enabled("FUNCTION_TRACER") else []
    # listed newest first (register_tracer() pushes on trace_types): the
    # initcalls register function, then irqsoff's three, then wakeup's three
    tracers = (wakeup_tracers(kernel.config)[::-1] + irqsoff_tracers(kernel.config)[::-1]
               + tracers)
    # ... and function_graph last (core_initcall of trace_functions_graph.o, linked after)
    if kernel.config.enabled("FUNCTION_TRACER") and kernel.config.enabled("FUNCTION_GRAPH_TRACER"):
        tracers.insert(0, GraphTracer)
    tracing = Tracing(kernel, tracers, init_tracer_tracefs)
    kernel.tracing = tracing
    gt = tracing.global_trace
    gt.buffer_size = kernel.setup.get("trace_buf_size", TRACE_BUF_SIZE_DEFAULT)
    tracing.stackmap_bits = kernel.setup.get("ftrace_stackmap.bits", BITS_DEFAULT)
    tracing.tracing_thresh = kernel.setup.get("tracing_thresh", 0)
    for opt in kernel.setup.get("trace_options", []):
        if opt:
            try:
                gt.set_option(opt)
            except KernelError:
                kernel.printk("tracing: Unknown option '%s'" % opt)
    boot_tracer = kernel.setup.get("ftrace")
    if boot_tracer:
        try:
            gt.set_tracer(boot_tracer)
        except KernelError:
            kernel.printk("Tracer %s not found" % boot_tracer)
    # tracefs exists since 4.1; older kernels show the same files in debugfs
    path = "sys/kernel/tracing" if kernel.config.version_at_least(4, 1) \
        else "sys/kernel/debug/tracing"
    root = kernel.tree.makedirs(path, 0o700)
    tracing.root = root
    gt.dir = root
    if kernel.config.enabled("FTRACE_STACKMAP"):
        gt.stackmap = FtraceStackMap(tracing.stackmap_bits, kernel.nr_cpus, gt,
                                     rng=kernel.subsystem_rng("stackmap"))
    init_tracer_tracefs(gt, root)
    if GraphTracer in tracers:
        graph_tracefs(kernel, root)
    create_top_level_files(tracing, root)
    dyn = None
    if kernel.kprobes is not None and kernel.config.enabled("KPROBE_EVENTS"):
        dyn = init_kprobe_trace(tracing, root)
        init_fprobe_trace(tracing, dyn)
        init_eprobe_trace(tracing, dyn)
        init_uprobe_trace(tracing, root, dyn)
    if kernel.config.enabled("SYNTH_EVENTS") and kernel.config.enabled("HIST_TRIGGERS"):
        if dyn is None:
            dyn = DynEvents()
            kernel.tree.create_file("dynamic_events", TRACE_MODE_WRITE, root, dyn,
                                    DynamicEventsOps())
        init_synth_trace(tracing, root, dyn)
    tracing.dyn_events = dyn
    register_trace_hits(kernel)
    if gt.current.enabled and hasattr(gt.current, "register_probes"):
        gt.current.register_probes(gt)           # a wakeup tracer chosen by ftrace=
    register_pid_follow(tracing)
