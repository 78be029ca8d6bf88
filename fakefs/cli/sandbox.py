"""``fakefs sandbox [mount options] [-- COMMAND ...]``: run COMMAND (default
``$SHELL``, else /bin/sh) where the simulated kernel's files are at the
real paths, in a private mount namespace.

The outer stage (``run``, in the caller's namespace) makes a temporary
directory and re-executes ``python -m fakefs.cli.sandbox --inner CONFIG`` under
``unshare -m --propagation private`` (without root ``unshare -Ur -m``: a
user namespace, see fakefs/cli/namespace.py).  The inner stage (``inner_main``):

1. detaches every tracefs mount line and, as root, mounts a tracefs on
   /sys/kernel/tracing: the ``/proc/mounts`` line of type ``tracefs`` that
   libtracefs (trace-cmd) and perf look for.  The fake is bound on top at
   once, so nothing reaches that tracefs.  A user namespace cannot mount a
   tracefs: the host's lines it cannot detach are covered by the fake, as
   is the tracing/ of a debugfs elsewhere than /sys/kernel/debug;
2. starts ``fakefs mount -f`` on DIR/root (the whole tree, ``$FAKEFS_ROOT``
   in COMMAND's environment) and binds the fake's files over the host's:
   /sys/kernel/tracing, /sys/kernel/debug (a tmpfs with the fake's entries
   and ``tracing``), /proc/kallsyms, /proc/allocinfo, /proc/profile,
   /proc/sys/vm/mem_profiling, /proc/sys/kernel/ftrace_enabled and
   stack_tracer_enabled, the files
   the selftests bind (SIMULATED_HOST_FILES), and
   /boot/System.map-$(uname -r).  A path the host lacks is added to a tmpfs
   that takes its directory's place with the host's entries bound in (not
   in /proc itself: those are reported);
3. runs COMMAND with the caller's terminal, and forwards SIGINT, SIGTERM
   and SIGHUP to it (SIGKILL after GRACE_S).  COMMAND gets a namespace of
   its own (``--cover-proc``) whose /proc is the fake's proc/ with every
   host entry it lacks shown as a link into the host's procfs, bound at
   DIR/hostproc there (fakefs/fuse/hostlinks.py): /proc/profile exists
   although the host's procfs takes no new entries, and the host's sysctls
   read-only.  The daemon stays in the namespace with the host's /proc (it
   reads it).  COMMAND is sealed (fakefs/cli/sandbox_seal.py): a user
   namespace of its own (its mounts locked, the host's processes out of
   reach), no CAP_SYS_ADMIN (mount, umount: EPERM), perf_event_open
   refused (ENOSYS);
4. stops the daemon.  The namespace, and with it every mount, goes with
   its last process; the outer stage removes the directory (killed, it
   cannot: a child it left in the caller's namespace does, once the inner
   stage has ended, ``_start_reaper()``).

The exit status is COMMAND's (128+N when a signal N ended it); 125 when
the sandbox could not be set up, 126/127 when COMMAND could not be run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .mountargs import add_boot_arguments, boot_argv, check_persona
from ..selftest.kmod import host_kmod_paths
from ..selftest.kmod import install as install_kmod
from .namespace import (SIMULATED_HOST_FILES, SIMULATED_IF_SERVED, TRACING_DIR,
                        NamespaceError, bind, bind_served, child_env, detach_tracefs_mounts,
                        fuse_problem, in_private_mount_ns, mount_ns, mounts, stop, umount,
                        use_userns, userns_problem, wait_ready)
from .sandbox_seal import PERF_NOTE, seal

DEBUG_DIR = "/sys/kernel/debug"
# the simulated kernel's, at the host's path (when the fake serves them)
PROC_FILES = ("/proc/kallsyms", "/proc/allocinfo", "/proc/profile",
              "/proc/sys/vm/mem_profiling", "/proc/sys/kernel/ftrace_enabled",
              "/proc/sys/kernel/stack_tracer_enabled")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
HOSTPROC = "hostproc"    # where COMMAND's namespace has the host's /proc
SYSCALL_SOCKET = "syscalls.sock"   # where the daemon takes COMMAND's seccomp listener
GRACE_S = 10            # COMMAND's time to exit after a forwarded signal
READY_TIMEOUT = 60
EXIT_SETUP = 125        # as env(1), timeout(1): the sandbox itself failed
PR_SET_PDEATHSIG = 1


def log(msg: str) -> None:
    print("fakefs sandbox: " + msg, file=sys.stderr, flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = ("Run COMMAND (default: $SHELL, else /bin/sh) in a private mount namespace "
                     "where the simulated kernel's files are at the real paths: %s (a "
                     "tracefs line in /proc/mounts, for trace-cmd and perf), %s/tracing, "
                     "/proc/kallsyms, /proc/allocinfo, /proc/profile, "
                     "/proc/sys/vm/mem_profiling, /proc/sys/kernel/ftrace_enabled and "
                     "stack_tracer_enabled, "
                     "/boot/System.map-$(uname -r).  The daemon lives as long as COMMAND; "
                     "the exit status is COMMAND's." % (TRACING_DIR, DEBUG_DIR))
    add_boot_arguments(p)
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no summary of what is placed where")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the command and its arguments")


def host_problem(userns: bool) -> str | None:
    if not shutil.which("unshare"):
        return "unshare(1) not found (util-linux)"
    if userns:
        problem = userns_problem()
        if problem:
            return ("without root, the sandbox is a user namespace: %s; or run fakefs "
                    "sandbox as root" % problem)
    return fuse_problem(userns, "fakefs sandbox")


def tracefs_line_problem(userns: bool) -> str | None:
    """Why libtracefs (trace-cmd) and perf will not find the simulated
    kernel's tracing directory in the sandbox, or None.  They look for a
    line of type tracefs in /proc/mounts: root mounts one under the fake, a
    user namespace cannot, and has one only where the host has a tracefs
    mounted (inherited, then covered by the fake)."""
    if not userns or any(t == "tracefs" for _s, _m, t in mounts()):
        return None
    return ("no mount of type tracefs here (a user namespace cannot mount one, and the "
            "host has none to cover): libtracefs (trace-cmd) and perf look for one in "
            "/proc/mounts and will not find %s" % TRACING_DIR)


# --- the outer stage ------------------------------------------------------------

def run(args) -> int:
    """``fakefs sandbox``: returns COMMAND's exit status."""
    rc = check_persona(args.persona)
    if rc is not None:
        return rc
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        command = [os.environ.get("SHELL") or "/bin/sh"]
    userns = use_userns()
    problem = host_problem(userns)
    if problem:
        log("error: " + problem)
        return EXIT_SETUP
    tmp = Path(tempfile.mkdtemp(prefix="fakefs-sandbox."))
    cfg = {"root": str(tmp / "root"), "hostproc": str(tmp / HOSTPROC),
           "daemon": [sys.executable, "-m", "fakefs", "mount", "-f", "--proc-links",
                      str(tmp / HOSTPROC), "--syscall-socket", str(tmp / SYSCALL_SOCKET)]
                     + boot_argv(args),
           "syscall_socket": str(tmp / SYSCALL_SOCKET),
           "daemon_log": str(tmp / "daemon.log"), "command": command,
           "outer_mnt_ns": mount_ns(), "outer_pid": os.getpid(), "userns": userns,
           "quiet": args.quiet, "uname_r": os.uname().release}
    cfg_file = tmp / "config.json"
    cfg_file.write_text(json.dumps(cfg, indent=1))
    cmd = ["unshare"] + (["-Ur"] if userns else []) + [
        "-m", "--propagation", "private", "--",
        sys.executable, "-m", "fakefs.cli.sandbox", "--inner", str(cfg_file)]
    inner = None
    pending: list[int] = []
    reaper, to_reaper = _start_reaper(tmp)

    def forward(signum, frame):
        if inner is None:
            pending.append(signum)
        else:
            try:
                inner.send_signal(signum)
            except ProcessLookupError:
                pass
    old = {s: signal.signal(s, forward) for s in STOP_SIGNALS}
    try:
        sys.stdout.flush()
        inner = subprocess.Popen(cmd, env=child_env())
        os.write(to_reaper, b"%d" % inner.pid)
        for s in pending:
            inner.send_signal(s)
        rc = inner.wait()
        return 128 - rc if rc < 0 else rc
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if inner is not None and inner.poll() is None:     # an exception of ours
            inner.terminate()
            inner.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        os.close(to_reaper)
        os.waitpid(reaper, 0)


def _start_reaper(tmp: Path) -> tuple[int, int]:
    """A child of the outer stage, in the caller's namespace, that removes
    ``tmp`` should the outer stage be killed (SIGKILL runs no ``finally``):
    it reads the inner stage's pid from a pipe, and at the pipe's end (the
    outer stage closed it or is gone) waits for the inner stage to end,
    which its PDEATHSIG sees to.  Returns (its pid, the pipe's write end)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(r)
        return pid, w
    try:
        os.close(w)
        for s in STOP_SIGNALS:             # a Ctrl-C is the outer stage's to handle
            signal.signal(s, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):               # the caller's pipes end with the outer stage
            os.dup2(null, fd)
        data = os.read(r, 64)              # the inner stage's pid (one write), or the end
        while os.read(r, 64):              # until the outer stage closes it or is gone
            pass
        deadline = time.monotonic() + GRACE_S + READY_TIMEOUT
        while data and _alive(int(data)) and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(tmp, ignore_errors=True)
    finally:
        os._exit(0)


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie has ended)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# --- the inner stage ------------------------------------------------------------

class _Stopped(Exception):
    """A stop signal came before COMMAND ran."""


class Inner:
    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.userns = cfg["userns"]
        self.root = Path(cfg["root"])
        self.stage = self.root.parent / "stage"
        self.daemon: subprocess.Popen | None = None
        self.child: subprocess.Popen | None = None
        self.stop_at: float | None = None       # when the forwarded signal came
        self.cleaning = False
        self.placed: list[str] = []
        self.notes: list[str] = []

    # signals ---------------------------------------------------------------
    def on_signal(self, signum, frame) -> None:
        if self.cleaning or self.stop_at is not None:
            return
        self.stop_at = time.monotonic()
        if self.child is None:
            raise _Stopped(signal.Signals(signum).name)
        try:
            self.child.send_signal(signum)
        except ProcessLookupError:
            pass

    # the tree ----------------------------------------------------------------
    def start_daemon(self) -> None:
        self.root.mkdir(exist_ok=True)
        with open(self.cfg["daemon_log"], "wb") as logf:
            self.daemon = subprocess.Popen(
                self.cfg["daemon"] + [str(self.root)], stdin=subprocess.DEVNULL, stdout=logf,
                stderr=subprocess.STDOUT, start_new_session=True, cwd="/", env=child_env(),
                preexec_fn=_die_with_parent)
        wait_ready(self.root, self.daemon, READY_TIMEOUT, probe="sys/kernel")

    def tracing(self) -> Path | None:
        for rel in ("sys/kernel/tracing", "sys/kernel/debug/tracing"):  # 2.6.30: debugfs
            if (self.root / rel / "trace").exists():
                return self.root / rel
        return None

    def mount_tracefs_line(self) -> bool:
        """As root: a tracefs on TRACING_DIR (covered by the fake right after)."""
        detach_tracefs_mounts(self.userns)
        if self.userns:
            return False
        r = subprocess.run(["mount", "-t", "tracefs", "tracefs", TRACING_DIR],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            self.notes.append("no tracefs line in /proc/mounts (mount -t tracefs: %s): "
                              "trace-cmd and perf will not find %s"
                              % (r.stdout.strip(), TRACING_DIR))
            return False
        return True

    def place_tracing(self, tracefs_mounted: bool) -> None:
        tracing = self.tracing()
        if tracing is None:
            if tracefs_mounted:
                raise NamespaceError("the simulated kernel has no tracing directory to "
                                     "cover the tracefs on %s with" % TRACING_DIR)
            return
        err = bind(str(tracing), TRACING_DIR)
        if err is not None:
            raise NamespaceError("mount --bind on %s failed: %s" % (TRACING_DIR, err))
        self.placed.append(TRACING_DIR)
        # where else the host's tracefs shows: the tracing/ of a debugfs
        # elsewhere than DEBUG_DIR (mounted there at the first look) and the
        # tracefs lines a user namespace could not detach: the fake's too
        others = []
        for _src, mnt, fstype in mounts():
            if _under(mnt, DEBUG_DIR):
                continue
            if fstype == "debugfs":
                others.append(os.path.join(mnt, "tracing"))
            elif fstype == "tracefs" and mnt != TRACING_DIR:
                others.append(mnt)
        for path in others:
            if path in self.placed or not os.path.isdir(path):
                continue
            err = bind(str(tracing), path)
            if err is not None:
                raise NamespaceError("the host's tracefs on %s stays visible here: %s"
                                     % (path, err))
            self.placed.append(path)
        problem = tracefs_line_problem(self.userns)
        if problem is not None:
            self.notes.append(problem)
        if os.path.isdir(DEBUG_DIR):
            entries = {"tracing": tracing}
            fake_debug = self.root / DEBUG_DIR.lstrip("/")
            if fake_debug.is_dir() and fake_debug != tracing.parent:
                entries.update((n, fake_debug / n) for n in os.listdir(fake_debug))
            self.merge_dir(DEBUG_DIR, entries, keep_host=False)
            self.placed.append(DEBUG_DIR + "/tracing")

    def place_files(self) -> None:
        served = [p for p in SIMULATED_HOST_FILES + SIMULATED_IF_SERVED + PROC_FILES
                  if p != DEBUG_DIR and (self.root / p.lstrip("/")).exists()]
        missing: dict[str, dict[str, Path]] = {}
        for path in served:
            src = self.root / path.lstrip("/")
            if os.path.lexists(path):
                bind_served(self.root, path, self.placed, self.userns, log)
            elif path.startswith("/proc/"):
                self.placed.append(path)        # in COMMAND's /proc (--cover-proc)
            elif os.path.isdir(os.path.dirname(path)):
                missing.setdefault(os.path.dirname(path), {})[os.path.basename(path)] = src
        for d, entries in missing.items():
            self.merge_dir(d, entries, keep_host=True)
            self.placed += [os.path.join(d, n) for n in entries]
        fake_boot = self.root / "boot"
        if (fake_boot / "System.map").exists():
            name = "System.map-" + self.cfg["uname_r"]
            if os.path.isdir("/boot"):
                entries = {n: fake_boot / n for n in os.listdir(fake_boot)}
                entries[name] = fake_boot / "System.map"
                self.merge_dir("/boot", entries, keep_host=True)
                self.placed.append("/boot/" + name)
            else:
                self.notes.append("/boot: none on the host (the System.map is "
                                  "$FAKEFS_ROOT/boot/System.map)")

    def merge_dir(self, target: str, entries: dict[str, Path], keep_host: bool) -> None:
        """``target`` becomes a tmpfs holding ``entries`` (name: source),
        bound in, and (``keep_host``) the host's own entries bound back."""
        self.stage.mkdir(exist_ok=True)
        host = Path(tempfile.mkdtemp(dir=self.stage))
        if keep_host:           # the host's entries, reachable once target is covered
            err = bind(target, str(host))
            if err is not None:
                raise NamespaceError("mount --bind of %s failed: %s" % (target, err))
        try:
            st = os.stat(target)
            opts = "mode=%o" % (st.st_mode & 0o7777)
            if not self.userns:
                opts += ",uid=%d,gid=%d" % (st.st_uid, st.st_gid)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "fakefs-sandbox", target],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                raise NamespaceError("mount -t tmpfs on %s failed: %s"
                                     % (target, r.stdout.strip()))
            names = set(entries) | (set(os.listdir(host)) if keep_host else set())
            for name in sorted(names):
                dst = os.path.join(target, name)
                src = entries.get(name) or host / name
                if name not in entries and src.is_symlink():
                    os.symlink(os.readlink(src), dst)
                    continue
                if src.is_dir():
                    os.mkdir(dst)
                else:
                    open(dst, "w").close()
                err = bind(str(src), dst)
                if err is not None:
                    if name in entries:
                        raise NamespaceError("mount --bind on %s failed: %s" % (dst, err))
                    self.notes.append("%s: the host's is not bound back (%s)" % (dst, err))
            subprocess.run(["mount", "-o", "remount,ro", target], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        finally:
            if keep_host:
                umount(str(host), lazy=True)

    # COMMAND -------------------------------------------------------------------
    def summary(self) -> None:
        if self.cfg.get("quiet"):
            return
        rel = sorted(n[len("System.map-"):] for n in os.listdir(self.root / "boot")
                     if n.startswith("System.map-")) if (self.root / "boot").is_dir() else []
        log("simulated kernel%s at %s; the whole tree is $FAKEFS_ROOT (%s)"
            % (" " + rel[0] if rel else "", ", ".join(self.placed), self.root))
        for n in self.notes:
            log("note: " + n)

    def place_kmod(self) -> str | None:
        """The simulated kernel's insmod/modprobe/rmmod/lsmod (selftest/kmod.py):
        a directory of them for PATH, bound over the host's kmod too (no
        module ever reaches the host's kernel).  Returns the directory."""
        control = self.root / ".fakefs" / "modules"
        if not control.exists():
            return None
        bindir = str(self.root.parent / "kmod-bin")
        script = install_kmod(bindir, str(control), str(self.root / "proc" / "modules"))
        for path in host_kmod_paths():
            err = bind(script, path)
            if err is not None:
                raise NamespaceError("mount --bind over %s failed: %s" % (path, err))
            self.placed.append(path)
        return bindir

    def run_command(self) -> int:
        env = dict(os.environ, FAKEFS_ROOT=str(self.root))
        bindir = self.place_kmod()
        if bindir is not None:
            env["PATH"] = bindir + os.pathsep + env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        argv = self.cfg["command"]
        Path(self.cfg["hostproc"]).mkdir(exist_ok=True)
        self.child = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "--", sys.executable, "-m",
             "fakefs.cli.sandbox", "--cover-proc", str(self.root), self.cfg["hostproc"],
             "quiet" if self.cfg.get("quiet") else "say", self.cfg["syscall_socket"], "--"]
            + argv, env=env)
        if self.stop_at is not None:                # came while it started
            self.child.terminate()
        while True:
            try:
                rc = self.child.wait(timeout=0.2)
                return 128 - rc if rc < 0 else rc
            except subprocess.TimeoutExpired:
                if self.stop_at is not None and time.monotonic() - self.stop_at > GRACE_S:
                    log("%s did not exit %d s after the signal: killed" % (argv[0], GRACE_S))
                    self.child.kill()

    def main(self) -> int:
        rc = EXIT_SETUP
        try:
            if not in_private_mount_ns(self.cfg["outer_mnt_ns"]):
                raise NamespaceError("refusing to mount: not in a private mount namespace")
            tracefs_mounted = self.mount_tracefs_line()
            try:
                self.start_daemon()
                self.place_tracing(tracefs_mounted)
            except BaseException:
                if tracefs_mounted:     # never left uncovered, even for a moment's reader
                    umount(TRACING_DIR, lazy=True)
                raise
            self.place_files()
            self.summary()
            rc = self.run_command()
        except NamespaceError as e:
            log("error: %s" % e)
            self.show_daemon_log()
        except _Stopped as e:
            log("stopped by %s" % e)
            rc = 128 + getattr(signal, str(e), signal.SIGTERM)
        finally:
            self.cleaning = True
            if self.daemon is not None:
                if self.daemon.poll() is None:
                    self.daemon.terminate()
                stop(self.daemon, grace=5)
            umount(str(self.root), lazy=True)
        return rc

    def show_daemon_log(self) -> None:
        try:
            text = Path(self.cfg["daemon_log"]).read_text(errors="replace").strip()
        except OSError:
            return
        if text:
            print("---- daemon log (last 30 lines) ----\n%s\n----"
                  % "\n".join(text.splitlines()[-30:]), file=sys.stderr, flush=True)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _die_with_parent() -> None:
    """In a child: SIGTERM when the process that started it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def cover_proc(root: str, hostproc: str, command: list[str], quiet: bool = False,
               syscall_socket: str | None = None) -> int:
    """In COMMAND's own mount namespace: the host's procfs at ``hostproc``,
    the fake's proc/ (links to it for what it lacks) on /proc; then COMMAND.
    Should /proc stay the host's, COMMAND runs with a note saying so.  The
    host's sysctls are read-only to COMMAND (a write gets EROFS, as in a
    container): nothing changes outside, the host's tracing settings the
    fake lacks (tracepoint_printk, traceoff_on_warning...) included.  Then
    the seal (fakefs/cli/sandbox_seal.py); unless ``quiet``, why perf counts
    nothing when the seal refuses perf_event_open() and perf is here."""
    err = bind("/proc", hostproc, recursive=True)
    if err is None:
        err = bind(os.path.join(root, "proc"), "/proc")
        if err is not None:
            umount(hostproc, lazy=True)
    if err is not None:
        log("note: /proc stays the host's (%s): /proc/profile and the simulated kernel's "
            "other /proc files are in $FAKEFS_ROOT/proc" % err)
    host_sys = os.path.join(hostproc if err is None else "/proc", "sys")
    err = bind(host_sys, host_sys)
    if err is None:
        r = subprocess.run(["mount", "-o", "remount,bind,ro", host_sys],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        err = (r.stdout.strip() or "status %d" % r.returncode) if r.returncode else None
    if err is not None:
        log("note: the host's sysctls stay writable here (%s)" % err)
    notes, perf_refused = seal(syscall_socket)
    for note in notes:
        log("note: " + note)
    if perf_refused and not quiet and shutil.which("perf"):
        log("note: " + PERF_NOTE)
    try:
        os.execvp(command[0], command)
    except FileNotFoundError:
        log("%s: command not found" % command[0])
        return 127
    except PermissionError as e:
        log("%s: %s" % (command[0], e.strerror))
        return 126


def inner_main(cfg_path: str) -> int:
    cfg = json.loads(Path(cfg_path).read_text())
    _die_with_parent()          # the outer stage killed: stop too
    if os.getppid() != cfg["outer_pid"]:
        return EXIT_SETUP
    inner = Inner(cfg)
    for s in STOP_SIGNALS:
        signal.signal(s, inner.on_signal)
    return inner.main()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--inner":
        return inner_main(argv[1])
    if len(argv) >= 7 and argv[0] == "--cover-proc" and argv[5] == "--":
        return cover_proc(argv[1], argv[2], argv[6:], quiet=argv[3] == "quiet",
                          syscall_socket=argv[4])
    parser = argparse.ArgumentParser(prog="fakefs sandbox")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
