"""``ping`` for the simulated kernel (the selftests' ``ping:program``).

Inside ``fakefs selftest`` this command comes first in PATH (beside the
module commands of ``kmod.py``): its echo requests to the loopback address
are system calls into the simulated kernel through the control file
``.fakefs/ping`` (``fakefs/kernel/ping.py``), so the process named
``ping`` sleeps between them and is woken for each reply on the simulated
machine, as the tests' ``comm == "ping"`` filters expect.  It prints what
iputils' ping prints for a loopback run.  Only loopback is reachable (the
simulated machine has no other network): another host is "Network is
unreachable".
"""

from __future__ import annotations

import os
import sys
import time

from .scripts import write_script

USAGE = "Usage: ping [-c count] [-i interval] [-W timeout] [-q] <destination>\n"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "ip6-localhost")


def _parse(args: list[str]):
    count, interval, quiet, dest = None, 1.0, False, None
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-c", "-i", "-W", "-w", "-s", "-t"):
            if i + 1 >= len(args):
                raise ValueError(a)
            v = args[i + 1]
            if a == "-c":
                count = int(v)
            elif a == "-i":
                interval = float(v)
            i += 2
            continue
        if a.startswith("-c") and len(a) > 2:
            count = int(a[2:])
        elif a == "-q":
            quiet = True
        elif a in ("-4", "-6", "-n"):
            pass
        elif a.startswith("-"):
            raise ValueError(a)
        else:
            dest = a
        i += 1
    if dest is None:
        raise ValueError("destination")
    return count, interval, quiet, dest


def main(argv: list[str], control: str) -> int:
    try:
        count, interval, quiet, dest = _parse(argv[1:])
    except ValueError:
        sys.stderr.write(USAGE)
        return 2
    if dest not in LOOPBACK:
        sys.stderr.write("ping: connect: Network is unreachable\n")
        return 2
    addr = "::1" if ":" in dest or dest == "ip6-localhost" else "127.0.0.1"
    print("PING %s (%s) 56(84) bytes of data." % (dest, addr), flush=True)
    start = time.monotonic()
    rtts = []
    seq = 0
    try:
        while count is None or seq < count:
            if seq:
                time.sleep(interval)
            seq += 1
            t0 = time.monotonic()
            fd = os.open(control, os.O_WRONLY)     # (never made: it is the kernel's)
            try:
                os.write(fd, b"echo\n")
            finally:
                os.close(fd)
            rtt = (time.monotonic() - t0) * 1000
            rtts.append(rtt)
            if not quiet:
                print("64 bytes from %s: icmp_seq=%d ttl=64 time=%.3f ms" % (addr, seq, rtt),
                      flush=True)
    except KeyboardInterrupt:
        pass
    except OSError as e:
        sys.stderr.write("ping: sendmsg: %s\n" % e.strerror)
        return 1
    took = int((time.monotonic() - start) * 1000)
    print("\n--- %s ping statistics ---" % dest)
    print("%d packets transmitted, %d received, 0%% packet loss, time %dms"
          % (seq, len(rtts), took))
    if rtts:
        avg = sum(rtts) / len(rtts)
        mdev = (sum((r - avg) ** 2 for r in rtts) / len(rtts)) ** 0.5
        print("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms" % (min(rtts), avg, max(rtts), mdev))
    return 0


def install(bindir: str, control: str) -> str:
    """Write ``ping`` into ``bindir``; its path."""
    return write_script(bindir, "ping", "ping over the simulated kernel's loopback", "ping", control)
