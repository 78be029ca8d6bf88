"""Hist triggers (trace_events_hist.py and its parts): parsing, the map,
the trigger line and the ``hist`` file, as 6.12's trace_events_hist.c
prints them (formats read from its seq_printf() calls)."""

import errno
import random

import pytest

from fakefs.kernel.fs.pseudo import KernelError
from fakefs.kernel.trace.trace_events_hist import (HistRegistry, event_hist_trigger_parse,
                                                   ftrace_print_fields, hist_text)
from fakefs.kernel.trace.tracing_map import kernel_sort

import event_filter_helpers
from event_filter_helpers import ev_of

kc = event_filter_helpers.kc                # the shared kernel


@pytest.fixture
def k(kc):
    k, _clock = kc
    k.tracing.global_trace.err_log.clear()
    return k


class Event:
    """One event's hist triggers, as the trigger framework keeps them."""

    def __init__(self, k, name, reg=None):
        self.k = k
        self.tr = k.tracing.global_trace
        self.ev = ev_of(k, name)
        self.reg = reg or HistRegistry()
        self.triggers = []

    def write(self, cmd):
        """``echo cmd >> trigger``: the command after ``hist:``."""
        glob, _, param = cmd.partition(":")
        op = event_hist_trigger_parse(self.reg, self.tr, self.ev, glob, param or None,
                                      self.triggers)
        if op.kind == "add":
            self.triggers.append(op.trigger)
        elif op.kind == "remove":
            self.triggers.remove(op.trigger)
        return op

    def fails(self, cmd):
        with pytest.raises(KernelError) as e:
            self.write(cmd)
        return e.value.errno

    def hit(self, pid, args, ts=1000, cpu=0):
        for t in list(self.triggers):
            t.hit((ts, self.ev.id, pid, 0, 0, args, None), cpu)

    def hist(self):
        return hist_text(self.tr, self.triggers)

    def listing(self):
        return "".join(t.listing() for t in self.triggers)


def fork_args(ppid, cpid, pcomm="bash", ccomm="bash"):
    return (pcomm, ppid, ccomm, cpid)


def last_err(k):
    ts, head, text, cmd, pos = k.tracing.global_trace.err_log[-1]
    return head, text, cmd, pos


def totals(hits, entries, dropped=0):
    return "\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: %d\n" % (hits, entries, dropped)


def header(listing):
    return "# event histogram\n#\n# trigger info: %s#\n\n" % listing


# --- the trigger line and the hist file ------------------------------------------

def test_keys_and_vals(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=parent_pid:vals=child_pid")
    line = "hist:keys=parent_pid:vals=hitcount,child_pid:sort=hitcount:size=2048 [active]\n"
    assert e.listing() == line
    for i in range(5):
        e.hit(100, fork_args(100 + i % 2, 200 + i))
    # sorted by hitcount, ascending; values as " %s: %10llu" after a space
    assert e.hist() == (header(line)
                        + "{ parent_pid:        101 } hitcount:          2  child_pid:        404\n"
                        + "{ parent_pid:        100 } hitcount:          3  child_pid:        606\n"
                        + totals(5, 2))


def test_compound_and_string_keys(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=parent_pid,child_pid")
    e.write("hist:keys=parent_comm")
    e.hit(7, fork_args(7, 8, "ftracetest"))
    text = e.hist()
    assert ("{ parent_pid:          7, child_pid:          8 } hitcount:          1\n"
            in text)
    assert "{ parent_comm: %-50s } hitcount:          1\n" % "ftracetest" in text
    # two histograms, separated by an empty line
    assert text.count("\n\n\n# event histogram\n") == 1
    assert e.listing() == (
        "hist:keys=parent_pid,child_pid:vals=hitcount:sort=hitcount:size=2048 [active]\n"
        "hist:keys=parent_comm:vals=hitcount:sort=hitcount:size=2048 [active]\n")


def test_a_string_key_keeps_what_the_array_holds(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=parent_comm")
    e.hit(7, fork_args(7, 8, "a-very-long-command-name"))
    # char parent_comm[16]: at most 15 characters and the NUL
    assert "{ parent_comm: %-50s }" % "a-very-long-com" in e.hist()


def test_modifiers(k):
    e = Event(k, "kmalloc")
    ks = k.kallsyms
    site = ks.addr_of("seq_read") + 5
    e.write("hist:keys=call_site.sym")
    e.write("hist:keys=call_site.sym-offset")
    e.write("hist:keys=bytes_req.log2")
    e.write("hist:keys=bytes_req.buckets=100")
    e.write("hist:keys=bytes_req.hex")
    e.hit(1, (site, 0xffff888100000000, 300, 512, 0xcc0, -1))
    text = e.hist()
    assert "{ call_site: [%x] %-45s } hitcount:          1\n" % (site, "seq_read") in text
    assert ("{ call_site: [%x] %-55s } hitcount:          1\n"
            % (site, "seq_read+0x5/0x%x" % ks.lookup(site)[2])) in text
    assert "{ bytes_req: ~ 2^9  } hitcount:          1\n" in text        # order_base_2(300)
    assert "{ bytes_req: ~ 300-399 } hitcount:          1\n" in text
    assert "{ bytes_req: 12c } hitcount:          1\n" in text
    assert ("hist:keys=bytes_req.buckets=100:vals=hitcount:sort=hitcount:size=2048 [active]\n"
            in e.listing())
    assert "hist:keys=call_site.sym-offset:vals=hitcount:" in e.listing()


def test_execname_keeps_the_comm_of_the_first_hit(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=common_pid.execname")
    e.hit(0, fork_args(0, 2))
    e.hit(1, fork_args(1, 3))
    comm1 = k.sched.find(1).comm
    text = e.hist()
    assert "{ common_pid: %-16s[%10d] } hitcount:          1\n" % ("<idle>", 0) in text
    assert "{ common_pid: %-16s[%10d] } hitcount:          1\n" % (comm1, 1) in text


def test_syscall_names(k):
    e = Event(k, "sys_exit")
    e.write("hist:keys=id.syscall")
    e.hit(1, (0, 5))
    e.hit(1, (1000, 0))
    text = e.hist()
    assert "{ id: %-30s[%3d] } hitcount:          1\n" % ("sys_read", 0) in text
    assert "{ id: %-30s[%3d] } hitcount:          1\n" % ("unknown_syscall", 1000) in text


def test_percent_and_graph(k):
    e = Event(k, "kmalloc")
    e.write("hist:keys=bytes_alloc:vals=hitcount.percent,bytes_req.graph")
    e.hit(1, (0, 0, 30, 64, 0, -1))
    e.hit(1, (0, 0, 20, 64, 0, -1))
    e.hit(1, (0, 0, 40, 128, 0, -1))
    text = e.hist()
    # the bar is 20 characters long at the largest sum
    assert ("{ bytes_alloc:        128 } hitcount:          1  hitcount (%):  33.33"
            "  bytes_req: ################    \n") in text
    assert ("{ bytes_alloc:         64 } hitcount:          2  hitcount (%):  66.66"
            "  bytes_req: ####################\n") in text


def test_signed_key_prints_as_u64(k):
    e = Event(k, "kmalloc")
    e.write("hist:keys=node")
    e.hit(1, (0, 0, 8, 8, 0, -1))
    assert "{ node: 18446744073709551615 } hitcount:          1\n" in e.hist()


# --- sorting -------------------------------------------------------------------------

def test_sort_by_key_and_two_keys(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=parent_pid,child_pid:sort=child_pid.ascending")
    e.write("hist:keys=parent_pid:vals=child_pid:sort=hitcount.descending,parent_pid.descending")
    r = random.Random(3)
    for _ in range(40):
        e.hit(1, fork_args(r.randrange(1, 6), r.randrange(100, 140)))
    first, second = e.hist().split("\n\n\n")
    children = [int(line.split("child_pid:")[1].split("}")[0]) for line in first.splitlines()
                if line.startswith("{")]
    assert children == sorted(children)
    rows = [(int(line.split("hitcount:")[1].split()[0]), int(line.split(":")[1].split("}")[0]))
            for line in second.splitlines() if line.startswith("{")]
    assert rows == sorted(rows, reverse=True)
    assert e.triggers[0].listing().startswith(
        "hist:keys=parent_pid,child_pid:vals=hitcount:sort=child_pid:size=2048")
    assert ":sort=hitcount.descending,parent_pid.descending:" in e.triggers[1].listing()


def test_equal_counts_come_in_the_kernels_order(k):
    """Elements are first put in the order of their key bytes (memcmp of
    the little-endian u64), then heap-sorted: ties are not by value."""
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=parent_pid")
    for pid in (1, 256, 2, 257, 3):
        e.hit(1, fork_args(pid, 9))
    pids = [int(line.split(":")[1].split("}")[0]) for line in e.hist().splitlines()
            if line.startswith("{")]
    # bytes order: 256 (00 01 ..), 1, 257 (01 01 ..), 2, 3; then lib/sort's heapsort
    # of five equal elements leaves them as [3, 1, 4, 2, 0] (its loop, run in C)
    assert pids == [2, 1, 3, 257, 256]


def test_kernel_sort_sorts():
    r = random.Random(1)
    for n in range(0, 30):
        v = [r.randrange(5) for _ in range(n)]
        kernel_sort(v, lambda a, b: (a > b) - (a < b))
        assert v == sorted(v)


# --- the map's size --------------------------------------------------------------------

def test_size_bounds_the_entries(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=child_pid:size=100")        # rounded up to 128
    assert ":size=128 [active]" in e.listing()
    for pid in range(200):
        e.hit(1, fork_args(1, pid))
    e.hit(1, fork_args(1, 0))
    assert e.hist().endswith(totals(129, 128, 72))
    for bad, err in (("64", errno.EINVAL), ("131073", errno.EINVAL), ("x", errno.EINVAL),
                     ("99999999999999999999999", errno.ERANGE)):
        assert e.fails("hist:keys=parent_pid:size=" + bad) == err
    e.write("hist:keys=parent_pid:size=0x20000")
    assert ":size=131072 [active]" in e.triggers[-1].listing()


# --- pause, continue, clear, remove, duplicates ------------------------------------------

def test_pause_cont_clear_and_remove(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=parent_pid")
    assert e.fails("hist:keys=parent_pid") == errno.EEXIST
    assert last_err(k)[1] == "Hist trigger already exists"
    assert e.fails("hist:keys=child_pid:cont") == errno.ENOENT
    assert e.write("hist:keys=parent_pid:pause").kind == "none"
    assert e.listing().endswith(" [paused]\n")
    e.hit(1, fork_args(1, 2))
    assert e.hist().endswith(totals(0, 0))
    e.write("hist:keys=parent_pid:continue")
    e.hit(1, fork_args(1, 2))
    assert e.hist().endswith(totals(1, 1))
    e.write("hist:keys=parent_pid:clear")
    assert e.hist().endswith(totals(0, 0))
    # a size is not part of what identifies a trigger
    assert e.write("!hist:keys=parent_pid:size=256").kind == "remove"
    assert e.triggers == [] and e.hist() == ""
    assert e.write("!hist:keys=parent_pid").kind == "none"


def test_a_new_trigger_can_start_paused(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=parent_pid:pause")
    assert e.listing() == ("hist:keys=parent_pid:vals=hitcount:sort=hitcount:size=2048"
                           " [paused]\n")


def test_filter(k):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=child_pid if parent_pid == 5")
    e.hit(1, fork_args(5, 10))
    e.hit(1, fork_args(6, 11))
    assert e.listing() == ("hist:keys=child_pid:vals=hitcount:sort=hitcount:size=2048"
                           " if parent_pid == 5 [active]\n")
    assert "child_pid:         10" in e.hist() and "child_pid:         11" not in e.hist()
    # the same keys with another filter are another trigger; removal needs the filter
    e.write("hist:keys=child_pid")
    assert e.write("!hist:keys=child_pid if parent_pid == 5").kind == "remove"
    assert len(e.triggers) == 1 and e.triggers[0].filter_str is None
    assert e.fails("hist:keys=child_pid if nosuch == 1") == errno.EINVAL
    assert last_err(k)[0] == "event filter parse error: error: "


# --- named histograms -------------------------------------------------------------------

def test_named_histogram_is_shared(k):
    reg = HistRegistry()
    fork = Event(k, "sched_process_fork", reg)
    exit_ = Event(k, "sched_process_exit", reg)
    fork.write("hist:name=test_hist:keys=common_pid")
    exit_.write("hist:name=test_hist:keys=common_pid")
    fork.hit(10, fork_args(10, 11))
    exit_.hit(10, ("bash", 10, 120))
    exit_.hit(12, ("bash", 12, 120))
    line = "hist:name=test_hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]\n"
    assert fork.listing() == exit_.listing() == line
    assert fork.hist() == exit_.hist() == (
        header(line) + "{ common_pid:         12 } hitcount:          1\n"
        "{ common_pid:         10 } hitcount:          2\n" + totals(3, 2))
    # another shape under that name is refused
    assert exit_.fails("hist:name=test_hist:keys=pid") == errno.EINVAL
    assert last_err(k)[1:] == ("Named hist trigger doesn't match existing named trigger "
                               "(includes variables)",
                               "hist:name=test_hist:keys=pid", 5)
    # the histogram lives while one of its triggers does
    fork.write("!hist:name=test_hist:keys=common_pid")
    exit_.hit(12, ("bash", 12, 120))
    assert "{ common_pid:         12 } hitcount:          2\n" in exit_.hist()
    exit_.write("!hist:name=test_hist:keys=common_pid")
    assert reg.named == []
    fork.write("hist:name=test_hist:keys=parent_pid")


# --- expressions and variables ------------------------------------------------------------

@pytest.mark.parametrize("expr, value", [
    ("123", "123"), ("16-8-4-2", "2"), ("64/8/4/2", "1"), ("16-8+4+2", "14"),
    ("4*3/2*2", "12"), ("4+3*2-2", "8"), ("4+6/2-2", "5"),
    ("10/3", "4"),                # divided by multiplying and shifting, as the kernel does
    ("0x10*2", "32"), ("2-3", "18446744073709551615")])
def test_constants_fold(k, expr, value):
    e = Event(k, "sched_process_fork")
    e.write("hist:keys=common_pid:x=" + expr)
    assert e.listing() == ("hist:keys=common_pid:vals=hitcount:x=%s:sort=hitcount:size=2048"
                           " [active]\n" % value)


def test_expressions_on_fields(k):
    e = Event(k, "kmalloc")
    e.write("hist:keys=bytes_alloc-bytes_req:vals=bytes_req:w=bytes_req*2,u=-(bytes_req)")
    e.hit(1, (0, 0, 40, 64, 0, -1))
    e.hit(1, (0, 0, 50, 74, 0, -1))
    assert e.listing() == ("hist:keys=bytes_alloc-bytes_req:vals=hitcount,bytes_req:"
                           "w=bytes_req*2,u=-(bytes_req):sort=hitcount:size=2048 [active]\n")
    assert ("{ bytes_alloc-bytes_req:         24 } hitcount:          2  bytes_req:         90\n"
            in e.hist())
    elt = next(iter(e.triggers[0].hist.map.elts.values()))
    assert elt.vars == [100, (1 << 64) - 50]      # the last hit's values
    assert e.fails("hist:keys=parent_pid:w=bytes_req") == errno.EINVAL    # not this event


@pytest.mark.parametrize("cmd, err, code", [
    ("hist:keys=common_pid:x=32+^10*3/20-4", "Too many subexpressions (3 max)", errno.EINVAL),
    ("hist:keys=common_pid:x=^1+2+3+4+5", "Too many subexpressions (3 max)", errno.EINVAL),
    ("hist:keys=common_pid:x=-(^1)+2", "Unary minus not supported in sub-expressions",
     errno.EINVAL),
    ("hist:keys=common_pid:x=3/^0", "Division by zero", errno.EDOM),
    ("hist:keys=common_pid:x=^1abc", "Expecting numeric literal", errno.EINVAL),
    ("hist:keys=common_pid:x=^parent_comm+1", "String type can not be an operand in expression",
     errno.EINVAL),
    ("hist:keys=^nosuch", "Couldn't find field", errno.EINVAL),
    ("hist:keys=parent_pid.^foo", "Invalid field modifier", errno.EINVAL),
    ("hist:keys=common_pid:vals=^parent_pid.log2", "Invalid field modifier", errno.EINVAL),
    # the first occurrence of the name in the command
    ("hist:keys=common_pid:^x=1,x=2", "Variable already defined", errno.EINVAL),
    ("hist:keys=common_pid:x=1,^q", "Malformed assignment", errno.EINVAL),
    ("^hist:keys=common_pid:nohitcount", "Non-hitcount value is required for 'nohitcount'",
     errno.ENOENT),
])
def test_parse_errors(k, cmd, err, code):
    """ftrace_errlog_check: the caret's offset in the logged command."""
    e = Event(k, "sched_process_fork")
    pos = cmd.index("^")
    command = cmd.replace("^", "")
    assert e.fails(command) == code
    assert last_err(k) == ("hist:sched:sched_process_fork: error: ", err, command, pos)


@pytest.mark.parametrize("cmd", [
    "hist:keys=common_pid:vals=bytes_req:sort=common_pid,^junk",
    "hist:keys=common_pid:vals=bytes_req:^sort=",
    "hist:keys=common_pid:vals=bytes_req:^sort=common_pid,",
    "hist:keys=common_pid:vals=bytes_req:sort=common_pid.^junk",
    "hist:keys=common_pid:vals=bytes_req,bytes_alloc:^sort=common_pid,bytes_req,bytes_alloc"])
def test_syntax_errors_of_the_selftest(k, cmd):
    e = Event(k, "kmalloc")
    pos = cmd.index("^")
    assert e.fails(cmd.replace("^", "")) == errno.EINVAL
    head, _text, logged, p = last_err(k)
    assert (head, logged, p) == ("hist:kmem:kmalloc: error: ", cmd.replace("^", ""), pos)


@pytest.mark.parametrize("param", [
    None, "vals=hitcount", "keys=a:", "keys=common_pid:junk", "iffy",
    "keys=common_pid,common_pid,common_pid,common_pid", "keys=parent_comm:vals=a,b,c",
    "keys=common_pid if", "keys=common_pid:onmax($x).save(pid)"])
def test_refused_without_a_log_or_for_what_is_not_modelled(k, param):
    e = Event(k, "sched_process_fork")
    with pytest.raises(KernelError) as ex:
        event_hist_trigger_parse(e.reg, e.tr, e.ev, "hist", param, [])
    assert ex.value.errno == errno.EINVAL


def test_timestamps_set_the_clock(k):
    e = Event(k, "sched_process_fork")
    tr = e.tr
    tr.clock = "local"
    e.write("hist:keys=common_pid:vals=common_timestamp.usecs")
    assert tr.clock == "global"
    assert e.listing() == ("hist:keys=common_pid:vals=hitcount,common_timestamp.usecs:"
                           "sort=hitcount:size=2048:clock=global [active]\n")
    e.hit(3, fork_args(3, 4), ts=2_000_499)
    e.hit(3, fork_args(3, 4), ts=3_000_500)
    assert "  common_timestamp:       5001\n" in e.hist()      # the name, no modifier
    assert e.fails("hist:keys=parent_pid:vals=common_timestamp:clock=bogus") == errno.EINVAL
    assert last_err(k)[1:] == ("Couldn't set trace_clock",
                               "hist:keys=parent_pid:vals=common_timestamp:clock=bogus", 49)
    tr.clock = "local"


@pytest.mark.parametrize("cmd, err", [
    ("hist:keys=pid:onmatch(sched.sched_waking).trace(^wakeup_latency,$lat)",
     "Couldn't find synthetic event"),
    ("hist:keys=pid:onmatch(sched.sched_waking).^wakeup_latency($lat)",
     "Couldn't find synthetic event"),
    ("hist:keys=pid:onmatch(sched.^nosuch).trace(x,$lat)", "Invalid subsystem or event name"),
    ("hist:keys=pid:onmatch(^sched).trace(x,$lat)", "Missing subsystem"),
    ("hist:keys=pid:onmatch(sched.sched_waking).^save(comm)", "Handler doesn't support action"),
    ("^hist:keys=pid:onmatch(sched.sched_waking)", "No action found"),
    ("hist:keys=pid:onmax(^v).save(comm)", "For onmax(x) or onchange(x), x must be a variable"),
    ("hist:keys=pid:onchange($^v).save(comm)", "Couldn't find onmax or onchange variable"),
])
def test_actions_are_refused(k, cmd, err):
    """No synthetic event can exist, and actions are not modelled."""
    e = Event(k, "sched_wakeup")
    pos = cmd.index("^")
    command = cmd.replace("^", "")
    assert e.fails(command) == errno.EINVAL
    assert last_err(k)[1:] == (err, command, pos)


def test_a_removal_with_an_action_matches_nothing(k):
    e = Event(k, "sched_wakeup")
    e.write("hist:keys=pid")
    assert e.write("!hist:keys=pid:onchange($v).save(comm)").kind == "none"
    assert len(e.triggers) == 1


def test_stacktrace_key(k):
    e = Event(k, "kmalloc")
    e.write("hist:keys=stacktrace")
    site = k.kallsyms.addr_of("seq_read") + 5
    for t in e.triggers:
        t.hit((1, e.ev.id, 1, 0, 0, (0, 0, 8, 8, 0, -1), None), 0, stack=(site, site))
    size = k.kallsyms.lookup(site)[2]
    frame = "%9sseq_read+0x5/0x%x\n" % ("", size)
    assert e.listing() == ("hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:size=2048"
                           " [active]\n")
    assert "{ common_stacktrace:\n" + frame + frame + "} hitcount:          1\n" in e.hist()


@pytest.mark.parametrize("cmd", [
    "hist:keys=parent_pid:vals=child_pid",
    "hist:name=foo:keys=common_pid.execname,parent_comm:sort=parent_comm.descending",
    "hist:keys=child_pid.hex:x=16-8-4-2,y=child_pid if parent_pid == 5",
    "hist:keys=parent_pid.log2:vals=child_pid:size=256:pause",
    "hist:keys=parent_pid.buckets=10:vals=common_timestamp.usecs,child_pid:nohitcount",
])
def test_the_listing_removes_its_trigger(k, cmd):
    """reset_trigger_file: ``!`` + the line up to ``[``."""
    e = Event(k, "sched_process_fork")
    e.write(cmd)
    line = e.listing()
    assert e.write("!" + line.split("[")[0].strip()).kind == "remove"
    assert e.triggers == [] and e.reg.named == []
    k.tracing.global_trace.clock = "local"


def test_trace_marker_hist(k):
    """ftrace/print: common fields only (its buf has no size)."""
    tr = k.tracing.global_trace
    ev = ev_of(k, "sched_process_fork")           # any event stands for the print event's name
    reg, trigs = HistRegistry(), []
    op = event_hist_trigger_parse(reg, tr, ev, "hist", "keys=common_pid", trigs,
                                  fields=ftrace_print_fields())
    trigs.append(op.trigger)
    for _ in range(10):
        op.trigger.hit((1, 5, 4242, 0, 0, (0xffffffff81000000, "hello\n"), None), 0)
    assert "{ common_pid:       4242 } hitcount:         10\n" in hist_text(tr, trigs)
    with pytest.raises(KernelError):
        event_hist_trigger_parse(reg, tr, ev, "hist", "keys=buf", trigs,
                                 fields=ftrace_print_fields())
    assert k.tracing.global_trace.err_log[-1][2] == "Couldn't find field"
