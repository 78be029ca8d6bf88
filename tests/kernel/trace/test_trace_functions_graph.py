"""The function graph tracer: files, records that keep the return stacks'
invariants, the filters, the text."""

import collections
import errno
import re

import pytest

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace import trace_entries as te
from fakefs.kernel.trace.trace_functions_graph_output import graph_duration
from ftrace_helpers import APPEND
from kfiles import errno_of, node, rd, wr

GRAPH = {"CONFIG_FUNCTION_GRAPH_TRACER": True}
MS = 1_000_000


def boot(seed=7):
    clock = ManualClock()
    k = sim.boot(seed=seed, nr_cpus=2, clock=clock, host_kallsyms=False,
                 config_overrides=GRAPH)
    return k, clock


@pytest.fixture
def kc():
    return boot()


def records(k, tr=None):
    """Every CPU's entries of the array, in buffer order: {cpu: [entry]}."""
    tr = tr or k.tracing.global_trace
    return {cb.cpu: list(cb.iter_events()) for cb in tr.buffer.cpus}


def run(k, clock, ms=5):
    for _ in range(ms):
        clock.advance(MS)
        k.timekeeper.run_until_now()


def name(k, ip):
    return k.kallsyms.sprint_symbol_no_offset(ip)


def check_timeline(k, recs):
    """The invariants a graph trace keeps: stamps go forward on each CPU;
    every exit is of the function its task entered last at that depth and
    not yet left, with that entry's stamp as its calltime; an exit comes
    after its children's (a parent's duration covers theirs)."""
    open_by_pid: dict = {}
    exits = 0
    merged = sorted(((e[0], cpu, i, e) for cpu, es in recs.items() for i, e in enumerate(es)),
                    key=lambda x: (x[0], x[1], x[2]))
    for es in recs.values():
        stamps = [e[0] for e in es]
        assert stamps == sorted(stamps)
    for _ts, cpu, _i, e in merged:
        pid = e[2]
        st = open_by_pid.setdefault((pid, cpu) if pid == 0 else pid, [])   # an idle task each
        if e[1] == te.TRACE_GRAPH_ENT:
            func, depth = e[5], e[6]
            assert depth >= 0
            # what is open below it was entered before; deeper ones returned
            while st and st[-1][1] >= depth:
                st.pop()                 # entered before the trace kept their exits
            st.append((func, depth, e[0]))
        elif e[1] == te.TRACE_GRAPH_RET:
            func, depth, overrun, calltime, rettime, _retval = e[5]
            assert overrun == 0 and calltime <= rettime == e[0]
            while st and st[-1][1] > depth:
                pytest.fail("%s returned before %s below it" % (name(k, func), name(k, st[-1][0])))
            if st and st[-1][1] == depth:
                ofunc, _d, ots = st.pop()
                assert ofunc == func and ots == calltime, (name(k, ofunc), name(k, func))
                exits += 1
    return exits


def test_files_and_defaults(kc):
    k, _clock = kc
    assert rd(k, "available_tracers").startswith("function_graph ")
    for f in ("set_graph_function", "set_graph_notrace", "max_graph_depth"):
        assert node(k, f).mode & 0o777 == 0o640
    assert rd(k, "set_graph_function") == "#### all functions enabled ####\n"
    assert rd(k, "set_graph_notrace") == "#### no functions disabled ####\n"
    assert rd(k, "max_graph_depth") == "0\n"
    for opt, on in (("funcgraph-overrun", 0), ("funcgraph-cpu", 1), ("funcgraph-overhead", 1),
                    ("funcgraph-proc", 0), ("funcgraph-duration", 1), ("funcgraph-abstime", 0),
                    ("funcgraph-irqs", 1), ("funcgraph-tail", 0), ("sleep-time", 1)):
        assert rd(k, "options/" + opt) == "%d\n" % on
    assert errno_of(wr, k, "set_graph_function", "no_such_function_xyz\n") == errno.EINVAL
    assert errno_of(wr, k, "max_graph_depth", "x\n") == errno.EINVAL
    wr(k, "max_graph_depth", "4294967295\n")            # an unsigned int shown with %d
    assert rd(k, "max_graph_depth") == "-1\n"
    wr(k, "set_graph_function", "schedule\n")
    wr(k, "set_graph_function", "!schedule\n", APPEND)
    assert rd(k, "set_graph_function") == "#### all functions enabled ####\n"


def test_a_trace_keeps_the_return_stacks(kc):
    k, clock = kc
    wr(k, "current_tracer", "function_graph\n")
    run(k, clock, 20)         # (the CPUs, halted much of the time, call in ~half of it)
    recs = records(k)
    n_ent = sum(1 for es in recs.values() for e in es if e[1] == te.TRACE_GRAPH_ENT)
    assert n_ent > 1000
    assert check_timeline(k, recs) > n_ent // 2
    text = rd(k, "trace")
    assert text.startswith("# tracer: function_graph\n#\n"
                           "# CPU  DURATION                  FUNCTION CALLS\n"
                           "# |     |   |                     |   |   |   |\n")
    body = [ln for ln in text.splitlines()[4:] if ln and not ln.startswith(" ---")]
    line = re.compile(r"^ \d\) (  |[+!#*@$] )(\d+\.\d+ us +|\d+ us +)\|  ( *)(\S+\(\);|\S+\(\) \{|\}.*)$"
                      r"|^ \d\)               \|  ( *)\S+\(\) \{$"
                      r"|^ \d\) .{14} => .{14}$")
    leaves = 0
    for ln in body:
        assert line.match(ln), ln
        leaves += ln.endswith("();")
    assert leaves > 100


def test_the_filters(kc):
    k, clock = kc
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "current_tracer", "function_graph\n")
    run(k, clock, 20)
    recs = records(k)
    funcs = {name(k, e[5] if e[1] == te.TRACE_GRAPH_ENT else e[5][0])
             for es in recs.values() for e in es}
    assert funcs == {"schedule"}
    assert all(("()" not in ln) or "schedule()" in ln or "schedule();" in ln
               for ln in rd(k, "trace").splitlines())
    # set_graph_function: only what runs inside it, from depth 0
    wr(k, "set_ftrace_filter", "\n")
    wr(k, "set_graph_function", "__handle_irq_event_percpu\n")
    wr(k, "trace", "")
    run(k, clock, 20)
    recs = records(k)
    tops = [e for es in recs.values() for e in es if e[1] == te.TRACE_GRAPH_ENT and e[6] == 0]
    assert tops and {name(k, e[5]) for e in tops} == {"__handle_irq_event_percpu"}
    check_timeline(k, recs)
    # max_graph_depth
    wr(k, "set_graph_function", "\n")
    wr(k, "max_graph_depth", "2\n")
    wr(k, "trace", "")
    run(k, clock, 5)
    depths = {e[6] if e[1] == te.TRACE_GRAPH_ENT else e[5][1]
              for es in records(k).values() for e in es}
    assert depths == {0, 1}
    # set_graph_notrace: the function and all it calls are left out
    wr(k, "max_graph_depth", "0\n")
    wr(k, "set_graph_notrace", "__handle_irq_event_percpu\n")
    wr(k, "trace", "")
    run(k, clock, 20)
    assert "__handle_irq_event_percpu" not in rd(k, "trace")
    assert "vring_interrupt" not in rd(k, "trace")


def test_the_durations_nest_and_tail_names_the_function(kc):
    k, clock = kc
    wr(k, "current_tracer", "function_graph\n")
    wr(k, "options/funcgraph-tail", "1\n")
    wr(k, "options/funcgraph-proc", "1\n")
    wr(k, "options/funcgraph-abstime", "1\n")
    run(k, clock, 3)
    text = rd(k, "trace")
    head = text.splitlines()[2:4]
    assert head == ["#" + "     TIME       " + " CPU" + "  TASK/PID       " + "  DURATION   "
                    + "               FUNCTION CALLS",
                    "#" + "      |         " + " |  " + "   |    |        " + "   |   |      "
                    + "               |   |   |   |"]
    closes = [ln for ln in text.splitlines() if "} /* " in ln]
    assert closes and all(re.search(r"\} /\* \S+ \*/$", ln) for ln in closes)
    assert not any(ln.rstrip().endswith("}") for ln in text.splitlines())


def test_sleep_time_off_leaves_out_the_time_switched_out(kc):
    """schedule()'s durations: with sleep-time (the default) they hold the
    time the task slept (the machine's tasks sleep milliseconds), without
    it not; most calls switch only a moment, so the totals tell."""
    k, clock = kc
    wr(k, "set_ftrace_filter", "schedule\n")
    wr(k, "current_tracer", "function_graph\n")
    run(k, clock, 30)
    on = [e[5][4] - e[5][3] for es in records(k).values() for e in es if e[1] == te.TRACE_GRAPH_RET]
    wr(k, "options/sleep-time", "0\n")
    wr(k, "trace", "")
    run(k, clock, 30)
    off = [e[5][4] - e[5][3] for es in records(k).values() for e in es if e[1] == te.TRACE_GRAPH_RET]
    assert on and off
    assert sum(off) * 10 < sum(on)


def test_same_seed_same_graph():
    outs = []
    for _ in range(2):
        k, clock = boot(seed=11)
        wr(k, "current_tracer", "function_graph\n")
        run(k, clock, 2)
        outs.append(rd(k, "trace"))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("ns,text", [(1234, "1.234 us    "), (0, "0.000 us    "),
                                     (12345678, "12345.67 us "), (123456789, "123456.7 us "),
                                     (1234567890, "1234567 us  "), (12345678901, "12345678 us ")])
def test_duration_column(ns, text):
    assert graph_duration(ns) == text


def test_a_pid_list_keeps_the_other_tasks_out():
    """set_ftrace_pid: only that task's calls are pushed; the others' runs
    only switch the CPU (their calls are not looked at one by one)."""
    clock = ManualClock()
    k = Kernel(seed=7, nr_cpus=2, clock=clock, host_kallsyms=False)
    k.host_tasks = True
    sim.boot_kernel(k)
    sim.attach(k)
    wr(k, "current_tracer", "function_graph\n")
    run(k, clock, 20)
    ran = collections.Counter(e[2] for es in records(k).values() for e in es if e[2])
    busy = ran.most_common(1)[0][0]           # a task the machine runs
    wr(k, "current_tracer", "nop\n")
    wr(k, "set_ftrace_pid", "%d\n" % busy)
    wr(k, "current_tracer", "function_graph\n")
    run(k, clock, 100)
    recs = records(k)
    pids = {e[2] for es in recs.values() for e in es}
    assert pids == {busy} and len(ran) > 1
    check_timeline(k, recs)
    wr(k, "set_ftrace_pid", "\n")


def test_trace_pipe_consumes_a_leaf_with_its_return(kc):
    """A consuming reader prints with the tracer's own view too: a leaf
    line takes its return off the buffer with it (no stray ``}``)."""
    k, clock = kc
    wr(k, "current_tracer", "function_graph\n")
    run(k, clock, 2)
    wr(k, "tracing_on", "0\n")
    n_before = sum(len(es) for es in records(k).values())
    node_ = node(k, "trace_pipe")
    import os
    from fakefs.kernel.fs.pseudo import File
    f = File(node_, os.O_RDONLY)
    node_.fops.open(f)
    text = node_.fops.read(f, 0, 1 << 16).decode()
    lines = text.splitlines()
    leaves = [ln for ln in lines if ln.endswith("();")]
    assert leaves and not any("()" in ln and "{" not in ln and not ln.endswith(";") for ln in lines)
    # each leaf line took two entries (entry and return) off the buffer, the
    # other lines one (the banners none); an entry whose line did not fit is
    # held for the next read
    shown = [ln for ln in lines if re.match(r"^ \d\) .*\|  ", ln)]
    taken = n_before - sum(len(es) for es in records(k).values())
    assert 0 <= taken - (len(shown) + len(leaves)) <= 2
