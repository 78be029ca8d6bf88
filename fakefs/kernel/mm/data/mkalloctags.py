#!/usr/bin/env python3
"""Generate the table of allocation call sites (``alloc_tags-<version>.tsv``).

A real kernel gets one ``struct alloc_tag`` per ``alloc_hooks()`` expansion,
placed in the ``alloc_tags`` ELF section in link order.  This tool rebuilds
that list from a kernel source tree and a ``.config``:

* it finds every macro that expands to ``alloc_hooks()`` (``kmalloc``,
  ``alloc_pages``, ``vmalloc``, ``kcalloc`` ...) in the headers;
* it walks the Kbuild makefiles from the top-level ``Kbuild`` in order,
  evaluating ``obj-$(CONFIG_...)`` against the config, which gives the link
  order of built-in objects and the set of modules with their objects;
* in each compiled ``.c`` file it finds the lines that invoke a hooked macro
  (skipping code under disabled ``#ifdef CONFIG_...``) and the function each
  one is in (``__func__``), plus the header ``static inline`` helpers a file
  calls (one copy of the tag per translation unit, as in the real section).

Within one object file the tags are listed by descending line number (the
order GCC emits the static variables in).  Output, one tag per line::

    <file>\\t<line>\\t<function>\\t<module or empty>\\t<allocator macro>

Usage::

    mkalloctags.py --src /path/to/linux --config .config \\
        [--module CONFIG_XFS_FS ...] [--set CONFIG_X=y ...] -o alloc_tags-6.12.tsv

``--module CONFIG_X`` builds that option as a module (``=m``).  The table
shipped with fakefs was generated from linux-source-6.12 (Debian 6.12.117)
with a small x86-64 KVM guest configuration plus a handful of common modules
(see ``alloc_tags-6.12.README``).

The pieces, next to this file (run this one): ``mkalloctags_kbuild.py``
(the ``.config`` and the Kbuild walk), ``mkalloctags_cpp.py`` (``#if``
evaluation, the compiled lines) and ``mkalloctags_hooks.py`` (the hooked
macros, the header helpers, the call sites in a C file).
"""

from __future__ import annotations

import argparse
import os
import sys

from mkalloctags_cpp import CondEval
from mkalloctags_hooks import arch_defines, collect_defines, header_helpers, hooked_macros, scan_c
from mkalloctags_kbuild import HEAD_OBJECTS, TOP_ORDER, Kbuild, read_config


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--module", action="append", default=[], help="CONFIG_X to build as =m")
    ap.add_argument("--set", action="append", default=[], help="CONFIG_X=value override")
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args(argv)

    config = read_config(args.config)
    for s in args.set:
        k, v = s.split("=", 1)
        config[k] = v
    for k in args.module:
        config[k] = "m"
    src = args.src

    arch = arch_defines(src)
    defs = collect_defines([os.path.join(src, "include"), os.path.join(src, "arch/x86/include")],
                           CondEval(config, False, arch))
    hooked = hooked_macros(defs)
    print("hooked macros: %d" % len(hooked), file=sys.stderr)

    kb = Kbuild(src, config)
    seen: set = set()
    for d in TOP_ORDER:
        kb.walk(d, True, seen)
    order = []
    for f in HEAD_OBJECTS:
        if f in kb.builtin:
            order.append(f)
    for f in kb.builtin:
        if f not in order:
            order.append(f)
    print("built-in objects: %d, modules: %d" % (len(order), len(kb.modules)), file=sys.stderr)

    helpers = header_helpers(src, hooked, CondEval(config, False, arch))

    rows = []

    def emit(files: list[str], modname: str):
        for rel in files:
            try:
                text = open(os.path.join(src, rel), errors="replace").read()
            except OSError:
                continue
            cond = CondEval(config, bool(modname), arch)
            sites, called = scan_c(text, cond, hooked, path=os.path.join(src, rel))
            first: dict[tuple[int, str], str] = {}
            for line, func, callee in sites:
                first.setdefault((line, func), callee)
            for (line, func) in sorted(first, reverse=True):
                rows.append((rel, line, func, modname, first[(line, func)]))
            extra = []
            for name in sorted(called & helpers.keys()):
                for hfile, hline, callee in helpers[name]:
                    extra.append((hfile, hline, name, callee))
            for hfile, hline, name, callee in sorted(set(extra), key=lambda t: (t[0], -t[1])):
                rows.append((hfile, hline, name, modname, callee))

    emit(order, "")
    for mod in sorted(args.module and kb.modules or kb.modules):
        emit(kb.modules[mod], mod)

    out = sys.stdout if args.output == "-" else open(args.output, "w")
    for f, line, func, mod, callee in rows:
        out.write("%s\t%d\t%s\t%s\t%s\n" % (f, line, func, mod, callee))
    if out is not sys.stdout:
        out.close()
    print("tags: %d (%d in modules)" % (len(rows), sum(1 for r in rows if r[3])), file=sys.stderr)


if __name__ == "__main__":
    main()
