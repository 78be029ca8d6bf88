"""The records' names indexed for the globs (ftrace_index.py): on random
globs of every filter_parse_regex() type, with and without the trigram
index, with and without ``:mod:``, the index picks exactly the records the
plain matcher (every record tested, as match_records() does) picks."""

import random

import pytest

from fakefs.kernel.lib.glob import glob_match, glob_regex
from fakefs.kernel.trace.ftrace_index import NameIndex
from fakefs.kernel.trace.ftrace_records import ftrace_records
import ftrace_helpers

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


@pytest.mark.parametrize("grams", [False, True])
def test_index_agrees_with_the_plain_matcher(booted, grams):
    k, _clock = booted
    recs = ftrace_records(k)
    index = NameIndex(recs.names)
    if grams:
        for _ in index.build_steps():
            pass
    recs._index = index
    rng = random.Random(35 + grams)
    globs = random_globs(recs.names, rng, 220)
    hits = 0
    for w in globs:
        got = recs.match(w, None)
        assert got == recs.match_plain(w, None), w
        hits += bool(got[0])
    assert hits > 120                   # most globs pick something
    mods = sorted(recs.modules) or ["ext4"]   # (none in the bundled symbol table)
    for w in globs[:25]:
        for m in ["", "!", mods[0], "!" + mods[0], mods[0][:3] + "*", "*"]:
            assert recs.match(w, m) == recs.match_plain(w, m), (w, m)


def test_glob_match_agrees_with_the_regex():
    rng = random.Random(7)
    for _ in range(20000):
        pat = "".join(rng.choice("ab]-!\\[*?") for _ in range(rng.randint(0, 7)))
        s = "".join(rng.choice("ab]-![\\*?") for _ in range(rng.randint(0, 6)))
        assert glob_match(pat, s) is (glob_regex(pat).fullmatch(s) is not None), (pat, s)
