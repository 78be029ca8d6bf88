"""The tasks the simulated kernel boots with: ``data/tasks.toml``.

``load_tasks()`` reads the table (its format is described at the top of
the file) into a ``TaskTable``; ``spawn_boot_tasks()`` spawns its tasks on
the scheduler in order, drawing the random parts (a task's CPU, the pids
that go by between tasks) from the rng it is given, and hands every task
to a callback with its profile and weight.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
TASKS_PATH = os.path.join(DATA_DIR, "tasks.toml")

_TOP_KEYS = {"idle", "gap_pids", "boot"}
_IDLE_KEYS = {"profile_cpu0", "profile", "weight_min", "weight_per_task_weight"}
_STEP_KEYS = {"tasks", "per_cpu", "repeat", "repeat_min", "repeat_max", "skip", "defaults"}
_TASK_KEYS = {"comm", "user", "profile", "weight", "cpu", "pid", "gap", "threads", "bound"}
_PER_CPU = ("all", "secondary")


@dataclass(frozen=True)
class TaskSpec:
    """One task of the table (and its ``threads`` more threads)."""

    comm: str
    profile: str
    weight: float
    user: bool = False
    cpu: int | str = "any"         # a CPU number, "each" (the step's) or "any"
    pid: int | None = None
    gap: float = 0.0
    threads: int = 0
    bound: bool = False            # runs on its CPU only (kthread_bind: a per-CPU thread)


@dataclass(frozen=True)
class Step:
    """Tasks spawned in order, once, once per CPU, or a number of times."""

    tasks: tuple[TaskSpec, ...]
    per_cpu: str | None = None     # "all", "secondary"
    repeat: int | str = 1          # a count or "nr_cpus"
    repeat_min: int = 0
    repeat_max: int | None = None
    skip: tuple[int, int] | None = None

    def iterations(self, ncpu):
        """(CPU, count) for each time the tasks are spawned."""
        if self.per_cpu is not None:
            first = 1 if self.per_cpu == "secondary" else 0
            return [(cpu, cpu - first + 1) for cpu in range(first, ncpu)]
        n = ncpu if self.repeat == "nr_cpus" else self.repeat
        n = max(self.repeat_min, n if self.repeat_max is None else min(self.repeat_max, n))
        return [(None, i) for i in range(1, n + 1)]


@dataclass(frozen=True)
class TaskTable:
    """The boot tasks, and what the idle tasks do."""

    steps: tuple[Step, ...]
    idle_profile_cpu0: str
    idle_profile: str
    idle_weight_min: float
    idle_weight_per_task_weight: float
    gap_pids: tuple[int, int] = (1, 2)

    @property
    def idle_profiles(self):
        return (self.idle_profile_cpu0, self.idle_profile)

    def profiles(self) -> set[str]:
        """Every profile named (``"profile:threadfn"`` as written)."""
        return {t.profile for s in self.steps for t in s.tasks} | set(self.idle_profiles)


def load_tasks(path: str = TASKS_PATH) -> TaskTable:
    with open(path, "rb") as fh:
        return parse_tasks(tomllib.load(fh))


def parse_tasks(doc: dict) -> TaskTable:
    """The table from the parsed TOML ``doc``."""
    _known("the task table", doc, _TOP_KEYS)
    idle = doc.get("idle")
    if not isinstance(idle, dict):
        raise ValueError("tasks: no [idle] table")
    _known("[idle]", idle, _IDLE_KEYS)
    steps = tuple(_step(i, s) for i, s in enumerate(doc.get("boot", ()), 1))
    return TaskTable(steps, _get(idle, "profile_cpu0", str, "[idle]"),
                     _get(idle, "profile", str, "[idle]"),
                     float(_get(idle, "weight_min", (int, float), "[idle]")),
                     float(_get(idle, "weight_per_task_weight", (int, float), "[idle]")),
                     _pair(doc.get("gap_pids", (1, 2)), "gap_pids"))


def _step(i, raw):
    where = "[[boot]] #%d" % i
    _known(where, raw, _STEP_KEYS)
    defaults = raw.get("defaults", {})
    _known(where + " defaults", defaults, _TASK_KEYS)
    per_cpu = raw.get("per_cpu")
    if per_cpu is not None and per_cpu not in _PER_CPU:
        raise ValueError("tasks: %s: per_cpu is one of %s" % (where, ", ".join(_PER_CPU)))
    repeat = raw.get("repeat", 1)
    if not (repeat == "nr_cpus" or isinstance(repeat, int) and not isinstance(repeat, bool)):
        raise ValueError("tasks: %s: repeat is a count or \"nr_cpus\"" % where)
    if per_cpu is not None and "repeat" in raw:
        raise ValueError("tasks: %s: per_cpu or repeat, not both" % where)
    tasks = []
    for j, t in enumerate(raw.get("tasks", ()), 1):
        tw = "%s task %d" % (where, j)
        _known(tw, t, _TASK_KEYS)
        spec = _task(tw, {**defaults, **t})
        if spec.cpu == "each" and per_cpu is None:
            raise ValueError("tasks: %s: cpu = \"each\" outside a per_cpu step" % tw)
        tasks.append(spec)
    if not tasks:
        raise ValueError("tasks: %s: no tasks" % where)
    skip = raw.get("skip")
    return Step(tuple(tasks), per_cpu, repeat, raw.get("repeat_min", 0), raw.get("repeat_max"),
                _pair(skip, where + " skip") if skip is not None else None)


def _task(where, t):
    cpu = t.get("cpu", "any")
    if not (cpu in ("each", "any") or type(cpu) is int and cpu >= 0):
        raise ValueError("tasks: %s: cpu is a CPU number, \"each\" or \"any\"" % where)
    bound = t.get("bound", False)
    if not isinstance(bound, bool) or bound and cpu == "any":
        raise ValueError("tasks: %s: bound is true (with a CPU) or false" % where)
    return TaskSpec(_get(t, "comm", str, where), _get(t, "profile", str, where),
                    float(_get(t, "weight", (int, float), where)), bool(t.get("user", False)), cpu,
                    t.get("pid"), float(t.get("gap", 0.0)), int(t.get("threads", 0)), bound)


def _known(where, d, keys):
    if not isinstance(d, dict):
        raise ValueError("tasks: %s: not a table" % where)
    extra = set(d) - keys
    if extra:
        raise ValueError("tasks: %s: unknown keys %s" % (where, ", ".join(sorted(extra))))


def _get(d, key, types, where):
    v = d.get(key)
    if not isinstance(v, types) or isinstance(v, bool):
        raise ValueError("tasks: %s: %s missing or of the wrong type" % (where, key))
    return v


def _pair(v, where):
    if not (isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, int) for x in v)):
        raise ValueError("tasks: %s: expected [a, b] (a + a random share of b pids)" % where)
    return (v[0], v[1])


# ---------------------------------------------------------------- spawning
def spawn_boot_tasks(table: TaskTable, sched, rng, add) -> None:
    """Spawn the table's tasks on ``sched``; ``add(task, profile, weight,
    user)`` for each.  ``rng`` draws, in table order: a skip's share of
    pids, whether a gap's pids go by and how many, a task's CPU when any."""
    ncpu = sched.nr_cpus
    sched.next_pid = max(sched.next_pid, 1)
    for step in table.steps:
        if step.skip is not None:
            sched.next_pid += _share(step.skip, rng)
        for cpu, n in step.iterations(ncpu):
            for spec in step.tasks:
                _spawn(spec, sched, rng, add, table.gap_pids, cpu, n)


def _spawn(spec, sched, rng, add, gap_pids, step_cpu, n):
    ncpu = sched.nr_cpus
    if spec.gap > 0 and rng.random() < spec.gap:
        sched.next_pid += _share(gap_pids, rng)
    comm = fill_comm(spec.comm, ncpu, step_cpu, n)
    leader = None
    for _ in range(1 + spec.threads):
        if spec.cpu == "each":
            cpu = step_cpu
        elif spec.cpu == "any":
            cpu = int(rng.random() * ncpu)
        else:
            cpu = spec.cpu
        t = sched.spawn(comm, cpu=cpu, kthread=not spec.user,
                        pid=spec.pid if leader is None else None,
                        tgid=leader.pid if leader is not None else None)
        t.bound = spec.bound
        add(t, spec.profile, spec.weight, spec.user)
        if leader is None:
            leader = t


def _share(pair, rng):
    a, b = pair
    return a + int(rng.random() * b)


def fill_comm(pattern: str, ncpu: int, cpu: int | None = None, n: int = 1) -> str:
    """``pattern`` with {cpu}, {n} and {2ncpu} filled in."""
    comm = pattern.replace("{2ncpu}", str(2 * ncpu)).replace("{n}", str(n))
    if cpu is not None:
        comm = comm.replace("{cpu}", str(cpu))
    if "{" in comm or "}" in comm:
        raise ValueError("tasks: %r: unknown field in the comm" % pattern)
    return comm
