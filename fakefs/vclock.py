"""The virtual clock: simulated time moves only when told to.

``fakefs mount --clock virtual`` boots the kernel on a
:class:`~fakefs.sim.clock.ManualClock` whose boot instant on the wall
clock is fixed (VIRTUAL_BOOT_WALL), and follows no real process: the same
seed and the same commands then give byte-identical files, timestamps
included.  Time moves by writing to the control file ``.fakefs/clock`` at
the root of the mount (outside the kernel's files: ``sys/``, ``proc/``,
``dev/``, ``boot/``), or with ``fakefs clock MOUNTPOINT +1s``:

* reading it gives the simulated time, ``SECONDS.NANOSECONDS``;
* ``+DURATION`` moves it on (``+1s``, ``+250ms``, ``+10us``, ``+500ns``,
  ``+1.5``: a bare number is seconds);
* ``TIME`` (a duration counted from boot) moves it to that instant; an
  instant already past is EINVAL, as is anything else.

A write returns once the kernel has done the simulated work up to the new
instant (in steps, other requests let in between, as any catch-up): the
commands after it find nothing left to simulate (``echo 0 > tracing_on``
after ``fakefs clock MNT +5s`` of every event answered in 250-370 ms when
the write returned at once and the next request did the work), as the
wall clock's runner keeps a recording machine at the host's time.  What
can be seen of the stretch is all simulated (a 16 MB buffer is full
after ``+10s`` of the function tracer, as on a kernel: ``test_vclock``);
what no reader can see is skipped and counted.  Two moves with nothing
read between them are two stretches simulated, as if something had looked
in between (they were one).  Nothing happens between
moves: a read that blocks (``trace_pipe``) waits until the clock is moved.
"""

from __future__ import annotations

import errno
import os
import re
import sys

from .kernel.fs.pseudo import FileOperations, KernelError
from .sim.clock import ManualClock

VIRTUAL_BOOT_WALL = 1767225600.0       # 2026-01-01 00:00:00 UTC
CONTROL_DIR = ".fakefs"
CONTROL_FILE = CONTROL_DIR + "/clock"
MAX_STEP_NS = 10 ** 6 * 10 ** 9        # a million seconds at once at most
_UNITS = {"s": 10 ** 9, "ms": 10 ** 6, "us": 10 ** 3, "ns": 1}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(s|ms|us|ns)?")


def virtual_clock() -> ManualClock:
    return ManualClock(0, boot_wall=VIRTUAL_BOOT_WALL)


def parse_duration(text: str) -> int:
    """``1s``, ``250ms``, ``1.5`` (seconds) ... in nanoseconds; ValueError
    for anything else."""
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        raise ValueError(text)
    number, unit = m.group(1), m.group(2) or "s"
    whole, _, frac = number.partition(".")
    scale = _UNITS[unit]
    ns = int(whole) * scale
    if frac:
        ns += int(frac) * scale // 10 ** len(frac)
    return ns


def format_time(ns: int) -> str:
    return "%d.%09d" % divmod(ns, 10 ** 9)


class ClockFileOps(FileOperations):
    """``.fakefs/clock``: read the simulated time, write to move it on."""

    observes = False
    moves_time = True

    def __init__(self, clock: ManualClock):
        self.clock = clock

    def show(self, f):
        return format_time(self.clock.t) + "\n"

    def write(self, f, data: bytes) -> int:
        text = data.decode("latin-1").strip()
        relative = text.startswith("+")
        try:
            ns = parse_duration(text[1:] if relative else text)
        except ValueError:
            raise KernelError(errno.EINVAL) from None
        step = ns if relative else ns - self.clock.t
        if step < 0 or step > MAX_STEP_NS:
            raise KernelError(errno.EINVAL)
        self.clock.advance(step)
        return len(data)


def install(tree, clock: ManualClock) -> None:
    """The control file, at the root of the mount."""
    d = tree.makedirs(CONTROL_DIR)           # (the module loader's control file may be there)
    tree.create_file("clock", 0o644, d, None, ClockFileOps(clock))


def cmd_clock(args) -> int:
    """``fakefs clock MOUNTPOINT [+DURATION|TIME]``."""
    path = os.path.join(os.path.abspath(args.mountpoint), CONTROL_FILE)
    if not os.path.exists(path):
        print(f"fakefs: {args.mountpoint} is not a fakefs mount with a virtual clock "
              "(mount it with --clock virtual)", file=sys.stderr)
        return 1
    try:
        if args.time is not None:
            with open(path, "w") as fh:
                fh.write(args.time + "\n")
        with open(path) as fh:
            print(fh.read().strip())
    except OSError as e:
        if e.errno == errno.EINVAL:
            print(f"fakefs: cannot set the clock to '{args.time}': give +DURATION "
                  "(+1s, +250ms, +10us, +500ns) or a later TIME since boot", file=sys.stderr)
        else:
            print(f"fakefs: {path}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


def add_arguments(p) -> None:
    p.add_argument("mountpoint")
    p.add_argument("time", nargs="?",
                   help="+DURATION to move the clock on (+1s, +250ms, +10us, +500ns), "
                        "or a TIME since boot to move it to; none: print the time")
