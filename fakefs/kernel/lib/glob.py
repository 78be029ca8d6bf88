"""``glob_match()`` of lib/glob.c as a compiled regular expression.

``*`` any run, ``?`` one character, ``[...]`` classes (``!`` complements,
``a-b`` ranges, a leading ``]`` is literal, an unclosed ``[`` is literal),
``\\`` escapes the next character and a trailing ``\\`` matches only the end.
Used by event filters (``~``) and by set_ftrace_filter globs.

``glob_literals()`` gives the literal text a pattern's matches must hold
(its anchored prefix and suffix, and every run of literal characters): an
index of names (``ftrace_index.py``) narrows the candidates with them before
the regular expression decides.
"""

from __future__ import annotations

import re

# token kinds of glob_tokens(): a literal character, a piece of regex (``?``,
# ``*``, a class), a trailing backslash
LIT, RE, END = range(3)


def glob_class(P: str, j: int) -> tuple[int, bool, list[tuple[str, str]]] | None:
    """The class that starts at ``P[j]``, just after its ``[``, in the
    pattern ``P`` (ended by a NUL): (the index after its ``]``, whether it
    is complemented, its (first, last) ranges; a range whose last is
    before its first holds nothing).  None when it is not closed (then the
    ``[`` is a literal).  lib/glob.c's parse, shared by the matcher and the
    regex."""
    inverted = P[j] == "!"
    j += inverted
    a = P[j]
    j += 1
    spans = []
    while True:
        b = a
        if a == "\0":
            return None
        if P[j] == "-" and P[j + 1] != "]":
            b = P[j + 1]
            if b == "\0":
                return None
            j += 2
        spans.append((a, b))
        a = P[j]
        j += 1
        if a == "]":
            return j, inverted, spans


def glob_tokens(pat: str) -> list[tuple[int, str]]:
    """The pattern as (kind, text) tokens: a literal character (LIT, the
    character), ``?``, ``*`` or a class (RE, its regex), a trailing
    backslash (END)."""
    out = []
    i = 0
    n = len(pat)
    P = pat + "\0"
    while i < n:
        c = pat[i]
        i += 1
        if c == "?":
            out.append((RE, "."))
        elif c == "*":
            out.append((RE, ".*"))
        elif c == "[":
            cls = glob_class(P, i)
            if cls is None:                   # malformed: '[' is a literal
                out.append((LIT, "["))
                continue
            i, inverted, spans = cls
            items = "".join(re.escape(a) if a == b else "%s-%s" % (re.escape(a), re.escape(b))
                            for a, b in spans if a <= b)
            if inverted:
                out.append((RE, "[^%s]" % items if items else "."))
            else:
                out.append((RE, "[%s]" % items if items else "(?!)"))
        elif c == "\\":
            if i < n:
                out.append((LIT, pat[i]))
                i += 1
            else:
                out.append((END, r"\Z"))      # "\" at the end matches the end
        else:
            out.append((LIT, c))
    return out


def glob_regex(pat: str) -> "re.Pattern":
    """A compiled regex that matches exactly what ``glob_match()`` does."""
    return re.compile("".join(re.escape(t) if k == LIT else t for k, t in glob_tokens(pat)), re.S)


def glob_literals(pat: str) -> tuple[str, str, list[str]]:
    """(prefix, suffix, runs): the literal text every match starts with and
    ends with, and the maximal runs of literal characters (each is in every
    match; prefix and suffix are among them when not empty)."""
    toks = glob_tokens(pat)
    if toks and toks[-1][0] == END:
        toks = toks[:-1]                      # only the end may follow: no change to the text
    anchored_end = bool(toks) and toks[-1][0] == LIT
    runs = []
    cur = []
    for k, t in toks:
        if k == LIT:
            cur.append(t)
        else:
            if cur:
                runs.append("".join(cur))
            cur = []
    if cur:
        runs.append("".join(cur))
    prefix = runs[0] if runs and toks[0][0] == LIT else ""
    suffix = runs[-1] if runs and anchored_end else ""
    return prefix, suffix, runs


def glob_match(pat: str, s: str) -> bool:
    """``glob_match()`` itself, a character at a time (one backtracking
    point: the last ``*``): cheaper than compiling the regex for a few
    names, and a second implementation to test the regex against."""
    P = pat + "\0"
    S = s + "\0"
    p = i = 0
    back_p = back_i = -1
    while True:
        c = S[i]
        i += 1
        d = P[p]
        p += 1
        if d == "?":
            if c == "\0":
                return False
            continue
        if d == "*":
            if P[p] == "\0":
                return True
            back_p, back_i = p, i - 1
            i -= 1
            continue
        literal = True
        if d == "[":
            if c == "\0":                     # no possible match
                return False
            cls = glob_class(P, p)
            if cls is not None:               # a class (else '[' is a literal)
                literal = False
                q, inverted, spans = cls
                if any(a <= c <= b for a, b in spans) != inverted:
                    p = q
                    continue
        elif d == "\\":
            d = P[p]
            p += 1
        if literal and c == d:
            if d == "\0":
                return True
            continue
        if c == "\0" or back_p < 0:          # backtrack: the last '*' takes one more
            return False
        back_i += 1
        p, i = back_p, back_i
