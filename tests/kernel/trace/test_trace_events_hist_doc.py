"""The inter-event examples of 6.12's Documentation/trace/histogram.rst
(2.2.2 and 2.2.3, and the trace_marker ones of 2.2.4), replayed as
written against a booted machine, but for ``cyclictest`` (which this
machine does not run): the filters name the comm the machine wakes most.
The outputs are checked for their structure: trigger lines, keys and
fields, the saved values, the snapshot's details and totals agreeing with
the trace."""

import os
import re
from collections import Counter

import pytest

from fakefs.kernel.fs.pseudo import File
from fakefs.sim.files import finish
from ftrace_helpers import APPEND, MS, boot
from kfiles import rd, wr

T = "events/sched/"


@pytest.fixture
def kc():
    return boot()


def busiest_comm(k, clock):
    wr(k, T + "sched_waking/enable", "1\n")
    clock.advance(200 * MS)
    wr(k, T + "sched_waking/enable", "0\n")
    comms = Counter(re.findall(r"sched_waking: comm=(\S+) pid", rd(k, "trace")))
    wr(k, "trace", "\n")
    return next(c for c, _n in comms.most_common() if len(c) < 15)


def hits(text):
    return [int(n) for n in re.findall(r"Hits: (\d+)", text)]


def test_wakeup_latency_histogram_2_2_2(kc):
    k, clock = kc
    comm = busiest_comm(k, clock)
    wr(k, "synthetic_events", "wakeup_latency u64 lat; pid_t pid; int prio\n", APPEND)
    wr(k, T + "sched_waking/trigger", 'hist:keys=$saved_pid:saved_pid=pid:'
       'ts0=common_timestamp.usecs if comm=="%s"\n' % comm, APPEND)
    wr(k, T + "sched_switch/trigger", 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:'
       'onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,$saved_pid,next_prio) '
       'if next_comm=="%s"\n' % comm, APPEND)
    lat = "events/synthetic/wakeup_latency/"
    wr(k, lat + "trigger", "hist:keys=pid,prio,lat:sort=pid,lat\n", APPEND)
    wr(k, lat + "trigger", "hist:keys=pid,prio,lat.log2:sort=lat\n", APPEND)
    wr(k, lat + "trigger", "hist:keys=pid,prio,lat.buckets=10:sort=lat\n", APPEND)
    assert rd(k, T + "sched_waking/trigger") == (
        'hist:keys=pid:vals=hitcount:saved_pid=pid,ts0=common_timestamp.usecs:sort=hitcount:'
        'size=2048:clock=global if comm=="%s" [active]\n' % comm)
    clock.advance(500 * MS)
    text = rd(k, lat + "hist")
    assert ("# trigger info: hist:keys=pid,prio,lat.buckets=10:vals=hitcount:"
            "sort=lat.buckets=10:size=2048 [active]\n") in text
    assert re.search(r"\{ pid: +\d+, prio: +\d+, lat: +\d+ \} hitcount: +\d+\n", text)
    assert re.search(r"\{ pid: +\d+, prio: +\d+, lat: ~ 2\^\d+ +\} hitcount: +\d+\n", text)
    assert re.search(r"\{ pid: +\d+, prio: +\d+, lat: ~ \d+-\d+9 \} hitcount: +\d+\n", text)
    counts = hits(text)
    assert len(counts) == 3 and counts[0] > 0 and len(set(counts)) == 1


def test_block_latency_with_stacks_2_2_2(kc):
    k, clock = kc
    wr(k, "dynamic_events", "s:block_lat pid_t pid; u64 delta; unsigned long[] stack;\n")
    wr(k, T + "sched_switch/trigger", "hist:keys=next_pid:ts=common_timestamp.usecs,"
       "st=common_stacktrace  if prev_state == 2\n", APPEND)
    wr(k, T + "sched_switch/trigger", "hist:keys=prev_pid:delta=common_timestamp.usecs-$ts,"
       "s=$st:onmax($delta).trace(block_lat,prev_pid,$delta,$s)\n", APPEND)
    wr(k, "events/synthetic/block_lat/trigger",
       "hist:keys=delta.buckets=100,stack.stacktrace:sort=delta\n")
    clock.advance(1000 * MS)
    text = rd(k, "events/synthetic/block_lat/hist")
    assert ("# trigger info: hist:keys=delta.buckets=100,stack.stacktrace:vals=hitcount:"
            "sort=delta.buckets=100:size=2048 [active]\n") in text
    # as the document shows it: the first frame on the key's line
    m = re.search(r"\{ delta: ~ \d+-\d+99, stack.stacktrace {9}(\S+)\n((?: {9}\S+\n)*)\} "
                  r"hitcount: +\d+\n", text)
    assert m is not None, text[:2000]
    assert m.group(1).startswith("__schedule+0x")


def test_onmax_save_and_snapshot_2_2_3(kc):
    k, clock = kc
    comm = busiest_comm(k, clock)
    wr(k, T + "enable", "1\n")
    wr(k, T + "sched_waking/trigger",
       'hist:keys=pid:ts0=common_timestamp.usecs if comm=="%s"\n' % comm, APPEND)
    wr(k, T + "sched_switch/trigger", 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:'
       'onmax($wakeup_lat).save(next_prio,next_comm,prev_pid,prev_prio,prev_comm):'
       'onmax($wakeup_lat).snapshot() if next_comm=="%s"\n' % comm, APPEND)
    clock.advance(500 * MS)
    text = rd(k, T + "sched_switch/hist")
    rows = re.findall(r"\{ next_pid: +(\d+) \} hitcount: +\d+\n\tmax: +(\d+)  next_prio: +\d+  "
                      r"next_comm: %s +  prev_pid: +\d+  prev_prio: +\d+  prev_comm: \S+ *\n"
                      % re.escape(comm), text)
    assert rows
    m = re.search(r"\nSnapshot taken \(see tracing/snapshot\)\.  Details:\n"
                  r"\ttriggering value \{ onmax\(\$wakeup_lat\) \}: +(\d+)\t"
                  r"triggered by event with key: \{ next_pid: +(\d+) \}\n\nTotals:", text)
    assert m is not None, text[-800:]
    # the global maximum is the largest of the entries' maxima, that entry's key
    best = max(int(mx) for _p, mx in rows)
    assert int(m.group(1)) == best
    assert (m.group(2), str(best)) in [(p, mx) for p, mx in rows]
    snap = rd(k, "snapshot")
    assert re.search(r"sched_switch: .*==> next_comm=%s next_pid=%s " % (re.escape(comm),
                                                                         m.group(2)), snap)


def test_trace_marker_latency_2_2_4(kc):
    k, clock = kc
    wr(k, "synthetic_events", "latency u64 lat\n")
    wr(k, "events/ftrace/print/trigger",
       'hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"\n')
    wr(k, "events/ftrace/print/trigger", 'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:'
       'onmatch(ftrace.print).latency($lat) if buf == "end"\n', APPEND)
    wr(k, "events/synthetic/latency/trigger", "hist:keys=lat,common_pid:sort=lat\n")
    for delay in (3, 1, 2):
        wr(k, "trace_marker", "start")
        clock.advance(delay * MS)
        wr(k, "trace_marker", "end")
    text = rd(k, "events/synthetic/latency/hist")
    lats = [int(x) for x in re.findall(r"\{ lat: +(\d+), common_pid: +\d+ \}", text)]
    assert lats == sorted(lats) and len(lats) == 3
    assert [round(x / 1000) for x in lats] == [1, 2, 3]


def test_kernel_event_to_trace_marker_2_2_4(kc):
    k, clock = kc
    wr(k, "synthetic_events", "latency u64 lat\n")
    wr(k, T + "sched_waking/trigger", "hist:keys=pid:ts0=common_timestamp.usecs\n")
    wr(k, "events/ftrace/print/trigger", 'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:'
       'onmatch(sched.sched_waking).latency($lat) if buf == "end"\n')
    wr(k, "events/synthetic/latency/trigger", "hist:keys=lat,common_pid:sort=lat\n")
    clock.advance(100 * MS)
    # a task that was woken writes the marker (the shell of the document)
    pid = int(re.search(r"\{ pid: +(\d+) \}", rd(k, T + "sched_waking/hist")).group(1))
    n = k.tree.root.walk("sys/kernel/tracing/trace_marker")
    f = File(n, os.O_WRONLY, pid=pid)
    n.fops.open(f)
    finish(k, n.fops.write(f, b"end"))
    n.fops.release(f)
    text = rd(k, "events/ftrace/print/hist")
    assert "onmatch(sched.sched_waking).latency($lat) if buf == \"end\" [active]" in text
    assert hits(text) == [1]
    # (on the machine the writer is a task of its own, woken for its write)
    writer = int(re.search(r"\{ common_pid: +(\d+) \}", text).group(1))
    assert re.search(r"\{ lat: +\d+, common_pid: +%d \} hitcount: +1\n" % writer,
                     rd(k, "events/synthetic/latency/hist"))
