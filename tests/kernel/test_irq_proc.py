"""/proc/interrupts: show_interrupts() and x86's rows, counting what the machine does."""

import errno
import os
import re

from fakefs import sim
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, rd, wr


def test_rows_count_the_machine_s_interrupts():
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "events/sched/sched_switch/enable", "1")       # something sees the machine
    for _ in range(50):
        k.clock.advance(10_000_000)
        k.timekeeper.run_until_now()
    text = rd(k, "proc/interrupts", "")
    lines = text.splitlines()
    assert lines[0] == " " * 11 + "CPU0       CPU1       "
    dev = re.compile(r"^ (\d\d): +(\d+) +(\d+)  PCI-MSIX-0000:00:0\d\.0   1-edge      (\S+)$")
    rows = [dev.match(ln) for ln in lines[1:3]]
    assert [m.group(1) for m in rows] == ["25", "36"]
    assert [m.group(4) for m in rows] == ["virtio0-input.0", "virtio1-req.0"]
    assert sum(int(m.group(2)) + int(m.group(3)) for m in rows) > 0
    loc = re.search(r"^LOC: +(\d+) +(\d+)   Local timer interrupts$", text, re.M)
    assert loc and int(loc.group(1)) > 10 and int(loc.group(2)) > 10
    assert re.search(r"^RES: +\d+ +\d+   Rescheduling interrupts$", text, re.M)
    assert [ln[:4] for ln in lines[3:]] == ["NMI:", "LOC:", "SPU:", "PMI:", "IWI:", "RTR:",
                                             "RES:", "CAL:", "TLB:", "TRM:", "THR:", "DFR:",
                                             "MCE:", "MCP:", "ERR:", "MIS:", "PIN:", "NPI:",
                                             "PIW:"]
    assert "ERR:          0\n" in text
    assert errno_of(wr, k, "proc/interrupts", "\n", os.O_WRONLY, "") == errno.EIO
