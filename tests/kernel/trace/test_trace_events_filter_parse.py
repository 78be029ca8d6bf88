"""The event filter language (trace_events_filter_parse.py): what is accepted,
what is refused with which errno, error text and caret, and what the
predicates compare, through the files of a booted kernel."""

import errno
import re

import pytest

import event_filter_helpers
from event_filter_helpers import SW, ev_of, flt, rd, switch_entry, wr


kc, k = event_filter_helpers.kc, event_filter_helpers.k      # the shared kernel


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


# --- evaluation ------------------------------------------------------------------------

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
