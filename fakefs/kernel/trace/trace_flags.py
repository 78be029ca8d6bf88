"""The trace arrays' option flags (``options/*``, ``trace_options``): the
TRACE_FLAGS list of kernel/trace/trace.h, in 6.12's order, with the stackmap
series' flag after "stacktrace".  ``display-graph`` (after "function-fork"
with CONFIG_FUNCTION_GRAPH_TRACER) is left out: it makes the latency
tracers record and print graphs, which they do not here."""

from __future__ import annotations

# (name, default on, top-level only)
CORE_FLAGS: list[tuple[str, bool, bool]] = [
    ("print-parent", True, False),
    ("sym-offset", False, False),
    ("sym-addr", False, False),
    ("verbose", False, False),
    ("raw", False, False),
    ("hex", False, False),
    ("bin", False, False),
    ("block", False, False),
    ("fields", False, False),
    ("trace_printk", True, True),
    ("annotate", True, False),
    ("userstacktrace", False, False),
    ("sym-userobj", False, False),
    ("printk-msg-only", False, True),
    ("context-info", True, False),
    ("latency-format", False, False),
    ("record-cmd", True, True),
    ("record-tgid", False, False),
    ("overwrite", True, False),
    ("disable_on_free", False, False),
    ("irq-info", True, False),
    ("markers", True, False),
    ("event-fork", False, False),
    ("trace_printk_dest", True, False),
    ("pause-on-trace", False, False),
    ("hash-ptr", True, False),
    ("function-trace", True, False),
    ("function-fork", False, False),
    ("stacktrace", False, False),
    ("stackmap", False, True),
]
# options/ files only the top-level array has (TOP_LEVEL_TRACE_FLAGS)
TOP_LEVEL_FLAGS = frozenset(name for name, _d, top in CORE_FLAGS if top)
# default zero in instances (ZEROED_TRACE_FLAGS)
ZEROED_FLAGS = {"event-fork", "function-fork", "trace_printk_dest", "stackmap"}


def core_flag_names(config) -> list[str]:
    """The flags a kernel built with ``config`` has, in the table's order."""
    names = []
    for name, _d, _top in CORE_FLAGS:
        if name in ("function-trace", "function-fork") and not config.enabled("FUNCTION_TRACER"):
            continue
        if name == "stacktrace" and not config.enabled("STACKTRACE"):
            continue
        if name == "stackmap" and not config.enabled("FTRACE_STACKMAP"):
            continue
        names.append(name)
    return names
