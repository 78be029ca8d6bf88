"""A parsed event filter compiled into one Python function.

The kernel runs a filter as a program of predicates with branch targets
(``filter_match_preds()`` of kernel/trace/trace_events_filter.c); here the
expression tree of ``trace_events_filter_parse.py`` becomes one function
``flt(entry, cpu=None) -> bool`` over the ring-buffer entry tuple
``(ts, type, pid, flags, preempt_count, args, _)``, the predicates inlined,
so a filtered tracepoint hit costs one call.  Trees too deep for Python's
compiler fall back to nested closures.
"""

from __future__ import annotations


def _walk_preds(node):
    if node[0] == "pred":
        yield node[1]
    elif node[0] == "not":
        yield from _walk_preds(node[1])
    else:
        for n in node[1]:
            yield from _walk_preds(n)


def _source(node, consts: list) -> str:
    kind = node[0]
    if kind == "pred":
        p = node[1]
        code = p.code
        if p.consts:
            base = len(consts)
            consts.extend(p.consts)
            code = code % tuple(range(base, base + len(p.consts)))
        return "(" + code + ")"
    if kind == "not":
        return "(not " + _source(node[1], consts) + ")"
    sep = " and " if kind == "and" else " or "
    return "(" + sep.join(_source(n, consts) for n in node[1]) + ")"


def _closure(node, env):
    """A slower evaluator for trees Python cannot compile in one piece."""
    kind = node[0]
    if kind == "pred":
        consts: list = []
        src = "lambda e, a, cpu: " + _source(node, consts)
        ns = dict(env)
        ns.update(("K%d" % i, c) for i, c in enumerate(consts))
        return eval(src, ns)
    if kind == "not":
        f = _closure(node[1], env)
        return lambda e, a, cpu: not f(e, a, cpu)
    fs = [_closure(n, env) for n in node[1]]
    if kind == "and":
        return lambda e, a, cpu: all(f(e, a, cpu) for f in fs)
    return lambda e, a, cpu: any(f(e, a, cpu) for f in fs)


def compile_filter(tree, fields: dict, comm_of=None, cpu_of=None):
    """``flt(entry, cpu=None) -> bool`` for an expression tree.  ``cpu``
    tells the CPU the event fires on; without it ``cpu_of(entry)`` guesses."""
    preds = list(_walk_preds(tree))
    uses_cpu = any(p.uses_cpu for p in preds)
    uses_args = any(p.uses_args for p in preds)
    env = {"comm": comm_of or (lambda pid: ""), "cpu_of": cpu_of or (lambda e: -1)}
    for f in fields.values():
        if f.conv is not None:
            env["cv_" + f.name] = f.conv
    consts: list = []
    try:
        body = _source(tree, consts)
        lines = ["def flt(e, cpu=None):"]
        if uses_args:
            lines.append("    a = e[5]")
        if uses_cpu:
            lines.append("    if cpu is None:\n        cpu = cpu_of(e)")
        lines.append("    return " + body)
        ns = dict(env)
        ns.update(("K%d" % i, c) for i, c in enumerate(consts))
        exec(compile("\n".join(lines), "<event filter>", "exec"), ns)
        return ns["flt"]
    except (SyntaxError, RecursionError, MemoryError):
        f = _closure(tree, env)

        def flt(e, cpu=None):
            if cpu is None and uses_cpu:
                cpu = cpu_of(e) if cpu_of else -1
            return f(e, e[5], cpu)
        return flt
