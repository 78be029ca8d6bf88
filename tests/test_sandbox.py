"""``fakefs sandbox`` (fakefs/cli/sandbox.py), run for real: the fake's files at
the real paths inside, the exit status passed through, nothing left outside."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from fakefs.cli import command as cli
from fakefs.cli import namespace, sandbox

_PROBLEM = sandbox.host_problem(namespace.use_userns())
needs_ns = pytest.mark.skipif(_PROBLEM is not None, reason="fakefs sandbox cannot run "
                              "here: %s" % _PROBLEM)
# trace-cmd and perf find the fake by a tracefs line in /proc/mounts
_NO_LINE = sandbox.tracefs_line_problem(namespace.use_userns())
needs_tracefs_line = pytest.mark.skipif(_NO_LINE is not None, reason="fakefs sandbox: %s"
                                        % _NO_LINE)
FAKEFS = [sys.executable, "-m", "fakefs"]
TIMEOUT = 120


def sandbox_run(*args, **kw):
    kw.setdefault("env", namespace.child_env())
    return subprocess.run(FAKEFS + ["sandbox"] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=TIMEOUT, **kw)


def host_mountinfo() -> set[str]:
    """The host namespace's mounts (mount point, fstype) that could be ours."""
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            mnt, fstype = pre.split()[4], post.split()[0]
            if mnt.startswith(("/sys", "/proc", "/boot")) or "fakefs-sandbox." in mnt \
                    or fstype == "tracefs":
                out.add((mnt, fstype, pre.split()[2]))
    return out


def processes_naming(word: str) -> list[str]:
    r = subprocess.run(["pgrep", "-af", word], stdout=subprocess.PIPE, text=True)
    return [ln for ln in r.stdout.splitlines() if "pgrep" not in ln]


def assert_nothing_left(tmpdir: str, before: set) -> None:
    for _ in range(50):                 # the daemon may take a moment after SIGTERM
        if not processes_naming(tmpdir):
            break
        time.sleep(0.1)
    assert not processes_naming(tmpdir)
    assert not os.path.exists(tmpdir)
    assert host_mountinfo() == before


INSIDE = r"""
grep -m1 ' tracefs ' /proc/mounts
head -1 /sys/kernel/tracing/README
ls /sys/kernel/tracing/options/stackmap /sys/kernel/debug/tracing/options/stackmap
cat /proc/sys/kernel/ftrace_enabled
echo 0 > /proc/sys/kernel/ftrace_enabled; echo "now $(cat /proc/sys/kernel/ftrace_enabled)"
awk '$2 == "/proc/sys/kernel/ftrace_enabled" || $2 == "/proc/kallsyms" {print "bound", $2, $3}' /proc/mounts
cmp /boot/System.map-$(uname -r) $FAKEFS_ROOT/boot/System.map && echo same-map
head -1 /proc/allocinfo
head -c 4 /proc/profile | od -An -tx1 | head -1; ls $FAKEFS_ROOT/proc/profile
readprofile | tail -1
echo "self $$ $(readlink /proc/self) $(cut -d' ' -f1 /proc/self/stat)"
sleep 30 & echo "later $! $(cut -d' ' -f1 /proc/$!/stat)"; kill $!
test -L /proc/meminfo && grep -q MemTotal /proc/meminfo && echo host-meminfo
echo "root=$FAKEFS_ROOT"
exit 7
"""


@needs_ns
def test_the_fakes_files_at_the_real_paths_and_nothing_left():
    before = host_mountinfo()
    host_ftrace_enabled = open("/proc/sys/kernel/ftrace_enabled").read() \
        if os.path.exists("/proc/sys/kernel/ftrace_enabled") else None
    r = sandbox_run("--cmdline", "profile=2", "--", "sh", "-c", INSIDE)
    out = r.stdout.splitlines()
    assert r.returncode == 7, (r.stdout, r.stderr)
    # the first line of type tracefs is at /sys/kernel/tracing (libtracefs, perf)
    if not namespace.use_userns():
        assert out[0].split()[1:3] == ["/sys/kernel/tracing", "tracefs"], out
    assert "tracing mini-HOWTO:" in out
    # the stackmap series' file: the fake's (no host kernel has it)
    assert "/sys/kernel/tracing/options/stackmap" in out
    assert "/sys/kernel/debug/tracing/options/stackmap" in out
    assert "1" in out and "now 0" in out
    assert "bound /proc/sys/kernel/ftrace_enabled fuse.fakefs" in out
    assert "bound /proc/kallsyms fuse.fakefs" in out
    assert "same-map" in out
    assert "allocinfo - version: 1.0" in out
    root = [ln for ln in out if ln.startswith("root=")][0][len("root="):]
    assert re.fullmatch(r"/tmp/fakefs-sandbox\.[^/]+/root", root)
    assert root + "/proc/profile" in out
    # /proc is the fake's proc/ with the host's entries as links: /proc/profile
    # at readprofile's default path, /proc/self the reader's, later pids there
    assert " 04 00 00 00" in out          # profile=2: the step, 1 << 2
    assert re.search(r"^\s*\d+ total", r.stdout, re.M), r.stdout
    self_line = [ln.split() for ln in out if ln.startswith("self ")][0]
    assert self_line[2] != self_line[1] and self_line[3] != self_line[1], self_line
    later = [ln.split() for ln in out if ln.startswith("later ")][0]
    assert later[1] == later[2], later
    assert "host-meminfo" in out
    # what it may have to say: why trace-cmd will not find the fake, why perf counts nothing
    notes = [ln for ln in r.stderr.splitlines() if "note:" in ln]
    expected = ([] if _NO_LINE is None else [_NO_LINE]) + \
        ([sandbox.PERF_NOTE] if shutil.which("perf") else [])
    assert notes == ["fakefs sandbox: note: " + n for n in expected], r.stderr
    # the host's ftrace_enabled was not written
    if host_ftrace_enabled is not None:
        assert open("/proc/sys/kernel/ftrace_enabled").read() == host_ftrace_enabled
    assert_nothing_left(os.path.dirname(root), before)


@needs_ns
def test_exit_status_is_commands():
    r = sandbox_run("-q", "--", "sh", "-c", "kill -TERM $$")
    assert r.returncode == 128 + signal.SIGTERM, r.stderr
    r = sandbox_run("-q", "--", "false")
    assert r.returncode == 1 and r.stderr == ""
    r = sandbox_run("-q", "--", "/nonexistent/command")
    assert r.returncode == 127 and "command not found" in r.stderr
    # the default command: $SHELL, reading its commands from stdin
    r = sandbox_run("-q", input="test -e /sys/kernel/tracing/stack_map && exit 3\n",
                    env=dict(namespace.child_env(), SHELL="/bin/sh"))
    assert r.returncode == 3, r.stderr


@needs_ns
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_ends_command_and_daemon(sig):
    before = host_mountinfo()
    p = subprocess.Popen(FAKEFS + ["sandbox", "-q", "--", "sh", "-c",
                                   'echo "$FAKEFS_ROOT"; exec sleep 60'],
                         stdout=subprocess.PIPE, text=True, env=namespace.child_env())
    try:
        root = p.stdout.readline().strip()
        assert root.endswith("/root")
        tmpdir = os.path.dirname(root)
        assert processes_naming(tmpdir)             # the daemon runs
        t0 = time.monotonic()
        p.send_signal(sig)
        rc = p.wait(timeout=30)
        assert time.monotonic() - t0 < 10           # not the GRACE_S kill
        assert rc == 128 + sig                       # sleep's status
        assert_nothing_left(tmpdir, before)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@needs_ns
def test_a_killed_sandbox_leaves_nothing():
    """SIGKILL of `fakefs sandbox` runs no cleanup of its own: the inner
    stage (PDEATHSIG) stops COMMAND and the daemon, and a child left in the
    caller's namespace removes the temporary directory after it."""
    before = host_mountinfo()
    p = subprocess.Popen(FAKEFS + ["sandbox", "-q", "--", "sh", "-c",
                                   'echo "$FAKEFS_ROOT"; exec sleep 60'],
                         stdout=subprocess.PIPE, text=True, env=namespace.child_env())
    try:
        tmpdir = os.path.dirname(p.stdout.readline().strip())
        assert os.path.isdir(tmpdir) and processes_naming(tmpdir)
        p.kill()
        p.wait(timeout=30)
        for _ in range(100):
            if not os.path.exists(tmpdir):
                break
            time.sleep(0.1)
        assert_nothing_left(tmpdir, before)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# the tracers of the simulated 6.12, newest registered first (trace-cmd list -t)
TRACERS = ["function_graph", "wakeup_dl", "wakeup_rt", "wakeup", "preemptirqsoff", "preemptoff",
           "irqsoff", "function", "nop"]


@needs_ns
@needs_tracefs_line
@pytest.mark.skipif(not shutil.which("trace-cmd"), reason="trace-cmd is not installed "
                    "(make install brings it)")
def test_trace_cmd_finds_the_fake():
    r = sandbox_run("-q", "--", "sh", "-c", "trace-cmd list -t; trace-cmd list -o | "
                    "grep -x nostackmap; trace-cmd start -e sched_switch && sleep 0.3 && "
                    "trace-cmd stop && trace-cmd show | grep -c sched_switch; trace-cmd reset")
    out = r.stdout.split()
    assert r.returncode == 0, r.stderr
    # the tracers and options of the simulated 6.12 (the stackmap series' option)
    assert out[:9] == TRACERS and out[9] == "nostackmap", r.stdout
    assert int(out[10]) > 10


STACK = r"""
trace-cmd stack --start; sleep 0.2
cat /proc/sys/kernel/stack_tracer_enabled
trace-cmd stack | head -1
trace-cmd stack | grep -c '^ *[0-9]*) '
trace-cmd stack --stop
cat /proc/sys/kernel/stack_tracer_enabled
"""


@needs_ns
@needs_tracefs_line
@pytest.mark.skipif(not shutil.which("trace-cmd"), reason="trace-cmd is not installed "
                    "(make install brings it)")
def test_trace_cmd_stack_starts_reads_and_stops_the_stack_tracer():
    """trace-cmd stack finds /proc/sys/kernel/stack_tracer_enabled (the
    fake's, in COMMAND's /proc) and reads stack_trace."""
    r = sandbox_run("-q", "--", "sh", "-c", STACK)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["1", "(stack tracer running)"], r.stdout
    assert int(lines[2]) > 3 and lines[3:] == ["0"], r.stdout


RECORD = r"""
cd "$(mktemp -d)"
trace-cmd record -q -e sched:sched_switch -T -O stackmap sleep 0.5 >/dev/null 2>&1; echo "rc=$?"
trace-cmd report 2>/dev/null | grep -c ' sched_switch: '
trace-cmd report 2>/dev/null | grep -c 'stack_id: *<stack_id [0-9]*>'
trace-cmd record -q -p function -l schedule sleep 0.3 >/dev/null 2>&1
trace-cmd report 2>/dev/null | grep -c ' function: *schedule'
trace-cmd reset >/dev/null 2>&1
perf list tracepoint 2>/dev/null | grep -c 'sched:sched_switch'
sysctl -n vm.mem_profiling
trace-cmd start -e sched_switch >/dev/null 2>&1
trace-cmd stat 2>/dev/null | grep -cx ' *sched_switch'
trace-cmd stop; trace-cmd extract -o ex.dat >/dev/null 2>&1; echo "extract=$?"
trace-cmd report -i ex.dat 2>/dev/null | grep -c ' sched_switch: '
trace-cmd reset >/dev/null 2>&1; trace-cmd stat 2>/dev/null | grep -A1 -x 'Events:' | tail -1
"""


@needs_ns
@needs_tracefs_line
@pytest.mark.skipif(not shutil.which("trace-cmd") or not shutil.which("perf"),
                    reason="trace-cmd/perf not installed (make install brings trace-cmd)")
def test_trace_cmd_records_and_reports_events_stack_ids_and_functions():
    """trace-cmd reads per_cpu/cpuN/trace_pipe_raw and the formats; the
    stackmap option makes stack_id entries; perf and sysctl see the fake."""
    r = sandbox_run("-q", "--", "sh", "-c", RECORD)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split()
    assert out[0] == "rc=0", r.stdout
    switches, ids, calls, perf_hits = (int(x) for x in out[1:5])
    assert switches > 10 and ids > 10 and calls > 5 and perf_hits >= 1, r.stdout
    assert out[5] == "1", r.stdout
    # trace-cmd stat sees the enabled event, extract reads what start recorded
    rest = r.stdout.splitlines()[6:]
    assert rest[0] == "1", r.stdout
    assert rest[1] == "extract=0" and int(rest[2]) > 10, r.stdout
    assert rest[3].strip() == "All disabled", r.stdout


SEALED = r"""
import ctypes, errno, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
T = b"/sys/kernel/tracing"
MS_BIND, MS_REMOUNT, MNT_DETACH = 4096, 32, 2

def call(f, *a):
    return "ok" if f(*a) == 0 else errno.errorcode[ctypes.get_errno()]

def run(*argv):
    return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

def fake():     # only the simulated kernel has the stackmap series' option
    return os.path.exists("/sys/kernel/tracing/options/stackmap") and \
        [ln.split()[2] for ln in open("/proc/self/mounts") if ln.split()[1] == T.decode()][-1]

print("umount", call(libc.umount2, T, 0), call(libc.umount2, T, MNT_DETACH))
print("mount", call(libc.mount, b"nodev", T, b"tracefs", 0, None),
      call(libc.mount, b"nodev", b"/sys/kernel/debug", b"debugfs", 0, None))
print("bind", call(libc.mount, b"/etc/hostname", T + b"/tracing_on", None, MS_BIND, None),
      call(libc.mount, None, T, None, MS_REMOUNT | MS_BIND, None))
print("tools", run("umount", T), run("mount", "-t", "tracefs", "nodev", T),
      run("mount", "--bind", "/etc/hostname", "/sys/kernel/tracing/tracing_on"))
# libtracefs's "tracefs/debugfs mounting": every tracefs unmounted, a fresh one
gone = []
while True:
    lines = [ln.split()[1] for ln in open("/proc/self/mounts") if ln.split()[2] == "tracefs"]
    if not lines or call(libc.umount2, lines[0].encode(), 0) != "ok":
        break
    gone.append(lines[0])
print("libtracefs", gone, call(libc.mount, b"nodev", T, b"tracefs", 0, None))
# locked under a user namespace of COMMAND's own, too
print("nested", run("unshare", "-Urm", "umount", T),
      run("unshare", "-Urm", "mount", "-t", "tracefs", "nodev", T))
print("fake", fake())
# the host's: its processes' mount trees (pid 1, the daemon), its sysctls
daemon = subprocess.run(["pgrep", "-f", "mount -f .*" + os.environ["FAKEFS_ROOT"]],
                        stdout=subprocess.PIPE, text=True).stdout.split()
for pid in ["1"] + daemon[:1]:
    try:
        os.listdir("/proc/%s/root/sys/kernel" % pid)
        print("root", pid, "ok")
    except OSError as e:
        print("root", pid, errno.errorcode[e.errno])
try:
    open("/proc/sys/kernel/traceoff_on_warning", "w").write(
        open("/proc/sys/kernel/traceoff_on_warning").read())
    print("sysctl ok")
except OSError as e:
    print("sysctl", errno.errorcode[e.errno])
"""


@needs_ns
def test_a_root_command_cannot_unmount_mount_or_bind_over_the_fake():
    """COMMAND (root in the sandbox) gets EPERM, as an unprivileged caller
    does, from umount, mount and mount --bind (CAP_SYS_ADMIN dropped), its
    mounts are locked (a user namespace of its own), the host's processes'
    mount trees are out of its reach and the host's sysctls read-only: the
    libtracefs suite's mounting case leaves the fake in place."""
    r = sandbox_run("-q", "--", sys.executable, "-c", SEALED)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[:4] == ["umount EPERM EPERM", "mount EPERM EPERM", "bind EPERM EPERM",
                       "tools 32 32 32"], r.stdout + r.stderr
    assert out[4] == "libtracefs [] EPERM", r.stdout
    assert out[5].split()[0] == "nested" and "0" not in out[5].split()[1:], r.stdout
    assert out[6] == "fake fuse.fakefs", r.stdout
    assert out[7] == "root 1 EACCES" and re.fullmatch(r"root \d+ EACCES", out[8]), r.stdout
    assert out[9] == "sysctl EROFS", r.stdout


@needs_ns
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a debugfs (in a private mount "
                    "namespace) needs root")
def test_a_debugfs_elsewhere_shows_the_fakes_tracing(tmp_path):
    """A debugfs mounted elsewhere than /sys/kernel/debug mounts the host's
    tracefs on its tracing/ at the first look: the fake is there instead."""
    dbg = tmp_path / "dbg"
    dbg.mkdir()
    script = ('mount -t debugfs nodev "$1" && exec "$2" -m fakefs sandbox -q -- sh -c '
              '\'ls "$0"/tracing/options/stackmap; grep -c " tracefs " /proc/mounts\' "$1"')
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                        str(dbg), sys.executable], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=TIMEOUT,
                       env=namespace.child_env())
    assert r.returncode == 0, r.stderr
    # the stackmap series' option: only the simulated kernel has it
    assert r.stdout.split() == [str(dbg / "tracing/options/stackmap"), "1"], r.stdout


PERF = r"""
cd "$(mktemp -d)"
perf stat -e sched:sched_switch -- sleep 0.2 2>stat.txt; echo "stat=$?"; sed 's/^/S /' stat.txt
perf record -e sched:sched_switch -- sleep 0.1; echo "record=$?"
perf list tracepoint 2>/dev/null | grep -c 'sched:sched_switch'
"""


@needs_ns
@needs_tracefs_line
@pytest.mark.skipif(not shutil.which("perf"), reason="perf is not installed (Debian: "
                    "linux-perf)")
def test_perf_counts_no_host_events():
    """perf reads the fake's tracepoint ids and would open them on the host
    kernel (other events there): perf_event_open fails with ENOSYS, perf
    stat shows <not supported> instead of a count, perf record fails, and
    the sandbox says why, once."""
    r = sandbox_run("--", "sh", "-c", PERF, errors="replace")
    lines = r.stdout.splitlines()
    stat = [ln[2:] for ln in lines if ln.startswith("S ") and "sched:sched_switch" in ln]
    assert len(stat) == 1 and re.fullmatch(r"\s*<not supported>\s+sched:sched_switch\s*",
                                            stat[0]), r.stdout
    assert "stat=0" in lines and "record=0" not in lines, r.stdout
    assert "38 (Function not implemented)" in r.stderr, r.stderr
    assert lines[-1] == "1", r.stdout                   # perf list reads the fake
    assert r.stderr.count(sandbox.PERF_NOTE) == 1, r.stderr


@needs_ns
@needs_tracefs_line
@pytest.mark.skipif(not shutil.which("perf"), reason="perf is not installed (Debian: "
                    "linux-perf)")
def test_perf_ftrace_shows_a_command_s_vfs_read_calls():
    """perf ftrace uses tracefs only: -T shows the vfs_read() calls of
    sleep's loader (its read() and pread64()s), -G graphs of the machine's
    vfs_read() calls in its task; nothing of another task."""
    r = sandbox_run("-q", "--", "perf", "ftrace", "-T", "vfs_read", "--", "sleep", "0.2")
    calls = [ln for ln in r.stdout.splitlines() if "vfs_read <-" in ln]
    assert r.returncode == 0 and calls, (r.stdout, r.stderr)
    assert all(ln.split()[0].startswith("sleep-") for ln in calls), r.stdout
    r = sandbox_run("-q", "--", "perf", "ftrace", "-G", "vfs_read", "--", "sleep", "0.2")
    assert r.returncode == 0 and ("vfs_read();" in r.stdout or "vfs_read() {" in r.stdout), (
        r.stdout, r.stderr)


GETPPID = r"""
cd /sys/kernel/tracing
echo 1 > events/syscalls/sys_enter_getppid/enable
echo 1 > events/syscalls/sys_exit_getppid/enable
python3 -c 'import os; print("pid", os.getpid(), "ppid", os.getppid())'
echo 0 > events/syscalls/enable
grep getppid trace
"""


@needs_ns
def test_command_s_getppid_calls_are_its_syscall_events():
    """A call that never reaches the mount, handed to the daemon by the
    seal's listener: sys_enter_getppid and sys_exit_getppid in the caller's
    task, returning its parent's pid; the call itself goes on."""
    r = sandbox_run("-q", "--", "sh", "-c", GETPPID)
    out = r.stdout.splitlines()
    _, pid, _, ppid = next(ln for ln in out if ln.startswith("pid ")).split()
    mine = [ln for ln in out if ln.lstrip().startswith("python3-%s " % pid)]
    assert any(ln.endswith("sys_getppid()") for ln in mine), (r.stdout, r.stderr)
    assert mine[-1].endswith("sys_getppid -> 0x%x" % int(ppid)), r.stdout


# --- without running it ------------------------------------------------------------------

def test_the_perf_note_only_when_the_seal_refuses_perf_event_open(monkeypatch, capsys):
    """COMMAND's stage says why perf counts nothing only when its seccomp
    filter is in (and perf is here, and the sandbox is not quiet)."""
    monkeypatch.setattr(sandbox, "bind", lambda *a, **kw: "not here")
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/" + name)

    def no_exec(path, argv):
        raise FileNotFoundError(path)

    monkeypatch.setattr(sandbox.os, "execvp", no_exec)
    for refused, quiet in ((True, False), (False, False), (True, True)):
        monkeypatch.setattr(sandbox, "seal", lambda socket=None: (["a note"], refused))
        assert sandbox.cover_proc("/nonexistent", "/nonexistent", ["x"], quiet=quiet) == 127
        err = capsys.readouterr().err
        assert "note: a note" in err
        assert (sandbox.PERF_NOTE in err) == (refused and not quiet), (refused, quiet)


def test_host_problems_are_explained(monkeypatch):
    monkeypatch.setattr(sandbox, "userns_problem", lambda: "unprivileged user namespaces "
                        "are not allowed here")
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/" + name)
    msg = sandbox.host_problem(userns=True)
    assert msg.startswith("without root, the sandbox is a user namespace: unprivileged")
    assert "run fakefs sandbox as root" in msg
    monkeypatch.setattr(sandbox, "userns_problem", lambda: None)
    monkeypatch.setattr(namespace.os, "access", lambda path, mode: False)
    msg = sandbox.host_problem(userns=True)
    assert "chmod 0666 /dev/fuse" in msg and "run fakefs sandbox as root" in msg
    assert sandbox.host_problem(userns=False) is None or "missing" in msg


def test_the_mount_options_are_mounts():
    p = cli.build_parser()
    a = p.parse_args(["sandbox", "--persona", "6.18", "--seed", "3", "--cmdline", "profile=2",
                      "-o", "CONFIG_KPROBES=n", "--", "trace-cmd", "list", "-t"])
    assert a.func is cli.cmd_sandbox
    assert a.command == ["--", "trace-cmd", "list", "-t"]
    assert "--cmdline" in sandbox.boot_argv(a) and "CONFIG_KPROBES=n" in sandbox.boot_argv(a)
    sub = next(x for x in p._actions if x.dest == "cmd").choices

    def opts(name):
        return {o for act in sub[name]._actions for o in act.option_strings}
    shared = {"-d", "-o", "--cmdline", "--seed", "--persona"}
    assert shared <= opts("mount") and shared <= opts("sandbox")
