"""The inner stage, run inside the private mount namespace.

It starts ``fakefs mount -f -o fsname=tracefs`` on a temporary mount point,
bind-mounts its ``sys/kernel/tracing`` onto ``/sys/kernel/tracing`` (and its
``proc/kallsyms`` onto ``/proc/kallsyms``), detaches the original mount (so
the first ``tracefs`` line is ``/sys/kernel/tracing``, as ftracetest wants),
runs ``ftracetest`` on the chosen tests (or, as a shard of a run in shards,
on each part of them it claims from the run's queue: queue.py), then
unmounts and stops the daemon.
The outer stage (command.py) passes its configuration in a JSON file and
reads the status back from another.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..cli.namespace import (SIMULATED_HOST_FILES, SIMULATED_IF_SERVED, SIMULATED_SYSCTL_DIR,
                         TRACING_DIR, NamespaceError, bind_served, detach_tracefs_mounts,
                         in_private_mount_ns, tracefs_lines, umount)
from ..cli.namespace import stop as _stop
from ..cli.namespace import wait_ready as _wait_ready
from ..kernel.module import CONTROL_DIR, CONTROL_NAME
from ..cli.namespace import bind
from .errors import SelftestError, log
from .kmod import host_kmod_paths
from .kmod import install as install_kmod
from .ping import install as install_ping
from .queue import ShardQueue
from .results import RESULTS, parse_output

CONTROL = CONTROL_DIR + "/" + CONTROL_NAME
PING_CONTROL = CONTROL_DIR + "/ping"

READY_TIMEOUT = 60


def _tee(stream, out_path: str, done: threading.Event, console: bool = True) -> None:
    with open(out_path, "wb") as out:
        for chunk in iter(lambda: stream.readline(), b""):
            out.write(chunk)
            out.flush()
            if console:
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
    done.set()


def _run_ftracetest(argv: list, output: str, cfg: dict, status: dict,
                    timeout: float | None) -> None:
    """ftracetest ``argv``, its output into ``output`` (and shown where
    ``cfg["console"]``); its exit status (and whether it was killed after
    ``timeout`` seconds) into ``status``."""
    proc = subprocess.Popen(argv, cwd=cfg["cwd"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    done = threading.Event()
    t = threading.Thread(target=_tee, args=(proc.stdout, output, done,
                                            cfg.get("console", True)), daemon=True)
    t.start()
    try:
        status["ftracetest_rc"] = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        status["timed_out"] = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                pass
        status["ftracetest_rc"] = proc.returncode
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # Background children of a test may keep the pipe open; don't wait forever.
    done.wait(timeout=5)


def ftracetest_cmd(base: list, logs: str, tests: list) -> list:
    """ftracetest (``base``: it with its options) on ``tests``, its logs in ``logs``."""
    return base + ["-l", logs] + tests


def _run_queue(cfg: dict, status: dict) -> None:
    """A shard of a run in shards (queue.py): the next tests nobody has
    claimed, by one ftracetest, until none is left or the time is up;
    each run's status under ``status["runs"]``, by its first test's index."""
    queue = ShardQueue(cfg["queue"])
    tests, rels = cfg["tests"], cfg["rels"]
    deadline = time.monotonic() + cfg["timeout"] if cfg.get("timeout") else None
    runs = status["runs"] = {}
    while True:
        got = queue.claim(cfg["divisor"])
        if got is None:
            break
        start, end = got
        base = Path(cfg["runs_dir"]) / ("%04d" % start)
        base.mkdir(parents=True, exist_ok=True)
        output = str(base / "ftracetest.out")
        argv = ftracetest_cmd(cfg["ftracetest"], str(base / "logs"), tests[start:end])
        run = runs[str(start)] = {"end": end, "shard": cfg["shard"]}
        left = None if deadline is None else max(1.0, deadline - time.monotonic())
        _run_ftracetest(argv, output, cfg, run, left)
        names = rels[start:end]
        if len(names) > 3:
            names = ["%d tests: %s" % (len(names), names[0]), "...", names[-1]]
        log("shard %d: %s: %s" % (cfg["shard"] + 1, " ".join(names), _results(output)))
        if run.get("timed_out"):
            queue.stop()
            break
        if cfg.get("stop_fail") and run.get("ftracetest_rc"):
            queue.stop()


def _results(output: str) -> str:
    """The results ftracetest printed in ``output``, in a few words."""
    try:
        summ = parse_output(Path(output).read_text(errors="replace"))
    except OSError:
        return "no output"
    got = [summ.results[no] for no in sorted(summ.results)]
    if len(got) > 3:
        return ", ".join("%d %s" % (got.count(r), r) for r in RESULTS if r in got)
    return ", ".join(got) if got else "no result"


def kmod_commands(mnt: Path, host_binds: list, userns: bool) -> None:
    """The simulated kernel's module commands (selftest/kmod.py): its
    /proc/modules, its loader's control file kept past the mount point's
    detach, the commands first in PATH and bound over the host's kmod."""
    control = mnt / CONTROL
    if not control.exists():
        return                          # a kernel without the loader: the host's stay unused
    if os.path.exists("/proc/modules"):          # (a host built without modules has none)
        bind_served(mnt, "/proc/modules", host_binds, userns, log)
    kept = []
    for src, name in ((control, "kmod-control"), (mnt / "proc/modules", "kmod-proc-modules")):
        keep = mnt.parent / name
        keep.touch()
        err = bind(str(src), str(keep))
        if err is not None:
            raise SelftestError("mount --bind of the simulated kernel's %s failed: %s" % (src.name, err))
        host_binds.append(str(keep))
        kept.append(str(keep))
    bindir = str(mnt.parent / "kmod-bin")
    script = install_kmod(bindir, *kept)
    for path in host_kmod_paths():
        err = bind(script, path)
        if err is not None:
            raise SelftestError("mount --bind over %s failed: %s (a test would load a module "
                                "into the host's kernel)" % (path, err))
        host_binds.append(path)
    ping_control = mnt / PING_CONTROL
    if ping_control.exists():
        # fakefs's ping (selftest/ping.py): its echoes are calls into the simulated kernel
        keep = mnt.parent / "ping-control"
        keep.touch()
        err = bind(str(ping_control), str(keep))
        if err is not None:
            raise SelftestError("mount --bind of the simulated kernel's ping control failed: %s"
                                % err)
        host_binds.append(str(keep))
        install_ping(bindir, str(keep))
    os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")


def inner_main(cfg_path: str) -> int:
    cfg = json.loads(Path(cfg_path).read_text())
    status: dict = {}
    daemon = None
    bound = False
    host_binds: list[str] = []
    mnt = Path(cfg["mountpoint"])
    try:
        if not in_private_mount_ns(cfg.get("outer_mnt_ns", "")):
            raise SelftestError("refusing to mount: not in a private mount namespace")
        detach_tracefs_mounts(cfg.get("userns", False))
        mnt.mkdir(exist_ok=True)
        with open(cfg["daemon_log"], "wb") as log_file:
            daemon = subprocess.Popen(cfg["daemon"] + [str(mnt)], stdin=subprocess.DEVNULL,
                                      stdout=log_file, stderr=subprocess.STDOUT,
                                      start_new_session=True, cwd="/")
        _wait_ready(mnt, daemon, READY_TIMEOUT)
        r = subprocess.run(["mount", "--bind", str(mnt / "sys/kernel/tracing"), TRACING_DIR],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise SelftestError("mount --bind failed: %s" % r.stdout.strip())
        bound = True
        # tests look addresses up in /proc/kallsyms and compare what a probe
        # reads of the banner with /proc/version: the simulated kernel's
        # (a daemon that serves none leaves the host's)
        for path in ("/proc/kallsyms", "/proc/version"):
            r = None
            if (mnt / path.lstrip("/")).exists():
                r = subprocess.run(["mount", "--bind", str(mnt / path.lstrip("/")), path],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r is not None and r.returncode != 0:
                if not cfg.get("userns", False):
                    raise SelftestError("mount --bind of %s failed: %s" % (path, r.stdout.strip()))
                log("note: %s stays the host's here (%s): tests that read it may fail"
                    % (path, r.stdout.strip()))
        # Host files the tests (or the harness) write: the simulated
        # kernel's, never the host's
        for path in SIMULATED_HOST_FILES + (SIMULATED_SYSCTL_DIR,):
            bind_served(mnt, path, host_binds, cfg.get("userns", False), log)
        for path in SIMULATED_IF_SERVED:
            if (mnt / path.lstrip("/")).exists() and os.path.exists(path):
                bind_served(mnt, path, host_binds, cfg.get("userns", False), log)
        kmod_commands(mnt, host_binds, cfg.get("userns", False))
        umount(str(mnt), lazy=True)
        lines = tracefs_lines()
        if not lines or lines[0][1] != TRACING_DIR:
            raise SelftestError("the first tracefs line of /proc/mounts is %r, not %s"
                                % (lines[:1], TRACING_DIR))
        if cfg.get("queue"):
            _run_queue(cfg, status)
        else:
            _run_ftracetest(cfg["ftracetest"], cfg["output"], cfg, status, cfg.get("timeout") or None)
    except NamespaceError as e:          # SelftestError too
        status["error"] = str(e)
    except KeyboardInterrupt:
        status["error"] = "interrupted"
    finally:
        if bound and not umount(TRACING_DIR):
            umount(TRACING_DIR, lazy=True)
        for path in reversed(host_binds):
            umount(path, lazy=True)
        umount(str(mnt), lazy=True)
        if daemon is not None:
            _stop(daemon, grace=2)
            status["daemon_rc"] = daemon.returncode
        show_log = cfg.get("verbose", 0) >= 2 or (status.get("error") and daemon is not None)
        if show_log and os.path.exists(cfg["daemon_log"]):
            text = Path(cfg["daemon_log"]).read_text(errors="replace")
            if text.strip():
                print("---- daemon log (last 60 lines) ----")
                print("\n".join(text.splitlines()[-60:]))
                print("---- end of daemon log ----", flush=True)
        Path(cfg["status"]).write_text(json.dumps(status))
    return 0 if not status.get("error") else 2
