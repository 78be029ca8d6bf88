"""``/sys/devices/system/cpu`` (drivers/base/cpu.c) and CPU hotplug (kernel/cpu.c).

The masks read like the kernel's ``%*pbl``: ``possible`` and ``present``
``0-N``, ``online`` the CPUs online, ``offline`` the others (a newline
when none is), ``kernel_max`` NR_CPUS - 1.

With CONFIG_HOTPLUG_CPU (Debian's 6.12 has it; ``-o CONFIG_HOTPLUG_CPU=n``
builds the kernel without) every CPU but the boot CPU has ``cpuN/online``
(0644; x86's ``arch_cpu_is_hotpluggable()`` is ``cpu > 0``, so ``cpu0`` has
none): it reads ``1`` or ``0`` and a newline (``online_show``); a write is
parsed as ``kstrtobool()`` parses (``1 y Y t T on`` / ``0 n N f F off`` by
their first characters, anything else EINVAL; an empty write does nothing),
then ``device_online()``/``device_offline()``: the state it is in already
is a success that changes nothing, offlining the last online CPU is EBUSY
(``cpu_down_maps_locked``).  Without hotplug no ``online`` file exists and
every CPU stays online.

What going offline does on the simulated machine (``fakefs/sim/machine.py``,
``Machine.cpu_down``/``cpu_up``): from the write on, the CPU takes no new
work (``Scheduler.online``: wakeups, device interrupts and timers go to
online CPUs); once the interrupts it is in the middle of are over, the task
it runs is switched out (``sched_switch`` to its idle task) and it and
every queued task move to online CPUs (``sched_migrate_task``), its wheel
timers and RCU callbacks go to another CPU, and it is dead: no tick, no
interrupt, no call, nothing written to its ring buffers (its per-CPU
buffers and ``per_cpu/cpuN`` files stay, as the kernel keeps them).  Its
per-CPU kernel threads (``bound``) are parked: a wakeup of one waits until
the CPU is back.  Onlining starts it again idle (``cpu_idle``), its tick
again, the parked threads sleeping as they do.  The writer waits for the
change in simulated time.  Not modelled: the hotplug states themselves
(``cpuhp_enter``/``cpuhp_exit`` events never fire; ``hotplug/states`` and
``cpuN/hotplug/`` are not served), the cpuhp and stopper threads' own
switches, per-CPU kworkers of a dead CPU running unbound.

What tracing sees of it: ``CpuHotplug.offline_spans()`` (the CPU's offline
stretches, the time hooks' windows cut by them), the trace's ``#P:``
(``num_online_cpus()``).
"""

from __future__ import annotations

import errno
from bisect import bisect_left

from .fs.pseudo import FileOperations, KernelError, Later, after_that, later
from .lib.bitmap import bitmap_list_string

NR_CPUS = 8192            # CONFIG_NR_CPUS of Debian's x86_64 kernels
SYSFS_PAGE = 4096         # a sysfs store sees at most a page of a write
SPANS_KEPT = 64           # per CPU: the offline stretches remembered


def kstrtobool(s: bytes) -> bool:
    """lib/kstrtox.c ``kstrtobool()``: the first character (two for
    ``on``/``off``) decides; anything else is EINVAL."""
    c = s[:1]
    if c in (b"y", b"Y", b"t", b"T", b"1"):
        return True
    if c in (b"n", b"N", b"f", b"F", b"0"):
        return False
    if c in (b"o", b"O"):
        d = s[1:2]
        if d in (b"n", b"N"):
            return True
        if d in (b"f", b"F"):
            return False
    raise KernelError(errno.EINVAL)


class CpuHotplug:
    """The CPUs online, and when each was offline (for the time hooks)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.enabled = kernel.config.enabled("HOTPLUG_CPU")
        self.online = kernel.sched.online          # shared with the scheduler
        # per CPU: [down, up] stretches it was offline (up None: still is)
        self.spans: list[list[list]] = [[] for _ in range(kernel.nr_cpus)]
        self.changes = 0                            # hotplug operations done

    def hotpluggable(self, cpu: int) -> bool:
        return self.enabled and 0 < cpu < self.kernel.nr_cpus

    def mask(self) -> int:
        m = 0
        for cpu, on in enumerate(self.online):
            if on:
                m |= 1 << cpu
        return m

    def nr_online(self) -> int:
        return sum(self.online)

    # --- the record of offline stretches -------------------------------
    def note(self, cpu: int, t: int, online: bool) -> None:
        """The machine took ``cpu`` down (``online`` False) or brought it up at ``t``."""
        spans = self.spans[cpu]
        if online:
            if spans and spans[-1][1] is None:
                spans[-1][1] = t
        else:
            spans.append([t, None])
            if len(spans) > SPANS_KEPT:
                del spans[0]

    def any_offline(self, t0: int) -> bool:
        """Was any CPU offline at or after ``t0``?"""
        for spans in self.spans:
            if spans and (spans[-1][1] is None or spans[-1][1] > t0):
                return True
        return False

    def offline_spans(self, cpu: int, t0: int, t1: int) -> list[tuple[int, int]]:
        """The parts of [t0, t1) ``cpu`` was offline in, in order."""
        out = []
        for a, b in self.spans[cpu]:
            b = t1 if b is None else b
            a, b = max(a, t0), min(b, t1)
            if a < b:
                out.append((a, b))
        return out

    def cut(self, cpu: int, t0: int, t1: int, calls, occ, keep_id):
        """What ``cpu`` does in [t0, t1) (the time hook's instants of calls,
        sorted, and occurrences ``(ts, id, what)``) less what falls where
        it was offline; occurrences of id ``keep_id`` (what the machine
        did: it does nothing on an offline CPU) stay."""
        off = self.offline_spans(cpu, t0, t1)
        if not off:
            return calls, occ
        out = calls[:0]
        i = 0
        for a, b in off:
            j = bisect_left(calls, a, i)
            out += calls[i:j]
            i = bisect_left(calls, b, j)
        out += calls[i:]
        occ = [o for o in occ if o[1] == keep_id or not any(a <= o[0] < b for a, b in off)]
        return out, occ

    def cpu_at(self, cpu: int, t: int) -> int:
        """``cpu`` if it was online at ``t``, else the next CPU that was
        (where what was meant for it happened)."""
        n = len(self.spans)
        for i in range(n):
            c = (cpu + i) % n
            if not any(a <= t and (b is None or t < b) for a, b in self.spans[c]):
                return c
        return cpu

    # --- device_offline() / device_online() ------------------------------
    def cpu_down(self, cpu: int, pid: int = 0) -> Later | None:
        """Take ``cpu`` offline now (the caller checked it is online); the
        calling process ``pid`` waits for it: a ``Later`` while the machine
        has yet to do it (its caller moves the machine on)."""
        if self.nr_online() <= 1:
            raise KernelError(errno.EBUSY)
        return self._change(cpu, False, pid)

    def cpu_up(self, cpu: int, pid: int = 0) -> Later | None:
        return self._change(cpu, True, pid)

    def _change(self, cpu: int, online: bool, pid: int) -> Later | None:
        k = self.kernel
        drv = k.driver
        if drv is not None and pid:
            _pid, _cpu, t = drv.host_task(pid, k.sim_time)      # the writer's call
            return later(k, t + 1, lambda: self._changed(cpu, online, t))
        return self._changed(cpu, online, k.sim_time)

    def _changed(self, cpu: int, online: bool, t: int) -> Later | None:
        k = self.kernel
        drv = k.driver
        self.changes += 1
        if drv is None or drv.frozen:
            # nothing runs the machine now: the state changes at once
            self.online[cpu] = online
            if drv is not None:
                drv.cpu_state(cpu, online, t)
            self.note(cpu, max(t, k.sim_time), online)
            return None
        (drv.cpu_up if online else drv.cpu_down)(cpu, t)
        return self._done(cpu, online)

    def _done(self, cpu: int, online: bool) -> Later | None:
        """The machine does it in its own time: the writer waits."""
        k = self.kernel
        drv = k.driver
        if drv.cpu_dead(cpu) != online:
            return None
        if drv.frozen:                     # (it stood still meanwhile)
            self.online[cpu] = online
            drv.cpu_state(cpu, online, k.sim_time)
            self.note(cpu, k.sim_time, online)
            return None
        return Later(max(k.sim_time, drv.clock[cpu]) + 20_000, lambda: self._done(cpu, online))


def num_online_cpus(kernel) -> int:
    hp = getattr(kernel, "cpuhp", None)
    return hp.nr_online() if hp is not None else kernel.nr_cpus


def online_cpu(kernel, cpu: int) -> int:
    """``cpu`` if it is online, else the next online one (the CPU a
    process said to be on runs on while ``cpu`` is offline)."""
    online = kernel.sched.online
    n = len(online)
    for i in range(n):
        c = (cpu + i) % n
        if online[c]:
            return c
    return cpu


class CpuMaskOps(FileOperations):
    observes = False

    def __init__(self, which: str):
        self.which = which

    def show(self, f):
        kernel = f.data
        if self.which == "kernel_max":
            return "%d\n" % (NR_CPUS - 1)
        every = (1 << kernel.nr_cpus) - 1
        if self.which == "online":
            return bitmap_list_string(kernel.cpuhp.mask()) + "\n"
        if self.which == "offline":
            return bitmap_list_string(every & ~kernel.cpuhp.mask()) + "\n"
        return bitmap_list_string(every) + "\n"


class CpuOnlineOps(FileOperations):
    """``cpuN/online`` (drivers/base/core.c ``online_show``/``online_store``)."""

    observes = False

    def __init__(self, cpu: int):
        self.cpu = cpu

    def show(self, f):
        return "%u\n" % self.online(f)

    def online(self, f) -> bool:
        return bool(f.data.online[self.cpu])

    def write(self, f, data):
        data = bytes(data[:SYSFS_PAGE])
        if not data:
            return 0                       # sysfs_kf_write: nothing to store
        val = kstrtobool(data)
        hp = f.data
        if val == self.online(f):
            return len(data)               # device_online/offline: already so (1)
        done = hp.cpu_up(self.cpu, f.pid) if val else hp.cpu_down(self.cpu, f.pid)
        return after_that(done, lambda: len(data))


def cpu_dev_init(kernel) -> None:
    hp = kernel.cpuhp = CpuHotplug(kernel)
    d = kernel.tree.makedirs("sys/devices/system/cpu")
    for name in ("kernel_max", "offline", "online", "possible", "present"):
        kernel.tree.create_file(name, 0o444, d, kernel, CpuMaskOps(name))
    for cpu in range(kernel.nr_cpus):
        cd = kernel.tree.create_dir("cpu%d" % cpu, d, 0o755)
        if hp.hotpluggable(cpu):
            kernel.tree.create_file("online", 0o644, cd, hp, CpuOnlineOps(cpu))
