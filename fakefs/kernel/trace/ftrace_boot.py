"""The function filters of the kernel command line (kernel/trace/ftrace.c:
``ftrace_filter=``, ``ftrace_notrace=``, ``ftrace_graph_filter=``,
``ftrace_graph_notrace=``, ``ftrace_graph_max_depth=``).

Each ``__setup()`` keeps its value; ``set_ftrace_early_filters()`` then
hands the comma-separated words one by one to the top level's ops (as
``set_ftrace_filter``/``set_ftrace_notrace`` take them: globs and
commands, a word that matches nothing ignored) and to the graph hashes
(``set_graph_function``/``set_graph_notrace``: a word that matches nothing
says so at KERN_DEBUG).  ``ftrace_graph_max_depth=`` is read as
``simple_strtoul()`` does (the leading number, any base prefix).
"""

from __future__ import annotations

import re

from ..fs.pseudo import KernelError
from ..printk import KERN_DEBUG
from .ftrace import ops_of
from .trace_functions_graph import graph_hashes

FILTERS = ("ftrace_filter", "ftrace_notrace", "ftrace_graph_filter", "ftrace_graph_notrace")
FTRACE_FILTER_SIZE = 4096              # PAGE_SIZE: the __initdata buffers
_NUMBER = re.compile(r"\s*(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def register_params(kernel) -> None:
    def keep(name):
        def setup(val):
            kernel.setup[name] = (val or "")[:FTRACE_FILTER_SIZE - 1]
        return setup

    for name in FILTERS:
        kernel.early_param(name, keep(name))

    def max_depth(val):
        if val is None:
            return
        m = _NUMBER.match(val)
        kernel.setup["ftrace_graph_max_depth"] = int(m.group(1), 0) if m else 0

    kernel.early_param("ftrace_graph_max_depth", max_depth)


def set_ftrace_early_filters(kernel) -> None:
    tracing = kernel.tracing
    cfg = kernel.config
    if tracing is None or not cfg.enabled("FUNCTION_TRACER") or not cfg.enabled("DYNAMIC_FTRACE"):
        return
    setup = kernel.setup
    ops = ops_of(tracing.global_trace)
    for name, enable in (("ftrace_filter", True), ("ftrace_notrace", False)):
        words = setup.get(name)
        if words:
            with ops.batch():
                for word in words.split(","):
                    try:                 # ftrace_set_regex(): its errors are not looked at
                        ops.process_regex(word, enable)
                    except KernelError:
                        pass
    if not cfg.enabled("FUNCTION_GRAPH_TRACER"):
        return
    g = graph_hashes(kernel)
    for name, enable in (("ftrace_graph_filter", True), ("ftrace_graph_notrace", False)):
        for word in (setup.get(name) or "").split(",") if setup.get(name) else ():
            try:
                g.process_regex(word, enable)
            except KernelError:
                kernel.printk("ftrace: function %s not traceable" % word, KERN_DEBUG)
    if "ftrace_graph_max_depth" in setup:
        g.max_depth = setup["ftrace_graph_max_depth"] & 0xFFFFFFFF
