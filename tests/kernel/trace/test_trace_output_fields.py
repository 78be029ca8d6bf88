"""The ``fields`` option (trace_output_fields.py): each field of an entry's
record by its filter type and size."""

import re
import struct

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace_output_fields import Field, FILTER_DYN_STRING, FILTER_OTHER, \
    FILTER_STATIC_STRING, fields_text
from kfiles import rd, wr


def boot(cmdline=""):
    k = sim.boot(cmdline=cmdline, seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    return k


def body(ln):
    return ln.split(": ", 1)[1]


def test_sched_switch_fields_as_6_12_prints_them():
    k = boot()
    wr(k, "events/sched/sched_switch/enable", "1")
    k.clock.advance(20_000_000)
    wr(k, "tracing_on", "0")
    normal = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    wr(k, "options/fields", "1")
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    assert len(lines) == len(normal)
    for n, f in zip(normal[:50], lines[:50]):
        assert n.split(": ", 1)[0] == f.split(": ", 1)[0]            # same context columns
        m = re.match(r"sched_switch: prev_comm=(.*) prev_pid=0x([0-9a-f]+) \((\d+)\) "
                     r"prev_prio=0x([0-9a-f]+) \((\d+)\) prev_state=0x([0-9a-f]+) \((\d+)\) "
                     r"next_comm=(.*) next_pid=0x([0-9a-f]+) \((\d+)\) next_prio=0x([0-9a-f]+) \((\d+)\)$",
                     f.split(": ", 1)[1])
        assert m, f
        want = re.match(r".*sched_switch: prev_comm=(.*) prev_pid=(\d+) prev_prio=(\d+) prev_state=\S+ "
                        r"==> next_comm=(.*) next_pid=(\d+) next_prio=(\d+)$", n)
        assert m.group(1) == want.group(1) and m.group(8) == want.group(4)
        assert int(m.group(2), 16) == int(m.group(3)) == int(want.group(2))
        assert int(m.group(10)) == int(want.group(5)) and int(m.group(12)) == int(want.group(6))


def test_function_entries_print_symbols_and_prints_their_ip():
    k = boot("ftrace=function")
    k.clock.advance(5_000_000)
    wr(k, "trace_marker", "hi")
    wr(k, "tracing_on", "0")
    wr(k, "options/fields", "1")
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    fn = [ln for ln in lines if ": function: " in ln]
    assert fn and all(re.search(r": function: ip=\w[\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+ "
                                r"parent_ip=(\w[\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+|0)$", ln) for ln in fn[:100])
    ip = k.kallsyms.addr_of("tracing_mark_write")
    pr = [ln for ln in lines if ": print: " in ln]
    assert pr and pr[-1].endswith(": print: ip=0x%x (%d) buf=<INVALID-SIZE>" % (ip, ip - (1 << 64)))


def test_sizes_strings_and_overflow():
    rec = bytearray(40)
    rec[8:12] = b"ab\0z"
    struct.pack_into("<I", rec, 12, (3 << 16) | 32)          # __data_loc: 3 bytes at 32
    rec[32:35] = b"xy\0"
    rec[16] = ord("A")
    rec[17] = 7
    struct.pack_into("<I", rec, 20, 0xFFFFFFFF)
    struct.pack_into("<q", rec, 24, -2)
    fields = [Field("s", "char s[4]", 8, 4, FILTER_STATIC_STRING),
              Field("d", "__data_loc char[] d", 12, 4, FILTER_DYN_STRING),
              Field("c", "char c", 16, 1, FILTER_OTHER),
              Field("u", "u8 u", 17, 1, FILTER_OTHER),
              Field("i", "int i", 20, 4, FILTER_OTHER),
              Field("l", "long l", 24, 8, FILTER_OTHER),
              Field("far", "long far", 36, 8, FILTER_OTHER),
              Field("odd", "char odd[3]", 32, 3, FILTER_OTHER)]
    assert fields_text("ev", fields, bytes(rec), None) == (
        "ev: s=ab d=xy c='A'(65) u=(7) i=0xffffffff (-1) l=0xfffffffffffffffe (-2) far=<OVERFLOW> "
        "odd=<INVALID-SIZE>\n")
    assert fields_text("none", [], b"", None) == "none:No fields found\n"
