"""The fields an event filter names (trace_events_filter_fields.py): an
event's own fields as the filter sees them, the generic and common ones."""

import pytest

import event_filter_helpers
from event_filter_helpers import ev_of, flt, switch_entry
from fakefs.kernel.trace import trace_events_filter_fields as tff


kc, k = event_filter_helpers.kc, event_filter_helpers.k      # the shared kernel


def test_prev_state_is_compared_as_the_field_holds_it(k):
    assert flt(k, "prev_state == 1")(switch_entry(k))
    assert flt(k, "prev_state & 2")(switch_entry(k, prev=("x", 1, 120, "D")))
    assert flt(k, "prev_state == 0")(switch_entry(k, prev=("x", 1, 120, "R")))
    assert flt(k, "prev_state == 256")(switch_entry(k, prev=("x", 1, 120, "R+")))


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


@pytest.mark.parametrize("line,decl", [
    ("\tfield:int sig;\toffset:8;\tsize:4;\tsigned:1;\n", ("int", "sig", 4, 1)),
    ("\tfield:char comm[16];\toffset:20;\tsize:16;\tsigned:0;", ("char[16]", "comm", 16, 0)),
    ("\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;",
     ("__data_loc char[]", "name", 4, 0)),
    ("\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;", ("const void *", "ptr", 8, 0)),
])
def test_parse_field_decl(line, decl):
    assert tff.parse_field_decl(line) == decl


def test_parse_field_decl_refuses_other_lines():
    with pytest.raises(ValueError):
        tff.parse_field_decl("field:int sig; offset:8; size:4; signed:1;")


@pytest.mark.parametrize("type_,kind", [
    ("__data_loc char[]", tff.FILTER_DYN_STRING), ("__data_loc cpumask_t", tff.FILTER_CPUMASK),
    ("__rel_loc char[]", tff.FILTER_RDYN_STRING), ("char[16]", tff.FILTER_STATIC_STRING),
    ("char *", tff.FILTER_PTR_STRING), ("const char *", tff.FILTER_PTR_STRING),
    ("const void *", tff.FILTER_OTHER), ("unsigned long", tff.FILTER_OTHER),
    ("__data_loc int[]", tff.FILTER_OTHER),
])
def test_filter_assign_type(type_, kind):
    assert tff.filter_assign_type(type_) == kind


def test_event_fields_in_lookup_order(k):
    ev = ev_of(k, "signal_generate")
    fields = tff.event_fields(ev)
    assert tff.event_fields(ev) is fields                 # computed once
    names = list(fields)
    assert names[:7] == ["sig", "errno", "code", "comm", "pid", "group", "result"]
    assert names[7:] == ["CPU", "cpu", "common_cpu", "COMM", "stacktrace", "STACKTRACE",
                         "common_type", "common_flags", "common_preempt_count", "common_pid"]
    # the event's own comm hides the generic one (COMM stays generic)
    comm = fields["comm"]
    assert (comm.filter_type, comm.size, comm.expr) == (tff.FILTER_STATIC_STRING, 16, "a[3]")
    assert comm.is_string and fields["COMM"].filter_type == tff.FILTER_COMM
    assert not fields["pid"].is_string and fields["pid"].signed == 1
    # a field with a value converter reads through it
    assert tff.event_fields(ev_of(k, "sched_switch"))["prev_state"].expr == "cv_prev_state(a[3])"
