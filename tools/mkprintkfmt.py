#!/usr/bin/env python3
"""Write fakefs/kernel/trace/data/printk_formats-6.12.tsv: the strings
``printk_formats`` lists for Debian's Linux 6.12 amd64 kernel.

``printk_formats`` (kernel/trace/trace_printk.c) walks the pointers of
vmlinux's ``__trace_bprintk_fmt`` section (``trace_printk()`` formats: none
in a distribution kernel), then of its ``__tracepoint_str`` section
(``tracepoint_string()``: RCU's ``TPS()`` and a few others), then the
``trace_printk()`` formats of loaded modules (none of the catalogued ones has
any).  Each line shows the string's address and the string.

The tool reads the same dbg package as mkevents.py (its cache) and writes,
per pointer in section order, the string's offset from ``_text`` and the
string (JSON-quoted, so that tabs and newlines survive); the kernel model
adds the simulated ``_text`` and escapes the string the way ``t_show()``
does.  Only the Python standard library is needed.

    python3 tools/mkprintkfmt.py            # writes the data file
    python3 tools/mkprintkfmt.py --check    # compares with the checked-in file
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mkevents  # noqa: E402  (a sibling tool: the ELF reader and the package fetch)

SECTIONS = (("__start___trace_bprintk_fmt", "__stop___trace_bprintk_fmt"),
            ("__start___tracepoint_str", "__stop___tracepoint_str"))


def build(root: str) -> str:
    elf = mkevents.Elf(os.path.join(root, mkevents.VMLINUX))
    text = elf.sym["_text"]
    lines = ["# printk_formats of Linux %s (Debian %s): offset from _text, string"
             % (mkevents.ABI, mkevents.DEB_VERSION)]
    for start, stop in SECTIONS:
        lo, hi = elf.sym[start], elf.sym[stop]
        for slot in range(lo, hi, 8):
            ptr = elf.u64(slot)
            if not ptr:
                continue
            s = elf.cstr(ptr)
            if isinstance(s, bytes):
                s = s.decode("latin-1")
            lines.append("%x\t%s" % (ptr - text, json.dumps(s)))
    for mod, path, _default in mkevents.MODULES:
        melf = mkevents.Elf(os.path.join(root, mkevents.MODDIR + path))
        if any(s["name"] == "__trace_printk_fmt" for s in melf.sections):
            raise SystemExit("%s has trace_printk() formats: list them too" % mod)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = mkevents.tool_parser(__doc__, "printk_formats-6.12.tsv").parse_args(argv)
    data = build(mkevents.fetch(args.cache))
    if args.check:
        with open(args.out) as fh:
            same = fh.read() == data
        print("same as %s" % args.out if same else "DIFFERS from %s" % args.out)
        return 0 if same else 1
    with open(args.out, "w") as fh:
        fh.write(data)
    print("%s: %d strings" % (args.out, data.count("\n") - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
