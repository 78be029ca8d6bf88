"""The virtual clock: time moves only when told, and the same seed and
commands give byte-identical files, timestamps included."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys

import pytest

from mountlib import REPO, mounted, requires_fuse

from fakefs import vclock
from fakefs.kernel.fs.pseudo import KernelError, PseudoTree, kernel_read, kernel_write


def test_durations():
    assert vclock.parse_duration("1s") == 10 ** 9
    assert vclock.parse_duration("250ms") == 250 * 10 ** 6
    assert vclock.parse_duration("10us") == 10_000
    assert vclock.parse_duration("500ns") == 500
    assert vclock.parse_duration("1.5") == 1_500_000_000
    assert vclock.parse_duration("0.001ms") == 1000
    for bad in ("", "s", "-1s", "1m", "1 s x", "1e3", "+1s"):
        with pytest.raises(ValueError):
            vclock.parse_duration(bad)


def _control():
    tree = PseudoTree()
    clock = vclock.virtual_clock()
    vclock.install(tree, clock)
    return tree, clock


def test_the_control_file_moves_the_clock_on_and_never_back():
    tree, clock = _control()
    assert kernel_read(tree, vclock.CONTROL_FILE) == b"0.000000000\n"
    kernel_write(tree, vclock.CONTROL_FILE, b"+1.25s\n")
    assert clock.now_ns() == 1_250_000_000
    kernel_write(tree, vclock.CONTROL_FILE, b"2")
    assert kernel_read(tree, vclock.CONTROL_FILE) == b"2.000000000\n"
    for bad in (b"1s", b"+-1", b"soon", b"", b"+99999999999s"):
        with pytest.raises(KernelError) as e:
            kernel_write(tree, vclock.CONTROL_FILE, bad)
        assert e.value.errno == errno.EINVAL
    assert clock.now_ns() == 2 * 10 ** 9            # nothing lost, nothing moved


def test_the_wall_clock_of_boot_is_fixed():
    assert vclock.virtual_clock().boot_wall == vclock.virtual_clock().boot_wall


# both scripts: the tracing directory, and a step of the virtual clock
PREAMBLE = r"""set -e
T=$1/sys/kernel/tracing
clock() { "$PY" -m fakefs clock "$1" "$2" > /dev/null; }
"""
SCRIPT = PREAMBLE + r"""
echo 1 > $T/events/sched/enable
echo 1 > $T/events/kmem/kmalloc/enable
echo 1 > $T/options/stackmap
echo 1 > $T/options/stacktrace
clock $1 +150ms
echo '--- trace'; cat $T/trace
echo '--- stack_map_stat'; cat $T/stack_map_stat
echo '--- stack_map'; cat $T/stack_map
echo 0 > $T/tracing_on
clock $1 +1s
echo '--- allocinfo'; cat $1/proc/allocinfo
echo '--- profile'; od -An -tx4 $1/proc/profile | sort | uniq -c | sort -rn | head -50
echo '--- per_cpu stats'; cat $T/per_cpu/cpu0/stats $T/per_cpu/cpu1/stats
echo '--- clock'; "$PY" -m fakefs clock $1
"""


def _session(seed: int, script: str = SCRIPT) -> str:
    with mounted(cmdline="profile=2", seed=seed, extra_args=["--clock", "virtual"]) as mnt:
        env = dict(os.environ, PY=sys.executable,
                   PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = subprocess.run(["sh", "-c", script, "sh", mnt], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout


@requires_fuse
def test_the_same_seed_and_commands_give_the_same_files():
    first = _session(7)
    assert first.count("sched_switch") > 20 and "<stack_id" in first
    assert "1.150000000" in first.splitlines()[-1]
    second = _session(7)
    assert first == second
    assert _session(8) != first


def test_clock_on_a_mount_without_a_virtual_clock_says_so(tmp_path, capsys):
    from fakefs.cli import main
    assert main(["clock", str(tmp_path)]) == 1
    assert "--clock virtual" in capsys.readouterr().err


MARKER_SCRIPT = PREAMBLE + r"""
echo 1 > $T/events/sched/enable
echo 1 > $T/events/syscalls/sys_enter_clone/enable
clock $1 +30ms
echo from-the-shell > $T/trace_marker
/bin/echo from-echo > $T/trace_marker
sh -c "echo from-a-subshell > $T/trace_marker"
clock $1 +5ms
echo again > $T/trace_marker
clock $1 +1500ms
for f in trace saved_cmdlines saved_tgids per_cpu/cpu0/stats per_cpu/cpu1/stats; do
    echo "--- $f"; cat $T/$f
done
"""


@requires_fuse
def test_on_a_virtual_clock_marker_writers_leave_no_trace_of_the_hosts_pids():
    """Two mounts, the same seed and commands, trace_marker written by the
    shell, by /bin/echo and by a subshell (each a process of the host with
    a pid of its own): every file read is the same, byte for byte; the
    writers have pids of the machine's, and the pids it hands out after
    them do not depend on the host's."""
    first = _session(3, MARKER_SCRIPT)
    second = _session(3, MARKER_SCRIPT)
    assert first == second
    lines = first.splitlines()
    marks = [ln for ln in lines if "tracing_mark_write:" in ln]
    assert [m.split(": ")[-1] for m in marks] == ["from-the-shell", "from-echo",
                                                  "from-a-subshell", "again"]
    # the shell (which opened trace_marker for /bin/echo too: a marker's
    # writer is who opened the file, FUSE's write carries no caller here)
    # and the subshell
    writers = {m.split()[0] for m in marks}
    assert len(writers) == 2
    pids = sorted(int(w.rsplit("-", 1)[1]) for w in writers)
    # the machine allocated them as it does its tasks' pids: after every
    # task seen before the first marker, and before its forks after them
    i0, i1 = lines.index(marks[0]), lines.index(marks[-1])
    before = {int(p) for ln in lines[:i0] for p in re.findall(r"-(\d+) +\[\d+\]", ln)}
    before |= {int(p) for ln in lines[:i0] for p in re.findall(r"child_pid=(\d+)", ln)}
    assert len(before) > 5 and min(pids) > max(before)
    forks = [int(p) for ln in lines[i1:] for p in re.findall(r"child_pid=(\d+)", ln)]
    assert forks and min(forks) > max(pids)


BIG_BUFFER_SCRIPT = PREAMBLE + r"""
echo 16384 > $T/buffer_size_kb
echo function > $T/current_tracer
clock $1 +10s
cat $T/per_cpu/cpu0/stats $T/per_cpu/cpu1/stats
"""


@requires_fuse
def test_a_move_of_the_clock_keeps_all_a_big_buffer_holds():
    """``clock +10s`` of the function tracer with 16 MB buffers: each full
    afterwards (``bytes:`` near the buffer's size, entries overwritten), as
    on a kernel; the move did the work, not the reads after it (a
    request's catch-up would keep the gap budget's 110,000 entries a CPU)."""
    out = _session(5, BIG_BUFFER_SCRIPT)
    entries = [int(x) for x in re.findall(r"^entries: (\d+)", out, re.M)]
    nbytes = [int(x) for x in re.findall(r"^bytes: (\d+)", out, re.M)]
    overrun = [int(x) for x in re.findall(r"^overrun: (\d+)", out, re.M)]
    assert len(entries) == 2 and min(entries) > 500_000, out
    assert min(nbytes) > 0.97 * 16384 * 1024 * 4080 // 4096, out
    assert min(overrun) > 0, out
