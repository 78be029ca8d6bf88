"""The small part of SVG the pictures (flamegraph.py, charts.py) share:
a self-contained document, escaping, numbers."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

FONT = "Verdana, DejaVu Sans, Arial, sans-serif"


def esc(text) -> str:
    """Text content, escaped for XML."""
    return escape(str(text))


def attr(name: str, value) -> str:
    """`` name="value"``, the value quoted and escaped."""
    return " %s=%s" % (name, quoteattr(str(value)))


def fmt(x: float) -> str:
    """A coordinate with at most two decimals, without trailing zeros."""
    s = "%.2f" % x
    return s.rstrip("0").rstrip(".") if "." in s else s


def svg_open(width: int, height: int, title: str, background: str = "#ffffff",
             style: str = "") -> list[str]:
    """The start of a standalone SVG document (a list to append to)."""
    return [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        '<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" '
        'viewBox="0 0 %d %d" font-family=%s>' % (width, height, width, height, quoteattr(FONT)),
        "<title>%s</title>" % esc(title),
        "<style>text{fill:#222}%s</style>" % style,
        '<rect x="0" y="0" width="%d" height="%d" fill="%s"/>' % (width, height, background),
    ]


def svg_close(parts: list[str]) -> str:
    return "\n".join(parts + ["</svg>"]) + "\n"


def human_bytes(n: int) -> str:
    """``512 B``, ``1.5 KiB``, ``12.0 MiB``… (binary units, one decimal)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    if n < 1024:
        return "%d B" % n
    v = float(n)
    for u in units[1:]:
        v /= 1024
        if v < 1024 or u == units[-1]:
            return "%.1f %s" % (v, u)
    return "%d B" % n  # pragma: no cover


def heat_colour(t: float) -> str:
    """Pale yellow (t=0) through orange to dark red (t=1)."""
    t = min(1.0, max(0.0, t))
    stops = ((255, 247, 188), (254, 153, 41), (204, 76, 2), (102, 37, 6))
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    f = pos - i
    a, b = stops[i], stops[i + 1]
    return "rgb(%d,%d,%d)" % tuple(round(a[k] + (b[k] - a[k]) * f) for k in range(3))
