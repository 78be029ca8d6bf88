"""A flame graph of the ftrace stack map, and the folded stacks behind it.

``stack_map`` (the stackmap series' text export) lists each unique kernel
stack once, with the number of times it was recorded::

    stack_id 426 [ref 17, depth 6]
        [0] vfs_read+0x9/0x360
        [1] ksys_read+0x3d/0xe0
        ...
        [5] entry_SYSCALL_64_after_hwframe+0x36/0x7e

Frame ``[0]`` is the innermost (the traced function), the last frame the
outermost, as in every kernel stack dump.  :func:`folded_stacks` turns that
into the "folded" format read by flamegraph.pl, inferno and speedscope: one
line per stack, outermost frame first, frames joined by ``;``, then a space
and the weight (here the ref count).  Offsets are dropped so that the same
function at different call sites merges; a module tag (``[ext4]``) stays.

:func:`flame_graph_svg` draws folded stacks as a classic flame graph (root
at the bottom, each frame as wide as its share of the total), as a
self-contained SVG: no script, a ``<title>`` tooltip on every frame.

These are pure functions of the files' text; ``fakefs picture`` (pictures.py)
reads the files.
"""

from __future__ import annotations

import re
import zlib

from .svgdoc import attr, esc, fmt, svg_close, svg_open

STACK_HEAD = re.compile(r"^stack_id\s+(\d+)\s+\[ref\s+(\d+),\s*depth\s+(\d+)\]\s*$")
FRAME_LINE = re.compile(r"^\s+\[(\d+)\]\s+(.*?)\s*$")
# %pS: name+0xoff/0xsize, then " [module]" for a module's symbol
SYMBOL = re.compile(r"^(?P<name>.+?)\+0x[0-9a-fA-F]+/0x[0-9a-fA-F]+(?P<mod>\s+\[[^\]]+\])?$")

WIDTH = 1200
FRAME_H = 16
XPAD = 10
TOP = 52
BOTTOM = 24
MIN_WIDTH = 0.1          # px: narrower frames are left out (as flamegraph.pl does)
CHAR_W = 6.6             # px per character of the 11px label font (approximate)


def frame_name(symbol: str) -> str:
    """A ``%pS`` symbol without its offset: ``vfs_read+0x9/0x360`` is
    ``vfs_read``, ``ext4_read+0x1/0x20 [ext4]`` is ``ext4_read [ext4]``.
    Unknown addresses (``0xffff…``) stay as they are.  A ``;`` (the folded
    format's separator) cannot appear in a name; it is replaced."""
    m = SYMBOL.match(symbol.strip())
    if m:
        name = m.group("name")
        if m.group("mod"):
            name += " " + m.group("mod").strip()
    else:
        name = symbol.strip()
    return name.replace(";", ":") or "?"


def parse_stack_map(text: str) -> list[tuple[int, int, list[str]]]:
    """(stack_id, ref count, symbols innermost first) of each stack listed."""
    stacks: list[tuple[int, int, list[str]]] = []
    frames: list[str] | None = None
    for line in text.splitlines():
        m = STACK_HEAD.match(line)
        if m:
            frames = []
            stacks.append((int(m.group(1)), int(m.group(2)), frames))
            continue
        f = FRAME_LINE.match(line)
        if f and frames is not None:
            frames.append(f.group(2))
        elif line.strip():
            frames = None          # not part of a stack: stop collecting
    return stacks


def folded_stacks(stack_map_text: str) -> str:
    """The folded stacks of a ``stack_map``: ``outer;…;inner REFS`` per line,
    identical stacks (after dropping offsets) merged, lines sorted."""
    weights: dict[str, int] = {}
    for _sid, ref, symbols in parse_stack_map(stack_map_text):
        if not symbols or ref <= 0:
            continue
        key = ";".join(frame_name(s) for s in reversed(symbols))
        weights[key] = weights.get(key, 0) + ref
    return "".join("%s %d\n" % (k, weights[k]) for k in sorted(weights))


def parse_folded(folded_text: str) -> list[tuple[list[str], int]]:
    """(frames outermost first, weight) of each line of folded stacks."""
    out = []
    for line in folded_text.splitlines():
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if not stack:
            raise ValueError("not a folded stack line: %r" % line)
        try:
            n = int(count)
        except ValueError:
            raise ValueError("not a folded stack line (no count): %r" % line) from None
        if n > 0:
            out.append((stack.split(";"), n))
    return out


class Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name: str):
        self.name = name
        self.count = 0
        self.children: dict[str, Node] = {}


def build_tree(stacks: list[tuple[list[str], int]]) -> Node:
    root = Node("all")
    for frames, n in stacks:
        root.count += n
        node = root
        for f in frames:
            child = node.children.get(f)
            if child is None:
                child = node.children[f] = Node(f)
            child.count += n
            node = child
    return root


def frame_colour(name: str) -> str:
    """flamegraph.pl's "hot" palette, picked by a hash of the name (stable
    between runs); functions of modules in blue-green so they stand out."""
    h = zlib.crc32(name.encode())
    v1, v2, v3 = (h & 0xFF) / 255, ((h >> 8) & 0xFF) / 255, ((h >> 16) & 0xFF) / 255
    if name.endswith("]") and " [" in name:
        return "rgb(%d,%d,%d)" % (50 + 40 * v1, 160 + 60 * v2, 170 + 60 * v3)
    return "rgb(%d,%d,%d)" % (205 + 50 * v3, 230 * v1, 55 * v2)


def fit_label(name: str, width: float) -> str:
    """The name cut to fit ``width`` px ("…" style ``..``), or "" if too narrow."""
    room = int((width - 6) // CHAR_W)
    if room < 3:
        return ""
    if len(name) <= room:
        return name
    return name[:room - 2] + ".."


def percent(n: int, total: int) -> str:
    return "%.2f%%" % (100.0 * n / total) if total else "0.00%"


def flame_graph_svg(folded_text: str, title: str = "Flame Graph") -> str:
    """An SVG flame graph of folded stacks (weights as widths)."""
    root = build_tree(parse_folded(folded_text))
    total = root.count
    depth = _depth(root)
    height = TOP + (depth + 1) * FRAME_H + BOTTOM
    scale = (WIDTH - 2 * XPAD) / total if total else 0.0
    out = svg_open(WIDTH, height, title, background="#f8f4e8",
                   style=".frame:hover rect{stroke:#000;stroke-width:0.5}"
                         " .frame text{font-size:11px;pointer-events:none}")
    out.append('<text x="%d" y="24" text-anchor="middle" font-size="17" class="title">%s</text>'
               % (WIDTH // 2, esc(title)))
    nstacks = len(folded_text.strip().splitlines()) if folded_text.strip() else 0
    out.append('<text x="%d" y="42" text-anchor="middle" font-size="12" class="total"%s>%s</text>'
               % (WIDTH // 2, attr("data-total", total),
                  esc("Total: %d (stack_map ref counts) in %d stacks; width = share of the total"
                      % (total, nstacks))))
    if not total:
        out.append('<text x="%d" y="%d" text-anchor="middle" font-size="14">no stacks</text>'
                   % (WIDTH // 2, TOP + 20))
    else:
        bottom = height - BOTTOM
        _draw(out, root, XPAD, 0, bottom, scale, total)
    out.append('<text x="%d" y="%d" font-size="11" fill="#555">Frames: outermost (root) at '
               'the bottom, callees above; hover a frame for its count.</text>'
               % (XPAD, height - 8))
    return svg_close(out)


def _depth(root: Node) -> int:
    best, todo = 0, [(root, 0)]
    while todo:
        node, d = todo.pop()
        best = max(best, d)
        todo.extend((c, d + 1) for c in node.children.values())
    return best


def _draw(out: list[str], root: Node, x0: float, level0: int, bottom: int,
          scale: float, total: int) -> None:
    todo = [(root, x0, level0)]
    while todo:
        node, x, level = todo.pop()
        w = node.count * scale
        if w < MIN_WIDTH:
            continue
        y = bottom - (level + 1) * FRAME_H
        name = node.name if level else "all"
        tip = "%s (%d, %s)" % (name, node.count, percent(node.count, total))
        out.append('<g class="frame"%s%s><title>%s</title>'
                   % (attr("data-name", name), attr("data-count", node.count), esc(tip)))
        out.append('<rect x="%s" y="%d" width="%s" height="%d" rx="2" fill="%s"/>'
                   % (fmt(x), y, fmt(w), FRAME_H - 1,
                      "rgb(230,130,60)" if not level else frame_colour(name)))
        label = fit_label(name, w)
        if label:
            out.append('<text x="%s" y="%d">%s</text>' % (fmt(x + 3), y + FRAME_H - 4, esc(label)))
        out.append("</g>")
        cx = x
        for key in sorted(node.children):
            child = node.children[key]
            todo.append((child, cx, level + 1))
            cx += child.count * scale

