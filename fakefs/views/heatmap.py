"""``fakefs heatmap MOUNTPOINT``: a "Kernel Heatmap" of /proc/profile.

The table LegoOS prints from its kernel profiler (``print_profile_heatmap_nr``),
computed here in user space from the mounted ``proc/profile`` and
``boot/System.map``: the top N functions by profile hits with their share
of all hits::

    Kernel Heatmap (top #10)
             Address              Function          NR          %
    ----------------  --------------------  ----------  ---------
    ffffffff821f4da0   pv_native_safe_halt       10648      77.94
    ...
    ----------------  --------------------  ----------  ---------
                                                 13661     100.00

How counters are attributed differs from ``readprofile`` on purpose: each
counter goes to the function containing the *start* of its text bucket (a
function's ``__pfx_`` padding counts as the function), so there is no
one-bucket shift and nothing is left as ``*unknown*``; the total is the sum
of every counter.  Names are cut to 19 characters and addresses are the
functions' start addresses, as in the original.

The percentages differ from the original's, which has a formatting bug:
it prints ``nr*100/total``, a dot, and then the first two digits of the
*remainder* ``nr*100 % total`` rather than the fraction.  Its own example
shows ``schedule 1519`` of 151994 hits as ``0.15`` (really 0.9994 %) and
``cpu_idle 112082`` as ``73.11`` (really 73.74 %).  This tool prints the
share rounded to hundredths in the same ``%6d.%02d`` column;
``--lego-percent`` reproduces the original arithmetic for comparison.
"""

from __future__ import annotations

import argparse
import os
import sys
from array import array
from bisect import bisect_right

HEADER = ("         Address              Function          NR          %\n"
          "----------------  --------------------  ----------  ---------\n")
RULE = "----------------  --------------------  ----------  ---------\n"
PFX = "__pfx_"
TEXT_TYPES = frozenset("tTwW")


def parse_profile(data: bytes) -> tuple[int, array]:
    """(step, counters) of /proc/profile contents (native byte order)."""
    if len(data) < 4:
        raise ValueError("profile is empty")
    words = array("I")
    words.frombytes(data[:len(data) // 4 * 4])
    if sys.byteorder != "little":
        pass          # native order is what the kernel wrote
    return words[0], words[1:]


def parse_system_map(text: str) -> tuple[int, list[int], list[str]]:
    """(_stext, addresses, names) of the text symbols from ``_stext`` to
    ``_etext``, as readprofile walks them."""
    addrs: list[int] = []
    names: list[str] = []
    stext = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        try:
            addr = int(parts[0], 16)
        except ValueError:
            continue
        typ, name = parts[1], parts[2]
        if stext is None:
            if name in ("_stext", "__stext"):
                stext = addr
            else:
                continue
        if name in ("_etext", "__etext"):
            addrs.append(addr)
            names.append(name)
            break
        if typ not in TEXT_TYPES:
            break
        addrs.append(addr)
        names.append(name)
    if stext is None:
        raise ValueError('can\'t find "_stext"')
    return stext, addrs, names


def heatmap(step: int, counts, stext: int, addrs: list[int], names: list[str],
            exclude=()) -> tuple[list[tuple[int, str, int]], int]:
    """Rows (function address, name, hits) by descending hits, and the total."""
    per: dict[int, int] = {}
    label: dict[int, str] = {}
    total = 0
    excluded = set(exclude)
    for i, n in enumerate(counts):
        if not n:
            continue
        addr = stext + i * step
        j = bisect_right(addrs, addr) - 1
        while j > 0 and addrs[j - 1] == addrs[j]:
            j -= 1                       # aliases: the first name in the map
        if j < 0:
            name, start = "*unknown*", stext
        else:
            name, start = names[j], addrs[j]
            if name.startswith(PFX) and j + 1 < len(names):
                start, name = addrs[j + 1], names[j + 1]
            elif name in ("_etext", "__etext"):
                name = "*unknown*"
        if name in excluded:
            continue
        total += n
        per[start] = per.get(start, 0) + n
        label.setdefault(start, name)
    rows = sorted(((a, label[a], n) for a, n in per.items()), key=lambda r: (-r[2], r[0]))
    return rows, total


def percent(nr: int, total: int, lego: bool = False) -> str:
    if total <= 0:
        return "%6d.%02d" % (0, 0)
    if lego:
        whole, rem = divmod(nr * 100, total)
        return "%6d.%s" % (whole, str(rem)[:2])
    hundredths = (nr * 20000 + total) // (2 * total)
    return "%6d.%02d" % divmod(hundredths, 100)


def format_heatmap(rows, total: int, top: int, nr_buckets: int, lego_percent: bool = False) -> str:
    n = min(top, nr_buckets)
    out = ["Kernel Heatmap (top #%d)\n" % n, HEADER]
    for addr, name, hits in rows[:n]:
        if not hits:
            continue
        # a long name is printed whole (cut, it could read as another
        # symbol); the original cut it to 19 characters
        out.append("%x  %20s  %10d  %s\n" % (addr, name[:19] if lego_percent else name, hits,
                                            percent(hits, total, lego_percent)))
    out.append(RULE)
    out.append("%40s%10d     100.00\n" % ("", total))
    out.append("\n")
    return "".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="fakefs heatmap",
        description="Top kernel functions by /proc/profile hits (LegoOS-style heatmap).")
    ap.add_argument("mountpoint", nargs="?", default="/",
                    help="where fakefs is mounted (default: /, the running system)")
    ap.add_argument("-n", "--top", type=int, default=10, help="rows to show (default 10)")
    ap.add_argument("-p", "--profile", help="profile file (default MOUNTPOINT/proc/profile)")
    ap.add_argument("-m", "--map", help="System.map (default MOUNTPOINT/boot/System.map)")
    ap.add_argument("-x", "--exclude", action="append", default=[], metavar="FUNCTION",
                    help="leave a function out of rows and total (e.g. the idle loop)")
    ap.add_argument("--lego-percent", action="store_true",
                    help="print as the original did: percentages with its remainder bug, "
                         "names cut to 19 characters")
    args = ap.parse_args(argv)
    prof = args.profile or os.path.join(args.mountpoint, "proc/profile")
    mapf = args.map or os.path.join(args.mountpoint, "boot/System.map")
    try:
        with open(prof, "rb") as f:
            data = f.read()
        with open(mapf, encoding="ascii", errors="replace") as f:
            maptext = f.read()
        step, counts = parse_profile(data)
        stext, addrs, names = parse_system_map(maptext)
    except FileNotFoundError as e:
        hint = ""
        if e.filename == prof and not args.profile:
            hint = (" (the kernel keeps no profile unless booted with profile=N: "
                    "fakefs mount --cmdline profile=2 MOUNTPOINT)")
        print("fakefs heatmap: %s: no such file%s" % (e.filename, hint), file=sys.stderr)
        return 1
    except OSError as e:
        print("fakefs heatmap: %s: %s" % (e.filename or prof, e.strerror or e), file=sys.stderr)
        return 1
    except ValueError as e:
        print("fakefs heatmap: %s: %s" % (prof, e), file=sys.stderr)
        return 1
    if step <= 0:
        print("fakefs heatmap: %s: bad sampling step" % prof, file=sys.stderr)
        return 1
    rows, total = heatmap(step, counts, stext, addrs, names, args.exclude)
    sys.stdout.write(format_heatmap(rows, total, args.top, len(counts), args.lego_percent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
