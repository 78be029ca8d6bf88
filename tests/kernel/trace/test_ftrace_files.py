"""The dynamic ftrace files (ftrace_files.py): set_ftrace_filter/notrace
opened, truncated, appended to and written word by word; which files exist;
what README says of them."""

import errno
import re

import pytest


from fakefs.kernel.fs.pseudo import File
import ftrace_helpers
from ftrace_helpers import APPEND, TRUNC, boot
from kfiles import node, rd, wr


booted, k = ftrace_helpers.booted, ftrace_helpers.k      # the shared kernel


# --------------------------------------------------------------- the filter files
def test_trunc_append_and_probes_survive_trunc(k):
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"
    assert rd(k, "set_ftrace_notrace") == "#### no functions disabled ####\n"
    wr(k, "set_ftrace_filter", "schedule:traceoff\n")
    assert rd(k, "set_ftrace_filter") == ("#### all functions enabled ####\n"
                                          "schedule:traceoff:unlimited\n")
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "set_ftrace_filter", "sched_tick\n", APPEND)
    wr(k, "set_ftrace_filter", "sched_tick:traceoff\n", APPEND)
    text = rd(k, "set_ftrace_filter").splitlines()
    # functions in record (address) order, then the probes
    assert sorted(text[:2]) == ["sched_tick", "schedule"]
    assert sorted(text[2:]) == ["sched_tick:traceoff:unlimited", "schedule:traceoff:unlimited"]
    wr(k, "set_ftrace_filter", "schedule\n")            # O_TRUNC: functions only
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "schedule"
    wr(k, "set_ftrace_filter", "\n")
    got = rd(k, "set_ftrace_filter").splitlines()
    assert got[0] == "#### all functions enabled ####" and sorted(got[1:]) == sorted(text[2:])
    # "!" takes functions out again
    wr(k, "set_ftrace_filter", "schedule sched_tick\n")
    wr(k, "set_ftrace_filter", "!sched_tick\n", APPEND)
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "schedule"
    # a word split over two writes is one word
    n = node(k, "set_ftrace_filter")
    f = File(n, TRUNC)
    n.fops.open(f)
    n.fops.write(f, b"sched")
    n.fops.write(f, b"_tick\n")
    n.fops.release(f)
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "sched_tick"
    # an unterminated last word counts at close, errors unreported
    wr(k, "set_ftrace_filter", "schedule")
    assert rd(k, "set_ftrace_filter").splitlines()[0] == "schedule"
    wr(k, "set_ftrace_filter", "no_such_function_xyz")
    assert rd(k, "set_ftrace_filter").startswith("#### all functions enabled ####\n")


def test_pid_files_follow_host_task_tracking(k):
    assert k.tree.root.walk("sys/kernel/tracing/set_ftrace_pid") is None
    assert "set_ftrace_pid" not in rd(k, "README")
    k2, clock = boot(host_tasks=True)
    for d in ("", "instances/p/"):
        if d:
            k2.tracing.instance_mkdir("p")
        assert rd(k2, d + "set_ftrace_pid") == "no pid\n"
        assert rd(k2, d + "set_ftrace_notrace_pid") == "no pid\n"
    assert "  set_ftrace_pid\t- Write pid(s) to only function trace those pids\n" in rd(k2, "README")


def test_readme_lists_what_is_there(k):
    readme = rd(k, "README")
    assert re.search("accepts: .* glob-matching-pattern", readme)
    assert "\t\t      stacktrace\n" in readme and "enable_event:<system>:<event>" in readme
    assert "\t\t      snapshot\n\t\t      dump\n\t\t      cpudump\n\t     example:" in readme


def test_filter_words_end_at_the_kernels_spaces_only(k):
    """trace_get_user() splits at isspace() of lib/ctype.c: "schedule\\xa0"
    is the word schedule, "schedule\\x1c\\n" a word matching no function
    (EINVAL), as set_event's "sched:sched_switch\\x1c" is no event."""
    from fakefs.kernel.fs.pseudo import KernelError
    from fakefs.sim.files import write_file
    tracing = "sys/kernel/tracing/"
    write_file(k, tracing + "set_ftrace_filter", b"schedule\xa0")
    assert rd(k, "set_ftrace_filter") == "schedule\n"
    for path, word in (("set_ftrace_filter", b"schedule\x1c\n"),
                       ("set_ftrace_filter", b"schedule\x85\n"),
                       ("set_event", b"sched:sched_switch\x1c\n")):
        with pytest.raises(KernelError) as e:
            write_file(k, tracing + path, word)
        assert e.value.errno == errno.EINVAL, (path, word)
    assert rd(k, "set_event") == ""
    write_file(k, tracing + "set_event", b"sched:sched_switch\xa0")
    assert rd(k, "set_event") == "sched:sched_switch\n"
    write_file(k, tracing + "set_event", b"")
