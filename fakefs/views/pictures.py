"""``fakefs picture KIND MOUNTPOINT [-o FILE]``: pictures of a mount's files.

========== ============================================ ===========================
KIND       reads                                        writes
========== ============================================ ===========================
flamegraph ``sys/kernel/tracing/stack_map``             SVG flame graph (ref counts)
folded     ``sys/kernel/tracing/stack_map``             folded stacks (text) for
                                                        flamegraph.pl/inferno/speedscope
allocinfo  ``proc/allocinfo``                           SVG bar chart, top sites by size
profile    ``proc/profile`` + ``boot/System.map``       SVG heatmap of kernel ticks
========== ============================================ ===========================

The pictures are drawn by pure functions of the files' contents
(flamegraph.py, charts.py), re-exported here; docs/pictures.md shows how
to make each one.
"""

from __future__ import annotations

import os
import sys

from .charts import (allocinfo_chart_svg, parse_allocinfo, profile_heatmap_svg, profile_rows,
                     render_profile)
from .flamegraph import flame_graph_svg, folded_stacks

KINDS = ("flamegraph", "folded", "allocinfo", "profile")
STACK_MAP = "sys/kernel/tracing/stack_map"
ALLOCINFO = "proc/allocinfo"
PROFILE = "proc/profile"
SYSTEM_MAP = "boot/System.map"

__all__ = ["allocinfo_chart_svg", "profile_heatmap_svg", "flame_graph_svg", "folded_stacks",
           "add_arguments", "cmd_picture", "make_picture"]


class PictureError(Exception):
    """A reason, in plain words, why the picture cannot be made."""


def _read(mnt: str, rel: str, binary: bool = False, missing: str = ""):
    path = os.path.join(mnt, rel)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise PictureError("%s: no such file%s" % (path, missing)) from None
    except OSError as e:
        raise PictureError("%s: %s" % (path, e.strerror or e)) from None
    return data if binary else data.decode("latin-1")


def make_picture(kind: str, mountpoint: str, top: int | None = None,
                 title: str | None = None) -> str:
    """The picture (SVG text, or folded stacks) of ``kind`` for a mount."""
    mnt = os.path.abspath(mountpoint)
    if not os.path.isdir(mnt):
        raise PictureError("%s: no such directory" % mountpoint)
    if kind in ("flamegraph", "folded"):
        text = _read(mnt, STACK_MAP, missing=" (is %s a fakefs mount of a kernel with the "
                     "stackmap series? CONFIG_FTRACE_STACKMAP=n leaves it out)" % mountpoint)
        folded = folded_stacks(text)
        if not folded:
            raise PictureError(
                "%s is empty: enable options/stackmap and options/stacktrace first, then a "
                "tracer (echo function > current_tracer) or events, and let time pass "
                "(fakefs clock %s +1s with --clock virtual)"
                % (os.path.join(mnt, STACK_MAP), mountpoint))
        if kind == "folded":
            return folded
        return flame_graph_svg(folded, title or "stack_map flame graph (%s)" % mountpoint)
    if kind == "allocinfo":
        text = _read(mnt, ALLOCINFO, missing=" (the kernel has no memory allocation "
                     "profiling: CONFIG_MEM_ALLOC_PROFILING)")
        try:
            sites = parse_allocinfo(text)
        except ValueError as e:
            raise PictureError("%s: %s" % (os.path.join(mnt, ALLOCINFO), e)) from None
        if not any(s.bytes > 0 for s in sites):
            raise PictureError("%s shows no bytes allocated: memory allocation profiling is "
                               "off (boot with --cmdline sysctl.vm.mem_profiling=1)"
                               % os.path.join(mnt, ALLOCINFO))
        return allocinfo_chart_svg(text, top or 20)
    if kind == "profile":
        data = _read(mnt, PROFILE, binary=True,
                     missing=" (the kernel keeps no profile: boot with --cmdline profile=2, "
                     "e.g. fakefs mount --cmdline profile=2 %s)" % mountpoint)
        smap = _read(mnt, SYSTEM_MAP)
        try:
            step, stext, size, rows, total = profile_rows(data, smap)
        except ValueError as e:
            raise PictureError("%s: %s" % (os.path.join(mnt, PROFILE), e)) from None
        if not total:
            raise PictureError("%s has no ticks yet: let time pass (fakefs clock %s +1s with "
                               "--clock virtual)" % (os.path.join(mnt, PROFILE), mountpoint))
        return render_profile(step, stext, size, rows, total, top=top or 30)
    raise PictureError("unknown picture %r (one of: %s)" % (kind, ", ".join(KINDS)))


def add_arguments(p) -> None:
    p.add_argument("kind", choices=KINDS,
                   help="flamegraph: SVG of stack_map; folded: stack_map as folded stacks "
                        "(for flamegraph.pl, inferno, speedscope); allocinfo: SVG of the top "
                        "allocation sites; profile: SVG heatmap of /proc/profile")
    p.add_argument("mountpoint", help="where fakefs is mounted")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (default: standard output)")
    p.add_argument("-n", "--top", type=int, metavar="N",
                   help="bars to draw (allocinfo: 20, profile: 30)")
    p.add_argument("--title", help="the flame graph's title")


def cmd_picture(args) -> int:
    if args.top is not None and args.top <= 0:
        print("fakefs picture: --top must be a positive number", file=sys.stderr)
        return 2
    try:
        out = make_picture(args.kind, args.mountpoint, args.top, args.title)
    except PictureError as e:
        print("fakefs picture: %s" % e, file=sys.stderr)
        return 1
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(out)
        except OSError as e:
            print("fakefs picture: %s: %s" % (args.output, e.strerror or e), file=sys.stderr)
            return 1
    else:
        sys.stdout.write(out)
        sys.stdout.flush()
    return 0
