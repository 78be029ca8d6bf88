"""The function filters of the kernel command line (ftrace_boot.py)."""

from fakefs import sim
from fakefs.sim.clock import ManualClock
from kfiles import rd

CMDLINE = ("ftrace_filter=vfs_read,ksys_read,no_such_function "
           "ftrace_notrace=ksys_write ftrace_graph_filter=schedule,vfs_write,__schedule "
           "ftrace_graph_notrace=no_such_function ftrace_graph_max_depth=0x5zz")


def boot(cmdline):
    return sim.boot(cmdline=cmdline, seed=7, nr_cpus=2, clock=ManualClock(),
                    host_kallsyms=False)


def test_the_command_line_fills_the_hashes():
    k = boot(CMDLINE)
    assert sorted(rd(k, "set_ftrace_filter").split()) == ["ksys_read", "vfs_read"]
    assert rd(k, "set_ftrace_notrace") == "ksys_write\n"
    # (__schedule is notrace: not in available_filter_functions)
    assert sorted(rd(k, "set_graph_function").split()) == ["schedule", "vfs_write"]
    assert rd(k, "set_graph_notrace") == "#### no functions disabled ####\n"
    assert rd(k, "max_graph_depth") == "5\n"
    dmesg = k.log.dmesg()
    assert "ftrace: function __schedule not traceable" in dmesg
    assert "ftrace: function no_such_function not traceable" in dmesg


def test_without_them_nothing_is_set():
    k = boot("")
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
    assert rd(k, "set_graph_function") == "#### all functions enabled ####\n"
    assert rd(k, "max_graph_depth") == "0\n"
