"""fuse.window: a gap's window made while the mount is idle, moved to the
next request's instant (what it holds is tested in tests/sim/
test_machine_shift.py)."""

from __future__ import annotations

import time

import trio

from fakefs import sim
from fakefs.fuse.heap import HeapKeeper
from fakefs.fuse.pacing import Pacer
from fakefs.fuse.window import LATER_S, WindowMaker
from fakefs.kernel.fs.pseudo import kernel_write
from fakefs.kernel.init import JIFFY_NS, TICK_NS
from fakefs.kernel.time import Clock, ManualClock

T = "sys/kernel/tracing/"
WAIT_S = 30          # for the window to be made at all (it costs ~0.5 s)


def boot(clock, *settings):
    k = sim.boot(seed=1, nr_cpus=2, clock=clock, host_kallsyms=False)
    for path, value in settings:
        kernel_write(k.tree, T + path, value.encode())
    return k


def parts(k):
    heap = HeapKeeper(k)
    pacer = Pacer(k.clock)
    return heap, pacer, WindowMaker(k, pacer, heap)


def request(k, heap, pacer) -> int:
    """A request's catch-up (``FakeFS.observe``, without yielding): how many
    steps it took."""
    heap.request_begins()
    steps = 1
    until = k.now_ns()
    while pacer.step(k, until):
        steps += 1
    heap.after_request()
    heap.request_ends()
    return steps


async def made(k, maker):
    """Idle until the maker has made a window (the first): the gap, held."""
    t0 = time.monotonic()
    while maker.made == 0 and time.monotonic() - t0 < WAIT_S:
        await trio.sleep(0.05)
    assert maker.made == 1 and k.gap.held
    return k.gap


async def window_made(k, heap, pacer, maker):
    """A request, then idle until the maker has made the gap's window."""
    request(k, heap, pacer)
    return await made(k, maker)


def host(k) -> int:
    """The host's time on the kernel's clock."""
    return k.now_ns()


def test_an_idle_mount_gets_the_gaps_window_made_and_the_next_request_only_moves_it():
    k = boot(Clock(), ("current_tracer", "function"), ("options/stacktrace", "1"))
    heap, pacer, maker = parts(k)
    cpu0 = k.tracing.global_trace.buffer.cpus[0]

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(maker.run)
            await trio.sleep(0.01)
            gap = await window_made(k, heap, pacer, maker)
            assert gap is not None and gap.held and k.sim_time == gap.end and gap.skipped > 0
            written, end, held = cpu0.written, gap.end, list(cpu0.iter_events())
            await trio.sleep(0.5)                  # idle on: nothing more is simulated
            assert k.gap is gap and k.sim_time == end and cpu0.written == written
            before = host(k)
            steps = request(k, heap, pacer)
            after = host(k)
            # the window moved to the request's instant by whole jiffies (the
            # rest, less than one, simulated to the last tick), not simulated
            # again: the same entries, later; the time between counted as skipped
            assert k.gap is None and before - JIFFY_NS < k.sim_time <= after
            d = gap.end - end
            assert d > 400_000_000 and d % JIFFY_NS == 0
            assert gap.end <= k.sim_time < gap.end + JIFFY_NS and steps <= 10, (k.sim_time, gap.end, steps)
            now = list(cpu0.iter_events())
            moved = [(e[0] + d,) + e[1:] for e in held[len(held) // 2:]]
            i = now.index(moved[0])
            assert now[i:i + len(moved)] == moved
            assert cpu0.written > written
            # one made after each request, not more: after this request
            # (the second) at most the next one (when it is due depends on
            # how far behind a loaded host left the machine), and that one
            # held, never two
            await trio.sleep(0.1)
            assert maker.made in (1, 2), maker.made
            await trio.sleep(0.3)
            assert maker.made <= 2, maker.made
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_request_that_comes_while_the_window_is_made_finishes_it():
    k = boot(Clock(), ("current_tracer", "function"))
    heap, pacer, maker = parts(k)

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(maker.run)
            await trio.sleep(0.01)
            request(k, heap, pacer)
            t0 = time.monotonic()
            while k.gap is None and time.monotonic() - t0 < WAIT_S:
                await trio.sleep(0)            # the maker's first steps
            gap = k.gap
            assert gap is not None and gap.held and k.sim_time < gap.end
            before = host(k)
            request(k, heap, pacer)
            assert k.gap is None and before - TICK_NS < k.sim_time <= host(k)
            await made(k, maker)                   # and the next one is made after it
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_nothing_is_made_ahead_when_nothing_costly_records_or_on_a_manual_clock():
    k = boot(Clock())                           # nothing traced: an idle stretch is cheap
    assert parts(k)[2].due_in() is None
    k = boot(ManualClock(), ("current_tracer", "function"))
    assert parts(k)[2].due_in() is None         # the same commands give the same files


def test_the_window_is_due_once_a_gap_is_and_later_while_requests_are_under_way():
    k = boot(Clock(), ("current_tracer", "function"))
    heap, pacer, maker = parts(k)
    request(k, heap, pacer)
    due = maker.due_in()
    threshold = k.gap_threshold() / 1e9
    assert 0 < due <= threshold + LATER_S
    heap.request_begins()                       # one under way, not waiting for data
    time.sleep(due)
    assert maker.due_in() > 0
    heap.request_ends()
    assert maker.due_in() == 0


def test_a_request_that_catches_a_gap_up_itself_is_followed_by_a_window():
    """The maker, woken by a request that catches up a gap of its own (not
    made ahead), waits for it to end, then makes the next one."""
    k = boot(Clock(), ("current_tracer", "function"))
    heap, pacer, maker = parts(k)

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(maker.run)
            await trio.sleep(0.5)                  # a gap by now, nothing made
            heap.request_begins()
            until = k.now_ns()
            while pacer.step(k, until):
                assert k.gap is not None and not k.gap.held
                await trio.sleep(0)                # the maker gets its turns
            heap.request_ends()
            await made(k, maker)
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_the_packer_packs_a_held_window_and_the_moved_entries_read_back(monkeypatch):
    """Packing while idle goes on in a window made ahead; its sub-buffers,
    packed, move their entries when read (``BufferPage.move``)."""
    from fakefs.kernel.trace import trace_activity
    monkeypatch.setattr(trace_activity, "RAW_WRITES", False)     # (sub-buffers of tuples)
    k = boot(Clock(), ("current_tracer", "function"))
    heap, pacer, maker = parts(k)
    cpu0 = k.tracing.global_trace.buffer.cpus[0]

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(maker.run)
            nursery.start_soon(heap.packer)
            await trio.sleep(0.01)
            gap = await window_made(k, heap, pacer, maker)
            end = gap.end
            await trio.sleep(1.0)
            assert sum(p.packed is not None for p in cpu0.pages) > 100
            held = list(cpu0.iter_events())
            request(k, heap, pacer)
            d = gap.end - end
            assert d > 0 and any(p.moved is not None and p.packed is not None for p in cpu0.pages)
            now = list(cpu0.iter_events())
            moved = [(e[0] + d,) + e[1:] for e in held[len(held) // 2:]]
            i = now.index(moved[0])
            assert now[i:i + len(moved)] == moved
            nursery.cancel_scope.cancel()

    trio.run(main)
