"""fuse.runner: the machine kept at the host's time while tracing records,
so that what the buffers keep does not depend on when requests come."""

from __future__ import annotations

import time

import trio

from fakefs import sim
from fakefs.fuse.adapter import FakeFS
from fakefs.fuse.runner import TICK_S, Runner
from fakefs.sim.files import write_file
from fakefs.sim.clock import Clock, ManualClock
from fakefs.sim.timekeeper import GAP_NS

T = "sys/kernel/tracing/"


def boot(clock, *settings):
    k = sim.boot(seed=4, nr_cpus=2, clock=clock, host_kallsyms=False)
    for path, value in settings:
        write_file(k, T + path, value.encode())
    return k


SEED004 = (("events/sched/sched_switch/enable", "1"), ("events/kmem/kmem_cache_alloc/enable", "1"),
           ("options/stacktrace", "1"))
# (a cheap configuration, ~10x faster than real time: it keeps up on a busy host too)
SWITCH = (("events/sched/sched_switch/enable", "1"),)


def behind(k) -> int:
    return k.clock.now_ns() - k.sim_time


class QuarterClock(Clock):
    """The host's clock at a quarter of its pace: the runner's pacing is
    the same, but keeping up needs a quarter of the CPU, so a test of it
    does not depend on how loaded the host is (a parallel ``make test``
    left a full-speed one 0.73 s behind once)."""

    def now_ns(self) -> int:
        return (time.monotonic_ns() - self._t0) // 4


class ScaledClock(Clock):
    """The host's clock at ``scale`` times its pace."""

    def __init__(self, scale: int):
        super().__init__()
        self.scale = scale

    def now_ns(self) -> int:
        return (time.monotonic_ns() - self._t0) * self.scale


def gaps_of(k) -> list:
    """The gaps ``k`` begins from now on (a watcher that asks nothing)."""
    gaps = []
    k.add_gap_watcher(type("W", (), {
        "gap_begins": lambda self, g: gaps.append(g), "gap_ends": lambda self, g: None,
        "boundary": lambda self: None, "gap_threshold": lambda self: 1 << 62,
        "full_from": lambda self, t, g: g.end})())
    return gaps


def test_while_events_record_the_machine_keeps_up_with_the_host_and_never_makes_a_gap():
    k = boot(QuarterClock(), *SWITCH)
    enabled = k.sim_time
    fs = FakeFS(k)
    runner = Runner(fs)
    gaps = gaps_of(k)
    assert runner.due()

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.run)
            await trio.sleep(1.0)           # no request meanwhile
            lag = behind(k)
            nursery.cancel_scope.cancel()
        return lag

    lag = trio.run(main)
    assert runner.ticks > 10
    assert lag < 200_000_000                # at most a few steps behind, never a gap's length (2 s)
    assert gaps == []
    # simulated in full: as many events as the virtual clock records in the
    # same simulated span (how long a span the runner reached depends on the
    # host's load, so the count is compared with the span's, not a constant)
    span = k.sim_time - enabled
    assert span > 50_000_000
    ref = boot(ManualClock(), *SWITCH)
    ref.timekeeper.advance_to(ref.sim_time + span)
    written = sum(cb.written for cb in k.tracing.global_trace.buffer.cpus)
    expected = sum(cb.written for cb in ref.tracing.global_trace.buffer.cpus)
    assert abs(written - expected) < 0.3 * expected, (written, expected, span)


def test_the_runner_waits_when_nothing_records_or_on_the_virtual_clock():
    k = boot(Clock())
    runner = Runner(FakeFS(k))
    assert not runner.due()                 # nothing records: a request catches up
    t = k.sim_time

    async def main():
        with trio.move_on_after(5 * TICK_S):
            await runner.run()

    trio.run(main)
    assert runner.ticks == 0 and k.sim_time == t
    assert not Runner(FakeFS(boot(ManualClock(), *SEED004))).due()


def test_a_machine_that_does_not_keep_up_is_stepped_on_in_full_and_serves_requests_where_it_got():
    """The host's time runs 100 times faster than the machine can follow
    (the function tracer, ~11x real time): the runner steps it on in full
    (no gap, nothing skipped: the counts of the virtual clock over the
    same span), and a request waits at most REQUEST_WAIT_S on it, then is
    served at the instant the machine reached, far behind the host's."""
    from fakefs.fuse.pacing import REQUEST_WAIT_S
    k = boot(ScaledClock(100), ("current_tracer", "function"))
    enabled = k.sim_time
    fs = FakeFS(k)
    runner = Runner(fs)
    gaps = gaps_of(k)

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.run)
            await trio.sleep(0.5)
            assert runner.due()                 # behind, and still its to keep up
            t0 = time.monotonic()
            until = await fs.observe()
            waited = time.monotonic() - t0
            lag = k.clock.now_ns() - until
            nursery.cancel_scope.cancel()
        return until, waited, lag

    until, waited, lag = trio.run(main)
    assert gaps == []
    assert waited < REQUEST_WAIT_S + 0.15, waited
    assert lag > 10_000_000_000, lag            # served far behind the host's time ...
    assert enabled < until <= k.sim_time        # ... where the machine had got
    span = k.sim_time - enabled
    ref = boot(ManualClock(), ("current_tracer", "function"))
    ref.timekeeper.advance_to(ref.sim_time + span)
    written = sum(cb.written for cb in k.tracing.global_trace.buffer.cpus)
    expected = sum(cb.written for cb in ref.tracing.global_trace.buffer.cpus)
    assert abs(written - expected) < 0.3 * expected, (written, expected, span)
    # once nothing records, the machine that fell behind is still the
    # runner's to catch up (requests are served where it got meanwhile)
    assert fs.pacer.behind
    k.tracing.global_trace.set_tracing_on(False)
    assert k.timekeeper.gap_threshold() >= GAP_NS and runner.due()


def test_a_poller_learns_of_what_the_runner_s_catch_ups_wrote():
    """A per-CPU trace_pipe_raw poller waits for the buffer_percent
    watermark; the catch-ups of the runner fill the buffer, and the one
    that reaches the watermark wakes it (no request comes meanwhile)."""
    k = boot(QuarterClock(), *SWITCH, ("buffer_size_kb", "64"), ("buffer_percent", "50"),
             ("trace", ""))
    fs = FakeFS(k)
    runner = Runner(fs)
    node = k.tree.root.walk(T + "per_cpu/cpu0/trace_pipe_raw")

    class Handle:
        notified_at = None

        def notify(self):
            self.notified_at = k.sim_time

    async def main():
        fi = await fs.open(node.ino, 0, type("Ctx", (), {"pid": 0, "uid": 0, "gid": 0,
                                                        "umask": 0o022})())
        h = Handle()
        assert await fs.poll(node.ino, fi.fh, h, None) == 0
        waited_from = k.sim_time
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.run)
            with trio.move_on_after(5):
                while h.notified_at is None:
                    await trio.sleep(TICK_S)
            nursery.cancel_scope.cancel()
        return h, waited_from

    h, waited_from = trio.run(main)
    assert h.notified_at is not None and h.notified_at > waited_from
    assert k.tracing.global_trace.buffer.cpus[0].watermark_hit(50)


async def test_the_runner_s_pause_lets_a_command_s_requests_through_within_its_share():
    """Runner.pause(): between its steps a command under way goes on (its
    requests a turn of the loop apart) before the runner's next step, for
    at most GRACE_SHARE of what the runner's steps took."""
    from fakefs.fuse import steps
    from fakefs.fuse.heap import HeapKeeper

    class FS:
        heap = HeapKeeper(None)
        released_at = 0.0

    fs = FS()
    runner = Runner(fs)
    served = []

    async def command(n):
        for i in range(n):
            if i:
                await trio.sleep(0)
            fs.heap.request_begins()
            served.append(i)
            fs.heap.request_ends()

    async def pause_with(n, worked):
        served.clear()
        runner.worked, runner.given = 0.0, 0.0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(command, n)
            runner.resumed = time.monotonic() - worked     # (its steps took that long)
            await runner.pause()
            nursery.cancel_scope.cancel()
        return len(served)

    assert await pause_with(5, worked=1.0) == 5             # all of the command, no step between
    assert runner.given <= steps.GRACE_SHARE * runner.worked
    # its share spent (no steps since): the command's first requests only
    assert await pause_with(10 ** 6, worked=0.0) < 100
