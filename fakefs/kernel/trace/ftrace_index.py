"""The dyn_ftrace records' names indexed for ``ftrace_match()``.

``match_records()`` in the kernel tests every record against the glob; a
list of thousands of globs written to ``set_ftrace_filter`` then costs
thousands of passes over ~55,000 names.  Here each type of
``filter_parse_regex()`` (ftrace_records.py) narrows the records first and
decides on those only, so the answer is the plain matcher's (``Glob.match``,
tested against it):

* MATCH_FRONT_ONLY ``abc*``: the names sorted, a bisected range;
* MATCH_END_ONLY ``*abc``: the reversed names sorted, a bisected range;
* MATCH_MIDDLE_ONLY ``*abc*``: the names holding the rarest of the search's
  trigrams (the trigram index, built a slice at a time by ``build_steps()``
  for long writes, with the bigrams': a search of two or three characters
  is its posting list as it is), else every occurrence in the names joined
  by newlines (``str.find``, in C);
* MATCH_GLOB: the smallest of the candidates its literal prefix, suffix and
  runs (``glob_literals()``) give, each checked with ``glob_match()`` (a
  few) or the compiled pattern.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

from ..lib.glob import glob_literals, glob_match, glob_regex

MATCH_FULL, MATCH_FRONT_ONLY, MATCH_MIDDLE_ONLY, MATCH_END_ONLY, MATCH_GLOB = range(5)
_TOP = "\U0010ffff"                    # above every character of a name
GRAM = 3
# candidates a glob checks with glob_match() rather than compile its regex
FEW = 128
# a rarest trigram this common is intersected with the next rarest
PAIR_AT = 256
BUILD_SLICE = 2000                     # names indexed between two yields of build_steps()


class NameIndex:
    """Sorted names, sorted reversed names, the names joined, and (once
    built) the trigram index of a fixed list of names."""

    __slots__ = ("names", "_fwd", "_fwd_ids", "_rev", "_rev_ids", "_joined", "_starts", "grams",
                 "bigrams")
    # (each made on first use, or by build_steps())

    def __init__(self, names):
        # (the names as strings from here on: the records keep theirs packed)
        self.names = names if isinstance(names, list) else list(names)
        self._fwd = self._rev = self._joined = None
        self.grams: dict[str, array] | None = None
        self.bigrams: dict[str, array] | None = None    # built with grams

    def _sorted(self) -> None:
        for _ in self.sort_steps():
            pass

    def sort_steps(self):
        """The sorted names, the sorted reversed names and the joined names,
        yielding after each."""
        names = self.names
        n = len(names)
        if self._fwd is None:
            order = sorted(range(n), key=names.__getitem__)
            self._fwd_ids = array("I", order)
            self._fwd = [names[i] for i in order]
            yield
        if self._rev is None:
            rnames = [s[::-1] for s in names]
            order = sorted(range(n), key=rnames.__getitem__)
            self._rev_ids = array("I", order)
            self._rev = [rnames[i] for i in order]
            yield
        if self._joined is None:
            starts = array("I", [0]) * n
            pos = 0
            for i, s in enumerate(names):
                starts[i] = pos
                pos += len(s) + 1
            self._starts = starts
            self._joined = "\n".join(names) + "\n"
            yield

    # --- the trigram index ------------------------------------------------------
    def build_steps(self):
        """Build everything, the trigram index last, yielding between the
        sorts and after each BUILD_SLICE names."""
        yield from self.sort_steps()
        if self.grams is not None:
            return
        grams: dict[str, array] = {}
        bigrams: dict[str, array] = {}
        names = self.names
        for lo in range(0, len(names), BUILD_SLICE):
            for i in range(lo, min(len(names), lo + BUILD_SLICE)):
                s = names[i]
                for n, table in ((GRAM, grams), (2, bigrams)):
                    get = table.get
                    for g in {s[j:j + n] for j in range(len(s) - n + 1)}:
                        a = get(g)
                        if a is None:
                            table[g] = array("I", (i,))
                        else:
                            a.append(i)
            yield
        if self.grams is None:
            self.grams, self.bigrams = grams, bigrams

    def _gram_candidates(self, runs):
        """Records that may hold every string of ``runs``: those holding the
        rarest trigram of them (bigram, when no run has three), less those
        missing the next rarest when that halves the work (None: no index
        or no run of two)."""
        grams = self.grams
        if grams is None:
            return None
        posts = []
        for n, table in ((GRAM, grams), (2, self.bigrams)):
            for s in runs:
                for j in range(len(s) - n + 1):
                    a = table.get(s[j:j + n])
                    if a is None:
                        return ()
                    posts.append(a)
            if posts:
                break
        if not posts:
            return None
        posts.sort(key=len)
        best = posts[0]
        if len(posts) > 1 and len(best) > PAIR_AT:
            return sorted(set(best).intersection(posts[1]))
        return best

    # --- ranges -------------------------------------------------------------------
    def _range(self, keys, prefix: str) -> tuple[int, int]:
        return bisect_left(keys, prefix), bisect_left(keys, prefix + _TOP)

    def front(self, prefix: str) -> list[int]:
        lo, hi = self._range(self._fwd, prefix)
        return sorted(self._fwd_ids[lo:hi])

    def end(self, suffix: str) -> list[int]:
        lo, hi = self._range(self._rev, suffix[::-1])
        return sorted(self._rev_ids[lo:hi])

    def containing(self, s: str) -> list[int]:
        """The records whose name holds ``s`` (in record order)."""
        if not s:
            return list(range(len(self.names)))
        names = self.names
        if self.grams is not None and 2 <= len(s) <= GRAM:     # exactly its posting list
            return list((self.grams if len(s) == GRAM else self.bigrams).get(s, ()))
        cand = self._gram_candidates((s,))
        if cand is not None:
            return [i for i in cand if s in names[i]]
        if "\n" in s:
            return []
        out = []
        joined, starts = self._joined, self._starts
        j = joined.find(s)
        while j >= 0:
            i = bisect_right(starts, j) - 1
            out.append(i)
            j = joined.find(s, starts[i] + len(names[i]) + 1)
        return out

    def glob(self, pat: str) -> list[int]:
        """The records whose name ``glob_match()``es ``pat``."""
        names = self.names
        prefix, suffix, runs = glob_literals(pat)
        n = len(names)
        best, how = n, None
        if prefix:
            lo, hi = self._range(self._fwd, prefix)
            best, how = hi - lo, ("front",)
        if suffix:
            lo, hi = self._range(self._rev, suffix[::-1])
            if hi - lo < best:
                best, how = hi - lo, ("end",)
        longest = max(runs, key=len) if runs else ""
        cand = self._gram_candidates(runs)
        if cand is not None and len(cand) < best:
            best, how = len(cand), ("list", cand)
        if how is None or (best > n // 8 and cand is None and len(longest) > len(prefix)):
            how = ("list", self.containing(longest) if longest else range(n))
        if how[0] == "front":
            ids = self.front(prefix)
        elif how[0] == "end":
            ids = self.end(suffix)
        else:
            ids = how[1]
        if len(ids) <= FEW:
            return [i for i in ids if glob_match(pat, names[i])]
        rx = glob_regex(pat).fullmatch
        return [i for i in ids if rx(names[i])]

    def match(self, typ: int, search: str) -> list[int]:
        """``ftrace_match()`` of every record, in record order (MATCH_FULL
        is the records' dict; not here)."""
        if self._joined is None:
            self._sorted()
        if typ == MATCH_FRONT_ONLY:
            return self.front(search)
        if typ == MATCH_END_ONLY:
            return self.end(search)
        if typ == MATCH_MIDDLE_ONLY:
            return self.containing(search)
        if typ == MATCH_GLOB:
            return self.glob(search)
        raise ValueError(typ)
