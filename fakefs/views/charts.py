"""Charts of two proc files, as self-contained SVG.

* :func:`allocinfo_chart_svg`: the top allocation sites of
  ``/proc/allocinfo`` by bytes, one horizontal bar each.  The file has two
  header lines (``allocinfo - version: 1.0`` and ``#     <size>  <calls>
  <tag info>``) and then one line per allocation tag::

         45056       11 init/do_mounts.c:352 func:mount_nodev_root
             4096        1 arch/x86/kvm/x86.c:11541 [kvm] func:kvm_arch_vcpu_create

  (a module's tags carry ``[module]``; version 2.0 may end a line with
  ``accurate:no``).
* :func:`profile_heatmap_svg`: ``/proc/profile`` as a picture: a strip of
  the whole kernel text coloured by ticks, and the top functions by ticks
  as bars coloured by intensity.  The counters are attributed to functions
  as ``fakefs heatmap`` does (heatmap.py's parsing, reused).

Pure functions of the files' contents; ``fakefs picture`` reads the files.
"""

from __future__ import annotations

import math
import re

from .heatmap import heatmap, parse_profile, parse_system_map
from .svgdoc import attr, esc, fmt, heat_colour, human_bytes, svg_close, svg_open

WIDTH = 1200

ALLOC_LINE = re.compile(r"^\s*(?P<bytes>\d+)\s+(?P<calls>\d+)\s+(?P<file>\S+?):(?P<line>\d+)"
                        r"(?:\s+\[(?P<mod>[^\]]+)\])?\s+func:(?P<func>\S+)(?P<rest>.*)$")


class Site:
    __slots__ = ("bytes", "calls", "file", "line", "module", "function", "inaccurate")

    def __init__(self, nbytes, calls, file, line, module, function, inaccurate=False):
        self.bytes, self.calls = nbytes, calls
        self.file, self.line, self.module, self.function = file, line, module, function
        self.inaccurate = inaccurate

    @property
    def where(self) -> str:
        return "%s:%d" % (self.file, self.line)

    @property
    def label(self) -> str:
        return self.function + (" [%s]" % self.module if self.module else "")


def parse_allocinfo(text: str) -> list[Site]:
    """The allocation sites of ``/proc/allocinfo``, in file order."""
    sites = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("allocinfo", "#")):
            continue
        m = ALLOC_LINE.match(line)
        if not m:
            raise ValueError("not an allocinfo line: %r" % line)
        sites.append(Site(int(m.group("bytes")), int(m.group("calls")), m.group("file"),
                          int(m.group("line")), m.group("mod"), m.group("func"),
                          "accurate:no" in m.group("rest")))
    return sites


def top_sites(sites: list[Site], top: int) -> list[Site]:
    """The ``top`` sites with most bytes (none with 0), ties in file order."""
    return sorted((s for s in sites if s.bytes > 0), key=lambda s: -s.bytes)[:top]


ROW_H = 34
LABEL_X = 520           # labels end here (right-aligned)
BAR_X = 530
BAR_MAX = 470


def allocinfo_chart_svg(allocinfo_text: str, top: int = 20) -> str:
    """A horizontal bar chart of the top allocation sites by bytes."""
    sites = parse_allocinfo(allocinfo_text)
    total = sum(s.bytes for s in sites)
    calls = sum(s.calls for s in sites)
    used = sum(1 for s in sites if s.bytes > 0)
    rows = top_sites(sites, top)
    shown = sum(s.bytes for s in rows)
    height = 90 + max(1, len(rows)) * ROW_H + 30
    title = "Top %d allocation sites by size (/proc/allocinfo)" % len(rows)
    out = svg_open(WIDTH, height, title,
                   style=".bar:hover rect{stroke:#000} .where{fill:#666}")
    out.append('<text x="%d" y="26" text-anchor="middle" font-size="17" class="title">%s</text>'
               % (WIDTH // 2, esc(title)))
    out.append('<text x="%d" y="46" text-anchor="middle" font-size="12" class="total"%s>%s</text>'
               % (WIDTH // 2, attr("data-total", total),
                  esc("Total: %s (%d bytes) in %d sites, %d with bytes allocated, %d calls"
                      % (human_bytes(total), total, len(sites), used, calls))))
    out.append('<text x="%d" y="64" text-anchor="middle" font-size="12" fill="#555">%s</text>'
               % (WIDTH // 2, esc("The %d bars: %s, %.1f%% of the total. Blue: built-in code; "
                                  "purple: a module's [tag]."
                                  % (len(rows), human_bytes(shown),
                                     100.0 * shown / total if total else 0.0))))
    if not rows:
        out.append('<text x="%d" y="110" text-anchor="middle" font-size="14">'
                   'no site has bytes allocated</text>' % (WIDTH // 2))
    biggest = rows[0].bytes if rows else 1
    for i, s in enumerate(rows):
        y = 84 + i * ROW_H
        w = BAR_MAX * s.bytes / biggest
        tip = "%s at %s: %s (%d bytes, %.2f%% of all), %d calls%s" % (
            s.label, s.where, human_bytes(s.bytes), s.bytes, 100.0 * s.bytes / total, s.calls,
            " (not accurate)" if s.inaccurate else "")
        out.append('<g class="bar"%s%s%s%s><title>%s</title>'
                   % (attr("data-function", s.function), attr("data-where", s.where),
                      attr("data-module", s.module or ""), attr("data-bytes", s.bytes), esc(tip)))
        out.append('<text x="%d" y="%d" text-anchor="end" font-size="13" class="function">%s</text>'
                   % (LABEL_X, y + 13, esc(s.label)))
        out.append('<text x="%d" y="%d" text-anchor="end" font-size="10" class="where">%s</text>'
                   % (LABEL_X, y + 26, esc(s.where)))
        out.append('<rect x="%d" y="%d" width="%s" height="%d" fill="%s"/>'
                   % (BAR_X, y + 2, fmt(max(w, 0.5)), ROW_H - 8,
                      "#8e5bb5" if s.module else "#4a7fc1"))
        out.append('<text x="%s" y="%d" font-size="12" class="size">%s</text>'
                   % (fmt(BAR_X + max(w, 0.5) + 6), y + 19,
                      esc("%s  (%d calls)" % (human_bytes(s.bytes), s.calls))))
        out.append("</g>")
    return svg_close(out)


# ------------------------------------------------------------------ profile
STRIP_Y = 80
STRIP_H = 34
STRIP_COLS = 236
BARS_Y = STRIP_Y + STRIP_H + 48
PROW_H = 20
NAME_X = 330
PBAR_X = 340
PBAR_MAX = 560


def profile_rows(profile_bytes: bytes, system_map_text: str):
    """(step, stext, text size, rows, total): rows are (function address,
    name, ticks) by descending ticks, as ``fakefs heatmap`` counts them."""
    step, counts = parse_profile(profile_bytes)
    if step <= 0:
        raise ValueError("bad sampling step %d" % step)
    stext, addrs, names = parse_system_map(system_map_text)
    rows, total = heatmap(step, counts, stext, addrs, names)
    return step, stext, len(counts) * step, rows, total


def profile_heatmap_svg(profile_bytes: bytes, system_map_text: str, top: int = 30) -> str:
    """``/proc/profile`` as a heat strip over the kernel text and bars of
    the ``top`` functions by ticks, coloured by intensity."""
    return render_profile(*profile_rows(profile_bytes, system_map_text), top=top)


def render_profile(step: int, stext: int, size: int, rows, total: int, top: int = 30) -> str:
    """The picture of :func:`profile_rows`' result."""
    shown = [r for r in rows[:top] if r[2] > 0]
    height = BARS_Y + 24 + max(1, len(shown)) * PROW_H + 30
    title = "Kernel profile heatmap (/proc/profile, top %d functions)" % len(shown)
    out = svg_open(WIDTH, height, title, style=".fn:hover rect,.cell:hover{stroke:#000}")
    out.append('<text x="%d" y="26" text-anchor="middle" font-size="17" class="title">%s</text>'
               % (WIDTH // 2, esc(title)))
    out.append('<text x="%d" y="46" text-anchor="middle" font-size="12" class="total"%s>%s</text>'
               % (WIDTH // 2, attr("data-total", total),
                  esc("Total: %d ticks in %d functions; one counter per %d bytes of text"
                      % (total, sum(1 for r in rows if r[2]), step))))
    _strip(out, stext, size, rows)
    out.append('<text x="10" y="%d" font-size="13">Top functions by ticks</text>' % (BARS_Y - 6))
    if not shown:
        out.append('<text x="%d" y="%d" text-anchor="middle" font-size="14">no ticks yet</text>'
                   % (WIDTH // 2, BARS_Y + 20))
    hottest = shown[0][2] if shown else 1
    for i, (addr, name, n) in enumerate(shown):
        y = BARS_Y + i * PROW_H
        t = n / hottest
        w = max(PBAR_MAX * t, 0.5)
        share = 100.0 * n / total
        out.append('<g class="fn"%s%s%s><title>%s</title>'
                   % (attr("data-name", name), attr("data-ticks", n), attr("data-addr", "%x" % addr),
                      esc("%s at %x: %d ticks, %.2f%%" % (name, addr, n, share))))
        out.append('<text x="%d" y="%d" text-anchor="end" font-size="12" class="name">%s</text>'
                   % (NAME_X, y + 14, esc(name)))
        out.append('<rect x="%d" y="%d" width="%s" height="%d" fill="%s"/>'
                   % (PBAR_X, y + 2, fmt(w), PROW_H - 4, heat_colour(0.15 + 0.85 * t)))
        out.append('<text x="%s" y="%d" font-size="11" class="ticks">%s</text>'
                   % (fmt(PBAR_X + w + 6), y + 14, esc("%d ticks  %.2f%%  %x" % (n, share, addr))))
        out.append("</g>")
    return svg_close(out)


def _strip(out: list[str], stext: int, size: int, rows) -> None:
    """The kernel text from _stext on, in STRIP_COLS cells, each coloured by
    the ticks of the functions that start in it (log scale)."""
    cells = [0] * STRIP_COLS
    top: list[tuple[int, str] | None] = [None] * STRIP_COLS
    span = max(size, 1)
    for addr, name, n in rows:
        c = min(STRIP_COLS - 1, max(0, (addr - stext) * STRIP_COLS // span))
        cells[c] += n
        if top[c] is None or n > top[c][0]:
            top[c] = (n, name)
    peak = max(cells) if cells else 0
    cw = (WIDTH - 20) / STRIP_COLS
    out.append('<text x="10" y="%d" font-size="13">Kernel text, _stext to _etext '
               '(colour: ticks, log scale)</text>' % (STRIP_Y - 6))
    out.append('<rect x="10" y="%d" width="%d" height="%d" fill="%s"/>'
               % (STRIP_Y, WIDTH - 20, STRIP_H, heat_colour(0)))
    for c, n in enumerate(cells):
        if not n:
            continue
        lo = stext + c * span // STRIP_COLS
        hi = stext + (c + 1) * span // STRIP_COLS
        t = math.log1p(n) / math.log1p(peak)
        out.append('<rect class="cell" x="%s" y="%d" width="%s" height="%d" fill="%s"%s>'
                   '<title>%s</title></rect>'
                   % (fmt(10 + c * cw), STRIP_Y, fmt(cw), STRIP_H, heat_colour(t),
                      attr("data-ticks", n),
                      esc("%x-%x: %d ticks (hottest: %s, %d)" % (lo, hi, n, top[c][1], top[c][0]))))
    out.append('<text x="10" y="%d" font-size="10" fill="#555">_stext %x</text>'
               % (STRIP_Y + STRIP_H + 14, stext))
    out.append('<text x="%d" y="%d" font-size="10" fill="#555" text-anchor="end">%x</text>'
               % (WIDTH - 10, STRIP_Y + STRIP_H + 14, stext + size))
