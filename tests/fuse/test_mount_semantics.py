"""Shell-level semantics of the pseudo-file layer through a real FUSE mount."""

import errno
import os
import select
import signal
import stat
import subprocess
import time

import pytest

from mountlib import requires_fuse

pytestmark = requires_fuse


def sh(cmd, cwd, check=False):
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=60, check=check)


def read(path):
    with open(path) as fh:
        return fh.read()


def test_tree_layout_and_modes(mnt, tracing):
    assert os.path.isdir(os.path.join(mnt, "proc"))
    st = os.stat(os.path.join(tracing, "stack_map"))
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_size == 0
    assert stat.S_IMODE(os.stat(os.path.join(tracing, "stack_map_stat")).st_mode) == 0o440
    assert stat.S_IMODE(os.stat(os.path.join(tracing, "stack_map_bin")).st_mode) == 0o440
    assert stat.S_IMODE(os.stat(os.path.join(tracing, "trace_marker")).st_mode) == 0o220


def test_size_zero_files_read_with_cat(tracing):
    out = sh("cat README | head -1; grep -c . trace_options", tracing).stdout.split("\n")
    assert out[0] == "tracing mini-HOWTO:"
    assert int(out[1]) > 20


def test_errno_reaches_the_shell(tracing):
    r = sh("echo bogus > current_tracer", tracing)
    assert r.returncode != 0 and "Invalid argument" in r.stderr
    r = sh("echo 2 > options/stackmap", tracing)
    assert "Invalid argument" in r.stderr
    r = sh("echo x > newfile", tracing)
    assert r.returncode != 0 and "Permission denied" in r.stderr
    r = sh("cat nonexistent", tracing)
    assert "No such file" in r.stderr
    with pytest.raises(OSError) as e:
        fd = os.open(os.path.join(tracing, "stack_map"), os.O_WRONLY)
        try:
            os.write(fd, b"nope")
        finally:
            os.close(fd)
    assert e.value.errno == errno.EINVAL


def test_trunc_clears_append_does_not(tracing):
    sh("echo 0 > tracing_on; echo > trace; echo 1 > tracing_on", tracing, check=True)
    sh("echo hello-marker > trace_marker", tracing, check=True)
    line = [l for l in read(os.path.join(tracing, "trace")).splitlines() if "hello-marker" in l]
    assert line and line[0].lstrip().startswith("bash-")       # the writer's comm
    assert line[0].endswith(": tracing_mark_write: hello-marker")
    sh("echo >> trace", tracing, check=True)              # O_APPEND: no clear
    assert "hello-marker" in read(os.path.join(tracing, "trace"))
    sh("echo > trace", tracing, check=True)               # O_TRUNC: clear
    assert "hello-marker" not in read(os.path.join(tracing, "trace"))


def test_snapshot_is_stable_for_an_open_file(tracing):
    sh("echo 8 > buffer_size_kb; echo function > current_tracer; echo 1 > tracing_on", tracing,
       check=True)
    try:
        time.sleep(0.3)
        path = os.path.join(tracing, "trace")
        fd = os.open(path, os.O_RDONLY)
        chunks = []
        try:
            while True:
                b = os.read(fd, 7)          # many small reads while tracing goes on
                if not b:
                    break
                chunks.append(b)
                if len(chunks) % 500 == 0:
                    time.sleep(0.01)
        finally:
            os.close(fd)
        text = b"".join(chunks).decode()
        header = [l for l in text.splitlines() if l.startswith("# entries-in-buffer")][0]
        entries = int(header.split(": ")[1].split("/")[0])
        body = [l for l in text.splitlines() if l and not l.startswith("#")]
        assert entries > 0 and len(body) == entries
        # dd bs=1 sees the same kind of consistent snapshot
        r = sh("dd if=stack_map_stat bs=1 2>/dev/null", tracing, check=True)
        assert r.stdout.startswith("entries: ")
    finally:
        sh("echo nop > current_tracer; echo 1410 > buffer_size_kb", tracing)


def test_instances_mkdir_rmdir_no_stale_entries(tracing):
    inst = os.path.join(tracing, "instances", "t1")
    os.mkdir(inst)
    assert os.path.isfile(os.path.join(inst, "trace"))
    assert "t1" in os.listdir(os.path.join(tracing, "instances"))
    with pytest.raises(FileExistsError):
        os.mkdir(inst)
    os.rmdir(inst)
    assert "t1" not in os.listdir(os.path.join(tracing, "instances"))
    assert not os.path.exists(inst)
    os.mkdir(inst)                       # re-create right away: a fresh instance
    assert read(os.path.join(inst, "current_tracer")) == "nop\n"
    os.rmdir(inst)
    with pytest.raises(OSError) as e:
        os.mkdir(os.path.join(tracing, "options", "x"))
    assert e.value.errno in (errno.EPERM, errno.EACCES)


def test_names_longer_than_name_max_as_the_kernel_answers(mnt, tracing):
    """tracefs (simple_lookup) refuses 256-1,500 bytes: no instance is made;
    eventfs and procfs do not find them (as the host's tracefs and /proc)."""
    for n in (256, 1000, 1500):
        with pytest.raises(OSError) as e:
            os.mkdir(os.path.join(tracing, "instances", "i" * n))
        assert e.value.errno == errno.ENAMETOOLONG, n
        with pytest.raises(OSError) as e:
            os.stat(os.path.join(tracing, "i" * n))
        assert e.value.errno == errno.ENAMETOOLONG, n
    assert os.listdir(os.path.join(tracing, "instances")) == []
    for d in (os.path.join(tracing, "events"), os.path.join(mnt, "proc")):
        with pytest.raises(OSError) as e:
            os.stat(os.path.join(d, "i" * 256))
        assert e.value.errno == errno.ENOENT, d
    inst = os.path.join(tracing, "instances", "i" * 255)
    os.mkdir(inst)
    os.rmdir(inst)
    assert os.statvfs(tracing).f_namemax == 255


def test_trace_pipe_nonblock_and_poll(tracing):
    sh("echo 0 > tracing_on; echo > trace; echo 1 > tracing_on", tracing, check=True)
    fd = os.open(os.path.join(tracing, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(BlockingIOError):
            os.read(fd, 4096)
        p = select.poll()
        p.register(fd, select.POLLIN)
        assert p.poll(200) == []
        sh("echo poll-me > trace_marker", tracing, check=True)
        ev = p.poll(3000)
        assert ev and ev[0][1] & select.POLLIN
        assert b"poll-me" in os.read(fd, 4096)
    finally:
        os.close(fd)


def test_blocking_trace_pipe_reader_is_killable(tracing):
    sh("echo 0 > tracing_on; echo > trace; echo 1 > tracing_on", tracing, check=True)
    p = subprocess.Popen(["cat", os.path.join(tracing, "trace_pipe")], stdout=subprocess.PIPE)
    time.sleep(0.3)
    assert p.poll() is None                      # blocked, no data yet
    sh("echo wake-up > trace_marker", tracing, check=True)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=5)
    assert b"wake-up" in out
    assert p.returncode == -signal.SIGTERM


def test_long_marker_write_is_split_like_the_kernel(tracing):
    sh("echo > trace", tracing, check=True)
    text = "X" * 5000
    r = sh("printf %s " + text + " > trace_marker", tracing)
    assert r.returncode == 0, r.stderr
    parts = [l.split("tracing_mark_write: ", 1)[1] for l in
             read(os.path.join(tracing, "trace")).splitlines() if "tracing_mark_write: " in l]
    assert len(parts[0]) == 4096 - 16 - 8 - 18 and "".join(parts) == text


def test_what_the_kernel_model_changes_is_seen_at_once_despite_long_caching(tracing):
    """Entries and attributes are cached for long (notify.ENTRY_TIMEOUT), as
    a tracefs's dentries live: a change the kernel model makes, not through
    the VFS, is told to the kernel at once.  A kprobe's event directory
    appears with its parent's link count and mtime moved; its removal is
    seen at once, the link count back."""
    events = os.path.join(tracing, "events")
    probes = os.path.join(tracing, "kprobe_events")
    os.listdir(events)
    before = os.stat(events)
    assert not os.path.exists(os.path.join(events, "kprobes"))
    with open(probes, "w") as fh:
        fh.write("p:cachedprobe do_sys_openat2\n")
    try:
        after = os.stat(events)
        assert after.st_nlink == before.st_nlink + 1
        assert after.st_mtime_ns > before.st_mtime_ns
        assert os.path.isdir(os.path.join(events, "kprobes/cachedprobe"))
    finally:
        with open(probes, "w"):
            pass
    assert not os.path.exists(os.path.join(events, "kprobes"))
    assert os.stat(events).st_nlink == before.st_nlink


def test_a_marker_write_pinned_to_a_cpu_lands_in_that_cpus_buffer(tracing):
    """libtracefs's tracefs_iterate_raw_events test pins each write with
    sched_setaffinity: the writer's affinity is its CPU here."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs a machine with 2 CPUs to pin a writer to either")
    with open(os.path.join(tracing, "trace"), "w"):
        pass
    for cpu in (1, 0, 1):
        r = sh("taskset -c %d sh -c 'for i in 1 2 3; do echo pinned-to-%d > trace_marker; done'"
               % (cpu, cpu), tracing)
        assert r.returncode == 0, r.stderr
    for cpu in (0, 1):
        text = read(os.path.join(tracing, "per_cpu/cpu%d/trace" % cpu))
        other = 1 - cpu
        assert text.count("pinned-to-%d" % cpu) == (6 if cpu == 1 else 3), text
        assert "pinned-to-%d" % other not in text, text
