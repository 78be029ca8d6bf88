#!/usr/bin/env python3
"""Generate fakefs/kernel/data/alloc_callers.txt: the source callers of the allocation call
sites the simulated kernel's walk graph lacks, up to functions it has.

Run (Python standard library only; reads the source, builds nothing):

    python3 tools/mkallocpaths.py                  # ~90 s on two cores, writes the data file
    python3 tools/mkallocpaths.py --check          # rebuilds and compares with the checked-in file

Options: ``--src DIR`` (default /tmp/ks/linux-source-6.12: Debian's linux-source-6.12,
unpacked), ``--out FILE``, ``--depth N`` (source frames between a call site and the graph,
default 8), ``--jobs N`` (parser processes).

What it reads:

* ``fakefs/kernel/mm/data/alloc_tags-6.12.tsv``: the allocation tags (file, function);
* ``fakefs/kernel/data/callgraph.txt``: the hand-written walk graph; its functions are the ones
  reachable from its roots and interrupt entries that the bundled symbol table
  (``fakefs/kernel/data/kallsyms.gz``) has (names it lacks are spliced out, as ``walkgraph``
  does);
* every ``.c`` and ``.h`` file of the source (``arch/`` only for x86; not ``tools/``,
  ``samples/``, ``scripts/``, ``Documentation/``, ``usr/``, ``rust/``), the ``.asn1``
  grammars and ``arch/x86/entry/syscalls/syscall_64.tbl``.

What it writes: for every tag function outside the graph, its callers in the source that lie
on a chain reaching a graph function within ``--depth`` source frames (the nearest such
callers, at most ``MAX_CALLERS``, in the callee's file first), and theirs, as
``callee: caller caller ...`` lines.  A call is:

* a direct call in a function's body, or in a function-like macro the body uses;
* a call through a struct member: ``x->a->m(...)`` (or a pointer fetched from one, then
  called) calls every function the source puts in member ``m`` of that struct type: a
  designated initializer (an ops table, at file level or in a function), an assignment, a
  member copied from another struct's.  Types come from ``struct T *v`` declarations and
  struct definitions; a field or member name only one struct has stands for that struct;
* a callback given to a registrar of ``REGISTRARS`` (``INIT_WORK``: ``process_one_work``
  calls it, ...), an action of an ``.asn1`` grammar (``asn1_ber_decoder`` calls it);
* a system call: ``SYSCALL_DEFINEn(name, ...)`` defines ``__do_sys_name``, called from
  ``__x64_sys_name``, which ``x64_sys_call()`` calls for every entry of the 64-bit table.

Callers of a ``static`` function are looked for in its own file (any file for a header's);
callers of a global one in every file but those defining a static function of that name.
Only functions of the machine's kernel are callers: ones the symbol table has, and static
ones of files it has a function of (or of headers), which the compiler inlined; not
``__init``/``__exit`` ones (gone once the machine has booted).  Names are source names:
compiler clones (``name.isra.0``) are the symbol table's business, and inlined functions stay
in the chains: the loader (``fakefs/kernel/alloc_callers.py``) splices them out against the
table in use.

Limits (an approximation, not a compiler): comments and string literals are blanked; of every
``#if``/``#ifdef`` only the first branch is read (the ``#else`` one after ``#if 0``), so braces
stay balanced; a function definition is a top-level ``{`` whose header has a parenthesis and
no ``=``, named by the first identifier before a ``(`` that is not an attribute macro; types
behind typedefs and casts are not known; callbacks passed as plain arguments (``fill_super``)
are not followed.  The data names edges, not chains: a way up may mix the contexts one
dispatcher serves, and static functions of one name in different files share a line.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csource import (_SUFFIX_RE, asn1_actions, parse_file,  # noqa: E402  (the sibling C reader)
                     source_files)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TAGS = os.path.join(ROOT, "fakefs", "kernel", "mm", "data", "alloc_tags-6.12.tsv")
CALLGRAPH = os.path.join(ROOT, "fakefs", "kernel", "data", "callgraph.txt")
KALLSYMS = os.path.join(ROOT, "fakefs", "kernel", "data", "kallsyms.gz")
OUT = os.path.join(ROOT, "fakefs", "kernel", "data", "alloc_callers.txt")
SRC = "/tmp/ks/linux-source-6.12"

DEPTH = 8
MAX_CALLERS = 6
SLACK = 0                   # callers kept: those at most this much farther from the graph than the nearest

class Source:
    """Every function definition of the tree and who calls what: directly,
    through a struct member a function was put in (an ops table's
    initializer, an assignment), or through a callback registrar."""

    def __init__(self, src: str, jobs: int):
        files = source_files(src)
        self.files: list[str] = []
        self.defs: list[tuple] = []          # (name, file id, static, init)
        self.by_name: dict[str, list[int]] = {}
        self.rev: dict[str, list[int]] = {}  # callee name -> defs calling it
        # callee name -> (def calling it through a pointer, file id where it was put there)
        self.irev: dict[str, list[tuple[int, int]]] = {}
        chunk = max(1, len(files) // (jobs * 16))
        if jobs > 1:
            with ProcessPoolExecutor(jobs) as ex:
                parsed = list(ex.map(parse_file, files, chunksize=chunk))
        else:
            parsed = [parse_file(f) for f in files]
        macros: dict[str, set] = {}
        structs: dict[str, dict] = {}
        owners: dict[str, set] = {}           # member name -> structs having it
        for _path, got in parsed:
            for k, v in got["macros"].items():
                macros.setdefault(k, set()).update(v)
            for sname, (fields, members) in got["structs"].items():
                d = structs.setdefault(sname, {})
                for f, t in fields.items():
                    d.setdefault(f, t)
                for mb in members:
                    owners.setdefault(mb, set()).add(sname)
        by_field: dict[str, set] = {}
        for sname, fields in structs.items():
            for f, t in fields.items():
                by_field.setdefault(f, set()).add(t)

        def resolve(key):
            """(struct type, member) that ``key`` names, or None: the root
            variable's declared type, then the fields' types; a field or a
            member no other struct has tells the type when the root does not."""
            t, fields, member = key[:3]
            for f in fields:
                nt = structs.get(t, {}).get(f) if t is not None else None
                if nt is None:
                    cands = by_field.get(f, ())
                    nt = next(iter(cands)) if len(cands) == 1 else None
                t = nt
                if t is None:
                    return None
            if t is None:
                cands = owners.get(member, ())
                t = next(iter(cands)) if len(cands) == 1 else None
            return (t, member) if t is not None else None

        slots: dict[tuple, set] = {}          # (type, member) -> {(name, file)} put there
        dispatchers: dict[tuple, list[int]] = {}
        regs, alias = [], []
        for path, got in parsed:
            fid = len(self.files)
            self.files.append(os.path.relpath(path, src))
            for stype, dpath, member, fn in got["inits"]:
                t = stype
                for f in dpath:
                    t = structs.get(t, {}).get(f) if t is not None else None
                if t is not None:
                    slots.setdefault((t, member), set()).add((fn, fid))
            for name, static, init, calls, disp, assigns, aliases, reg in got["defs"]:
                d = len(self.defs)
                self.defs.append((name, fid, static, init))
                self.by_name.setdefault(name, []).append(d)
                expanded = set(calls)
                for c in calls:
                    if c in macros:
                        expanded.update(macros[c])
                for c in expanded:
                    if c != name:
                        self.rev.setdefault(c, []).append(d)
                for key in disp:
                    r = resolve(key)
                    if r is not None:
                        dispatchers.setdefault(r, []).append(d)
                for key in assigns:
                    r = resolve(key)
                    if r is not None:
                        slots.setdefault(r, set()).add((key[3], fid))
                for dst, src_key in aliases:
                    rd, rs = resolve(dst), resolve(src_key)
                    if rd is not None and rs is not None and rd != rs:
                        alias.append((rd, rs))
                regs.extend((disp_fn, fn, fid) for disp_fn, fn in reg)
        # a member set from another struct's member holds what that one held
        for _round in range(8):
            grew = False
            for rd, rs in alias:
                got = slots.get(rs)
                if got:
                    have = slots.setdefault(rd, set())
                    n = len(have)
                    have |= got
                    grew = grew or len(have) != n
            if not grew:
                break
        for key in sorted(slots):
            for caller in dispatchers.get(key, ()):
                for fn, fid in sorted(slots[key]):
                    if fn in self.by_name and fn != self.defs[caller][0]:
                        self.irev.setdefault(fn, []).append((caller, fid))
        for path in source_files(src, (".asn1",)):
            fid = len(self.files)
            self.files.append(os.path.relpath(path, src))
            regs.extend(("asn1_ber_decoder", fn, fid) for fn in asn1_actions(path))
        for disp_fn, fn, fid in regs:
            for caller in self.by_name.get(disp_fn, ()):
                if not self.defs[caller][2] and fn in self.by_name:
                    self.irev.setdefault(fn, []).append((caller, fid))
        self.n_slots = sum(len(v) for v in slots.values())
        self.n_dispatch = len(dispatchers)

    def callers(self, d: int):
        """Definitions calling definition ``d``: directly, or through a pointer."""
        name, fid, static, _init = self.defs[d]
        local = static and not self.files[fid].endswith(".h")
        out = []
        for c in self.rev.get(name, ()):
            cf = self.defs[c][1]
            if local:
                if cf != fid:
                    continue
            elif cf != fid and any(self.defs[o][1] == cf and self.defs[o][2]
                                   for o in self.by_name.get(name, ())):
                continue                  # that file calls its own static one
            out.append(c)
        for c, where in self.irev.get(name, ()):
            if local and where != fid:
                continue                  # another file's function of that name
            if c not in out:
                out.append(c)
        return out


# ------------------------------------------------------------------ the simulated kernel's data
def load_kallsyms(path: str = KALLSYMS):
    names = set()
    with gzip.open(path, "rt", encoding="ascii") as f:
        for line in f:
            if line.startswith("#"):
                continue
            rest = line.rstrip("\n").split(" ", 2)[2]
            names.add(rest.split("\t", 1)[0])
    base = {}
    for n in names:
        m = _SUFFIX_RE.search(n)
        if m:
            base.setdefault(n[:m.start()], n)
    return names, base


def graph_functions(path: str, resolves) -> set:
    """Source names of the walk graph's functions: reachable from its roots and
    interrupt entries, through names the symbol table lacks too, and in the table."""
    edges: dict[str, set] = {}
    starts = []
    with open(path, encoding="ascii") as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("%"):
                word, _, rest = line.partition(" ")
                if word in ("%root", "%irq"):
                    for a in rest.split():
                        starts.extend(a.partition("*")[0].split("|"))
                continue
            caller, _, rest = line.partition(":")
            for a in rest.split():
                for t in a.partition("*")[0].split("|"):
                    for c in caller.strip().split("|"):
                        edges.setdefault(c, set()).add(t)
    seen = set()
    todo = list(starts)
    while todo:
        n = todo.pop()
        if n in seen or n == "_":
            continue
        seen.add(n)
        todo.extend(edges.get(n, ()))
    return {n for n in seen if resolves(n)}


def load_tags(path: str = TAGS):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            out.append((cols[0], cols[2]))
    return out


def syscall_entries(src: str) -> set:
    """Names ``x64_sys_call()`` calls: ``__x64_sys_<entry>`` of the 64-bit table."""
    out = set()
    with open(os.path.join(src, "arch/x86/entry/syscalls/syscall_64.tbl"), encoding="ascii") as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 4 and not cols[0].startswith("#") and cols[1] in ("common", "64"):
                out.add("__x64_" + cols[3])
    return out


# ------------------------------------------------------------------ the climb
def build(src: str, depth: int, jobs: int, log=print, source=None, slack=None):
    t0 = time.time()
    names, base = load_kallsyms()

    def resolves(n):
        return n in names or n in base

    graph = graph_functions(CALLGRAPH, resolves)
    tags = load_tags()
    s = source if source is not None else Source(src, jobs)
    slack = SLACK if slack is None else slack
    log("parsed %d files, %d definitions in %.1fs" % (len(s.files), len(s.defs), time.time() - t0))
    entries = syscall_entries(src)
    file_id = {f: i for i, f in enumerate(s.files)}

    # a function is in the machine's kernel when the symbol table has it, or
    # when it is static, nothing calls it through a pointer and its file is
    # built (a function of it has a symbol) or a header: then it was
    # inlined.  Others are in files not built, or in modules the machine
    # does not load.
    built = set()
    for name, fid, _static, _init in s.defs:
        if resolves(name):
            built.add(fid)

    def present(d):
        name, fid, static, init = s.defs[d]
        if init:
            return False              # gone once the machine has booted
        if resolves(name):
            return True
        # (a function called through a pointer has its address taken: it
        # has a symbol wherever it is built)
        return static and name not in s.irev and (fid in built or s.files[fid].endswith(".h"))

    # nodes: definition ids, or ("stub", name) for syscall stubs
    def callers_of(node):
        if isinstance(node, tuple):
            return ["x64_sys_call"] if node[1] in entries and resolves(node[1]) else []
        name = s.defs[node][0]
        out = [c for c in s.callers(node) if present(c)]
        if name.startswith("__do_sys_"):
            out.append(("stub", "__x64_sys_" + name[len("__do_sys_"):]))
        return out

    def name_of(node):
        if isinstance(node, tuple):
            return node[1]
        if isinstance(node, str):
            return node
        return s.defs[node][0]

    def is_top(node):
        return isinstance(node, str) or name_of(node) in graph

    # distance (in source frames) of a node to the graph, found by climbing
    dist_memo: dict = {}

    def dist(node, room):
        """Frames from ``node`` up to a graph function (0: it is one), None
        when more than ``room``."""
        if is_top(node):
            return 0
        if room <= 0:
            return None
        got = dist_memo.get(node)
        if got is not None and (got[0] is not None or got[1] >= room):
            return got[0] if got[0] is not None and got[0] <= room else None
        best = None
        for c in callers_of(node):
            dc = dist(c, room - 1)
            if dc is not None and (best is None or dc + 1 < best):
                best = dc + 1
        dist_memo[node] = (best, room)
        return best

    edges: dict[str, dict[str, tuple]] = {}   # callee -> caller -> sort key
    found = missing = 0
    done = set()
    for tfile, func in tags:
        if resolves(func) and func in graph:
            continue
        key = (tfile, func)
        if key in done:
            continue
        done.add(key)
        fid = file_id.get(tfile)
        starts = [d for d in s.by_name.get(func, ()) if s.defs[d][1] == fid] or \
            [d for d in s.by_name.get(func, ()) if not s.defs[d][2]]
        starts = [d for d in starts if present(d)]
        ok = False
        for d0 in starts:
            # every caller on a chain that reaches the graph within ``depth``
            todo = [(d0, depth)]
            seen = set()
            while todo:
                node, room = todo.pop()
                if (node, room) in seen or is_top(node):
                    continue
                seen.add((node, room))
                nfile = s.defs[node][1] if isinstance(node, int) else -1
                ups = []
                for c in callers_of(node):
                    dc = dist(c, room - 1)
                    if dc is None:
                        continue
                    cfile = s.defs[c][1] if isinstance(c, int) else -2
                    ups.append(((cfile != nfile, dc, name_of(c)), c))
                ups.sort(key=lambda u: u[0])
                if ups:
                    near = min(k[1] for k, _c in ups)
                    ups = [u for u in ups if u[0][1] <= near + slack]
                for k, c in ups[:MAX_CALLERS]:
                    ok = True
                    e = edges.setdefault(name_of(node), {})
                    cn = name_of(c)
                    if cn not in e or k < e[cn]:
                        e[cn] = k
                    todo.append((c, room - 1))
        if ok:
            found += 1
            continue
        missing += 1
    log("tag functions outside the graph: %d with a way up, %d without (%.1fs)"
        % (found, missing, time.time() - t0))
    return edges, (found, missing)


def source_version(src: str) -> str:
    """``Linux 6.12.117``, from the tree's top Makefile."""
    v = {}
    with open(os.path.join(src, "Makefile"), encoding="ascii") as f:
        for line in f:
            k, sep, val = line.partition("=")
            if sep and k.strip() in ("VERSION", "PATCHLEVEL", "SUBLEVEL"):
                v[k.strip()] = val.strip()
            if len(v) == 3:
                break
    return "Linux %s.%s.%s" % (v.get("VERSION"), v.get("PATCHLEVEL"), v.get("SUBLEVEL"))


def render(edges, version: str) -> str:
    out = [
        "# Source callers of the allocation call sites the walk graph lacks, up to its functions.",
        "# Generated by tools/mkallocpaths.py from Debian's linux-source-6.12 (%s); do not edit."
        % version,
        "# Read by fakefs/kernel/alloc_callers.py.  One line a function:",
        "#   callee: caller caller ...   (calls in the source: direct, through a struct member,",
        "#                                a registered callback, a system call's stub; the callers",
        "#                                nearest the graph, in the callee's file first)",
    ]
    for callee in sorted(edges):
        cs = sorted(edges[callee].items(), key=lambda kv: (kv[1], kv[0]))
        out.append("%s: %s" % (callee, " ".join(c for c, _ in cs)))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=SRC)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--depth", type=int, default=DEPTH)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    edges, _stats = build(a.src, a.depth, a.jobs, log=lambda m: print(m, file=sys.stderr))
    text = render(edges, source_version(a.src))
    if a.check:
        with open(a.out, encoding="ascii") as f:
            same = f.read() == text
        print("up to date" if same else "differs: rerun without --check", file=sys.stderr)
        return 0 if same else 1
    with open(a.out, "w", encoding="ascii") as f:
        f.write(text)
    print("wrote %s: %d lines, %d bytes" % (a.out, text.count("\n"), len(text)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
