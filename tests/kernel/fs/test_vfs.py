"""VFS calls of the processes using the files (fs/vfs.py) as kprobes see them."""

import os

from fakefs import sim
from fakefs.kernel.fs.vfs import vfs_call
from fakefs.sim.clock import ManualClock
from kfiles import node, rd, wr


def test_probes_on_vfs_calls_read_the_files_names():
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    app = os.O_WRONLY | os.O_APPEND
    wr(k, "kprobe_events", "p:d dput name=$arg1:%pd\n", app)
    wr(k, "kprobe_events", "p:r vfs_read $arg1:%pD\n", app)
    wr(k, "kprobe_events", "p:myevent1 vfs_open arg=$arg1\n", app)
    wr(k, "kprobe_events", "r:myevent2 vfs_open arg=$arg1\n", app)
    wr(k, "events/kprobes/enable", "1\n")
    n = node(k, "events/kprobes/enable")
    vfs_call(k, "vfs_open", n, 4242, 7)
    vfs_call(k, "vfs_read", n, 4242, 7, 4096)
    vfs_call(k, "dput", n, 4242, 7)
    wr(k, "events/kprobes/enable", "0\n")
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    mine = [ln for ln in lines if "-4242 " in ln]
    assert [ln.split(": ")[1] for ln in mine] == ["myevent1", "myevent2", "r", "d"]
    assert mine[0].split("arg=")[1] == mine[1].split("arg=")[1]
    assert "<- vfs_open)" in mine[1]
    assert mine[2].endswith('(vfs_read+0x4/%s) arg1="enable"' % mine[2].split("/")[1].split(")")[0])
    assert "(dput+0x4/" in mine[3] and mine[3].endswith('name="enable"')


def test_calls_nobody_probes_make_nothing():
    """With probes armed elsewhere, a file's use neither looks up the
    caller's comm nor saves it in saved_cmdlines."""
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    looked_up = []
    k.host_comm = lambda pid: looked_up.append(pid) or "reader"
    wr(k, "kprobe_events", "p:c kernel_clone\n", os.O_WRONLY | os.O_APPEND)
    wr(k, "events/kprobes/enable", "1\n")
    n = node(k, "events/kprobes/enable")
    for func in ("vfs_open", "vfs_read", "dput"):
        vfs_call(k, func, n, 4242, 7, 10)
    wr(k, "events/kprobes/enable", "0\n")
    assert looked_up == []
    assert "4242" not in rd(k, "saved_cmdlines")
