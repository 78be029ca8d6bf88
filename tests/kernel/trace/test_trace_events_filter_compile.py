"""Compiled event filters (trace_events_filter_compile.py): the logic of
the kernel's predicate program, and trees too deep for one function."""

import itertools
import random
import re

import event_filter_helpers
from event_filter_helpers import flt, switch_entry


kc, k = event_filter_helpers.kc, event_filter_helpers.k      # the shared kernel


def expr_gen(rng, depth=0):
    """A random well-formed expression over the letters a-e."""
    r = rng.random()
    if depth > 3 or r < 0.4:
        t = rng.choice("abcde")
    elif r < 0.6:
        t = "(" + expr_gen(rng, depth + 1) + ")"
    else:
        op = rng.choice(["&&", "||"])
        t = expr_gen(rng, depth + 1) + " " + op + " " + expr_gen(rng, depth + 1)
    return "!" * rng.choice([0, 0, 0, 1, 2]) + t


def kernel_program(expr):
    """The kernel's branch program for a letters-only expression (the three
    passes of predicate_parse()), as an evaluator over {letter: bool}."""
    toks = re.findall(r"&&|\|\||[()!]|[a-e]", expr)
    prog, inverts = [], []
    stack = [0]
    invert = 0
    INV, AND, OR = 1, 2, 4

    def update(n, inv):
        t = prog[n][1]
        s = prog[t][1]
        prog[t][2] = inv
        prog[t][1] = n
        prog[n][1] = s
    i = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if t == "(":
            stack.append(invert)
            continue
        if t == "!":
            invert ^= 1
            continue
        inverts.append(invert)
        prog.append([t, len(prog) - 1, 0])          # pred, target, when_to_branch
        n = len(prog) - 1
        while True:
            nt = toks[i] if i < len(toks) else "\0"
            i += 1
            invert = stack[-1] & INV
            if stack[-1] & AND:
                update(n, invert)
                stack[-1] &= ~AND
            if nt == "&&":
                stack[-1] |= AND
                break
            if stack[-1] & OR:
                update(n, invert ^ 1)
                stack[-1] &= ~OR
            if nt == "||":
                stack[-1] |= OR
                break
            if nt == "\0":
                break
            stack.pop()
        if nt == "\0":
            break
    N = len(prog)
    prog.append([None, 1, 0])
    prog.append([None, 0, 0])
    prog[N - 1][1] = N
    prog[N - 1][2] = 0
    for j in range(N - 2, -1, -1):
        tgt = prog[j][1]
        if prog[j][2] == prog[tgt][2]:
            prog[j][1] = prog[tgt][1]
    for j in range(N):
        prog[j][2] ^= inverts[j]

    def run(vals):
        j = 0
        while prog[j][0] is not None:
            if vals[prog[j][0]] == prog[j][2]:
                j = prog[j][1] + 1              # the target is one before
            else:
                j += 1
        return bool(prog[j][1])
    return run


def test_logic_matches_the_kernel_program(k):
    preds = {"a": "prev_pid == 1", "b": "prev_prio == 1", "c": "next_pid == 1",
             "d": "next_prio == 1", "e": "common_pid == 1"}
    rng = random.Random(5)
    for _ in range(300):
        expr = expr_gen(rng)
        f = flt(k, re.sub(r"[a-e]", lambda m: preds[m.group(0)], expr))
        run = kernel_program(expr)
        for bits in itertools.product((0, 1), repeat=5):
            vals = dict(zip("abcde", bits))
            e = switch_entry(k, pid=vals["e"], prev=("x", vals["a"], vals["b"], "S"),
                             nxt=("y", vals["c"], vals["d"]))
            assert bool(f(e)) == run({kk: int(v) for kk, v in vals.items()}), expr


def test_deep_nesting_still_compiles(k):
    text = "(" * 300 + "prev_pid == 1" + ")" * 300
    assert flt(k, text)(switch_entry(k, prev=("x", 1, 1, "S")))
    text = " && ".join("!(prev_pid != %d || next_pid == 3)" % i for i in range(200))
    assert not flt(k, text)(switch_entry(k))
