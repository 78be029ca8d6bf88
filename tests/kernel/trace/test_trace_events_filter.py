"""Event filters (trace_events_filter.c) and error_log, through the files of a booted kernel."""

import errno
import itertools
import os
import random
import re

import pytest

from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.init import Kernel
from fakefs.kernel.time import ManualClock
from fakefs.kernel.trace import trace_events_filter as tef

SW = "events/sched/sched_switch/filter"


def boot(nr_cpus=2):
    clock = ManualClock()
    k = Kernel(cmdline="", seed=7, nr_cpus=nr_cpus, clock=clock).boot()
    return k, clock


@pytest.fixture(scope="module")
def kc():
    return boot()


@pytest.fixture
def k(kc):
    k, _ = kc
    yield k
    # leave no filter behind for the next test
    tr = k.tracing.global_trace
    tr.event_filters.clear()
    tef.filters_of(tr).strings.clear()


def node(k, path):
    n = k.tree.root.walk("sys/kernel/tracing/" + path)
    assert n is not None, path
    return n


def rd(k, path, off=0, size=1 << 20):
    n = node(k, path)
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    try:
        return n.fops.read(f, off, size).decode("latin-1")
    finally:
        n.fops.release(f)


def wr(k, path, data, flags=os.O_WRONLY | os.O_TRUNC):
    """The write's result: its count, or minus the errno."""
    n = node(k, path)
    f = File(n, flags)
    n.fops.open(f)
    try:
        return n.fops.write(f, data.encode("latin-1") if isinstance(data, str) else data)
    except KernelError as e:
        return -e.errno
    finally:
        n.fops.release(f)


def ev_of(k, name):
    return next(ev for ev in k.tracing.events if ev.name == name)


# --- accept / reject ----------------------------------------------------------------

INCOMPLETE_BASES = ["common_pid == 1", "common_pid == 1 || common_pid == 2",
                    "common_pid == 1 && common_pid == 2", "!(common_pid == 1 || common_pid == 2)"]
INCOMPLETE_TAILS = ["&&", "||", "&& !", "|| !", "&& !! ", "|| !! "]


@pytest.mark.parametrize("base", INCOMPLETE_BASES)
def test_incomplete_expressions_are_refused(k, base):
    """filter/event-filter-incomplete.tc"""
    assert wr(k, SW, base) == len(base)
    assert rd(k, SW) == base + "\n"
    for tail in INCOMPLETE_TAILS:
        text = base + " " + tail
        assert wr(k, SW, text) == -errno.EINVAL, text
        shown = rd(k, SW)
        assert shown.endswith("parse_error: Meaningless filter expression\n\n"), shown
        assert ev_of(k, "sched_switch") not in k.tracing.global_trace.event_filters
    assert wr(k, SW, "0\n") == 2
    assert rd(k, SW) == "none\n"


# (filter, errno, error text, caret position)
REJECTS = [
    ("prev_pid == 1 )", errno.EPERM, "Too few '('", 14),
    ("(prev_pid == 1", errno.ENOENT, "Too many '('", 0),
    ("(prev_pid == 1 && (next_pid == 2)", errno.ENOENT, "Too many '('", 0),
    ('prev_comm == "abc', errno.ESRCH, "Missing matching quote", 13),
    ("foo == 1", errno.EINVAL, "Field not found", 4),
    ("prev_pid = 1", errno.EINVAL, "Invalid operator", 10),
    ("prev_pid =! 1", errno.EINVAL, "Invalid operator", 10),
    ("prev_comm == 1", errno.EINVAL, "Expecting string field", 14),
    ('prev_pid == "x"', errno.EINVAL, "Expecting numeric field", 13),
    ('prev_pid < "x"', errno.EINVAL, "Illegal operation for field type", 12),
    ("prev_pid ~ 1", errno.EINVAL, "Illegal operation for field type", 12),
    ("prev_pid == 0x", errno.EINVAL, "Illegal integer value", 13),
    ("prev_pid == 08", errno.EINVAL, "Illegal integer value", 13),
    ("prev_pid == 1x", errno.EINVAL, "Illegal integer value", 13),
    ("prev_pid == 9223372036854775808", errno.EINVAL, "Illegal integer value", 13),
    ("prev_pid == 1234567890123456789012345", errno.EINVAL, "Operand too long", 38),
    ("prev_comm == bash", errno.EINVAL, "Invalid value (did you forget quotes)?", 14),
    ("prev_pid == 1 prev_prio == 2", errno.EPERM, "Too many terms in predicate expression", 14),
    ("prev_pid == 1 & next_pid == 2", errno.EPERM, "Too many terms in predicate expression", 14),
    ("!", errno.EINVAL, "No filter found", 1),
    ("prev_pid.function == schedule", errno.EINVAL, "Illegal operation for field type", 22),
    ("prev_pid == CPUS{", errno.EINVAL, "Missing '}'", 18),
    ("CPU == CPUS0", errno.EINVAL, "Missing '{'", 13),
    ("CPU == CPUS{}", errno.EINVAL, "Invalid cpulist", 13),
    ("CPU == CPUS{7}", errno.EINVAL, "Invalid cpulist", 14),
    ("CPU == CPUS{0-x}", errno.EINVAL, "Invalid cpulist", 16),
    ("CPU < CPUS{0}", errno.EINVAL, "Illegal operation for field type", 7),
    ('prev_comm == CPUS{0}', errno.EINVAL, "Illegal operation for field type", 14),
    ("COMM == 1", errno.EINVAL, "Expecting string field", 9),
]


@pytest.mark.parametrize("text,err,msg,pos", REJECTS)
def test_rejected_filters(k, text, err, msg, pos):
    wr(k, "error_log", "")
    assert wr(k, SW, text) == -err
    log = rd(k, "error_log")
    lines = log.split("\n")
    assert re.match(r"^\[ *\d+\.\d{6}\] event filter parse error: error: (.*)$", lines[0]), log
    assert lines[0].endswith(": error: " + msg)
    assert lines[1] == "  Command: " + text
    assert lines[2] == " " * (11 + pos) + "^"
    assert lines[3:] == [""]
    caret = min(pos, len(text))
    assert rd(k, SW) == "%s\n%s^\nparse_error: %s\n\n" % (text, " " * caret, msg)


@pytest.mark.parametrize("text,err", [("( )", errno.EINVAL), ("", errno.EINVAL),
                                      ("prev_pid == 1 && ()", errno.EPERM),
                                      ("prev_pid == 1 &&& x", errno.EPERM),
                                      ("!= 1", errno.EPERM)])
def test_refusals_without_a_parse_error(k, text, err):
    wr(k, "error_log", "")
    assert wr(k, SW, text + "\n") == -err
    assert rd(k, SW) == text + "\nError: (0)\n\n"
    assert rd(k, "error_log").split("\n")[0].endswith("event filter parse error: error: Error")


def test_function_filter_errors(k):
    f = "events/kmem/kmem_cache_free/filter"
    wr(k, "error_log", "")
    assert wr(k, f, "call_site.function == no_such_function_xyz") == -errno.EINVAL
    assert wr(k, f, "call_site.function > schedule") == -errno.EINVAL
    assert wr(k, f, "call_site.function == 0xzz") == -errno.EINVAL
    assert wr(k, f, "call_site.function == 0x10") == -errno.EINVAL     # not in any function
    texts = re.findall(r"parse error: error: (.*)", rd(k, "error_log"))
    assert texts == ["Function not found", "Invalid operator",
                     "Invalid value (did you forget quotes)?", "Function not found"]


ACCEPTS = ["common_pid == 1", "  prev_pid>1&&next_pid<=2", "!(prev_pid == 1) || !!next_pid >= 3",
           "((prev_pid == 1))", "prev_comm ~ \"*sh\"", "prev_comm != 'ba sh'",
           "prev_state & 2", "prev_pid == -1", "common_preempt_count == 0x0",
           "CPU == 1", "cpu != CPUS{0-1}", "common_cpu & CPUS{1}", "prev_pid == CPUS{0,1}",
           "comm ~ \"swapper*\"", "stacktrace == 0", "prev_pid == 0777",
           "prev_comm.ustring == \"x\"", "prev_pid == 1 || prev_pid == 2 && next_pid == 3"]


@pytest.mark.parametrize("text", ACCEPTS)
def test_accepted_filters(k, text):
    assert wr(k, SW, text + "\n") == len(text) + 1
    assert rd(k, SW) == text + "\n"          # trailing space gone, leading kept
    assert ev_of(k, "sched_switch") in k.tracing.global_trace.event_filters
    assert wr(k, SW, " 0 \n") == 4
    assert rd(k, SW) == "none\n"
    assert ev_of(k, "sched_switch") not in k.tracing.global_trace.event_filters


def test_write_limits_and_read_offsets(k):
    assert wr(k, SW, "common_pid == 1" + " " * 4081) == -errno.EINVAL     # 4096 bytes
    assert rd(k, SW) == "none\n"
    assert wr(k, SW, "common_pid == 1" + " " * 4080) == 4095
    assert rd(k, SW) == "common_pid == 1\n"
    assert rd(k, SW, off=1) == ""             # only read at offset 0
    assert wr(k, SW, b"common_pid == 2\0garbage") == 23
    assert rd(k, SW) == "common_pid == 2\n"


def test_filter_files_exist_where_the_kernel_has_them(k):
    ev = node(k, "events")
    for sysname in ("sched", "kmem", "signal"):
        assert "filter" in ev.children[sysname].children
        assert ev.children[sysname].children["filter"].mode & 0o777 == 0o640
    assert node(k, SW).mode & 0o777 == 0o640
    assert "filter" not in ev.children["ftrace"].children
    assert "filter" not in node(k, "events/ftrace/print").children
    assert "trigger" not in node(k, "events/sched/sched_switch").children
    assert node(k, "error_log").mode & 0o777 == 0o640


# --- evaluation ------------------------------------------------------------------------

def switch_entry(k, pid=100, prev=("bash", 100, 120, "S"), nxt=("cc1", 200, 120),
                 flags=0, pc=0):
    ev = ev_of(k, "sched_switch")
    args = prev + nxt
    return (0, ev.id, pid, flags, pc, args, None)


def flt(k, text, evname="sched_switch"):
    tr = k.tracing.global_trace
    return tef.filters_of(tr).build(ev_of(k, evname), text)


def test_numbers_at_the_width_of_the_field(k):
    e = switch_entry(k)
    assert flt(k, "prev_pid == 100")(e)
    assert not flt(k, "prev_pid != 100")(e)
    assert flt(k, "prev_pid == 0x64 && next_pid >= 200 && next_pid < 201")(e)
    assert flt(k, "prev_pid == 0144")(e)                  # octal
    assert flt(k, "prev_pid == 0x100000064")(e)           # compared as s32
    assert not flt(k, "common_pid < 0xffffffff")(e)       # that is -1 for an int
    assert flt(k, "common_pid > -1")(e)
    assert flt(k, "common_type == %d" % ev_of(k, "sched_switch").id)(e)
    assert flt(k, "common_flags & 0x8")(switch_entry(k, flags=0x9))
    assert not flt(k, "common_flags & 0x4")(switch_entry(k, flags=0x9))
    assert flt(k, "common_preempt_count == 2")(switch_entry(k, pc=2))


def test_prev_state_is_compared_as_the_field_holds_it(k):
    assert flt(k, "prev_state == 1")(switch_entry(k))
    assert flt(k, "prev_state & 2")(switch_entry(k, prev=("x", 1, 120, "D")))
    assert flt(k, "prev_state == 0")(switch_entry(k, prev=("x", 1, 120, "R")))
    assert flt(k, "prev_state == 256")(switch_entry(k, prev=("x", 1, 120, "R+")))


@pytest.mark.parametrize("pattern,comm,hit", [
    ('"bash"', "bash", True), ('"bas"', "bash", False),
    ('"ba*"', "bash", True), ('"*as*"', "bash", True), ('"*sh"', "bash", False),
    ('"*sh"', "abcdefghijklmsh", True),           # only a full array ends with it
    ('"b?sh"', "bash", True), ('"[a-c]ash"', "bash", True), ('"[!b]ash"', "bash", False),
    ('"b*h"', "bash", True), ('"b*x"', "bash", False), ('"!ba*"', "bash", False),
    ('"!ba*"', "zsh", True), ('"*"', "bash", True), ('"1*"', "1*", True),
    ('"[ab"', "[abx", False), ('"[ab"', "[ab", True), ('"\\*"', "*", True),
    ('"\\*"', "x", False),
])
def test_string_globs(k, pattern, comm, hit):
    e = switch_entry(k, prev=(comm, 100, 120, "S"))
    assert bool(flt(k, "prev_comm ~ " + pattern)(e)) is hit


def test_string_equality_and_dynamic_strings(k):
    e = switch_entry(k)
    assert flt(k, 'prev_comm == "bash"')(e)
    assert flt(k, "prev_comm != 'zsh'")(e)
    assert not flt(k, 'prev_comm == "bash*"')(e)           # == never globs
    ev = ev_of(k, "kmem_cache_free")
    e = (0, ev.id, 1, 0, 0, (0xffffffff81000000, 0x1000, "kmalloc-64"), None)
    assert flt(k, 'name ~ "*-64"', "kmem_cache_free")(e)  # a __data_loc string ends normally
    assert flt(k, 'name ~ "kmalloc*"', "kmem_cache_free")(e)
    assert not flt(k, 'name == "kmalloc"', "kmem_cache_free")(e)


def test_comm_and_cpu_generic_fields(k):
    task = next(t for t in k.sched.tasks.values() if t.pid > 1)
    e = switch_entry(k, pid=task.pid)
    assert flt(k, 'comm == "%s"' % task.comm)(e)
    assert flt(k, 'COMM != "nonexistent"')(e)
    f = flt(k, "CPU == 1")
    assert f(e, 1) and not f(e, 0)
    f = flt(k, "cpu & CPUS{1}")
    assert f(e, 1) and not f(e, 0)
    f = flt(k, "common_cpu != CPUS{0-1}")
    assert f(e, 0) and f(e, 1)
    f = flt(k, "prev_pid == CPUS{1}")
    assert not f(e) and f(switch_entry(k, prev=("x", 1, 120, "S")))
    f = flt(k, "prev_pid & CPUS{0-1}")
    assert f(switch_entry(k, prev=("x", 1, 120, "S"))) and not f(e)


def test_function_filter_by_name_and_address(k):
    ks = k.kallsyms
    name = "kmem_cache_free"
    start = ks.addr_of(name)
    size = ks.lookup(start)[2]
    ev = ev_of(k, "kfree")

    def entry(cs):
        return (0, ev.id, 1, 0, 0, (cs, 0xffff888100000000), None)
    for text in ("call_site.function == %s" % name, "call_site.function == 0x%x" % (start + 3)):
        f = flt(k, text, "kfree")
        assert f(entry(start)) and f(entry(start + size - 1))
        assert not f(entry(start + size)) and not f(entry(start - 1))
    f = flt(k, "call_site.function != %s" % name, "kfree")
    assert not f(entry(start + 1)) and f(entry(start + size))


def expr_gen(rng, depth=0):
    """A random well-formed expression over the letters a-e."""
    r = rng.random()
    if depth > 3 or r < 0.4:
        t = rng.choice("abcde")
    elif r < 0.6:
        t = "(" + expr_gen(rng, depth + 1) + ")"
    else:
        op = rng.choice(["&&", "||"])
        t = expr_gen(rng, depth + 1) + " " + op + " " + expr_gen(rng, depth + 1)
    return "!" * rng.choice([0, 0, 0, 1, 2]) + t


def kernel_program(expr):
    """The kernel's branch program for a letters-only expression (the three
    passes of predicate_parse()), as an evaluator over {letter: bool}."""
    toks = re.findall(r"&&|\|\||[()!]|[a-e]", expr)
    prog, inverts = [], []
    stack = [0]
    invert = 0
    INV, AND, OR = 1, 2, 4

    def update(n, inv):
        t = prog[n][1]
        s = prog[t][1]
        prog[t][2] = inv
        prog[t][1] = n
        prog[n][1] = s
    i = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if t == "(":
            stack.append(invert)
            continue
        if t == "!":
            invert ^= 1
            continue
        inverts.append(invert)
        prog.append([t, len(prog) - 1, 0])          # pred, target, when_to_branch
        n = len(prog) - 1
        while True:
            nt = toks[i] if i < len(toks) else "\0"
            i += 1
            invert = stack[-1] & INV
            if stack[-1] & AND:
                update(n, invert)
                stack[-1] &= ~AND
            if nt == "&&":
                stack[-1] |= AND
                break
            if stack[-1] & OR:
                update(n, invert ^ 1)
                stack[-1] &= ~OR
            if nt == "||":
                stack[-1] |= OR
                break
            if nt == "\0":
                break
            stack.pop()
        if nt == "\0":
            break
    N = len(prog)
    prog.append([None, 1, 0])
    prog.append([None, 0, 0])
    prog[N - 1][1] = N
    prog[N - 1][2] = 0
    for j in range(N - 2, -1, -1):
        tgt = prog[j][1]
        if prog[j][2] == prog[tgt][2]:
            prog[j][1] = prog[tgt][1]
    for j in range(N):
        prog[j][2] ^= inverts[j]

    def run(vals):
        j = 0
        while prog[j][0] is not None:
            if vals[prog[j][0]] == prog[j][2]:
                j = prog[j][1] + 1              # the target is one before
            else:
                j += 1
        return bool(prog[j][1])
    return run


def test_logic_matches_the_kernel_program(k):
    preds = {"a": "prev_pid == 1", "b": "prev_prio == 1", "c": "next_pid == 1",
             "d": "next_prio == 1", "e": "common_pid == 1"}
    rng = random.Random(5)
    for _ in range(300):
        expr = expr_gen(rng)
        f = flt(k, re.sub(r"[a-e]", lambda m: preds[m.group(0)], expr))
        run = kernel_program(expr)
        for bits in itertools.product((0, 1), repeat=5):
            vals = dict(zip("abcde", bits))
            e = switch_entry(k, pid=vals["e"], prev=("x", vals["a"], vals["b"], "S"),
                             nxt=("y", vals["c"], vals["d"]))
            assert bool(f(e)) == run({kk: int(v) for kk, v in vals.items()}), expr


def test_deep_nesting_still_compiles(k):
    text = "(" * 300 + "prev_pid == 1" + ")" * 300
    assert flt(k, text)(switch_entry(k, prev=("x", 1, 1, "S")))
    text = " && ".join("!(prev_pid != %d || next_pid == 3)" % i for i in range(200))
    assert not flt(k, text)(switch_entry(k))


# --- the files ------------------------------------------------------------------------------

def test_error_log_format_and_truncation(k):
    wr(k, "error_log", "")
    assert rd(k, "error_log") == ""
    cmd = "((sig >= 10 && sig < 15) || dsig ^== 17) && comm != bash"
    pos = cmd.index("^")
    cmd = cmd.replace("^", "")
    assert wr(k, "events/signal/signal_generate/filter", cmd, os.O_WRONLY | os.O_APPEND) \
        == -errno.EINVAL
    log = rd(k, "error_log")
    assert "event filter parse error: error: Field not found\n" in log
    last = log.split("\n")[-2] + "\n"
    assert len(last) == 13 + pos                       # ftrace_errlog_check
    for i in range(10):
        wr(k, SW, "nope%d == 1" % i)
    log = rd(k, "error_log")
    assert log.count("  Command: ") == 8                # the last 8 are kept
    assert "nope1 ==" not in log and "nope2 ==" in log and "nope9 ==" in log
    assert wr(k, "error_log", "anything", os.O_WRONLY | os.O_APPEND) == 8   # ignored
    assert rd(k, "error_log") == log
    wr(k, "error_log", "\n")                            # echo > error_log
    assert rd(k, "error_log") == ""


def test_error_log_timestamp():
    k, clock = boot()
    clock.advance(12_345_678_901)
    wr(k, SW, "x == 1")
    assert rd(k, "error_log").startswith("[   12.345678] event filter parse error: error: ")


def test_subsystem_filter(k):
    sysf = "events/sched/filter"
    default = rd(k, sysf)
    assert default == tef.DEFAULT_SYS_FILTER_MESSAGE + "\n"
    wr(k, "error_log", "")
    assert wr(k, sysf, "prev_pid > 10\n") == 14          # succeeds even where it cannot
    assert rd(k, sysf) == default
    assert rd(k, SW) == "prev_pid > 10\n"
    bad = ("prev_pid > 10\n^\nparse_error: Couldn't find or set field in one of a "
           "subsystem's events\n\n")
    assert rd(k, "events/sched/sched_waking/filter") == bad
    assert rd(k, "events/sched/sched_wakeup/filter") == bad
    filters = k.tracing.global_trace.event_filters
    assert ev_of(k, "sched_switch") in filters and ev_of(k, "sched_waking") not in filters
    # one entry per event of the system without the field, the last 8 kept
    lacking = [ev for ev in k.tracing.events if ev.system == "sched"
               and not any(" prev_pid;" in line for line in ev.fields)]
    assert rd(k, "error_log").count("Couldn't find or set field") == min(len(lacking), 8)
    assert rd(k, "events/kmem/kfree/filter") == "none\n"
    # a common field: every event of the system gets it
    assert wr(k, sysf, "common_pid != 0") == 15
    for name in ("sched_switch", "sched_waking", "sched_wakeup"):
        assert rd(k, "events/sched/%s/filter" % name) == "common_pid != 0\n"
    # an event's own filter goes with "0" on the system
    wr(k, "events/sched/sched_waking/filter", "pid == 3")
    assert wr(k, sysf, "0") == 1
    for name in ("sched_switch", "sched_waking", "sched_wakeup"):
        assert rd(k, "events/sched/%s/filter" % name) == "none\n"
    assert not any(ev.system == "sched" for ev in filters)


def test_instances_have_their_own_filters_and_error_log(k):
    k.tracing.instance_mkdir("flt")
    try:
        wr(k, "error_log", "")
        assert wr(k, "instances/flt/" + SW, "common_pid == 7") == 15
        assert rd(k, SW) == "none\n"
        assert rd(k, "instances/flt/" + SW) == "common_pid == 7\n"
        assert wr(k, "instances/flt/" + SW, "bogus == 7") == -errno.EINVAL
        assert rd(k, "error_log") == ""
        assert "bogus == 7" in rd(k, "instances/flt/error_log")
        inst = k.tracing.instances["flt"]
        assert not inst.event_filters
        wr(k, "instances/flt/events/sched/filter", "prev_pid == 1")
        assert ev_of(k, "sched_switch") in inst.event_filters
        assert not k.tracing.global_trace.event_filters
    finally:
        k.tracing.instance_rmdir("flt")


def test_filtered_trace():
    k, clock = boot()
    assert wr(k, SW, "common_pid != 0 && prev_state == 1") == 34
    wr(k, "events/sched/sched_switch/enable", "1")
    clock.advance(200_000_000)
    lines = [ln for ln in rd(k, "trace").splitlines() if "sched_switch:" in ln]
    assert len(lines) > 20
    for ln in lines:
        assert "prev_state=S " in ln and not re.match(r"^\s*<idle>-0 ", ln), ln
    # cleared: idle switches and other states come back
    wr(k, "trace", "")
    assert wr(k, SW, "0") == 1
    clock.advance(200_000_000)
    text = rd(k, "trace")
    assert re.search(r"prev_pid=0 ", text) and re.search(r"prev_state=[^S]", text)


def test_filter_applies_from_the_write_on():
    """Events that happened before the write were recorded unfiltered."""
    k, clock = boot()
    wr(k, "events/sched/sched_switch/enable", "1")
    clock.advance(100_000_000)
    wr(k, SW, "prev_pid == 99999")
    clock.advance(100_000_000)
    times = [float(m) for m in re.findall(r" (\d+\.\d+): sched_switch", rd(k, "trace"))]
    assert times and max(times) <= 0.1


def test_signal_generate_event(k):
    fmt = rd(k, "events/signal/signal_generate/format")
    assert "\tfield:char comm[16];\toffset:20;\tsize:16;\tsigned:0;\n" in fmt
    assert fmt.endswith('print fmt: "sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d", '
                        "REC->sig, REC->errno, REC->code, REC->comm, REC->pid, REC->group, "
                        "REC->result\n")
    assert "signal:signal_generate\n" in rd(k, "available_events")
