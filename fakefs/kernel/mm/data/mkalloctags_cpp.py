"""mkalloctags: the C preprocessor, as far as the generator needs it.

Comments and literals blanked out of C text, ``#if``/``#ifdef`` expressions
about CONFIG_ symbols evaluated, and the lines a configuration compiles.
Part of mkalloctags.py (run that).
"""

from __future__ import annotations

import os
import re
import warnings

# ---------------------------------------------------------------------------
# C text helpers


def strip_comments_and_strings(text: str) -> str:
    """Blank out comments, string and char literals, keeping newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    break
                j += 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + (c if j - 1 > i else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


ALWAYS_DEFINED = {"__KERNEL__", "__x86_64__", "__LP64__", "__GNUC__", "CONFIG_64BIT"}


class CondEval:
    """Evaluates ``#if`` expressions about CONFIG_ symbols.  Other macros
    count as undefined (``__HAVE_ARCH_*`` as the x86 headers say); an
    expression it cannot evaluate counts as true."""

    def __init__(self, config: dict[str, str], module: bool, arch_defines: frozenset = frozenset()):
        self.config = config
        self.module = module
        self.arch = arch_defines
        self.local: set[str] = set()      # #defines seen so far in the file being read

    def val(self, sym: str) -> str:
        return self.config.get(sym, "n")

    def expr(self, e: str) -> bool:
        e = e.strip()
        cfg = self.config

        def rep_fn(m):
            fn, sym = m.group(1), m.group(2)
            v = cfg.get(sym, "n")
            if fn in ("IS_ENABLED", "IS_REACHABLE"):
                return "1" if v in ("y", "m") else "0"
            if fn == "IS_BUILTIN":
                return "1" if v == "y" else "0"
            if fn == "IS_MODULE":
                return "1" if v == "m" else "0"
            return "1"

        e = re.sub(r"\b(IS_ENABLED|IS_BUILTIN|IS_MODULE|IS_REACHABLE)\s*\(\s*(CONFIG_\w+)\s*\)", rep_fn, e)
        e = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                   lambda m: self._defined(m.group(1) or m.group(2)), e)
        # remaining CONFIG_X used as values: y -> 1
        e = re.sub(r"\bCONFIG_\w+\b",
                   lambda m: "1" if cfg.get(m.group(0), "n") in ("y",) else
                   (cfg.get(m.group(0)) if (cfg.get(m.group(0)) or "").lstrip("-").isdigit() else "0"), e)
        e = e.replace("&&", " and ").replace("||", " or ")
        e = re.sub(r"!(?!=)", " not ", e)
        # other identifiers: unknown -> true-ish
        e = re.sub(r"\b[A-Za-z_]\w*\b",
                   lambda m: m.group(0) if m.group(0) in ("and", "or", "not") else "1", e)
        e = re.sub(r"(\d+)[UuLl]+\b", r"\1", e)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return bool(eval(e, {"__builtins__": {}}, {}))
        except Exception:
            return True

    def _defined(self, sym: str) -> str:
        if sym.startswith("CONFIG_"):
            return "1" if self.config.get(sym, "n") in ("y", "m") else "0"
        if sym == "MODULE":
            return "1" if self.module else "0"
        if sym in self.local:
            return "1"
        return "1" if sym in self.arch or sym in ALWAYS_DEFINED else "0"

    def ifdef(self, sym: str) -> bool:
        return self._defined(sym) == "1"


def active_lines(lines: list[str], cond: CondEval, keep_defines: bool = False,
                 path: str | None = None, _seen: set | None = None,
                 raw: list[str] | None = None) -> list[bool]:
    """Which lines are compiled, following #if/#ifdef/#elif/#else/#endif.
    Preprocessor lines themselves (and continuations) are marked inactive,
    except ``#define`` lines with ``keep_defines``."""
    active = []
    stack: list[tuple[bool, bool, bool]] = []  # (parent_active, this_active, taken)
    cur = True
    cont = False
    if _seen is None:
        cond.local = set()
        _seen = set()
    for idx, line in enumerate(lines):
        s = line.strip()
        if cont:
            active.append(False)
            cont = s.endswith("\\")
            continue
        if s.startswith("#"):
            d = s[1:].strip()
            cont = s.endswith("\\")
            m = re.match(r"(\w+)\s*(.*)", d)
            kw, rest = (m.group(1), m.group(2)) if m else ("", "")
            if kw in ("if", "ifdef", "ifndef"):
                if kw == "if":
                    v = cond.expr(rest)
                elif kw == "ifdef":
                    v = cond.ifdef(rest.split()[0] if rest.split() else "")
                else:
                    v = not cond.ifdef(rest.split()[0] if rest.split() else "")
                stack.append((cur, cur and v, v))
                cur = cur and v
            elif kw == "elif" and stack:
                parent, _a, taken = stack[-1]
                v = (not taken) and cond.expr(rest)
                stack[-1] = (parent, parent and v, taken or v)
                cur = parent and v
            elif kw == "else" and stack:
                parent, _a, taken = stack[-1]
                stack[-1] = (parent, parent and not taken, True)
                cur = parent and not taken
            elif kw == "endif" and stack:
                parent, _a, _t = stack.pop()
                cur = parent
            elif kw == "include" and cur and path and raw is not None:
                # local headers ("slab.h") may define switches the file tests
                m2 = re.search(r'#\s*include\s*"([^"]+)"', raw[idx])
                inc = m2 and os.path.normpath(os.path.join(os.path.dirname(path), m2.group(1)))
                if inc and inc not in _seen and os.path.exists(inc) and len(_seen) < 20:
                    _seen.add(inc)
                    rtext = open(inc, errors="replace").read()
                    text = strip_comments_and_strings(rtext)
                    active_lines(text.split("\n"), cond, False, inc, _seen, rtext.split("\n"))
            elif kw == "define" and cur and rest:
                cond.local.add(re.match(r"\w*", rest).group(0))
            elif kw == "undef" and cur and rest:
                cond.local.discard(rest.split()[0])
            active.append(cur if keep_defines and kw == "define" else False)
            continue
        active.append(cur)
    return active
