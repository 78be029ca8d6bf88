"""printk_formats (trace_printk.py): the tracepoint strings of Debian's 6.12
build at the simulated kernel's addresses, printed as t_show() prints them."""

import os
import re

from fakefs import sim
from fakefs.kernel.fs.pseudo import TRACE_MODE_READ
from fakefs.kernel.trace.trace_printk import DATA_PATH, format_line, tracepoint_strings
from kfiles import node, rd

LINE = re.compile(r'^0x([0-9a-f]{16}) : "(.*)"$')


def test_the_file_lists_every_string_at_text_plus_its_offset():
    k = sim.boot(host_kallsyms=False)
    n = node(k, "printk_formats")
    assert n.mode & 0o7777 == TRACE_MODE_READ == 0o440
    lines = rd(k, "printk_formats").splitlines()
    data = tracepoint_strings()
    assert len(lines) == len(data) == 170
    text = k.kallsyms.addr_of("_text")
    for line, (off, s) in zip(lines, data):
        m = LINE.match(line)
        assert m, line
        assert int(m.group(1), 16) == text + off
        assert m.group(2) == s           # none of 6.12's strings needs escaping
    # pointers, not strings: an entry the section holds twice is listed twice
    assert lines[0] == lines[1] and lines[0].endswith(' : "CPU_ON"')
    assert sum(ln.endswith(' : "rcu_preempt"') for ln in lines) == 3
    # RCU's TPS() strings and the suspend path's, as 6.12 has them
    assert {"Start context switch", "End context switch", "cpuqs", "rcu_preempt-GPS",
            "machine_suspend"} <= {s for _o, s in data}


def test_top_level_only_and_read_only():
    k = sim.boot(host_kallsyms=False)
    inst = k.tree.root.walk("sys/kernel/tracing/instances")
    inst.dops.mkdir(inst, "foo")
    assert k.tree.root.walk("sys/kernel/tracing/instances/foo/printk_formats") is None
    assert k.tree.root.walk("sys/kernel/tracing/instances/foo/trace") is not None


def test_escapes_are_t_shows():
    assert format_line(0x10, "a\nb") == '0x10 : "a\\nb"\n'
    assert format_line(0x10, "a\tb") == '0x10 : "a\\tb"\n'
    assert format_line(0x10, 'say "hi"') == '0x10 : "say \\"hi\\""\n'
    assert format_line(0x10, "back\\slash") == '0x10 : "back\\slash"\n'   # kept single


def test_the_data_names_its_source():
    with open(DATA_PATH) as fh:
        head = fh.readline()
    assert head.startswith("# printk_formats of Linux 6.12.117+deb12-amd64")
    assert os.path.exists(os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools",
                                       "mkprintkfmt.py"))
