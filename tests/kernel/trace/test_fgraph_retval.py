"""funcgraph-retval (CONFIG_FUNCTION_GRAPH_RETVAL): the value each exit
holds, the format that declares it, and print_graph_retval()'s text."""

import errno
import os
import re

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace.fgraph_retval import ULONG_MASK, retval_of
from fakefs.kernel.trace.trace_events_raw import RecordEncoder
from fakefs.kernel.trace.trace_functions_graph_output import print_graph_retval
from kfiles import errno_of, rd, wr

MS = 1_000_000
EIO_INT = -errno.EIO & 0xffffffff          # an int's -EIO as rax holds it
EIO_LONG = -errno.EIO & ULONG_MASK


def boot(**config):
    clock = ManualClock()
    k = sim.boot(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False,
                 config_overrides=config)
    return k, clock


def graph_trace(k, clock, ms=3):
    wr(k, "current_tracer", "function_graph")
    for _ in range(ms):
        clock.advance(MS)
        k.timekeeper.run_until_now()


def exits(k):
    return [e for cb in k.tracing.global_trace.buffer.cpus for e in cb.iter_events()
            if e[1] == te.TRACE_GRAPH_RET]


def test_values_by_kind():
    calls = [(0xffffffff81000000 + 64 * i, 1000 * i) for i in range(4000)]
    assert all(retval_of("void", f, t, 1234) == 1234 for f, t in calls)
    assert {retval_of("bool", f, t, 7) for f, t in calls} == {0, 1}
    ints = [retval_of("int", f, t, 0) for f, t in calls]
    assert all(0 <= v <= 0xffffffff for v in ints)             # eax, zero-extended
    assert 0 in ints and any(v > 0xffff0000 for v in ints)     # errors now and then
    longs = [retval_of("long", f, t, 0) for f, t in calls]
    assert any(v > 0xffffffff for v in longs)                  # sign-extended errors
    ptrs = [retval_of("pointer", f, t, 0) for f, t in calls]
    assert all(v == 0 or v >> 47 == 0x1ffff for v in ptrs)
    # the same call, the same value
    assert [retval_of("int", f, t, 0) for f, t in calls] == ints


def test_exits_hold_values_and_a_void_caller_keeps_its_callee_s(monkeypatch):
    from fakefs.kernel.trace import fgraph_retval
    monkeypatch.setattr(fgraph_retval, "return_kind", lambda name: "int")
    k, clock = boot()
    graph_trace(k, clock)
    vals = [e[5][5] for e in exits(k)]
    assert vals and any(vals) and not all(vals)
    # every function void: nothing but what leaves leave (0 here: their rax)
    monkeypatch.setattr(fgraph_retval, "return_kind", lambda name: "void")
    k, clock = boot()
    graph_trace(k, clock)
    assert exits(k) and {e[5][5] for e in exits(k)} == {0}


def test_options_and_format_follow_the_config():
    k, _ = boot()
    wr(k, "current_tracer", "function_graph")
    opts = rd(k, "trace_options")
    assert "nofuncgraph-retval\n" in opts and "nofuncgraph-retval-hex\n" in opts
    fmt = rd(k, "events/ftrace/funcgraph_exit/format")
    assert "\tfield:unsigned long retval;\toffset:16;\tsize:8;\tsigned:0;\n" in fmt
    assert "\tfield:unsigned long long rettime;\toffset:40;\tsize:8;\tsigned:0;\n" in fmt
    assert fmt.endswith('over: %d retval: %lx", (void *)REC->func, REC->depth, '
                       'REC->calltime, REC->rettime, REC->depth, REC->retval\n')
    entry = (5, te.TRACE_GRAPH_RET, 1, 0, 0, (0xffffffff81000004, 2, 0, 3, 5, EIO_LONG), None)
    raw = RecordEncoder(k.tracing).encode(entry)
    assert len(raw) == te.GRAPH_RET_RETVAL_PAYLOAD
    assert int.from_bytes(raw[16:24], "little") == EIO_LONG
    k2, _ = boot(CONFIG_FUNCTION_GRAPH_RETVAL=False)
    wr(k2, "current_tracer", "function_graph")
    assert "funcgraph-retval" not in rd(k2, "trace_options")
    assert "retval" not in rd(k2, "events/ftrace/funcgraph_exit/format")
    assert len(RecordEncoder(k2.tracing).encode(entry)) == te.GRAPH_RET_PAYLOAD


def test_print_graph_retval():
    k, clock = boot()
    wr(k, "set_ftrace_filter", "proc_reg_write")
    graph_trace(k, clock, 1)
    wr(k, "options/funcgraph-retval", "1")
    assert errno_of(wr, k, "proc/kallsyms", "\n", os.O_WRONLY, "") == errno.EIO
    text = rd(k, "trace")
    assert re.search(r"\|  proc_reg_write\(\); /\* = -5 \*/\n", text), text
    wr(k, "options/funcgraph-retval-hex", "1")
    assert "proc_reg_write(); /* = 0xfffffffffffffffb */\n" in rd(k, "trace")
    wr(k, "options/funcgraph-retval", "0")
    assert re.search(r"\|  proc_reg_write\(\);\n", rd(k, "trace"))


def test_an_int_error_reads_as_decimal_and_a_count_as_hex():
    assert print_graph_retval("vfs_read", EIO_INT, True, False) == "vfs_read(); /* = -5 */\n"
    assert print_graph_retval("vfs_read", EIO_LONG, False, False) == "} /* vfs_read = -5 */\n"
    assert print_graph_retval("vfs_read", EIO_INT, True, True) == "vfs_read(); /* = 0xfffffffb */\n"
    assert print_graph_retval("vfs_read", 0x20, True, False) == "vfs_read(); /* = 0x20 */\n"
    # below -4095 it is not an error code
    assert print_graph_retval("vfs_read", -5000 & ULONG_MASK, True, False) == \
        "vfs_read(); /* = 0xffffffffffffec78 */\n"
    assert print_graph_retval("f", 0x80000000, True, False) == "f(); /* = 0x80000000 */\n"


def test_return_kinds_come_from_the_prototypes():
    from fakefs.kernel.trace import fgraph_retval
    assert fgraph_retval.return_kind("kfree") == "void"
    assert fgraph_retval.return_kind("vfs_read") == "long"
    assert fgraph_retval.return_kind("getname_flags") == "pointer"
    assert fgraph_retval.return_kind("capable") == "bool"
    assert fgraph_retval.return_kind("kernel_clone") == "int"
    assert fgraph_retval.return_kind("strlen") == "ulong"
    assert fgraph_retval.return_kind("no_such_function") == "long"


def test_the_prototypes_are_read_when_the_tracer_registers_not_in_its_first_step(monkeypatch):
    """Reading the BTF data takes some 130 ms once a process: the write of
    ``current_tracer`` pays it (the kernel patches its text then), not a
    request waiting on the first traced step; without the retval config
    nothing reads it."""
    from fakefs.kernel.trace.trace_btf import Btf
    k, _clock = boot(FUNCTION_GRAPH_RETVAL=False)
    monkeypatch.setattr(Btf, "_shared", None)
    wr(k, "current_tracer", "function_graph")
    assert Btf._shared is None
    wr(k, "current_tracer", "nop")
    k, _clock = boot()
    assert Btf._shared is None
    wr(k, "current_tracer", "function_graph")
    assert Btf._shared is not None
