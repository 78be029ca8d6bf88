"""The fakefs command: mount, umount, selftest and friends."""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys

from ..kernel.config import known_symbols, parse_value

DESCRIPTION = ("Serve the tracefs and procfs of a simulated Linux kernel through FUSE: "
               "mount it, run a command with it at the real paths (sandbox), run the "
               "upstream ftrace selftests against it, read its log and profile.")
from .mountargs import add_boot_arguments, check_persona
from .. import vclock
from ..views import pictures


def _split_opts(values: list[str]) -> tuple[list[str], dict]:
    """``-o a,b=c`` FUSE options; ``CONFIG_X=y`` items are Kconfig overrides."""
    fuse, config = [], {}
    for v in values or []:
        for o in v.split(","):
            o = o.strip()
            if not o:
                continue
            if o.startswith("CONFIG_"):
                k, _, val = o.partition("=")
                config[k] = parse_value(val)
            else:
                fuse.append(o)
    return fuse, config


def cmd_mount(args) -> int:
    from .. import daemon
    rc = check_persona(args.persona)
    if rc is not None:
        return rc
    if args.mountpoint is None:
        print("fakefs mount: error: the following arguments are required: mountpoint",
              file=sys.stderr)
        return 2
    from ..fuse import mountpoint
    fuse_opts, args.config = _split_opts(args.o)
    unknown = sorted(set(args.config) - known_symbols())
    if unknown:
        print("fakefs: %s: not a Kconfig symbol of the simulated kernel (its own, see "
              "fakefs/kernel/config.py)" % ", ".join(unknown), file=sys.stderr)
        return 2
    mnt = os.path.abspath(args.mountpoint)
    problem = mountpoint.fuse_device_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    try:
        mountpoint.prepare(mnt, log=lambda m: print(m, file=sys.stderr))
    except mountpoint.MountpointError as e:
        print(e, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="fakefs: %(levelname)s %(name)s: %(message)s")
    if args.foreground:
        kernel, host = daemon.boot_kernel(args)
        tracing = kernel.tracing.root.path() if kernel.tracing else None

        def ready():
            print(f"fakefs: {kernel.config.release} mounted at {mnt}"
                  + (f" (tracing at {mnt}{tracing})" if tracing else "")
                  + "; Ctrl-C to unmount", flush=True)
        return daemon.serve(kernel, mnt, fuse_opts, on_ready=ready, host=host,
                            links=daemon.proc_links(args.proc_links),
                            syscall_socket=args.syscall_socket)
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        msg = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            msg += chunk
        os.close(r)
        if msg.startswith(b"OK"):
            return 0
        sys.stderr.write(msg.decode(errors="replace") or "fakefs: daemon failed to start\n")
        return 1
    # child: become a daemon
    os.close(r)
    os.setsid()
    try:
        kernel, host = daemon.boot_kernel(args)
    except Exception as e:   # report boot failures to the waiting parent
        os.write(w, f"fakefs: boot failed: {e}\n".encode())
        os._exit(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    if not args.debug:
        logfile = args.log or os.devnull
        fd = os.open(logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    rc = daemon.serve(kernel, mnt, fuse_opts, ready_fd=w, host=host,
                      links=daemon.proc_links(args.proc_links),
                      syscall_socket=args.syscall_socket)
    os._exit(rc)


def cmd_umount(args) -> int:
    """``fusermount3 -u [-z]``.  With -z the mount is detached at once; the
    daemon notices (it watches the mount while readers wait), answers its
    blocked readers and exits, as on SIGTERM."""
    mnt = os.path.abspath(args.mountpoint)
    r = subprocess.run(["fusermount3", "-u"] + (["-z"] if args.lazy else []) + [mnt],
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        from ..fuse.mountpoint import umount_failure
        print("fakefs umount: " + umount_failure(mnt, args.mountpoint, r.stderr.strip(),
                                                  args.lazy), file=sys.stderr)
    return r.returncode


def cmd_dmesg(args) -> int:
    """Print the simulated kernel's log the way dmesg does."""
    path = os.path.join(os.path.abspath(args.mountpoint), "dev/kmsg")
    records = []
    try:
        # as util-linux dmesg does: one record a read, until there is no more
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:
                try:
                    records.append(os.read(fd, 8192).decode("latin-1"))
                except BlockingIOError:
                    break
                except BrokenPipeError:        # EPIPE: records overwritten meanwhile
                    continue
        finally:
            os.close(fd)
    except OSError as e:
        print(f"fakefs: {path}: {e.strerror}", file=sys.stderr)
        return 1
    for rec in records:
        head, _, msg = rec.rstrip("\n").partition(";")
        usec = int(head.split(",")[2])
        msg = re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), msg)
        print("[%5d.%06d] %s" % (usec // 1_000_000, usec % 1_000_000, msg))
    return 0


def cmd_sandbox(args) -> int:
    from . import sandbox
    return sandbox.run(args)


def cmd_selftest(args) -> int:
    from .. import selftest
    return selftest.run(args)


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("fakefs")
    except Exception:              # not installed as a package (PYTHONPATH=.)
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fakefs", description=DESCRIPTION)
    p.add_argument("--version", action="version", version="fakefs " + _version())
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    m = sub.add_parser("mount", help="boot a simulated kernel and mount its tree")
    m.add_argument("-f", "--foreground", action="store_true", help="do not daemonize")
    add_boot_arguments(m)
    m.add_argument("--log", help="daemon log file")
    # fakefs sandbox: proc/ shows the host's /proc entries as links to PREFIX/...
    m.add_argument("--proc-links", metavar="PREFIX", help=argparse.SUPPRESS)
    # (fakefs sandbox: where COMMAND's seccomp listener comes, fuse/seccomp_notify.py)
    m.add_argument("--syscall-socket", metavar="PATH", help=argparse.SUPPRESS)
    m.add_argument("mountpoint", nargs="?", help="where to mount (not needed for --persona help)")
    m.set_defaults(func=cmd_mount)
    u = sub.add_parser("umount", help="unmount a fakefs mount")
    u.add_argument("-z", "--lazy", action="store_true",
                   help="detach now even if files are open (blocked readers are answered)")
    u.add_argument("mountpoint")
    u.set_defaults(func=cmd_umount)
    sub.add_parser("heatmap", add_help=False,
                   help="kernel heatmap (top functions) from MOUNTPOINT/proc/profile "
                        "(see fakefs heatmap --help)")
    sb = sub.add_parser("sandbox", help="run a command (default: a shell) where the simulated "
                        "kernel's files are at the real paths (a private mount namespace)")
    from . import sandbox
    sandbox.add_arguments(sb)
    sb.set_defaults(func=cmd_sandbox)
    ck = sub.add_parser("clock", help="print or move the simulated time of a mount "
                        "made with --clock virtual")
    vclock.add_arguments(ck)
    ck.set_defaults(func=vclock.cmd_clock)
    pic = sub.add_parser("picture", help="draw stack_map, allocinfo or /proc/profile as SVG")
    pictures.add_arguments(pic)
    pic.set_defaults(func=pictures.cmd_picture)
    dm = sub.add_parser("dmesg", help="print the simulated kernel's log")
    dm.add_argument("mountpoint")
    dm.set_defaults(func=cmd_dmesg)
    try:
        from .. import selftest
    except ImportError:
        selftest = None
    if selftest is not None:
        s = sub.add_parser("selftest", help="run the upstream ftracetest against a fakefs mount")
        selftest.add_arguments(s)
        s.set_defaults(func=cmd_selftest)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["heatmap"]:            # its own argument parser
        from ..views import heatmap
        return heatmap.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help(sys.stderr)
        print("\nfakefs: a COMMAND is needed (e.g. fakefs mount /tmp/k)", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:                # `fakefs dmesg MNT | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
