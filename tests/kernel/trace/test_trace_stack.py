"""The stack tracer (trace_stack.py): stack_trace, stack_max_size,
stack_trace_filter and /proc/sys/kernel/stack_tracer_enabled."""

import errno
import random
import re

import pytest

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace_stack import BOTTOM, DISABLED, frame_size
from fakefs.kernel.walkgraph import FENTRY_RET
from ftrace_helpers import APPEND, MS, TRUNC, boot
from kfiles import errno_of, node, rd, wr

P = "proc/sys/kernel/"
HEAD = re.compile(r"^        Depth    Size   Location    \((\d+) entries\)\n"
                  r"        -----    ----   --------\n")
LINE = re.compile(r"^ *(\d+)\) +(\d+) +(\d+)   (\S+)\+0x([0-9a-f]+)/0x[0-9a-f]+$")


def parse(text):
    """The entries of stack_trace: [(index, depth, size, function, offset)],
    checking the header, the count and every line's format."""
    m = HEAD.match(text)
    assert m, text
    body = text[m.end():]
    if body.startswith("#"):
        assert body.startswith(DISABLED)
        body = body[len(DISABLED):]
    out = []
    for ln in body.splitlines():
        e = LINE.match(ln)
        assert e, ln
        out.append((int(e.group(1)), int(e.group(2)), int(e.group(3)), e.group(4),
                    int(e.group(5), 16)))
    assert len(out) == int(m.group(1))
    return out


def enable(k, value="1\n"):
    wr(k, "stack_tracer_enabled", value, base=P)


@pytest.fixture
def kc():
    return boot()


def test_files_modes_and_boot_state(kc):
    k, _clock = kc
    assert node(k, "stack_trace").mode & 0o777 == 0o440
    assert node(k, "stack_max_size").mode & 0o777 == 0o640
    assert node(k, "stack_trace_filter").mode & 0o777 == 0o640
    assert node(k, "stack_tracer_enabled", P).mode & 0o777 == 0o644
    text = rd(k, "stack_trace")
    assert text == ("        Depth    Size   Location    (0 entries)\n"
                    "        -----    ----   --------\n" + DISABLED)
    assert rd(k, "stack_max_size") == "0\n"
    assert rd(k, "stack_tracer_enabled", P) == "0\n"
    assert rd(k, "stack_trace_filter") == "#### all functions enabled ####\n"
    readme = rd(k, "README")
    assert "  stack_trace\t\t- Shows the max stack trace when active\n" in readme
    assert "  stack_trace_filter\t- Like set_ftrace_filter but limits what stack_trace\n" in readme


def test_the_deepest_stack_is_kept(kc):
    k, clock = kc
    enable(k)
    clock.advance(5 * MS)
    first = parse(rd(k, "stack_trace"))
    assert len(first) > 3
    # Depth is the bytes used below each return address; Size its share
    for i, (idx, depth, size, _fn, _off) in enumerate(first):
        assert idx == i
        nxt = first[i + 1][1] if i + 1 < len(first) else 0
        assert size == depth - nxt
    top = first[0]
    assert top[2] == 8 and top[4] == FENTRY_RET       # traced at its entry, no frame yet
    assert first[-1][1] == first[-1][2] == BOTTOM
    for _i, _depth, size, fn, _off in first[1:-1]:
        assert size == frame_size(fn)
    assert rd(k, "stack_max_size") == "%d\n" % top[1]
    # the maximum only grows
    for _ in range(5):
        clock.advance(20 * MS)
        now = parse(rd(k, "stack_trace"))
        assert now[0][1] >= top[1]
        assert rd(k, "stack_max_size") == "%d\n" % now[0][1]
        top = now[0]


def test_stack_max_size_write(kc):
    k, clock = kc
    enable(k)
    clock.advance(5 * MS)
    before = rd(k, "stack_trace")
    wr(k, "stack_max_size", "100000\n")         # above any stack: nothing new
    clock.advance(20 * MS)
    assert rd(k, "stack_max_size") == "100000\n"
    assert rd(k, "stack_trace").splitlines()[2:] == before.splitlines()[2:]
    for bad, err in (("abc", errno.EINVAL), ("-1", errno.EINVAL), ("0x10", errno.EINVAL),
                     ("99999999999999999999999", errno.ERANGE)):
        assert errno_of(wr, k, "stack_max_size", bad) == err
    assert rd(k, "stack_max_size") == "100000\n"
    wr(k, "stack_max_size", "0" * 66 + "12345\n")      # kstrtoul_from_user() reads 66 bytes
    assert rd(k, "stack_max_size") == "0\n"
    wr(k, "stack_max_size", "18446744073709551615\n")    # %ld of ULONG_MAX
    assert rd(k, "stack_max_size") == "-1\n"
    wr(k, "stack_max_size", "0\n")                 # starts over at the next call
    clock.advance(10 * MS)                       # (the CPUs may be halted for 1 ms)
    assert int(rd(k, "stack_max_size")) > 0
    assert parse(rd(k, "stack_trace"))


def test_disabled_measures_nothing(kc):
    k, clock = kc
    enable(k, "2\n")                                # any int, read back as written
    assert rd(k, "stack_tracer_enabled", P) == "2\n"
    clock.advance(5 * MS)
    kept = parse(rd(k, "stack_trace"))
    enable(k, "0\n")
    assert DISABLED not in rd(k, "stack_trace")       # off, but a maximum is there
    wr(k, "stack_max_size", "0\n")
    clock.advance(50 * MS)
    assert rd(k, "stack_max_size") == "0\n"
    text = rd(k, "stack_trace")
    assert DISABLED in text                           # off and no maximum: the note...
    assert kept and parse(text) == kept               # ...and the old stack stays
    for bad in ("abc", "", "1x"):
        assert errno_of(wr, k, "stack_tracer_enabled", bad, TRUNC, P) == errno.EINVAL
    assert rd(k, "stack_tracer_enabled", P) == "0\n"


def test_ftrace_enabled_0_reaches_no_ops(kc):
    k, clock = kc
    wr(k, "ftrace_enabled", "0\n", base=P)
    enable(k)
    clock.advance(50 * MS)
    assert rd(k, "stack_max_size") == "0\n"
    wr(k, "ftrace_enabled", "1\n", base=P)
    clock.advance(5 * MS)
    assert int(rd(k, "stack_max_size")) > 0


def test_the_filter_limits_what_is_measured(kc):
    k, clock = kc
    wr(k, "stack_trace_filter", "*lock*\n")
    listed = rd(k, "stack_trace_filter").splitlines()
    assert listed and all("lock" in ln for ln in listed)
    enable(k)
    for _ in range(5):
        wr(k, "stack_max_size", "0\n")
        clock.advance(3 * MS)
        got = parse(rd(k, "stack_trace"))
        assert got and "lock" in got[0][3]
    # a word with a command needs a trace array: ENODEV; no such command: EINVAL
    for bad, err in (("schedule:traceon\n", errno.ENODEV), ("schedule:mod:ext4\n", errno.ENODEV),
                     ("schedule:nosuch\n", errno.EINVAL), ("no_such_function_xyz\n", errno.EINVAL)):
        assert errno_of(wr, k, "stack_trace_filter", bad, APPEND) == err
    assert rd(k, "stack_trace_filter").splitlines() == listed
    # (as the kernel: a truncating open empties it, whatever the write does)
    assert errno_of(wr, k, "stack_trace_filter", "no_such_function_xyz\n") == errno.EINVAL
    assert rd(k, "stack_trace_filter") == "#### all functions enabled ####\n"
    wr(k, "stack_trace_filter", "*lock*\n")
    wr(k, "stack_trace_filter", "!*spin*\n", APPEND)
    assert not any("spin" in ln for ln in rd(k, "stack_trace_filter").splitlines())
    wr(k, "stack_trace_filter", "schedule\n")      # O_TRUNC: this one only
    assert rd(k, "stack_trace_filter") == "schedule\n"
    wr(k, "stack_max_size", "0\n")
    for _ in range(20):                  # (until a switch calls schedule(): measured)
        clock.advance(3 * MS)
        if int(rd(k, "stack_max_size")):
            break
    assert parse(rd(k, "stack_trace"))[0][3] == "schedule"
    # the set_ftrace_filter of the function tracer is another ops
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"


def test_calls_on_interrupt_stacks_are_not_measured(kc):
    k, clock = kc
    enable(k)
    for _ in range(10):
        wr(k, "stack_max_size", "0\n")
        clock.advance(5 * MS)
        names = [e[3] for e in parse(rd(k, "stack_trace"))]
        assert not any(n.startswith("asm_") or n in ("__do_softirq", "irq_exit_rcu")
                       for n in names), names


def test_boot_parameters():
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 cmdline="stacktrace_filter=schedule,no_such_fn,*_raw_spin_lock")
    assert rd(k, "stack_tracer_enabled", P) == "1\n"
    listed = rd(k, "stack_trace_filter").splitlines()     # no_such_fn: ignored
    assert sorted(listed) == ["_raw_spin_lock", "schedule"]
    k.clock.advance(5 * MS)
    assert parse(rd(k, "stack_trace"))[0][3] in ("schedule", "_raw_spin_lock")
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 cmdline="stacktrace")
    assert rd(k, "stack_tracer_enabled", P) == "1\n"
    assert rd(k, "stack_trace_filter") == "#### all functions enabled ####\n"


def test_same_seed_same_stacks():
    out = []
    for _ in range(2):
        k, clock = boot()
        enable(k)
        texts = []
        for _ in range(3):
            clock.advance(7 * MS)
            texts.append(rd(k, "stack_trace"))
        out.append(texts)
    assert out[0] == out[1]


def test_no_stack_tracer_in_the_config():
    k = sim.boot(seed=7, nr_cpus=1, clock=ManualClock(), host_kallsyms=False,
                 config_overrides={"STACK_TRACER": False})
    root = "sys/kernel/tracing/"
    for name in ("stack_trace", "stack_max_size", "stack_trace_filter"):
        assert k.tree.root.walk(root + name) is None
    assert k.tree.root.walk(P + "stack_tracer_enabled") is None
    assert "stack_trace" not in rd(k, "README")
    assert k.stack_tracer is None


def test_do_softirq_runs_on_the_irq_stack(kc):
    """Softirqs that ``do_softirq()`` runs (``__do_softirq`` in the
    stack) are on the interrupt stack: not measured.  The same functions
    from ksoftirqd are on the task's stack."""
    k, _clock = kc
    st, wl = k.stack_tracer, k.workload
    names = wl.wg.names
    rng = random.Random(2)
    seen = {"softirq": 0, "task": 0}
    for fr in wl.calls_aside(rng, 60000):
        chain = []
        f = fr
        while f is not None:
            chain.append(f)
            f = f.parent
        if any(f.irq for f in chain):
            assert st._entries_of(wl, fr) is None
        elif any(names[f.fn] == "__do_softirq" for f in chain):
            assert st._entries_of(wl, fr) is None
            seen["softirq"] += 1
        else:
            entries = st._entries_of(wl, fr)
            assert [a for a, _d in entries] == list(fr.stack)
            seen["task"] += 1
    assert seen["softirq"] and seen["task"]


def test_a_read_measures_its_own_call(kc):
    """seq_read_iter() takes the seq_file's mutex before t_start() turns the
    tracer off: with no simulated time since ``0 > stack_max_size`` the
    reader's ``mutex_lock`` is the maximum (func_stack_tracer.tc's first read
    with a ``*lock*`` filter needs it), and only while the ops takes it."""
    k, _clock = kc
    wr(k, "stack_trace_filter", "mutex_lock\n")
    enable(k)
    wr(k, "stack_max_size", "0\n")
    got = parse(rd(k, "stack_trace"))
    assert [e[3] for e in got] == ["mutex_lock", "seq_read_iter", "seq_read", "vfs_read", "ksys_read",
                                   "__x64_sys_read", "x64_sys_call", "do_syscall_64",
                                   "entry_SYSCALL_64_after_hwframe"]
    assert got[0][2] == 8 and got[-1][1] == BOTTOM
    assert rd(k, "stack_max_size") == "%d\n" % got[0][1]
    # a filter without mutex_lock, the tracer off, ftrace_enabled 0: not measured
    for setup, undo in ((("stack_trace_filter", "schedule\n", TRUNC), ("stack_trace_filter", "mutex_lock\n", TRUNC)),
                        (("stack_tracer_enabled", "0\n", TRUNC, P), ("stack_tracer_enabled", "1\n", TRUNC, P)),
                        (("ftrace_enabled", "0\n", TRUNC, P), ("ftrace_enabled", "1\n", TRUNC, P))):
        wr(k, *setup)
        wr(k, "stack_max_size", "0\n")
        rd(k, "stack_trace")
        assert rd(k, "stack_max_size") == "0\n", setup
        wr(k, *undo)
