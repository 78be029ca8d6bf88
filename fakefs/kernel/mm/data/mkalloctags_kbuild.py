"""mkalloctags: the kernel build, as far as the generator needs it.

The ``.config``, a small evaluator of Kbuild makefiles (``obj-$(CONFIG_...)``,
conditionals, the common make functions) and the walk from the top-level
directories that gives the link order of built-in objects and the source
files of each module.  Part of mkalloctags.py (run that).
"""

from __future__ import annotations

import gzip
import os
import re

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
# Kbuild


class Make:
    def __init__(self, config: dict[str, str]):
        self.config = config

    def expand(self, s: str, vars: dict[str, str]) -> str:
        for _ in range(10):
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
