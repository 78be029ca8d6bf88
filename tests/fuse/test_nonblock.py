"""trace_pipe honours the O_NONBLOCK the file has *now* (fcntl after open), and poll works."""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import threading
import time

import pytest

import mountlib

pytestmark = mountlib.requires_fuse


@pytest.fixture
def pipe_dir(tracing):
    with open(os.path.join(tracing, "tracing_on"), "w") as fh:
        fh.write("1")
    path = os.path.join(tracing, "trace_pipe")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)     # drain what is there
    try:
        while os.read(fd, 65536):
            pass
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    return tracing


def mark(tracing: str, text: str, delay: float = 0.0) -> threading.Thread:
    def go():
        time.sleep(delay)
        with open(os.path.join(tracing, "trace_marker"), "w") as fh:
            fh.write(text)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_set_blocking_false_after_open_gives_eagain(pipe_dir):
    fd = os.open(os.path.join(pipe_dir, "trace_pipe"), os.O_RDONLY)
    try:
        os.set_blocking(fd, False)
        t = time.monotonic()
        with pytest.raises(BlockingIOError):
            os.read(fd, 4096)
        assert time.monotonic() - t < 0.5
        # and back: a blocking read waits for data
        os.set_blocking(fd, True)
        mark(pipe_dir, "back-to-blocking", delay=0.3)
        t = time.monotonic()
        data = os.read(fd, 4096)
        assert b"back-to-blocking" in data and time.monotonic() - t >= 0.25
    finally:
        os.close(fd)


def test_fcntl_clear_nonblock_after_nonblocking_open(pipe_dir):
    fd = os.open(os.path.join(pipe_dir, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(BlockingIOError):
            os.read(fd, 4096)
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fl & ~os.O_NONBLOCK)
        mark(pipe_dir, "now-blocking", delay=0.3)
        assert b"now-blocking" in os.read(fd, 4096)
    finally:
        os.close(fd)


def test_poll_after_set_blocking(pipe_dir):
    fd = os.open(os.path.join(pipe_dir, "trace_pipe"), os.O_RDONLY)
    try:
        os.set_blocking(fd, False)
        p = select.poll()
        p.register(fd, select.POLLIN)
        assert p.poll(200) == []
        mark(pipe_dir, "poll-me", delay=0.2)
        t = time.monotonic()
        ev = p.poll(5000)
        assert ev and ev[0][1] & select.POLLIN and time.monotonic() - t < 2
        assert b"poll-me" in os.read(fd, 4096)
    finally:
        os.close(fd)


def test_asyncio_reader(pipe_dir):
    """An asyncio reader: set_blocking(False) + add_reader (epoll), the loop stays live."""
    async def main():
        loop = asyncio.get_running_loop()
        fd = os.open(os.path.join(pipe_dir, "trace_pipe"), os.O_RDONLY)
        os.set_blocking(fd, False)
        got: asyncio.Queue = asyncio.Queue()
        calls = 0

        def readable():
            nonlocal calls
            calls += 1
            try:
                got.put_nowait(os.read(fd, 65536))
            except BlockingIOError:
                pass
        loop.add_reader(fd, readable)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1
        tk = asyncio.create_task(ticker())
        try:
            mark(pipe_dir, "from-asyncio", delay=0.4)
            data = await asyncio.wait_for(got.get(), 5)
        finally:
            loop.remove_reader(fd)
            tk.cancel()
            os.close(fd)
        return data, ticks, calls
    data, ticks, calls = asyncio.run(main())
    assert b"from-asyncio" in data
    assert ticks >= 10, "the event loop was blocked by the read"
    assert calls <= 3, f"the reader was woken {calls} times for one line (busy loop)"
