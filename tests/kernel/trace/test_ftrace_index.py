"""The records' names indexed for the globs (ftrace_index.py): on random
globs of every filter_parse_regex() type, with and without the trigram
index, with and without ``:mod:``, the index picks exactly the records the
plain matcher (every record tested, as match_records() does) picks."""

import random

import pytest

from fakefs.kernel.lib.glob import glob_match, glob_regex
from fakefs.kernel.trace.ftrace_index import NameIndex
from fakefs.kernel.trace.ftrace_records import (MATCH_FULL, MATCH_INDEX, Glob, filter_parse_regex,
                                                ftrace_records)
import ftrace_helpers
from fakefs.sim.files import finish

booted = ftrace_helpers.booted


def random_globs(names, rng, n):
    """Globs cut from real names (most match something) and some that match
    nothing: every type, negated ones, classes, '?', escapes, bare '*'."""
    out = ["*", "**", "*_*", "?", "*?", "[", "\\", "a\\", "*\\*", "[!_]*", "!*lock*", "x[]]y*"]
    specials = ["*", "?", "[a-m]", "[!_]", "\\", "[_", "[]a]"]
    while len(out) < n:
        nm = rng.choice(names)
        a = rng.randrange(len(nm))
        b = rng.randrange(a, len(nm) + 1)
        part = nm[a:b] or nm
        kind = rng.randrange(6)
        if kind == 0:
            w = part + "*"
        elif kind == 1:
            w = "*" + part
        elif kind == 2:
            w = "*" + part + "*"
        elif kind == 3:
            chars = list(nm)
            for _ in range(rng.randint(1, 3)):
                chars.insert(rng.randrange(len(chars) + 1), rng.choice(specials))
            w = "".join(chars)
        elif kind == 4:
            w = "".join(rng.choice("_abcdeklmnoprstuz") for _ in range(rng.randint(1, 4))) + "*"
            w = rng.choice(["*", ""]) + w
        else:
            w = nm[:2] + "?" + nm[3:] if len(nm) > 3 else nm + "?"
        if rng.random() < 0.1:
            w = "!" + w
        out.append(w)
    return out


def match_plain(recs, func, mod):
    """``recs.match()`` the kernel's way (``match_records()``): every
    record tested against the glob, what the index must agree with."""
    clear = False
    fg = Glob(MATCH_FULL, "")
    if func is not None:
        t, s, clear = filter_parse_regex(func)
        fg = Glob(t, s)
    if fg.type == MATCH_INDEX:
        return recs.match(func, mod)
    mg = exclude = None
    if mod is not None:
        mt, ms, exclude = filter_parse_regex(mod)
        mg = Glob(mt if mt != MATCH_INDEX else MATCH_FULL, ms)
    out = []
    for i, n in enumerate(recs.names):
        if mg is not None:
            modname = recs.mods[i]
            if not len(mg):
                if (not exclude) == (modname is None):
                    continue
            elif (modname is None or not mg.match(modname)) == (not exclude):
                continue
        if (mg is not None and not len(fg)) or fg.match(n):
            out.append(i)
    return out, clear


@pytest.mark.parametrize("grams", [False, True])
def test_index_agrees_with_the_plain_matcher(booted, grams):
    k, _clock = booted
    if "trace_printk" not in k.modules.loaded:
        finish(k, k.modules.load("trace_printk"))     # records of a module for the :mod: half
    recs = ftrace_records(k)
    index = NameIndex(recs.names)
    if grams:
        for _ in index.build_steps():
            pass
    recs._index = index
    rng = random.Random(35 + grams)
    globs = random_globs(recs.names, rng, 120)     # (each plain match scans every record)
    hits = 0
    for w in globs:
        got = recs.match(w, None)
        assert got == match_plain(recs, w, None), w
        hits += bool(got[0])
    assert hits > 65                    # most globs pick something
    mod = "trace_printk"
    assert mod in recs.modules
    in_mod = 0
    for w in globs[:12] + ["trace_printk*", "*irq_work", "!*irq*"]:
        for m in ["", "!", mod, "!" + mod, mod[:3] + "*", "*"]:
            got = recs.match(w, m)
            assert got == match_plain(recs, w, m), (w, m)
            in_mod += bool(got[0]) and m in (mod, mod[:3] + "*")
    assert recs.match("*", mod)[0] and in_mod >= 3    # the module's records are picked


def test_short_runs_use_the_bigrams_and_agree(booted):
    """Searches of two or three characters are their posting lists as they
    are, and a glob whose literal runs are all shorter than a trigram takes
    its candidates from the bigrams: both pick what the plain matcher picks
    (globs of that shape cut from real names, and some matching nothing)."""
    k, _clock = booted
    recs = ftrace_records(k)
    index = NameIndex(recs.names)
    for _ in index.build_steps():
        pass
    recs._index = index
    rng = random.Random(38)
    words = ["*qz*", "*_x*", "*zz?q*", "q?z*", "*ck*", "*ock*", "*[ab]c*", "sy?_*"]
    for _ in range(60):
        nm = rng.choice([n for n in recs.names if len(n) >= 8])
        a = rng.randrange(len(nm) - 6)
        words += ["*%s*" % nm[a:a + rng.choice((2, 3))],
                  "*%s?%s*" % (nm[a:a + 2], nm[a + 3:a + 5]),
                  "%s?%s*" % (nm[:2], nm[3:5]),
                  "*%s*%s" % (nm[a:a + 2], nm[-2:])]
    picked = 0
    for w in words:
        got = recs.match(w, None)
        assert got == match_plain(recs, w, None), w
        picked += bool(got[0])
    assert picked > 200


def test_glob_match_agrees_with_the_regex():
    rng = random.Random(7)
    for _ in range(20000):
        pat = "".join(rng.choice("ab]-!\\[*?") for _ in range(rng.randint(0, 7)))
        s = "".join(rng.choice("ab]-![\\*?") for _ in range(rng.randint(0, 6)))
        assert glob_match(pat, s) is (glob_regex(pat).fullmatch(s) is not None), (pat, s)
