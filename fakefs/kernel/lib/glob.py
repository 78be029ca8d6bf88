"""``glob_match()`` of lib/glob.c as a compiled regular expression.

``*`` any run, ``?`` one character, ``[...]`` classes (``!`` complements,
``a-b`` ranges, a leading ``]`` is literal, an unclosed ``[`` is literal),
``\\`` escapes the next character and a trailing ``\\`` matches only the end.
Used by event filters (``~``) and by set_ftrace_filter globs.
"""

from __future__ import annotations

import re


def glob_regex(pat: str) -> "re.Pattern":
    """A compiled regex that matches exactly what ``glob_match()`` does."""
    out = []
    i = 0
    n = len(pat)
    while i < n:
        c = pat[i]
        i += 1
        if c == "?":
            out.append(".")
        elif c == "*":
            out.append(".*")
        elif c == "[":
            P = pat + "\0"
            j = i
            inverted = P[j] == "!"
            j += inverted
            a = P[j]
            j += 1
            spans = []
            while True:
                b = a
                if a == "\0":
                    break
                if P[j] == "-" and P[j + 1] != "]":
                    b = P[j + 1]
                    if b == "\0":
                        a = b
                        break
                    j += 2
                spans.append((a, b))
                a = P[j]
                j += 1
                if a == "]":
                    break
            if a == "\0":                     # malformed: '[' is a literal
                out.append(re.escape("["))
                continue
            i = j
            items = "".join(re.escape(a) if a == b else "%s-%s" % (re.escape(a), re.escape(b))
                            for a, b in spans if a <= b)
            if inverted:
                out.append("[^%s]" % items if items else ".")
            else:
                out.append("[%s]" % items if items else "(?!)")
        elif c == "\\":
            if i < n:
                out.append(re.escape(pat[i]))
                i += 1
            else:
                out.append(r"\Z")              # "\" at the end matches the end
        else:
            out.append(re.escape(c))
    return re.compile("".join(out), re.S)
