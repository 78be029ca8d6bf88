"""mkalloctags: where the C sources invoke ``alloc_hooks()``.

The function-like macros of the headers that expand to ``alloc_hooks()``
(``kmalloc``, ``alloc_pages``, ``vmalloc`` ...), the header ``static inline``
helpers that invoke one, and in a C file each invocation inside a function
body with that function's name (``__func__``).  Part of mkalloctags.py (run
that).
"""

from __future__ import annotations

import os
import re

from mkalloctags_cpp import CondEval, active_lines, strip_comments_and_strings

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
