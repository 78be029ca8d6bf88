"""The option flags' table (trace_flags.py): kernel/trace/trace.h's
TRACE_FLAGS order, and which of them a configuration has."""

from fakefs.kernel.trace.trace_flags import CORE_FLAGS, TOP_LEVEL_FLAGS, ZEROED_FLAGS, core_flag_names


class Config:
    def __init__(self, *on):
        self.on = set(on)

    def enabled(self, name):
        return name in self.on


def test_the_flags_a_configuration_has_keep_the_kernels_order():
    full = core_flag_names(Config("FUNCTION_TRACER", "FUNCTION_GRAPH_TRACER", "STACKTRACE",
                                  "FTRACE_STACKMAP"))
    assert full == [name for name, _d, _top in CORE_FLAGS]
    assert full.index("stackmap") == full.index("stacktrace") + 1
    bare = core_flag_names(Config())
    assert set(full) - set(bare) == {"function-trace", "function-fork", "stacktrace", "stackmap"}
    assert bare == [n for n in full if n in bare]


def test_top_level_and_zeroed_flags():
    assert TOP_LEVEL_FLAGS == {"trace_printk", "printk-msg-only", "record-cmd", "stackmap"}
    assert ZEROED_FLAGS <= {name for name, _d, _top in CORE_FLAGS}
