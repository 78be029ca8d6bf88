"""The C reader of ``mkallocpaths.py``: what a file of the kernel source defines
and calls, as far as a reader without a compiler can tell (see the limits in
``mkallocpaths.py``'s docstring).

``parse_file(path)`` gives a file's function definitions (name, static or not,
``__init``/``__exit``, direct calls, calls through struct members, member
fetches, callbacks handed to ``REGISTRARS``), its designated initializers of
struct members and its struct definitions; ``asn1_actions(path)`` the actions
an ``.asn1`` grammar names; ``source_files(src)`` the files read.
"""

from __future__ import annotations

import os
import re

SKIP_TOP = ("Documentation", "tools", "samples", "scripts", "usr", "rust", "LICENSES")
_SUFFIX_RE = re.compile(r"\.(isra|constprop|part|llvm|lto_priv)\.\d+$")
_STRIP_RE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_CALL_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_WORD_RE = re.compile(r"[A-Za-z_]\w*")
_DEFINE_RE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)\((.*)", re.S)
_SYSCALL_RE = re.compile(r"\bSYSCALL_DEFINE\d\s*\(\s*(\w+)")
_NOT_CALLS = frozenset("""
if for while switch return sizeof typeof __typeof__ __typeof alignof _Alignof __alignof__
defined do else case goto asm __asm__ __asm volatile __volatile__ _Static_assert
static_assert offsetof container_of likely unlikely __builtin_expect
""".split())
# attribute-like macros that can come before a function's name in its header
_ATTRS = frozenset("""
__attribute__ __attribute __printf __scanf __aligned __section __alloc_size __malloc
__acquires __releases __must_hold __cond_acquires __cond_releases __diag_push __diag_pop
__diag_ignore __diag_ignore_all __no_sanitize_address __no_kcsan __nocfi __realloc_size
__counted_by __designated_init __assume_aligned __nonstring __cleanup __access __ALIGN
__visible __weak __noreturn DEFINE_STATIC_KEY_FALSE EXPORT_SYMBOL EXPORT_SYMBOL_GPL
__alias __weak_alias __noclone __used __unused __maybe_unused __always_inline
""".split())


# ------------------------------------------------------------------ C source
_DIRECTIVE_RE = re.compile(r"^[ \t]*#[ \t]*(\w*)[^\n]*(?:(?<=\\)\n[^\n]*)*", re.M)


def preprocess(text: str):
    """(code, macros): the text with comments and strings blanked, preprocessor
    lines removed and only the first branch of every conditional kept; and
    {macro name: names its body calls} of the function-like macros defined."""
    # (a comment's newlines go with it: a directive never starts inside one)
    text = _STRIP_RE.sub(" ", text)
    out = []
    macros: dict[str, frozenset] = {}
    keep = [True]                     # per #if level: this branch is read
    first = [True]                    # per #if level: still in its first branch
    zero = [False]                    # per #if level: it was #if 0
    pos = 0
    for m in _DIRECTIVE_RE.finditer(text):
        if keep[-1]:
            out.append(text[pos:m.start()])
        pos = m.end()
        word = m.group(1)
        if word in ("if", "ifdef", "ifndef"):
            line = m.group()
            z = word == "if" and line.split("if", 1)[1].strip() in ("0", "(0)")
            keep.append(keep[-1] and not z)
            first.append(True)
            zero.append(z)
        elif word in ("elif", "else"):
            if len(keep) > 1:
                # the #else of an #if 0 is read; any other later branch not
                keep[-1] = keep[-2] and first[-1] and zero[-1] and word == "else"
                first[-1] = False
        elif word == "endif":
            if len(keep) > 1:
                keep.pop()
                first.pop()
                zero.pop()
        elif word == "define" and keep[-1]:
            dm = _DEFINE_RE.match(m.group().lstrip())
            if dm:
                body = dm.group(2)
                close = body.find(")")
                body = body[close + 1:] if close >= 0 else body
                calls = frozenset(c for c in _CALL_RE.findall(body) if c not in _NOT_CALLS)
                if calls:
                    macros[dm.group(1)] = calls
    if keep[-1]:
        out.append(text[pos:])
    return "\n".join(out), macros


def _def_name(header: str) -> str | None:
    """The name a function definition's header defines, None when it is not one."""
    h = header.strip()
    if "(" not in h or h.startswith("typedef "):
        return None
    depth = 0
    names = []
    prev_end = 0
    for m in _PAREN_RE.finditer(h):
        c = m.group()
        if c == "(":
            if depth == 0:
                w = _LAST_WORD_RE.search(h, prev_end, m.start())
                if w:
                    names.append(w.group(1))
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                prev_end = m.end()
        elif depth == 0:
            return None                 # an initializer
    for nm in names:
        if nm in _ATTRS or nm.startswith("__attribute"):
            continue
        if nm in _NOT_CALLS:
            return None
        return nm
    return None


_PAREN_RE = re.compile(r"[()=]")
_LAST_WORD_RE = re.compile(r"([A-Za-z_]\w*)\s*$")
_BRACE_RE = re.compile(r"[{};]")
_STRUCT_HEAD_RE = re.compile(r"^(?:struct|union)\s+(\w+)\s*(?:__\w+(?:\([^)]*\))?\s*)*$")
_INIT_HEAD_RE = re.compile(r"\bstruct\s+(\w+)\b[^=]*=\s*$")
_FIELD_RE = re.compile(r"\bstruct\s+(\w+)\s*(?:__rcu\s*)?\**\s*(?:__rcu\s*)?(?:const\s+)?"
                       r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?[;,:]")
_DECL_RE = re.compile(r"\bstruct\s+(\w+)\s*(?:__rcu\s*)?\**\s*(?:const\s+)?([A-Za-z_]\w*)\s*[;,=)\[]")
_UNWRAP_RE = re.compile(r"\b(?:READ_ONCE|rcu_dereference\w*|smp_load_acquire|rcu_access_pointer|"
                        r"srcu_dereference\w*)\s*\(\s*([A-Za-z_][\w\s\->.]*?)\s*[,)]")
_CHAIN = r"[A-Za-z_]\w*(?:\s*\[[^\]\[]*\])?(?:\s*(?:->|\.)\s*[A-Za-z_]\w*(?:\s*\[[^\]\[]*\])?)*"
# a chain read backwards from where a member access starts (the text reversed)
_RELEM = r"(?:\][^\[\]]*\[\s*|\)[^()]*\(\s*)?\w+"
_RCHAIN_RE = re.compile(r"\s*(" + _RELEM + r"(?:\s*(?:>-|\.)\s*" + _RELEM + r")*)"
                        r"(?:\s*=(?![=!<>+\-*/%&|^])\s*(" + _RELEM + r"(?:\s*(?:>-|\.)\s*" + _RELEM +
                        r")*))?")
_LOCAL_INIT_RE = re.compile(r"\bstruct\s+(\w+)\s+[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*=\s*\{")
_FNPTR_RE = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(")
# a member called (``(``), fetched (``;``) or set to a name (``= name;``)
_MEMBER_RE = re.compile(r"(?:->|\.)\s*([A-Za-z_]\w*)\s*(\(|;|=\s*&?\s*([A-Za-z_]\w*)\s*;)")
_MEMBER_CALL_RE = re.compile(r"(?:->|\.)\s*[A-Za-z_]\w*\s*\(")
_INDIRECT_RE = re.compile(r"\bINDIRECT_CALL_(1|2|3|4|INET|INET_1)\s*\(\s*(" + _CHAIN +
                          r")\s*(?:->|\.)\s*([A-Za-z_]\w*)\s*,((?:\s*[A-Za-z_]\w*\s*,){1,4})")
_INIT_TOKEN_RE = re.compile(r"\.\s*([A-Za-z_]\w*)\s*=\s*(?:(\{)|&?\s*([A-Za-z_]\w*)\s*(?=[,}]))"
                            r"|\[[^\]]*\]\s*=\s*|[{}]")
_INDIRECT_N = {"1": 1, "2": 2, "3": 3, "4": 4, "INET": 2, "INET_1": 1}
# functions and macros taking a callback, with the callback's argument and
# the function that calls it (through the pointer the callback is kept in)
REGISTRARS = {
    "INIT_WORK": (1, "process_one_work"), "INIT_WORK_ONSTACK": (1, "process_one_work"),
    "INIT_DELAYED_WORK": (1, "process_one_work"), "INIT_DEFERRABLE_WORK": (1, "process_one_work"),
    "INIT_RCU_WORK": (1, "process_one_work"), "DECLARE_WORK": (1, "process_one_work"),
    "DECLARE_DELAYED_WORK": (1, "process_one_work"), "schedule_on_each_cpu": (0, "process_one_work"),
    "timer_setup": (1, "call_timer_fn"), "timer_setup_on_stack": (1, "call_timer_fn"),
    "DEFINE_TIMER": (1, "call_timer_fn"),
    "kthread_run": (0, "kthread"), "kthread_create": (0, "kthread"),
    "kthread_create_on_node": (0, "kthread"), "kthread_create_on_cpu": (0, "kthread"),
    "kthread_run_on_cpu": (0, "kthread"),
    "call_rcu": (1, "rcu_do_batch"), "call_rcu_hurry": (1, "rcu_do_batch"),
    "request_irq": (1, "__handle_irq_event_percpu"),
    "request_threaded_irq": (2, "irq_thread_fn"),
    "devm_request_irq": (2, "__handle_irq_event_percpu"),
    "devm_request_threaded_irq": (3, "irq_thread_fn"),
    "tasklet_setup": (1, "tasklet_action_common"), "tasklet_init": (1, "tasklet_action_common"),
    "kthread_init_work": (1, "kthread_worker_fn"), "init_irq_work": (1, "irq_work_single"),
    "async_schedule": (0, "async_run_entry_fn"), "async_schedule_domain": (0, "async_run_entry_fn"),
}
_REGISTRAR_RE = re.compile(r"\b(" + "|".join(sorted(REGISTRARS)) + r")\s*\(")


def _split_chain(chain: str):
    parts = [re.sub(r"[\[(].*", "", p).strip() for p in re.split(r"->|\.", chain)]
    return parts[0], tuple(parts[1:])


def _balanced(text: str, i: int) -> int:
    """The index after the brace closing the one before ``i``."""
    depth = 1
    for m in re.compile(r"[{}]").finditer(text, i):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.end()
    return len(text)


def _args(text: str, start: int, n: int):
    """The first ``n`` top-level arguments of the call whose '(' is before ``start``."""
    out, depth, cur = [], 0, start
    i = start
    while i < len(text) and len(out) < n:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                out.append(text[cur:i])
                break
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[cur:i])
            cur = i + 1
        i += 1
    return out


def _body_facts(header, body, static_vars):
    """(direct calls, dispatches, assignments, aliases, registrations, initializers)
    of a function body.  A dispatch or an assignment is (type of its root variable
    or None, the fields after it, the member called/set[, the name put there]), an
    alias (member set, member it was set from): their types are resolved once
    every struct is known."""
    body = _UNWRAP_RE.sub(r"\1 ", body)
    types = dict(static_vars)
    for t, v in _DECL_RE.findall(body)[::-1] + _DECL_RE.findall(header)[::-1]:
        types[v] = t                    # the first declaration of a name wins
    calls = set(_CALL_RE.findall(_MEMBER_CALL_RE.sub("(", body)))
    calls.difference_update(_NOT_CALLS)
    disp, assigns, aliases = set(), set(), set()

    def chain_key(chain, member):
        root, fields = _split_chain(chain)
        return (types.get(root), fields, member)

    for m in _MEMBER_RE.finditer(body):
        start = m.start()
        cm = _RCHAIN_RE.match(body[start - 1:max(0, start - 160) - 1 if start > 160 else None:-1])
        if cm is None:
            continue
        chain = cm.group(1)[::-1]
        if not (chain[0].isalpha() or chain[0] == "_"):
            continue
        how = m.group(2)
        if how == "(":
            disp.add(chain_key(chain, m.group(1)))
        elif how == ";":
            lhs = cm.group(2)
            if not lhs:
                continue
            lhs = lhs[::-1]
            if "->" in lhs or "." in lhs:        # one struct's pointer copied into another's
                root, fields = _split_chain(lhs)
                if fields:
                    aliases.add((chain_key(root + "->" + "->".join(fields[:-1]) if fields[:-1]
                                           else root, fields[-1]), chain_key(chain, m.group(1))))
            elif lhs in calls:                   # a pointer fetched from a struct, then called
                disp.add(chain_key(chain, m.group(1)))
        else:
            assigns.add(chain_key(chain, m.group(1)) + (m.group(3),))
    for m in _INDIRECT_RE.finditer(body):
        disp.add(chain_key(m.group(2), m.group(3)))
        names = [w.strip() for w in m.group(4).split(",") if w.strip()]
        calls.update(names[:_INDIRECT_N[m.group(1)]])
    regs = set()
    for m in _REGISTRAR_RE.finditer(body):
        k, disp_fn = REGISTRARS[m.group(1)]
        args = _args(body, m.end(), k + 1)
        if len(args) > k:
            a = args[k].strip().lstrip("&").strip()
            if re.fullmatch(r"[A-Za-z_]\w*", a):
                regs.add((disp_fn, a))
    inits = []
    for m in _LOCAL_INIT_RE.finditer(body):
        inits.extend(_initializer(m.group(1), body[m.end():_balanced(body, m.end())]))
    return calls, disp, assigns, aliases, regs, inits


def _initializer(stype, body):
    """(struct type, designator path, member, function name) of ``.member = name``."""
    out = []
    stack = []
    for m in _INIT_TOKEN_RE.finditer(body):
        g = m.group()
        if m.group(2):                      # .field = {
            stack.append(m.group(1))
        elif m.group(3):
            out.append((stype, tuple(f for f in stack if f), m.group(1), m.group(3)))
        elif g == "{":
            stack.append(None)
        elif g == "}":
            if stack:
                stack.pop()
    return out


def parse_file(path: str):
    """What one file defines: {"defs": [(name, static, init, calls, dispatches,
    assignments, aliases, registrations)], "structs": {name: ({field: struct type},
    {member names})}, "inits": [(struct type, designators, member, name)],
    "macros": {name: calls}}."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    code, macros = preprocess(text)
    defs, structs, inits = [], {}, []
    static_vars = {}
    depth = 0
    last = 0                            # end of the last top-level statement
    start = 0
    kind = None
    header = ""
    for m in _BRACE_RE.finditer(code):
        c = m.group()
        if c == "{":
            if depth == 0:
                header = code[last:m.start()]
                start = m.end()
                name = _def_name(header)
                kind = None
                if name is not None:
                    kind = ("fn", name)
                else:
                    h = header.strip()
                    sm = _STRUCT_HEAD_RE.match(h)
                    if sm:
                        kind = ("struct", sm.group(1))
                    else:
                        im = _INIT_HEAD_RE.search(h)
                        if im:
                            kind = ("init", im.group(1))
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                depth = 0
            if depth == 0:
                body = code[start:m.start()]
                if kind is None:
                    pass
                elif kind[0] == "fn":
                    name = kind[1]
                    if name.startswith("SYSCALL_DEFINE"):
                        sm = _SYSCALL_RE.search(header)
                        name = "__do_sys_" + sm.group(1) if sm else None
                    if name is not None:
                        hwords = set(_WORD_RE.findall(header))
                        calls, disp, assigns, aliases, regs, local = _body_facts(
                            header, body, static_vars)
                        inits.extend(local)
                        # (a system call's __do_sys_ function is static inline)
                        defs.append((name, "static" in hwords or name.startswith("__do_sys_"),
                                     "__init" in hwords or "__exit" in hwords,
                                     calls, disp, assigns, aliases, regs))
                elif kind[0] == "struct":
                    fields, members = structs.setdefault(kind[1], ({}, set()))
                    for fm in _FIELD_RE.finditer(body):
                        fields.setdefault(fm.group(2), fm.group(1))
                        members.add(fm.group(2))
                    members.update(_FNPTR_RE.findall(body))
                else:
                    inits.extend(_initializer(kind[1], body))
                kind = None
                last = m.end()
        elif depth == 0:
            stmt = code[last:m.start()]
            dm = _DECL_RE.search(stmt + ";")
            if dm and "(" not in stmt:
                static_vars.setdefault(dm.group(2), dm.group(1))
            last = m.end()
    return path, {"defs": defs, "structs": structs, "inits": inits, "macros": macros}


_ASN1_ACTION_RE = re.compile(r"\(\{\s*([A-Za-z_]\w*)\s*\}\)")


def asn1_actions(path: str):
    """The actions an ASN.1 grammar names: asn1_ber_decoder() calls them
    through the decoder's action table (generated from the grammar at build time)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return sorted(set(_ASN1_ACTION_RE.findall(f.read())))


def source_files(src: str, ext=(".c", ".h")):
    out = []
    for top in sorted(os.listdir(src)):
        if top in SKIP_TOP:
            continue
        p = os.path.join(src, top)
        if not os.path.isdir(p):
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames.sort()
            rel = os.path.relpath(dirpath, src)
            if rel == "arch":
                dirnames[:] = [d for d in dirnames if d == "x86"]
            for fn in sorted(filenames):
                if fn.endswith(ext):
                    out.append(os.path.join(dirpath, fn))
    return out
