"""Check a trace's timeline: could a real machine have produced it?

``python -m fakefs.timeline TRACE`` reads the text of a ``trace`` file (any
tracer, any events) and counts violations of what every Linux trace keeps:

* ``ts``: per-CPU timestamps never decrease, and the merged output (the
  ``trace`` file interleaves the CPUs) is in timestamp order;
* ``switch-prev``: a ``sched_switch``'s ``prev_pid`` is the task the
  previous switch on that CPU put there, and is the line's pid;
* ``pid``: every line's pid is the task running on its CPU (once a switch
  on that CPU has been seen); a ``<stack trace>``/``<stack_id N>`` line
  has the pid of the event it was recorded with;
* ``two-cpus``: a task runs on one CPU at a time;
* ``wake-running``: ``sched_waking``/``sched_wakeup`` only of tasks that
  sleep (not running, not preempted-and-runnable);
* ``prev-state``: a task switched out asleep is woken before it runs
  again; one switched out runnable (``R``/``R+``) is not woken;
* ``flags``: context flags as the kernel has them: ``sched_switch`` always
  ``d..2.``; wakeups with irqs off, ``sched_wakeup`` one level deeper than
  its ``sched_waking``;
* ``idle-depth``: the idle task runs with preemption disabled, and an
  interrupt's own count is not in the preempt depth shown
  (``preempt_count() & 0xff``): every line of pid 0, its interrupts'
  included, shows a depth of at least 1 (``d.h1.``, ``..s1.``);
* ``per-cpu``: a per-CPU kernel thread (``kworker/N:M``, ``ksoftirqd/N``,
  ``migration/N``, ``cpuhp/N``, ``idle_inject/N``, ``rcuc/N``) runs on
  CPU N only: it is switched in there, its lines are there, and a wakeup
  targets that CPU;
* ``marker``: a ``trace_marker`` write is stamped in its writer's system
  call (``tracing_gen_ctx()``: irqs on, task context, depth 0: ``.....``
  but for need-resched), a task's writes in the order it made them, and
  on the clock's nanoseconds: three or more markers all on whole
  milliseconds are a clock that was never read.

A ``function_graph`` trace (``# tracer: function_graph``) read with
``funcgraph-abstime``, ``funcgraph-proc`` and ``funcgraph-tail`` on has its
own rules (``check_graph()``):

* ``ts``: as above, on the absolute times;
* ``graph-exit``: a ``} /* func */`` closes the function its task entered
  last and has not left, at the same depth (one entered before the trace
  began may close without an entry);
* ``graph-nest``: a function's duration covers the calls it made;
* ``graph-duration``: an exit's time is its entry's plus its duration
  (to the microsecond the times show).

The first switch seen on a CPU starts that CPU's timeline (what came before
was overwritten), and so does a ``CPU:N [LOST M EVENTS]`` line of a
consuming reader; the idle task (pid 0) is per CPU.  It reports counts per
rule and the first examples.  ``--filtered`` (``check(lines, whole=False)``)
is for a trace some events were filtered out of, or a few lines of one:
the rules about what comes before and after a line are not checked there.
"""

from __future__ import annotations

import heapq
import re
import sys
from collections import Counter

LINE_RE = re.compile(r"^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(\S{4,5})\s+(\d+)\.(\d+): (.*)$")
# (prev_pid, prev_state, next_comm, next_pid)
SWITCH_RE = re.compile(r"prev_comm=.* prev_pid=(-?\d+) prev_prio=-?\d+ prev_state=(\S+) ==> "
                       r"next_comm=(.*) next_pid=(\d+) next_prio=-?\d+$")
WAKE_RE = re.compile(r"comm=(.*) pid=(\d+) prio=-?\d+ target_cpu=(\d+)")   # (comm, pid, target)
LOST_RE = re.compile(r"^CPU:(\d+) \[LOST (\d+) EVENTS\]")
# the names of per-CPU kernel threads, with the CPU they are bound to
PER_CPU_RE = re.compile(r"(?:kworker/(\d+):\d+H?(?:-.*)?|(?:ksoftirqd|migration|cpuhp|idle_inject"
                        r"|rcuc)/(\d+))")
RUNNABLE = ("R", "R+")


class Report:
    __slots__ = ("lines", "events", "violations", "examples", "lost")

    def __init__(self):
        self.lines = 0
        self.lost = 0                 # events a consuming reader was told it lost
        self.events = Counter()
        self.violations = Counter()
        self.examples: dict[str, list[str]] = {}

    def bad(self, rule: str, line: str) -> None:
        self.violations[rule] += 1
        ex = self.examples.setdefault(rule, [])
        if len(ex) < 3:
            ex.append(line)

    @property
    def total(self) -> int:
        return sum(self.violations.values())

    def text(self) -> str:
        out = ["lines %d, events %d, lost %d, violations %d"
               % (self.lines, sum(self.events.values()), self.lost, self.total)]
        for rule, n in sorted(self.violations.items()):
            out.append("  %-13s %d" % (rule, n))
            for ex in self.examples.get(rule, ()):
                out.append("      " + ex[:160])
        return "\n".join(out)


def bound_cpu(comm: str) -> int | None:
    """The CPU a per-CPU kernel thread named ``comm`` runs on, or None."""
    m = PER_CPU_RE.fullmatch(comm)
    if m is None:
        return None
    return int(m.group(1) if m.group(1) is not None else m.group(2))


def _start(lines) -> int:
    """When every CPU's part of the trace has begun (older entries of the
    CPU that began last were overwritten: what other CPUs show before it
    cannot be checked against it)."""
    first: dict[int, int] = {}
    for line in lines:
        if line.startswith("#"):
            continue
        m = LINE_RE.match(line)
        if m is not None:
            first.setdefault(int(m.group(3)), int(m.group(5)) * 1_000_000 + int(m.group(6)[:6]))
    return max(first.values(), default=0)


def _lost_windows(lines) -> list[tuple[int, int, int]]:
    """For each ``CPU:N [LOST M EVENTS]``: from that CPU's last line before
    it to its next line after it — when that CPU did things nobody saw."""
    windows, last, open_at = [], {}, {}
    for line in lines:
        lost = LOST_RE.match(line)
        if lost is not None:
            cpu = int(lost.group(1))
            open_at[cpu] = last.get(cpu, 0)
            continue
        m = LINE_RE.match(line)
        if m is None:
            continue
        cpu = int(m.group(3))
        ts = int(m.group(5)) * 1_000_000 + int(m.group(6).ljust(6, "0")[:6])
        if cpu in open_at:
            windows.append((open_at.pop(cpu), ts, cpu))
        last[cpu] = ts
    windows.sort()
    return windows


# the rules about what comes before and after a line: a filtered trace, or
# a few lines of one, cannot keep them
SEQUENCE_RULES = frozenset({"switch-prev", "pid", "two-cpus", "wake-running", "prev-state"})


def check(lines, whole: bool = True) -> Report:
    """The violations in the text of a trace (``whole``: every event of its
    span is there; else only what each line must keep, and their order, is
    checked: a filtered trace, a ``tail`` of one)."""
    lines = list(lines)
    start = _start(lines)
    windows = _lost_windows(lines)
    wi = 0
    unseen: list = []                     # heap of (end, cpu) of windows open now
    rep = Report()
    last_ts: dict[int, int] = {}
    merged_ts = -1
    running: dict[int, int] = {}          # cpu -> pid
    where: dict[int, int] = {}            # pid -> cpu it runs on
    state: dict[int, str] = {}            # pid -> state it was switched out in
    waking_depth: dict[int, int] = {}     # pid -> depth of its last sched_waking
    last_pid: dict[int, int] = {}         # cpu -> pid of its last event line
    last_mark: dict[int, int] = {}        # pid -> stamp of its last marker
    whole_ms: list[str] = []              # the markers on whole milliseconds
    marks = 0
    judging = False

    def bad(rule: str, line: str) -> None:
        # what each line must keep holds from the first line on; what the
        # lines before it tell, once every CPU's part has begun
        if rule not in SEQUENCE_RULES or (whole and judging):
            rep.bad(rule, line)

    for raw in lines:
        line = raw.rstrip("\n")
        if not line or line.startswith("#") or line.lstrip().startswith("=>"):
            continue
        lost = LOST_RE.match(line)
        if lost is not None:
            # the writer overwrote entries of that CPU the reader never saw:
            # its timeline starts again, and what others knew of tasks is stale
            cpu = int(lost.group(1))
            running.pop(cpu, None)
            last_pid.pop(cpu, None)
            for pid in [p for p, c in where.items() if c == cpu]:
                del where[pid]
            state.clear()
            waking_depth.clear()
            rep.lost += int(lost.group(2))
            continue
        m = LINE_RE.match(line)
        if m is None:
            continue
        rep.lines += 1
        pid, cpu, flags = int(m.group(2)), int(m.group(3)), m.group(4)
        ts = int(m.group(5)) * 1_000_000 + int(m.group(6).ljust(6, "0")[:6])
        while wi < len(windows) and windows[wi][0] <= ts:
            heapq.heappush(unseen, (windows[wi][1], windows[wi][2]))
            wi += 1
        while unseen and unseen[0][0] < ts:
            heapq.heappop(unseen)
        if unseen:
            # CPUs whose work nobody saw may have woken, run or put to sleep
            # any task: forget what is known of tasks, and where theirs ran
            state.clear()
            waking_depth.clear()
            blind = {c for _end, c in unseen}
            for pid in [p for p, c in where.items() if c in blind]:
                del where[pid]
        # before every CPU has begun, learn who runs where but judge nothing
        if not judging and ts >= start:
            # sleep states learned from the CPUs that began early are
            # incomplete (the others' wakeups were overwritten): forget them
            judging = True
            state.clear()
            waking_depth.clear()
        rest = m.group(7)
        if flags[3] == "." and pid == 0:
            bad("idle-depth", line)
        own = bound_cpu(m.group(1).strip())
        if own is not None and own != cpu:
            bad("per-cpu", line)
        if rest.startswith(("<stack trace>", "<user stack trace>", "<stack_id ")):
            # recorded with the event it follows, in the same context
            if pid != last_pid.get(cpu, pid) or ts < last_ts.get(cpu, -1):
                bad("pid", line)
            continue
        last_pid[cpu] = pid
        name, sep, body = rest.partition(": ")
        event = name if sep and re.fullmatch(r"\w+", name) else "function"
        rep.events[event] += 1
        if ts < last_ts.get(cpu, -1):
            bad("ts", line)
        last_ts[cpu] = ts
        if ts < merged_ts:
            bad("ts", line)
        merged_ts = max(merged_ts, ts)
        cur = running.get(cpu)
        if event == "sched_switch":
            sm = SWITCH_RE.match(body)
            if sm is None:
                continue
            prev, pstate, nxt = int(sm.group(1)), sm.group(2), int(sm.group(4))
            if flags[:4] != "d..2":
                bad("flags", line)
            if bound_cpu(sm.group(3)) not in (None, cpu):
                bad("per-cpu", line)
            if (cur is not None and prev != cur) or prev != pid:
                bad("switch-prev", line)
            if prev:
                where.pop(prev, None)
                state[prev] = pstate
            if nxt:
                other = where.get(nxt)
                if other is not None and other != cpu and running.get(other) == nxt:
                    bad("two-cpus", line)
                if state.get(nxt, "R") not in RUNNABLE and nxt in state:
                    bad("prev-state", line)      # asleep, never woken, runs again
                where[nxt] = cpu
                state[nxt] = "R"
            running[cpu] = nxt
            continue
        if cur is not None and pid != cur:
            bad("pid", line)
        if event == "tracing_mark_write":
            marks += 1
            if flags[0] != "." or flags[2:4] != "..":
                bad("marker", line)
            if ts < last_mark.get(pid, -1):
                bad("marker", line)
            last_mark[pid] = ts
            if m.group(6).ljust(6, "0")[3:6] == "000":
                whole_ms.append(line)
        if event in ("sched_waking", "sched_wakeup"):
            wm = WAKE_RE.match(body)
            if wm is None:
                continue
            p = int(wm.group(2))
            if bound_cpu(wm.group(1)) not in (None, int(wm.group(3))):
                bad("per-cpu", line)
            if flags[0] not in "dD":
                bad("flags", line)
            depth = int(flags[3], 16) if flags[3] != "." else 0
            if event == "sched_waking":
                if p in where or state.get(p) in RUNNABLE:
                    bad("wake-running", line)
                waking_depth[p] = depth
            else:
                if p in where:
                    bad("wake-running", line)
                if p in waking_depth and depth != waking_depth.pop(p) + 1:
                    bad("flags", line)
                state[p] = "R"
    if marks >= 3 and len(whole_ms) == marks:
        rep.bad("marker", whole_ms[0])
    return rep


GRAPH_RE = re.compile(r"^\s*(\d+)\.(\d{6}) \|\s+(\d+)\)\s+(.*?)-(\d+)\s+\|"
                      r"\s*[+!#*@$]?\s*(?:(\d+(?:\.\d+)?) us)?\s*\|  ( *)(.*)$")
GRAPH_NEEDS = "funcgraph-abstime, funcgraph-proc and funcgraph-tail"


def _us(text: str | None) -> float | None:
    return float(text) if text else None


def check_graph(lines) -> Report:
    """The violations in the text of a function_graph trace (see above)."""
    rep = Report()
    last_ts: dict[int, int] = {}
    merged_ts = -1
    open_of: dict[tuple, list] = {}     # task -> [[name, depth, ts, longest call inside]]
    for raw in lines:
        line = raw.rstrip("\n")
        if not line or line.startswith("#") or line.startswith(" ---"):
            continue
        m = GRAPH_RE.match(line)
        if m is None:
            continue
        rep.lines += 1
        ts = int(m.group(1)) * 1_000_000 + int(m.group(2))
        cpu, pid = int(m.group(3)), int(m.group(5))
        dur, depth, what = _us(m.group(6)), len(m.group(7)) // 2, m.group(8)
        if ts < last_ts.get(cpu, -1) or ts < merged_ts:
            rep.bad("ts", line)
        last_ts[cpu] = ts
        merged_ts = max(merged_ts, ts)
        task = (pid, cpu) if pid == 0 else (pid,)        # an idle task per CPU
        st = open_of.setdefault(task, [])
        if what.endswith("() {"):
            rep.events["funcgraph_entry"] += 1
            while st and st[-1][1] >= depth:              # left before the trace kept them
                st.pop()
            st.append([what[:-4], depth, ts, 0.0])
            continue
        if what.endswith("();"):
            rep.events["funcgraph_entry"] += 1
            if st and dur is not None and st[-1][1] < depth:
                st[-1][3] = max(st[-1][3], dur)
            continue
        tail = re.match(r"\} /\* (.*) \*/$", what)
        if tail is None:
            continue
        rep.events["funcgraph_exit"] += 1
        while st and st[-1][1] > depth:                   # deeper ones never closed
            rep.bad("graph-exit", line)
            st.pop()
        if not st or st[-1][1] != depth:
            continue                                      # entered before the trace
        name, _d, entry_ts, inner = st.pop()
        if name != tail.group(1):
            rep.bad("graph-exit", line)
            continue
        if dur is not None:
            if inner > dur + 0.001:
                rep.bad("graph-nest", line)
            if abs((ts - entry_ts) - dur) > 1.5:
                rep.bad("graph-duration", line)
            if st:
                st[-1][3] = max(st[-1][3], dur)
    return rep


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    whole = "--filtered" not in argv
    argv = [a for a in argv if a != "--filtered"]
    if not argv:
        print("usage: python -m fakefs.timeline [--filtered] TRACE [TRACE...]\n"
              "  --filtered: events were filtered out (or lines cut): only what each\n"
              "  line must keep is checked", file=sys.stderr)
        return 2
    worst = 0
    for path in argv:
        with open(path, errors="replace") as fh:
            text = fh.readlines()
        if text and text[0].startswith("# tracer: function_graph"):
            head = "".join(text[:8])
            if "TIME" not in head or "TASK/PID" not in head:
                print("%s: a function_graph trace needs %s on" % (path, GRAPH_NEEDS),
                      file=sys.stderr)
                return 2
            rep = check_graph(text)
        else:
            rep = check(text, whole)
        print("%s: %s" % (path, rep.text()))
        worst = max(worst, rep.total)
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
