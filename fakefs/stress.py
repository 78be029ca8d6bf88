"""Fault and load checks against a live mount: ``python -m fakefs.stress``.

* **fuzz**: every writable file (top level, ``options/*`` — ``markers`` is
  kept on —, ``per_cpu/*``, instances and theirs, event ``enable``/``filter``
  files, procfs sysctls) gets random and boundary inputs from 8 concurrent
  writers; ``instances/`` gets concurrent mkdir/rmdir of odd names.
  Property: every write either succeeds or fails with an errno a kernel
  handler returns; never EIO (an exception in the daemon), never a lost
  mount, never a writer that does not come back.
* **shells**: N concurrent bash loops doing ``cat``/``echo``/``mkdir``/
  ``rmdir`` of instances, timing each command with ``$EPOCHREALTIME``; the
  same commands from one shell on the idle mount first give the baseline.

``make stress`` runs both for minutes and checks the latency targets
(p99 under 50 shells: ``cat tracing_on`` <= 50 ms, instance mkdir/rmdir
<= 200 ms); ``tests/fuse/test_stress.py`` runs short versions in
``make test``.  Every failure names the seed, the file and the input.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

TRACING = "sys/kernel/tracing"
WRITERS = 8
# a writer still in its write this long after the deadline is stuck (a hang,
# not a slow host: CI runs the fuzz beside ftracetest on two cores)
STUCK_GRACE_S = 15.0
# errnos a kernel write handler may legitimately return
ALLOWED_ERRNOS = {errno.EINVAL, errno.EBUSY, errno.ENOENT, errno.EPERM, errno.EACCES,
                  errno.ENODEV, errno.ENOSPC, errno.EBADF, errno.E2BIG, errno.ENOMEM,
                  errno.EEXIST, errno.EFAULT, errno.ERANGE, errno.EAGAIN, errno.ENOTDIR,
                  errno.EISDIR, errno.ENAMETOOLONG, errno.ENOTEMPTY, errno.ESRCH,
                  errno.EOVERFLOW, errno.EILSEQ, errno.EOPNOTSUPP}
KEEP_ON = {"markers"}                  # options that stay set (trace_marker writers need it)
TARGETS_MS = {"cat tracing_on": 50.0, "mkdir instance": 200.0, "rmdir instance": 200.0}

BOUNDARY = [b"", b"\n", b"0", b"1", b"-1", b"2", b"0\n", b"1\n", b" 1 ", b"01", b"0x10",
            b"-0", b"+1", b"127", b"128", b"255", b"256", b"1023", b"1024", b"4096",
            b"65535", b"65536", b"2147483647", b"2147483648", b"-2147483648",
            b"4294967295", b"4294967296", b"9223372036854775807", b"9223372036854775808",
            b"18446744073709551615", b"18446744073709551616", b"99999999999999999999999999",
            b"abc", b"!", b"!!", b"*", b"**", b"?", b"[", b"\\", b"\x00", b"\x00\x01\xff",
            b"\xff\xfe", "é".encode(), b"nop", b"function", b"global", b"local", b"counter",
            b"no", b"nomarkers", b"stackmap", b"nostackmap", b"ff", b"f", b"0,1", b"1-3",
            b"sched:sched_switch", b"!sched:*", b"sched_switch", b"*:*", b"prev_pid > 0",
            b"prev_pid == ", b"common_pid & 1", b"((((", b"))", b"&&", b"||",
            b"schedule:traceon", b"schedule:stacktrace:5", b"kfree:disable_event:kmem:kfree",
            # probe commands (kprobe_events, dynamic_events) and their removal
            b"p:fz kernel_clone $arg1", b"r:fz kernel_clone $retval", b"p 0x0", b"p kernel_clone+1",
            b"f:fz vfs_read $arg1 +0($arg2):string", b"f vfs_read%return $retval $arg1",
            b"t:fz kmem_cache_alloc $arg1 $comm", b"t sched_switch", b"f vfs_read $arg*",
            b"e:fz kmem.kmem_cache_alloc $ptr $bytes_alloc:u32 if bytes_alloc > 100",
            b"e syscalls/sys_enter_openat +0($filename):ustring", b"-:fz", b"!t sched_switch",
            # user memory: ustring, +u dereferences, arrays of user strings
            b"p:fz do_sys_openat2 +u0($arg2):string +0($arg2):ustring +u8(+u0($arg2)):u64",
            b"e syscalls/sys_enter_execve +0($filename):ustring +u0($argv):ustring[3]",
            # BTF arguments: names, fields, $arg*, strings from char pointers
            b"t:fz sched_wakeup p->se.group_node.next->prev p->prio",
            b"f:fz getname_flags%return $retval->name:string", b"p kfree $arg* object:string",
            b"f vfs_read file->f_mode file-.x file.y $arg0 $arg9:u8 ->",
            # uprobes: paths in the writer's view, offsets, reference counters
            b"p:fz /bin/sh:0x10", b"r /bin/sh:0x0(0x2) %ax @+0x10 $stack1 $comm",
            b"p /bin/sh:10(1a) @sym", b"p /nonexistent:1", b"p /proc:0 $arg1", b"-:uprobes/fz",
            b"x" * 255, b"x" * 4095, b"x" * 4096, b"x" * 65537, b"1\n" * 100]


def rand_input(rng: random.Random, current: bytes) -> bytes:
    r = rng.random()
    if r < 0.45:
        return rng.choice(BOUNDARY)
    if r < 0.6 and current:
        lines = current.split(b"\n")
        return rng.choice(lines)[:200]                 # something the file itself printed
    if r < 0.75:
        return str(rng.choice([rng.randint(-10, 10), rng.getrandbits(rng.randint(1, 70))])
                   ).encode()
    if r < 0.9:
        alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789_:!*,.-> =&|()\n\t "
        return bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
    return rng.randbytes(rng.randint(1, 300))


# --------------------------------------------------------------------------
# Which files
# --------------------------------------------------------------------------

def _writable(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return bool(st.st_mode & 0o222) and not os.path.isdir(path)


def writable_files(mnt: str, max_events: int = 12) -> list[str]:
    """Every writable file of the tracefs (events sampled: ``max_events``
    event directories) and of procfs, relative to ``mnt``."""
    out = []
    t = os.path.join(mnt, TRACING)
    for base, dirs, files in os.walk(t):
        rel = os.path.relpath(base, mnt)
        parts = rel.split(os.sep)
        if "events" in parts:
            i = parts.index("events")
            depth = len(parts) - i - 1          # 0: events/, 1: a system, 2: an event
            if depth == 1:
                dirs[:] = dirs[:max(1, max_events // 4)]
            elif depth > 2:
                dirs[:] = []
        for f in files:
            p = os.path.join(base, f)
            if f in KEEP_ON and base.endswith("options"):
                continue
            if _writable(p):
                out.append(os.path.relpath(p, mnt))
    for base, _dirs, files in os.walk(os.path.join(mnt, "proc")):
        for f in files:
            p = os.path.join(base, f)
            if _writable(p):
                out.append(os.path.relpath(p, mnt))
    if _writable(os.path.join(mnt, "dev/kmsg")):
        out.append("dev/kmsg")
    return sorted(out)


# --------------------------------------------------------------------------
# Fuzzing
# --------------------------------------------------------------------------

@dataclass
class FuzzReport:
    seed: int
    files: int = 0
    writes: int = 0
    mkdirs: int = 0
    outcomes: Counter = field(default_factory=Counter)
    bad: list = field(default_factory=list)          # (file, input, errno name)
    stuck: list = field(default_factory=list)        # "file: what it was doing"
    doing: dict = field(default_factory=dict)        # thread ident -> its operation now
    elapsed: float = 0.0

    def ok(self) -> bool:
        return not self.bad and not self.stuck

    def summary(self) -> str:
        top = ", ".join(f"{k} {v}" for k, v in self.outcomes.most_common(8))
        return (f"fuzz (seed {self.seed}): {self.writes} writes to {self.files} files and "
                f"{self.mkdirs} instance mkdir/rmdir in {self.elapsed:.1f} s; outcomes: {top}; "
                f"{len(self.bad)} bad, {len(self.stuck)} stuck")


def _write_once(path: str, data: bytes, append: bool) -> str:
    flags = os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    try:
        os.write(fd, data)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        try:
            os.close(fd)
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))


def _is_bad(outcome: str) -> bool:
    if outcome == "ok":
        return False
    code = getattr(errno, outcome, None)
    return code not in ALLOWED_ERRNOS


def _writer(mnt, rel, rng, n, report, lock, deadline):
    path = os.path.join(mnt, rel)
    try:                          # one read, not blocking: /dev/kmsg gives a record a read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            current = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        current = b""
    for _ in range(n):
        if time.monotonic() > deadline:
            return
        data = rand_input(rng, current)
        append = rng.random() < 0.3
        report.doing[threading.get_ident()] = f"{'>>' if append else '>'} {data[:60]!r}"
        out = _write_once(path, data, append=append)
        with lock:
            report.writes += 1
            report.outcomes[out] += 1
            if _is_bad(out):
                report.bad.append((rel, data[:80], out))


def _instance_churn(mnt, rng, n, report, lock, deadline):
    inst = os.path.join(mnt, TRACING, "instances")
    names = ["fz", "fz2", "a b", "x" * 200, "-", "instances", "%s", "é", "\\n"]
    for _ in range(n):
        if time.monotonic() > deadline:
            return
        name = rng.choice(names)
        p = os.path.join(inst, name)
        for op in (os.mkdir, os.rmdir) if rng.random() < 0.7 else (os.rmdir,):
            report.doing[threading.get_ident()] = f"{op.__name__} {name!r}"
            try:
                op(p)
                out = "ok"
            except OSError as e:
                out = errno.errorcode.get(e.errno, str(e.errno))
            with lock:
                report.mkdirs += 1
                report.outcomes[out] += 1
                if _is_bad(out):
                    report.bad.append((f"{op.__name__} instances/{name}", b"", out))


def fuzz(mnt: str, seconds: float, seed: int = 1, writers: int = WRITERS,
         per_writer: int = 40, log=None) -> FuzzReport:
    """Round-robin over the writable files, ``writers`` threads per file at
    once, until ``seconds`` are used up (at least one round when time allows)."""
    rng = random.Random(seed)
    report = FuzzReport(seed)
    lock = threading.Lock()
    t0 = time.monotonic()
    deadline = t0 + seconds
    inst_dir = os.path.join(mnt, TRACING, "instances")
    for name in ("fuzz_a", "fuzz_b"):
        with contextlib.suppress(OSError):
            os.mkdir(os.path.join(inst_dir, name))
    files = writable_files(mnt)
    rng.shuffle(files)
    report.files = len(files)
    rounds = 0
    while time.monotonic() < deadline:
        for rel in files:
            if time.monotonic() >= deadline:
                break
            threads = [threading.Thread(
                target=_writer, args=(mnt, rel, random.Random(rng.getrandbits(64)), per_writer,
                                      report, lock, deadline), daemon=True, name=rel)
                for _ in range(writers)]
            threads.append(threading.Thread(
                target=_instance_churn, args=(mnt, random.Random(rng.getrandbits(64)), 4,
                                              report, lock, deadline), daemon=True,
                name="instances/ (mkdir, rmdir)"))
            for th in threads:
                th.start()
            for th in threads:
                th.join(timeout=max(STUCK_GRACE_S, deadline - time.monotonic() + STUCK_GRACE_S))
                if th.is_alive():
                    report.stuck.append(f"{th.name}: {report.doing.get(th.ident, '?')}")
            if report.stuck:
                break
        rounds += 1
        if log:
            log(f"fuzz round {rounds}: {report.writes} writes so far")
        if report.stuck:
            break
    for name in ("fuzz_a", "fuzz_b"):
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(inst_dir, name))
    restore_defaults(mnt)
    report.elapsed = time.monotonic() - t0
    return report


def restore_defaults(mnt: str) -> None:
    """Leave the mount usable for what follows (tracing on, no tracer, markers on)."""
    t = os.path.join(mnt, TRACING)
    for rel, val in (("current_tracer", "nop"), ("options/markers", "1"), ("tracing_on", "1"),
                     ("events/enable", "0"), ("set_ftrace_filter", ""),
                     ("set_ftrace_notrace", "")):
        with contextlib.suppress(OSError):
            with open(os.path.join(t, rel), "w") as fh:
                fh.write(val)


# --------------------------------------------------------------------------
# Concurrent shells
# --------------------------------------------------------------------------

SHELL_LOOP = r'''
T=$1; ID=$2; END=$3; OUT=$4
cd "$T" || exit 3
n=0
while [ "${EPOCHREALTIME%.*}" -lt "$END" ]; do
  n=$((n+1))
  a=$EPOCHREALTIME; cat tracing_on > /dev/null || echo "FAIL cat tracing_on" >&2
  b=$EPOCHREALTIME; echo 1 > tracing_on || echo "FAIL echo tracing_on" >&2
  c=$EPOCHREALTIME; mkdir "instances/sh${ID}_$n" || echo "FAIL mkdir" >&2
  d=$EPOCHREALTIME; echo hello-$ID > "instances/sh${ID}_$n/trace_marker" || echo "FAIL marker" >&2
  e=$EPOCHREALTIME; rmdir "instances/sh${ID}_$n" || echo "FAIL rmdir" >&2
  f=$EPOCHREALTIME; head -c 4096 trace > /dev/null || echo "FAIL cat trace" >&2
  g=$EPOCHREALTIME
  echo "$a $b $c $d $e $f $g" >> "$OUT"
done
'''
OPS = ["cat tracing_on", "echo tracing_on", "mkdir instance", "echo trace_marker",
       "rmdir instance", "cat trace"]


@dataclass
class ShellReport:
    shells: int
    seconds: float
    lat: dict = field(default_factory=dict)       # op -> list of seconds
    failures: list = field(default_factory=list)
    stuck: int = 0

    def ok(self) -> bool:
        return not self.failures and not self.stuck and all(self.lat.values())


def run_shells(mnt: str, n: int, seconds: float) -> ShellReport:
    t = os.path.join(mnt, TRACING)
    work = tempfile.mkdtemp(prefix="fakefs-stress-")
    report = ShellReport(n, seconds, {op: [] for op in OPS})
    try:
        end = int(time.time() + seconds) + 1
        procs = []
        for i in range(n):
            out = os.path.join(work, f"s{i}.lat")
            procs.append(subprocess.Popen(["bash", "-c", SHELL_LOOP, "sh", t, str(i), str(end),
                                           out], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True,
                                          start_new_session=True))
        limit = time.monotonic() + seconds + 30
        try:
            for p in procs:
                try:
                    _, err = p.communicate(timeout=max(1.0, limit - time.monotonic()))
                except subprocess.TimeoutExpired:
                    report.stuck += 1
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, 9)
                    _, err = p.communicate()
                report.failures += [ln for ln in err.splitlines() if ln.strip()]
        except BaseException:
            # stopped (SIGTERM, Ctrl-C): the shells go too, else they keep
            # the mount (their working directory) and its daemon alive
            for p in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, 9)
            raise
        for i in range(n):
            with contextlib.suppress(OSError), open(os.path.join(work, f"s{i}.lat")) as fh:
                for line in fh:
                    ts = [float(x) for x in line.split()]
                    if len(ts) != len(OPS) + 1:
                        continue
                    for k, op in enumerate(OPS):
                        report.lat[op].append(ts[k + 1] - ts[k])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def latency_table(idle: ShellReport, load: ShellReport) -> str:
    rows = [f"{'command':20} {'idle p50':>9} {'idle p99':>9} {'load p50':>9} {'load p95':>9} "
            f"{'load p99':>9} {'max':>8} {'n':>6} {'target':>7}"]
    for op in OPS:
        a, b = idle.lat.get(op, []), load.lat.get(op, [])
        tgt = TARGETS_MS.get(op)
        rows.append(f"{op:20} {pct(a, 50)*1e3:8.1f}m {pct(a, 99)*1e3:8.1f}m "
                    f"{pct(b, 50)*1e3:8.1f}m {pct(b, 95)*1e3:8.1f}m {pct(b, 99)*1e3:8.1f}m "
                    f"{(max(b) if b else 0)*1e3:7.0f}m {len(b):6d} "
                    + (f"{tgt:6.0f}m" if tgt else "      -"))
    return "\n".join(rows).replace("m ", "  ").replace("m\n", "\n")


def missed_targets(load: ShellReport) -> list[str]:
    out = []
    for op, tgt in TARGETS_MS.items():
        p99 = pct(load.lat.get(op, []), 99) * 1e3
        if not p99 <= tgt:
            out.append(f"{op}: p99 {p99:.1f} ms > {tgt:.0f} ms")
    return out


# --------------------------------------------------------------------------
# Mount health
# --------------------------------------------------------------------------

def mount_alive(mnt: str) -> str | None:
    """None if the mount answers; else what went wrong."""
    try:
        with open(os.path.join(mnt, TRACING, "tracing_on")) as fh:
            fh.read()
        os.listdir(os.path.join(mnt, TRACING, "instances"))
    except OSError as e:
        return f"the mount does not answer: {e}"
    return None


def log_problems(log_path: str) -> list[str]:
    """Distinct errors of the daemon log (``N x <exception>``); [] if clean."""
    try:
        with open(log_path, errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    found: Counter = Counter()
    in_tb = False
    for ln in lines:
        if ln.startswith("Traceback"):
            in_tb = True
        elif in_tb and ln and not ln.startswith(" "):
            found["traceback: " + ln] += 1          # the exception line ends a traceback
            in_tb = False
        elif " ERROR " in ln or "CRITICAL" in ln:
            found[ln.split(": ", 1)[-1]] += 1
    return [f"{n} x {what}" for what, n in found.most_common()]


@contextlib.contextmanager
def stress_mount(cmdline: str = "", seed: int = 1):
    """A private mount with a daemon log (for the traceback check)."""
    mnt = tempfile.mkdtemp(prefix="fakefs-stress-mnt-")
    log = mnt + ".log"
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", "fakefs", "mount", "--seed", str(seed), "--log", log]
    if cmdline:
        cmd += ["--cmdline", cmdline]
    try:
        subprocess.run(cmd + [mnt], check=True, env=env, timeout=60)
    except BaseException:
        os.rmdir(mnt)
        raise
    try:
        yield mnt, log
    finally:
        subprocess.run(["fusermount3", "-u", "-z", mnt], stderr=subprocess.DEVNULL)
        for _ in range(40):
            with open("/proc/self/mounts") as fh:
                if not any(line.split()[1] == mnt for line in fh):
                    break
            time.sleep(0.05)
        with contextlib.suppress(OSError):
            os.rmdir(mnt)
        with contextlib.suppress(OSError):
            os.unlink(log)


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fakefs.stress", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fuzz-seconds", type=float, default=180)
    ap.add_argument("--shell-seconds", type=float, default=60)
    ap.add_argument("--idle-seconds", type=float, default=10)
    ap.add_argument("--shells", type=int, default=50)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--cmdline", default="", help="boot parameters of the stressed kernel")
    a = ap.parse_args(argv)
    # a SIGTERM (``timeout``, a CI's cancel) unmounts like Ctrl-C does: else
    # the daemon stays mounted, busy with what the fuzz left switched on
    signal.signal(signal.SIGTERM, _terminated)
    rc = 0
    with stress_mount(a.cmdline) as (mnt, log):
        def say(m):
            print(m, flush=True)
        idle = run_shells(mnt, 1, a.idle_seconds)
        say(f"idle baseline: 1 shell, {a.idle_seconds:.0f} s")
        load = run_shells(mnt, a.shells, a.shell_seconds)
        say(f"load: {a.shells} shells, {a.shell_seconds:.0f} s, "
            f"{len(load.lat['cat tracing_on'])} loops")
        say(latency_table(idle, load))
        for r in (idle, load):
            if not r.ok():
                rc = 1
                say(f"shell problems: {r.stuck} stuck, failures: {r.failures[:10]}")
        missed = missed_targets(load)
        say("targets: " + ("met" if not missed else "MISSED: " + "; ".join(missed)))
        rc |= bool(missed)
        rep = fuzz(mnt, a.fuzz_seconds, seed=a.seed, log=say)
        say(rep.summary())
        for b in rep.bad[:20]:
            say(f"  bad: {b}")
        for st in rep.stuck[:20]:
            say(f"  stuck: {st}")
        if not rep.ok():
            rc = 1
        for problem in filter(None, [mount_alive(mnt)] + log_problems(log)[:20]):
            say("problem: " + problem)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
