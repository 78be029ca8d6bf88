"""What the simulated tasks ask of the kernel: their system calls (data/syscalls.toml).

Per workload profile: the call a task sleeps in when its burst of CPU time
ends, and the other calls it makes while it runs, at a mean CPU time apart.
Per call: its argument registers and return value, from symbols resolved
once per task and call (a program keeps using the same descriptors and
buffers), so a trace shows the repetition a real one does.

All draws come from the kernel's ``syscalls`` RNG, apart from the machine's,
so the machine's schedule does not depend on whether calls are traced.
"""

from __future__ import annotations

import os
import tomllib
from bisect import bisect_right

from ..kernel.lib._mt import expovariate
from ..kernel.entry_common import syscall_nr
from ..kernel.mm.maccess import UserRegions

DATA_PATH = os.path.join(os.path.dirname(__file__), "data", "syscalls.toml")
US = 1000
AT_FDCWD = 0xffffff9c             # (int)-100 as the register holds it
SYMBOLS = ("fd", "heap", "stack", "map", "count", "child", "cwd", "pid", "path", "program")


def load_syscalls(path: str = DATA_PATH) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


class CallSpec:
    """One system call: its number, argument specs and return spec."""

    __slots__ = ("name", "nr", "args", "ret", "timeout_arg")

    def __init__(self, name: str, spec: dict):
        self.name = name
        self.nr = syscall_nr(name)
        self.args = list(spec["args"])
        self.ret = spec["ret"]
        self.timeout_arg = spec.get("timeout_ms_arg")   # which argument is a timeout in ms
        for a in self.args + [self.ret]:
            if isinstance(a, str) and a not in SYMBOLS:
                raise ValueError("%s: unknown symbol %r" % (name, a))
        if self.ret == "count" and len(self.args) < 3:
            raise ValueError("%s: returns its count but has none" % name)

    def timeout_ns(self, args) -> int:
        """The timeout the call made with ``args`` sleeps with (0: none; a
        negative one waits for ever)."""
        if self.timeout_arg is None:
            return 0
        ms = args[self.timeout_arg]
        return 0 if ms >= 0x80000000 else ms * 1_000_000


class ProfileCalls:
    """The calls of one profile: the blocking one, the others and how often."""

    __slots__ = ("block", "every_ns", "calls", "cum", "startup")

    def __init__(self, spec: dict, calls: dict):
        self.block = calls[spec["block"]]
        self.every_ns = int(spec["every_us"] * US)
        # a program's first calls after its execve, in order (its loader's)
        self.startup = tuple(calls[name] for name in spec.get("startup", ()))
        self.calls = []
        self.cum = []
        total = 0.0
        for name, w in spec["calls"].items():
            total += float(w)
            self.calls.append(calls[name])
            self.cum.append(total)
        self.cum = [c / total for c in self.cum]

    def pick(self, x: float) -> CallSpec:
        """The call whose share of the cumulative weights holds ``x`` (the
        first ``cum`` above it)."""
        i = bisect_right(self.cum, x)
        return self.calls[i] if i < len(self.calls) else self.calls[-1]


class TaskCalls(UserRegions):
    """One task's view of its calls: its addresses and the values it uses.
    It is also the task's user memory as probes read it (``Task.mm``): the
    strings its calls pass (file names, its program's path) are its
    regions; any other address faults, as the model knows nothing there."""

    __slots__ = ("tgid", "heap", "stack", "map", "values", "program")

    def __init__(self, tgid: int, rng, program: str = ""):
        self.tgid = tgid
        self.heap = 0x55_0000_0000_00 + (rng.randrange(1 << 28) << 12)
        self.stack = 0x7ffc_0000_0000 + (rng.randrange(1 << 20) << 8)
        self.map = 0x7f00_0000_0000 + (rng.randrange(1 << 24) << 12)
        self.values: dict[int, tuple] = {}    # nr -> (args, ret)
        self.program = program                # the path it execs (a new child)
        super().__init__()                    # address -> a NUL-terminated string

    def name_address(self, m: int) -> int | None:
        """Where a file name it passes to a call of the kernel's own paths
        is (a name its calls passed, chosen by ``m``); None if none yet."""
        names = [a for a, data in self.regions.items() if data[:1] == b"/"]
        return names[m % len(names)] if names else None


class Syscalls:
    """The machine's system calls: which, when, with what."""

    __slots__ = ("rng", "calls", "profiles", "clone", "wait4", "execve", "exit_group", "paths")

    def __init__(self, rng, spec: dict | None = None):
        spec = spec or load_syscalls()
        self.rng = rng
        self.paths = [p.encode() + b"\0" for p in spec.get("paths", ["/"])]
        self.calls = {name: CallSpec(name, c) for name, c in spec["call"].items()}
        self.profiles = {name: ProfileCalls(p, self.calls) for name, p in spec["profile"].items()}
        self.clone = self.calls["clone"]
        self.wait4 = self.calls["wait4"]
        self.execve = self.calls["execve"]
        self.exit_group = self.calls["exit_group"]

    def of_profile(self, name: str | None) -> ProfileCalls | None:
        return self.profiles.get(name) if name else None

    def gap(self, prof: ProfileCalls) -> int:
        """CPU time until the task's next call."""
        return max(500, int(expovariate(self.rng, 1.0) * prof.every_ns))

    def next_call(self, prof: ProfileCalls) -> CallSpec:
        return prof.pick(self.rng.random())

    def task(self, tgid: int, program: str = "") -> TaskCalls:
        return TaskCalls(tgid, self.rng, program)

    def _value(self, tc: TaskCalls, sym):
        rng = self.rng
        if isinstance(sym, list):
            return self._value(tc, sym[rng.randrange(len(sym))])
        if isinstance(sym, int):
            return sym
        if sym == "fd":
            return 3 + rng.randrange(29)
        if sym in ("heap", "path", "program"):
            addr = tc.heap + (rng.randrange(1 << 16) << 4)
            if sym == "program" and tc.program:
                tc.regions[addr] = tc.program.encode() + b"\0"
            elif sym != "heap":        # (a program's path once it has one: its own)
                tc.regions[addr] = self.paths[(addr >> 4) % len(self.paths)]
            return addr
        if sym == "stack":
            return tc.stack - (rng.randrange(1 << 10) << 3)
        if sym == "map":
            return tc.map + (rng.randrange(1 << 12) << 12)
        if sym == "cwd":
            return AT_FDCWD
        if sym == "pid":
            return tc.tgid
        return 0                                 # "child": filled in by the call

    def values(self, tc: TaskCalls, call: CallSpec, child: int = 0) -> tuple:
        """(argument registers, return value) of ``call`` made by the task."""
        v = tc.values.get(call.nr)
        if v is None:
            args = tuple([self._value(tc, a) for a in call.args])   # (no generator: cpdef)
            ret = args[2] if call.ret == "count" else self._value(tc, call.ret)
            v = tc.values[call.nr] = (args + (0,) * (6 - len(args)), ret)
        if call.ret == "child":
            return v[0], child
        return v
