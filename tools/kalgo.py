"""The kernel's own algorithms ``mkevents.py`` applies to what it reads:
kernel/trace/trace_events.c's type sanitizing and eval-map substitution in
print formats and field types, arch/x86's syscall symbol match, alignment."""

from __future__ import annotations

import re

def sanitize_field_type(t):
    """sanitize_field_type(): drop every ``__attribute__(...)`` (and the spaces after it)."""
    key = "__attribute__("
    nxt = 0
    while True:
        a = t.find(key, nxt)
        if a < 0:
            return t
        if a != nxt and not t[a - 1].isspace():
            nxt = a + len(key)
            continue
        depth, p = 1, a + len(key)
        while depth > 0:
            m = re.compile(r"[()]").search(t, p)
            if not m:
                return t
            depth += 1 if m.group() == "(" else -1
            p = m.end()
        while p < len(t) and t[p] in " \t\n\v\f\r":
            p += 1
        t = t[:a] + t[p:]
        nxt = a


def _eval_replace(s, i, length, value):
    """eval_replace(): the number replaces s[i:i+length] if it is not longer; returns
    (new string, index after the number) or (s, None)."""
    num = "%d" % value
    if length < len(num):
        return s, None
    return s[:i] + num + s[i + length:], i + len(num)


def _isalnum(c):
    return c.isascii() and c.isalnum()


def update_event_printk(fmt, eval_string, value):
    """update_event_printk(): replace eval_string outside quotes, not after '.'/'->'."""
    n = len(eval_string)
    i, quote = 0, 0
    while i < len(fmt):
        c = fmt[i]
        if c == "\\":
            i += 1
            if i >= len(fmt):
                break
        elif c == '"':
            quote ^= 1
        elif quote:
            pass
        elif c.isascii() and c.isdigit():
            i += 1
            while i < len(fmt) and _isalnum(fmt[i]):
                i += 1
            if i >= len(fmt):
                break
        elif (c.isascii() and c.isalpha()) or c == "_":
            nxt = fmt[i + n] if i + n < len(fmt) else "\0"
            if fmt.startswith(eval_string, i) and not _isalnum(nxt) and nxt != "_":
                fmt, j = _eval_replace(fmt, i, n, value)
                if j is None:
                    return fmt            # WARN_ON_ONCE: the kernel gives up on this map
                i = j
            else:
                while True:
                    i += 1
                    while i < len(fmt) and (_isalnum(fmt[i]) or fmt[i] == "_"):
                        i += 1
                    if i >= len(fmt):
                        return fmt
                    if fmt[i] == "." or fmt.startswith("->", i):
                        i += 1 if fmt[i] == "." else 2
                        if i >= len(fmt):
                            return fmt
                        continue      # goto skip_more: its do-while steps over one char
                    break
        i += 1
    return fmt


def update_field_type(ftype, eval_string, value):
    """update_event_fields() for one field: sanitize, then replace an eval name right after
    the first '[' (a prefix compare, as find_replacable_eval() does)."""
    t = sanitize_field_type(ftype)
    if eval_string is None:
        return t
    b = t.find("[")
    if b < 0:
        return t
    p = b + 1
    if p >= len(t) or not ((t[p].isascii() and t[p].isalpha()) or t[p] == "_"):
        return t
    if not t.startswith(eval_string, p):
        return t
    new, j = _eval_replace(t, p, len(eval_string), value)
    return t if j is None else new


def arch_syscall_match_sym_name(sym, name):
    """arch/x86/include/asm/ftrace.h."""
    return (sym[3:] == name[3:] or (sym.startswith("__x64_") and sym[9:] == name[3:])
            or (sym.startswith("__ia32_") and sym[10:] == name[3:])
            or (sym.startswith("__do_sys") and sym[8:] == name[3:]))


def align(x, a):
    return (x + a - 1) // a * a
