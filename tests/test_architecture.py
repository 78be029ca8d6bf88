"""The shape of the code: the kernel model is pure, and nothing imports in a circle."""

from __future__ import annotations

import ast
import inspect
import os
import re
import textwrap

import kfiles

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.trace import TraceArray

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fakefs")


def _modules():
    """(module name, path) of fakefs's modules: Python, and the compiled
    data plane's Cython (``.pyx``)."""
    for dirpath, _dirs, files in os.walk(ROOT):
        for fn in files:
            if fn.endswith((".py", ".pyx")):
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, os.path.dirname(ROOT)).rsplit(".", 1)[0].replace(os.sep, ".")
                if rel.endswith(".__init__"):
                    rel = rel[: -len(".__init__")]
                yield rel, path


# a Cython module's fakefs imports and cimports (absolute, as they all are),
# the indent telling a function's from the module's
_PYX_IMPORT = re.compile(r"^([ \t]*)(?:from\s+(fakefs[\w.]*)\s+c?import\s+\(?([\w ,]*)|c?import\s+(fakefs[\w.]*))",
                         re.M)


def _pyx_imports(path):
    with open(path) as fh:
        text = fh.read()
    for m in _PYX_IMPORT.finditer(text):
        indent, frm, names, mod = m.groups()
        if mod:
            yield mod, not indent
            continue
        yield frm, not indent
        for name in (n.strip() for n in names.split(",")):
            if name:
                yield frm + "." + name.split()[0], not indent


def _imports(mod, path):
    """(module imported, at module level?) for each fakefs import of ``mod``."""
    if path.endswith(".pyx"):
        yield from _pyx_imports(path)
        return
    with open(path) as fh:
        tree = ast.parse(fh.read())
    pkg = mod if path.endswith("__init__.py") else mod.rsplit(".", 1)[0]
    top = set(id(n) for n in tree.body)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] + [target + "." + a.name for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith("fakefs"):
                yield name, id(node) in top


def _graph():
    mods = dict(_modules())
    graph = {}
    nested = []
    for mod, path in mods.items():
        deps = set()
        for name, at_top in _imports(mod, path):
            while name and name not in mods:
                name = name.rsplit(".", 1)[0] if "." in name else ""
            if name and name != mod:
                deps.add(name)
                if not at_top and mod.startswith("fakefs.kernel"):
                    nested.append((mod, name))
        graph[mod] = deps
    return graph, nested


def test_no_import_cycles():
    graph, _ = _graph()
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = 1
        for d in graph.get(m, ()):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d] if d in stack else [m, d])
            elif d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    # a package's __init__ importing its own modules is not a cycle of modules
    cycles = [c for c in cycles if not any(c[i + 1].startswith(c[i] + ".") for i in range(len(c) - 1))]
    assert not cycles, cycles


def test_the_kernel_model_imports_no_function_level_fakefs_modules():
    _, nested = _graph()
    assert not nested, nested


def test_the_kernel_model_is_pure():
    graph, _ = _graph()
    mods = dict(_modules())
    for mod, deps in graph.items():
        if not mod.startswith("fakefs.kernel"):
            continue
        assert not any(d.startswith(("fakefs.fuse", "fakefs.sim", "fakefs.daemon")) for d in deps), mod
        if mods[mod].endswith(".pyx"):
            continue                    # (their imports are fakefs's or C's: _graph has them)
        with open(mods[mod]) as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] in ("pyfuse3", "trio") for n in names), mod


# Issue 33, DM6: the kernel model takes the instant from its caller and
# never pulls the simulation forward: no module of it reads a clock
# (``now_ns()``, ``time.monotonic()`` ...) or pulls (``run_until_now``,
# ``catch_up``, ``advance_to``).  It was a debt paid down (session 43:
# 71 calls in 21 modules; session 45: 21 in 7, the file operations' catch-ups
# gone to their callers, the catch-up itself to ``sim.timekeeper``, a write
# whose work needs the machine further on answering ``fs.pseudo.Later``;
# session 46: none, the kernel reading no clock: its instant is
# ``kernel.now``, which its caller gives, and its files' times are its own;
# the function profiler's and the stack tracer's calls are the machine's,
# sim/function_calls.py and sim/stack_calls.py, which the kernel's files ask
# to ``settle()`` before they show what was measured, as /proc/allocinfo asks
# the allocation workload: work owed, not time pulled).  None may join.
CLOCK_DEBT: dict[str, int] = {}
_PULLS = {"run_until_now", "catch_up", "advance_to"}
_TIME_READS = {"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
               "time", "time_ns"}


# (a compiled module's, Cython being no Python for ast: the same calls by their text)
_PYX_CLOCK_CALL = re.compile(r"\b(?:run_until_now|catch_up|advance_to|now_ns)\s*\("
                             r"|\btime\.(?:%s)\s*\(" % "|".join(sorted(_TIME_READS)))


def clock_calls(source: str, pyx: bool = False) -> int:
    """Calls in ``source`` that read a clock or pull the simulation forward."""
    if pyx:
        return len(_PYX_CLOCK_CALL.findall(source))
    n = 0
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name):
            n += f.id in _PULLS
        elif isinstance(f, ast.Attribute):
            n += (f.attr in _PULLS or f.attr == "now_ns"
                  or f.attr in _TIME_READS and isinstance(f.value, ast.Name) and f.value.id == "time")
    return n


def test_clock_calls_are_counted():
    assert clock_calls("k.run_until_now(); catch_up(tr); x = clock.now_ns()") == 3
    assert clock_calls("import time\nt = time.monotonic() + time.perf_counter_ns()") == 2
    assert clock_calls("k.advance_to(t)\nself.catch_up()\nnow_ns = 1\nf(time)") == 2
    assert clock_calls("cdef long long t = k.clock.now_ns()\nk.run_until_now ()\nnow_ns = 1",
                       pyx=True) == 2


def test_the_kernel_model_reads_no_new_clock():
    found = {}
    for mod, path in _modules():
        if mod.startswith("fakefs.kernel"):
            with open(path) as fh:
                n = clock_calls(fh.read(), pyx=path.endswith(".pyx"))
            if n:
                found[mod] = n
    grown = {m: (n, CLOCK_DEBT.get(m, 0)) for m, n in found.items() if n > CLOCK_DEBT.get(m, 0)}
    assert not grown, "the kernel model pulls the simulation in more places: %s" % grown
    paid = {m: (found.get(m, 0), n) for m, n in CLOCK_DEBT.items() if found.get(m, 0) < n}
    assert not paid, "lower CLOCK_DEBT to what is left: %s" % paid


# Issue 33, DM6: nothing under kernel/ generates activity; the machine in
# sim/ owns every generator.  A module of the kernel model that has itself
# driven by time (``add_timer_hook``: its work runs because time went on, not
# because somebody called it) is either a timer of the modelled kernel (a
# kernel thread's loop: kernel code, at the pace its code sets), named here
# with its code, or a generator, which belongs to the machine.  The
# generators moved to sim/ (session 46: the allocation workload, the
# profiler's ticks, the function profiler's and the stack tracer's calls, the
# gap watcher, the trace activity; session 47: the call-graph walk and what
# builds it, sim/workload.py, walk.py, reach.py, call_sites.py, population.py
# and their compiled parts; the machine's loops of calls and hits,
# sim/_trace_calls.pyx and _trace_machine_hits.pyx; the events made up at
# rates of their own, sim/rated_events.py; what each allocation keeps and
# for how long, and the running system's state at boot, sim/alloc_history.py).  The kernel keeps what
# its code is and does: the call graph (callgraph.py, walkgraph.py), the
# stack frames its tracers read (_frames.pyx, frames.py), the writers
# (_trace_function.FunctionWriter) and the probes (trace/trace_hits.py); the
# machine's code is given to it at boot (``init.MACHINE``: kernel.workload,
# the allocations' steady state).
KERNEL_TIMERS = {
    "fakefs.kernel.mm.heap_stress": "the EQware module's kernel thread (its jiffies loop)",
    "fakefs.kernel.samples_trace_events": "the sample module's threads (simple_thread())",
}
# the machine's generators (classes of sim/), which no code of the kernel
# model names: it is handed what they make (a frame, a hit, an allocation)
MACHINE_GENERATORS = {
    "Workload": "fakefs.sim.workload", "Walk": "fakefs.sim.walk", "Walker": "fakefs.sim._walk",
    "Reach": "fakefs.sim.reach", "CallSites": "fakefs.sim.call_sites",
    "TaskTable": "fakefs.sim.population", "CallWriter": "fakefs.sim._trace_calls",
    "HitWriter": "fakefs.sim._trace_machine_hits", "AllocWorkload": "fakefs.sim.alloc_workload",
    "TraceActivity": "fakefs.sim.trace_activity", "FunctionCalls": "fakefs.sim.function_calls",
    "StackCalls": "fakefs.sim.stack_calls", "ProfileTicks": "fakefs.sim.profile_ticks",
    "Lifetimes": "fakefs.sim.alloc_history",
}


def timer_hook_calls(source: str) -> int:
    """Calls in ``source`` that have something driven by the kernel's time."""
    return sum(1 for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "add_timer_hook")


def test_timer_hook_calls_are_found():
    assert timer_hook_calls("kernel.add_timer_hook(wl.step)\nk.add_timer_hook(f, skip=g)") == 2
    assert timer_hook_calls("def add_timer_hook(self, fn): pass\nx = k.add_timer_hook") == 0


def test_nothing_new_in_the_kernel_model_is_driven_by_time():
    found = set()
    for mod, path in _modules():
        if mod.startswith("fakefs.kernel") and path.endswith(".py"):
            with open(path) as fh:
                if timer_hook_calls(fh.read()):
                    found.add(mod)
    known = set(KERNEL_TIMERS)
    assert not found - known, "driven by time in the kernel model: %s" % (found - known)
    assert not known - found, "lower KERNEL_TIMERS: %s" % (known - found)


# (a compiled module's code without its comments and strings)
_PYX_NOT_CODE = re.compile(r'"""[\s\S]*?"""|#[^\n]*|"[^"\n]*"|\'[^\'\n]*\'')


def code_names(source: str, pyx: bool = False) -> set[str]:
    """The names and attributes ``source``'s code uses (not its docs)."""
    if pyx:
        return set(re.findall(r"\b\w+\b", _PYX_NOT_CODE.sub(" ", source)))
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name.rsplit(".", 1)[-1])
    return names


def test_code_names_are_found():
    assert code_names("from x import Walk\nw = a.Reach()\n'Workload'") == {"Walk", "w", "a", "Reach"}
    assert "Walker" not in code_names('"""Walker"""\n# Walker\ncdef int x\n', pyx=True)
    assert "Walker" in code_names("cdef Walker w = Walker(a)", pyx=True)


def test_the_machine_s_generators_are_sim_s():
    mods = dict(_modules())
    for name, mod in MACHINE_GENERATORS.items():
        with open(mods[mod]) as fh:
            assert re.search(r"^(?:cdef )?class %s\b" % name, fh.read(), re.M), (name, mod)
    named = {}
    for mod, path in mods.items():
        if mod.startswith("fakefs.kernel"):
            with open(path) as fh:
                found = code_names(fh.read(), pyx=path.endswith(".pyx")) & set(MACHINE_GENERATORS)
            if found:
                named[mod] = found
    assert not named, "the kernel model names the machine's generators: %s" % named
    # (a new generator is a module of sim/: none joins the kernel model)
    assert not any("workload" in m.rsplit(".", 1)[-1] for m in mods if m.startswith("fakefs.kernel"))


MAX_LINES = 600


def test_modules_are_small():
    big = []
    for mod, path in _modules():
        with open(path) as fh:
            n = sum(1 for _ in fh)
        if n > MAX_LINES:
            big.append((mod, n))
    assert not big, big


def _declared(cls) -> set[str]:
    """The attributes ``cls.__init__`` assigns to ``self``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    init = next(f for f in tree.body[0].body
                if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    names = set()
    for n in ast.walk(init):
        targets = n.targets if isinstance(n, ast.Assign) else \
            [n.target] if isinstance(n, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for e in ast.walk(t):
                if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) \
                        and e.value.id == "self":
                    names.add(e.attr)
    return names


def test_kernel_and_trace_arrays_declare_their_fields():
    """Every field a busy Kernel and its TraceArrays carry is one their
    __init__ declares: nothing attached from outside."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(),
                 cmdline="trace_options=stackmap,stacktrace profile=2")
    kfiles.wr(k, "current_tracer", "function")
    kfiles.wr(k, "events/enable", "1")
    kfiles.wr(k, "set_ftrace_filter", "schedule")
    k.clock.advance(30_000_000)
    kfiles.rd(k, "trace")
    inst = kfiles.node(k, "instances")
    inst.dops.mkdir(inst, "x")
    kfiles.wr(k, "instances/x/events/sched/enable", "1")
    kfiles.wr(k, "instances/x/snapshot", "1")
    k.clock.advance(10_000_000)
    kfiles.rd(k, "instances/x/trace")
    kfiles.rd(k, "stack_map_stat")
    assert set(vars(k)) <= _declared(Kernel), set(vars(k)) - _declared(Kernel)
    arrays = list(k.tracing.arrays())
    assert len(arrays) == 2
    for tr in arrays:
        assert set(vars(tr)) <= _declared(TraceArray), set(vars(tr)) - _declared(TraceArray)
