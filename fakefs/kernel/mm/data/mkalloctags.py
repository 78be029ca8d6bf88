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
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
import warnings

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# ---------------------------------------------------------------------------
# .config


def read_config(path: str) -> dict[str, str]:
    opener = gzip.open if path.endswith(".gz") else open
    cfg: dict[str, str] = {}
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if line.startswith("CONFIG_") and "=" in line:
                k, v = line.split("=", 1)
                cfg[k] = v.strip('"')
    return cfg


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


SKIP_NAMES = {
    "__attribute__", "__printf", "__scanf", "__acquires", "__releases", "__must_hold",
    "__section", "__aligned", "__alloc_size", "__malloc", "__realloc_size", "__cold",
    "__no_sanitize_address", "__diag_ignore", "__counted_by", "__nocfi", "__weak",
    "__visible", "__ref", "__init", "__exit", "__always_inline", "__no_kcsan",
    "if", "while", "for", "switch", "return", "sizeof", "typeof", "__typeof__",
    "__cacheline_aligned", "asmlinkage", "__must_check", "noinline", "notrace",
    "__noreturn", "__nonstring", "__percpu", "__rcu", "__user", "__iomem", "__force",
    "__maybe_unused", "__used",
}

SKIP_RE = re.compile(r"^__(acquires|releases|must_hold|printf|scanf|attribute__|section|aligned|"
                     r"alloc_size|realloc_size|no_sanitize\w*|diag\w*|cond_acquires|cond_releases)$")

# macros that define a function whose __func__ differs from the macro argument
FUNC_MACROS = [
    (re.compile(r"^(?:SYSCALL_DEFINE\d|SYSCALL_DEFINE_MAXARGS)$"), lambda a: "__do_sys_" + a),
    (re.compile(r"^COMPAT_SYSCALL_DEFINE\d$"), lambda a: "__do_compat_sys_" + a),
    (re.compile(r"^BPF_CALL_\d$"), lambda a: "____" + a),
]


def function_name(header: str) -> str | None:
    """The name of the function whose definition header is ``header`` (the
    text between the previous top-level ``;``/``}`` and the ``{``)."""
    h = header.strip()
    if not h.endswith(")") and not re.search(r"\)\s*(?:__\w+(?:\([^()]*\))?\s*)*$", h):
        return None
    if "=" in h.split("(")[0]:
        return None
    depth = 0
    candidates = []
    for m in re.finditer(r"[()]|[A-Za-z_]\w*", h):
        t = m.group(0)
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
        elif depth == 0:
            nxt = h[m.end():].lstrip()
            if nxt.startswith("("):
                candidates.append(t)
    for name in reversed(candidates):
        if name in SKIP_NAMES or SKIP_RE.match(name):
            continue
        for pat, fn in FUNC_MACROS:
            if pat.match(name):
                arg = re.match(r"\s*\(\s*(\w+)", h[h.index(name) + len(name):])
                return fn(arg.group(1)) if arg else name
        return name
    return None


def scan_c(text: str, cond: CondEval, hooked: set[str], local_defines=True, path=None):
    """Return [(line, func, callee)] for each hooked macro invocation inside a
    function body, and the set of identifiers called in the file."""
    clean = strip_comments_and_strings(text)
    lines = clean.split("\n")
    act = active_lines(lines, cond, path=path, raw=text.split("\n"))
    local_hooked = set(hooked)
    if local_defines:
        for m in re.finditer(r"^\s*#\s*define\s+(\w+)\s*\(([^\n\\]|\\\n)*", clean, re.M):
            body = m.group(0)
            if re.search(r"\balloc_hooks\s*\(", body) or any(
                    t in hooked for t in IDENT.findall(body.split(")", 1)[-1])):
                local_hooked.add(m.group(1))
    local_hooked.add("alloc_hooks")
    sites = []
    called: set[str] = set()
    depth = 0
    header_start: list[str] = []
    func = None
    for lineno, (line, a) in enumerate(zip(lines, act), 1):
        if not a:
            continue
        pos = 0
        for m in re.finditer(r"[{};]|[A-Za-z_]\w*(?=\s*\()", line):
            t = m.group(0)
            if t == "{":
                if depth == 0:
                    hdr = "".join(header_start) + line[pos:m.start()]
                    func = function_name(" ".join(hdr.split()))
                depth += 1
                if depth == 1:
                    header_start = []
                pos = m.end()
            elif t == "}":
                depth = max(0, depth - 1)
                if depth == 0:
                    func = None
                    header_start = []
                pos = m.end()
            elif t == ";":
                if depth == 0:
                    header_start = []
                pos = m.end()
            else:
                if depth > 0:
                    called.add(t)
                    if t in local_hooked and func:
                        sites.append((lineno, func, t))
        if depth == 0:
            header_start.append(line[pos:] + " ")
    return sites, called


# ---------------------------------------------------------------------------
# hooked macros from headers


def arch_defines(src: str) -> frozenset:
    """Macros the x86 headers define (``__HAVE_ARCH_*``, ``arch_*`` ...):
    included nearly everywhere, so ``#ifdef`` on them is true."""
    names = set()
    for dirpath, _dirs, files in os.walk(os.path.join(src, "arch/x86/include")):
        for fn in files:
            if fn.endswith(".h"):
                text = open(os.path.join(dirpath, fn), errors="replace").read()
                names.update(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", text, re.M))
    names = {n for n in names if not re.match(r"^_?_?ASM_X86_|^_ASM_|.*_H$", n)}
    return frozenset(names)


def collect_defines(paths: list[str], cond: CondEval | None = None) -> dict[str, str]:
    """Function-like macros of the headers (only those in compiled
    ``#if`` branches when ``cond`` is given)."""
    defs: dict[str, str] = {}
    for root in paths:
        for dirpath, _dirs, files in os.walk(root):
            for fn in files:
                if not fn.endswith(".h"):
                    continue
                try:
                    text = open(os.path.join(dirpath, fn), errors="replace").read()
                except OSError:
                    continue
                if "define" not in text:
                    continue
                text = strip_comments_and_strings(text)
                act = active_lines(text.split("\n"), cond, keep_defines=True) if cond else None
                for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)]*\))?((?:[^\n\\]|\\\n|\\)*)", text, re.M):
                    if m.group(2) is None:
                        continue
                    if act is not None and not act[text.count("\n", 0, m.start())]:
                        continue
                    defs.setdefault(m.group(1), m.group(3))
    return defs


def hooked_macros(defs: dict[str, str]) -> set[str]:
    hooked = {n for n, b in defs.items() if re.search(r"\balloc_hooks\s*\(", b)}
    changed = True
    while changed:
        changed = False
        for n, b in defs.items():
            if n in hooked:
                continue
            toks = set(re.findall(r"([A-Za-z_]\w*)\s*\(", b))
            if toks & hooked:
                hooked.add(n)
                changed = True
    hooked.discard("alloc_hooks_tag")
    return hooked


def header_helpers(src: str, hooked: set[str], cond: CondEval) -> dict[str, list[tuple[str, int]]]:
    """static inline functions in include/ that invoke a hooked macro:
    name -> [(header path, line)]."""
    out: dict[str, list[tuple[str, int]]] = {}
    for root in ("include", "arch/x86/include"):
        for dirpath, _dirs, files in os.walk(os.path.join(src, root)):
            for fn in files:
                if not fn.endswith(".h"):
                    continue
                path = os.path.join(dirpath, fn)
                text = open(path, errors="replace").read()
                if "inline" not in text:
                    continue
                sites, _called = scan_c(text, cond, hooked, local_defines=False)
                rel = os.path.relpath(path, src)
                for line, func, callee in sites:
                    out.setdefault(func, []).append((rel, line, callee))
    return out


# ---------------------------------------------------------------------------
# Kbuild


class Make:
    def __init__(self, config: dict[str, str]):
        self.config = config

    def expand(self, s: str, vars: dict[str, str]) -> str:
        for _ in range(10):
            m = None
            out = []
            i = 0
            changed = False
            while i < len(s):
                if s.startswith("$(", i):
                    depth, j = 0, i
                    while j < len(s):
                        if s[j] == "(":
                            depth += 1
                        elif s[j] == ")":
                            depth -= 1
                            if depth == 0:
                                break
                        j += 1
                    inner = s[i + 2:j]
                    out.append(self.call(inner, vars))
                    i = j + 1
                    changed = True
                else:
                    out.append(s[i])
                    i += 1
            s = "".join(out)
            if not changed or "$(" not in s:
                break
        return s

    def call(self, inner: str, vars):
        m = re.match(r"(\w+)\s+(.*)", inner, re.S)
        if m and m.group(1) in ("subst", "patsubst", "addprefix", "addsuffix", "filter",
                                "filter-out", "if", "strip", "foreach", "sort", "shell", "call",
                                "wildcard", "notdir", "basename", "dir", "findstring", "or", "and"):
            fn, args = m.group(1), self.expand(m.group(2), vars)
            parts = args.split(",")
            if fn == "subst" and len(parts) >= 3:
                return ",".join(parts[2:]).replace(parts[0], parts[1])
            if fn == "addprefix" and len(parts) >= 2:
                return " ".join(parts[0] + w for w in ",".join(parts[1:]).split())
            if fn == "addsuffix" and len(parts) >= 2:
                return " ".join(w + parts[0] for w in ",".join(parts[1:]).split())
            if fn == "if":
                return parts[1] if parts[0].strip() and len(parts) > 1 else (parts[2] if len(parts) > 2 else "")
            if fn == "strip":
                return " ".join(args.split())
            if fn == "filter" and len(parts) >= 2:
                pats = parts[0].split()
                return " ".join(w for w in parts[1].split() if any(_mk_match(p, w) for p in pats))
            if fn == "filter-out" and len(parts) >= 2:
                pats = parts[0].split()
                return " ".join(w for w in parts[1].split() if not any(_mk_match(p, w) for p in pats))
            if fn == "or":
                return next((p for p in parts if p.strip()), "")
            if fn == "and":
                return parts[-1] if all(p.strip() for p in parts) else ""
            if fn == "findstring" and len(parts) >= 2:
                return parts[0] if parts[0] in parts[1] else ""
            return ""
        name = inner.strip()
        if name.startswith("CONFIG_"):
            v = self.config.get(name, "")
            return "" if v == "n" else v
        if name == "SRCARCH" or name == "ARCH":
            return "x86"
        if name == "BITS":
            return "64"
        if name in ("obj", "src", "srctree", "objtree"):
            return "."
        return vars.get(name, "")

    def parse(self, path: str) -> dict[str, list[str]]:
        """Evaluate a Makefile/Kbuild; returns its variables as word lists
        (in assignment order)."""
        vars: dict[str, str] = {}
        try:
            raw = open(path, errors="replace").read()
        except OSError:
            return {}
        raw = raw.replace("\\\n", " ")
        stack: list[tuple[bool, bool]] = []  # (parent_active, taken)
        active = True
        for line in raw.split("\n"):
            if line.startswith("\t") and not re.match(r"\t\s*(obj|\w+-)\S*\s*[:+?]?=", line):
                continue  # recipe
            s = line.split("#", 1)[0].strip()
            if not s:
                continue
            m = re.match(r"(ifdef|ifndef|ifeq|ifneq|else|endif)\b\s*(.*)", s)
            if m:
                kw, rest = m.group(1), m.group(2)
                if kw == "endif":
                    if stack:
                        active = stack.pop()[0]
                    continue
                if kw == "else":
                    if stack:
                        parent, taken = stack[-1]
                        m2 = re.match(r"(ifdef|ifndef|ifeq|ifneq)\b\s*(.*)", rest)
                        if m2 and not taken:
                            v = self.cond(m2.group(1), m2.group(2), vars)
                            stack[-1] = (parent, v)
                            active = parent and v
                        else:
                            stack[-1] = (parent, True)
                            active = parent and not taken
                    continue
                v = self.cond(kw, rest, vars) if active else False
                stack.append((active, v))
                active = active and v
                continue
            if not active:
                continue
            m = re.match(r"([^\s:+?=]+)\s*(:=|\+=|\?=|=)\s*(.*)", s)
            if not m:
                continue
            name = self.expand(m.group(1), vars).strip()
            val = self.expand(m.group(3), vars)
            op = m.group(2)
            if op == "+=":
                vars[name] = (vars.get(name, "") + " " + val).strip()
            elif op == "?=":
                vars.setdefault(name, val)
            else:
                vars[name] = val
        return {k: v.split() for k, v in vars.items()}

    def cond(self, kw: str, rest: str, vars) -> bool:
        if kw in ("ifdef", "ifndef"):
            name = rest.strip()
            v = self.expand("$(%s)" % name, vars).strip()
            return bool(v) if kw == "ifdef" else not v
        rest = rest.strip()
        if rest.startswith("("):
            inner = rest[1:rest.rfind(")")]
            depth, split = 0, None
            for i, c in enumerate(inner):
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                elif c == "," and depth == 0:
                    split = i
                    break
            if split is None:
                return True
            a, b = inner[:split], inner[split + 1:]
        else:
            ab = re.findall(r"[\"']([^\"']*)[\"']", rest)
            if len(ab) != 2:
                return True
            a, b = ab
        eq = self.expand(a, vars).strip() == self.expand(b, vars).strip()
        return eq if kw == "ifeq" else not eq


def _mk_match(pat: str, word: str) -> bool:
    if "%" in pat:
        pre, post = pat.split("%", 1)
        return word.startswith(pre) and word.endswith(post)
    return pat == word


class Kbuild:
    def __init__(self, src: str, config: dict[str, str]):
        self.src = src
        self.make = Make(config)
        self.builtin: list[str] = []            # .c files in link order
        self.modules: dict[str, list[str]] = {}  # modname -> .c files

    def makefile(self, d: str) -> str:
        for name in ("Kbuild", "Makefile"):
            p = os.path.join(self.src, d, name)
            if os.path.exists(p):
                return p
        return os.path.join(self.src, d, "Makefile")

    def walk(self, d: str, builtin: bool = True, seen=None) -> None:
        seen = seen if seen is not None else set()
        key = (d, builtin)
        if key in seen:
            return
        seen.add(key)
        v = self.make.parse(self.makefile(d))
        objs_y = v.get("obj-y", []) + (v.get("lib-y", []) if builtin else [])
        objs_m = v.get("obj-m", [])
        for o in objs_y if builtin else []:
            if o.endswith("/"):
                self.walk(os.path.normpath(os.path.join(d, o)), True, seen)
            elif o.endswith(".o"):
                self.builtin.extend(self.parts(d, o, v, builtin=True))
        for o in objs_m:
            if o.endswith("/"):
                self.walk(os.path.normpath(os.path.join(d, o)), False, seen)
            elif o.endswith(".o"):
                name = os.path.basename(o)[:-2].replace("-", "_")
                if name in self.modules:
                    continue
                self.modules[name] = self.parts(d, o, v, builtin=False)
        # directories listed only under obj-m (modules inside)
        if builtin:
            for o in objs_m:
                pass

    def parts(self, d: str, o: str, v: dict, builtin: bool) -> list[str]:
        base = o[:-2]
        comp = v.get(base + "-y", []) + v.get(base + "-objs", [])
        if not builtin:
            comp += v.get(base + "-m", [])
        if comp and not (len(comp) == 1 and comp[0] == o):
            out = []
            for c in comp:
                if c.endswith(".o"):
                    out.extend(self.parts(d, c, v, builtin) if c != o else [])
            return out
        c = os.path.normpath(os.path.join(d, base + ".c"))
        if os.path.exists(os.path.join(self.src, c)):
            return [c]
        return []


TOP_ORDER = ["init", "usr", "arch/x86", "kernel", "certs", "mm", "fs", "ipc", "security",
             "crypto", "block", "io_uring", "lib", "arch/x86/lib", "drivers", "sound", "net",
             "virt", "arch/x86/pci", "arch/x86/power", "arch/x86/video"]

HEAD_OBJECTS = ["arch/x86/kernel/head_64.c", "arch/x86/kernel/head64.c",
                "arch/x86/kernel/ebda.c", "arch/x86/kernel/platform-quirks.c"]


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
