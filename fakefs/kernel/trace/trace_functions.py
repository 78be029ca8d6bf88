"""The function tracer (kernel/trace/trace_functions.c).

Selecting it makes every simulated CPU's traced calls land in the array's
buffer (see ``trace_activity.py`` for the rate and the stacks).  A stack
follows each call when the tracer option ``func_stack_trace`` is set or —
following the stackmap series, which documents it for this kernel persona —
when the ``stacktrace`` option is set.
"""

from __future__ import annotations

from .trace import Tracer


class FunctionTracer(Tracer):
    name = "function"
    options = {"func_stack_trace": False, "func-no-repeats": False}
    allow_instances = True
