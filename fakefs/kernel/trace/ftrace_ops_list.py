"""The ftrace_ops registered now (``ftrace_ops_list`` of kernel/trace/ftrace.c)
and what they make of the dyn_ftrace records: ``enabled_functions`` and
``touched_functions``.

The ops this kernel can have, as 6.12 registers them on x86-64:

* the function tracer of each trace array (``tr->ops``: ``global_ops`` at
  the top level, static; an instance's is kzalloc'ed, so DYNAMIC), while
  ``current_tracer`` is ``function``, on the array's filter hash
  (``set_ftrace_filter``, empty: every function) less its notrace hash.
  Its ``func`` is ``select_trace_function()``'s choice by the tracer options
  (``function_trace_call``, ``function_stack_trace_call``, the
  ``no_repeats`` ones), or ``ftrace_pid_func`` while the array has a pid
  list (FTRACE_OPS_FL_PID, ``ftrace_update_pid_func()``);
* one ops per function probe type of an array (``struct
  ftrace_func_probe``: ``traceon``, ``traceon:count``, ``snapshot``, ...;
  kzalloc'ed, DYNAMIC) on its own hash, ``func`` =
  ``function_trace_probe_call``;
* the function profiler (``ftrace_profile_ops``, static, without the
  function graph tracer), on the top level's filter and notrace hashes
  (``ftrace_ops_set_global_filter()``), ``func`` = ``function_profile_call``;
* with CONFIG_FUNCTION_GRAPH_TRACER, ``graph_ops`` (static, ``func`` =
  ``ftrace_graph_func``) while a function_graph tracer or the profiler
  (``fprofiler_ops``) uses it: one ops managing them (6.12's subops), on the
  union of their filter hashes and the records all their notrace hashes hold;
* the stack tracer's ``trace_ops`` (static) while ``stack_tracer_enabled``,
  on its own hash (``stack_trace_filter``), ``func`` = ``stack_trace_call``;
* ``kprobe_ftrace_ops`` (static, FTRACE_OPS_FL_SAVE_REGS), on the
  ``__fentry__`` site of every armed kprobe there, ``func`` =
  ``kprobe_ftrace_handler``.  ``kprobe_ipmodify_ops`` is only for probes
  with a post_handler, which kprobe events never have, so no record gets
  IPMODIFY (nor MODIFIED, which needs IPMODIFY or DIRECT).
  ``set_ftrace_pid`` adds no ops.  x86 has no CALL_OPS: no ``O`` column;
* a direct call's ops (``register_ftrace_direct()``, ``ftrace_direct.py``:
  the ftrace-direct sample modules), in the module's data (DYNAMIC), with
  DIRECT and SAVE_REGS, ``func`` = ``call_direct_funcs`` and the static
  trampoline ``ftrace_regs_caller``.  Its records are DIRECT (the ``D``
  column, and a ``\n\tdirect--><trampoline>`` line), and MODIFIED (``M``)
  for good once patched while DIRECT; alone on a record, its ``tramp:`` is
  ``ftrace_regs_caller`` with no `` ->`` (a trampoline ftrace did not
  allocate has no call of its own to show, ``static_tramp_func()``).

A record's flags follow ``__ftrace_hash_rec_update()`` and
``ftrace_check_record()``: the count is the number of ops whose hash
takes it; REGS when one of them saves regs; TRAMP when exactly one ops
has it (every ops gets a trampoline at registration on x86-64,
``arch_ftrace_update_trampoline()``).  While ``ftrace_enabled`` is 0 the
calls are not patched: no record is ENABLED (the counts stay).  A record
that was ever ENABLED is TOUCHED for good.

``t_show()`` prints ``name (count)`` and the ``R``/``I``/``D``/``O``/``M``
columns, then with TRAMP_EN ``\\ttramp: <trampoline> (<ops->func>)``
and `` -><the call in the trampoline>`` (``ftrace_ops_get_func()``: the
ops' func, none of these asks for the recursion or RCU assist), else
`` -><the call in ftrace_caller>``: ``ftrace_trace_function`` as last
patched (``ftrace_stub`` with no ops, the single ops' func unless it is
DYNAMIC, else ``ftrace_ops_list_func``; not re-patched while
``ftrace_enabled`` is 0).  The trampoline is printed as a bare address
(``%pS`` does not resolve ftrace trampolines).  Trampolines are
``execmem_alloc()``'ed pages in the module area, first fit with a guard
page each, above the module text the symbol table has; a static ops keeps
its trampoline, a DYNAMIC one frees it when unregistered.

The state is updated (``ftrace_ops_update()``) where the model changes
what is registered: filters, probes and pids (ftrace.py), the function
tracer's init (trace_functions.py), the profiler switch, kprobe arming,
the ``ftrace_enabled`` sysctl, the stack tracer's switch and filter, and
before each listing.
"""

from __future__ import annotations

from ..kallsyms import MODULE_PAGE, kaslr_bases
from .ftrace_records import ftrace_records

EXECMEM_STRIDE = 2 * MODULE_PAGE       # one page of trampoline + the vmalloc guard page
# Functions of this kernel's config the bundled symbol table (from a build
# without KPROBES_ON_FTRACE, FUNCTION_PROFILER and STACK_TRACER) lacks: the
# size %pS prints for them (kprobe_ftrace_handler, stack_trace_call: as
# Debian's 6.12.117 amd64 System.map has them, from its -dbg package; the
# distance to the next symbol).
STAND_IN_SIZES = {"kprobe_ftrace_handler": 0x1d0, "function_profile_call": 0x1c0,
                  "stack_trace_call": 0x330,
                  # (as the fgraph series' own enabled_functions examples show it)
                  "ftrace_graph_func": 0x60}
TRACER_FUNCS = {(False, False): "function_trace_call",
                (True, False): "function_stack_trace_call",
                (False, True): "function_no_repeats_trace_call",
                (True, True): "function_stack_no_repeats_trace_call"}
LIST_FUNC = "ftrace_ops_list_func"
STUB_FUNC = "ftrace_stub"


class RegisteredOps:
    """One registered ``struct ftrace_ops``: what it is (``key``, stable
    while it lives), its hash (``recs`` None: the filter hash is empty, every
    record), its notrace hash, ``func`` and flags."""

    __slots__ = ("key", "func", "save_regs", "dynamic", "recs", "notrace", "version", "direct",
                 "trampoline")

    def __init__(self, key, func, recs, notrace=frozenset(), save_regs=False, dynamic=False,
                 version=None, direct=0, trampoline=None):
        self.key = key
        self.version = version           # moves on when the hashes may have changed
        self.func = func
        self.recs = recs
        self.notrace = notrace
        self.save_regs = save_regs
        self.dynamic = dynamic
        self.direct = direct             # FTRACE_OPS_FL_DIRECT: its direct trampoline
        self.trampoline = trampoline     # the name of a trampoline it brings (not allocated)


def registered_ops(kernel, profiler=None) -> list:
    """The ops registered now (their order in ``ftrace_ops_list`` shows
    nowhere in these files)."""
    out = []
    tracing = kernel.tracing
    graph_users = []        # the function graph's subops: (filter or None, notrace, version)
    for tr in tracing.arrays():
        fops = tr.ftrace
        if tr.current.name == "function_graph":
            graph_users.append(_hashes(fops))
        if tr.current.name == "function":
            filt = notrace = None
            pids = False
            if fops is not None:
                filt = fops.filter if fops.filtering() else None
                notrace = fops.notrace
                pids = fops.pids is not None or fops.no_pids is not None
            opts = tr.current.opts
            func = "ftrace_pid_func" if pids else TRACER_FUNCS[
                (bool(opts.get("func_stack_trace")), bool(opts.get("func-no-repeats")))]
            out.append(RegisteredOps(("tracer", tr), func, filt, notrace or frozenset(),
                                     dynamic=not tr.is_top,
                                     version=fops.generation if fops is not None else 0))
        if fops is not None:
            for probe in fops.probes:
                out.append(RegisteredOps(("probe", probe), "function_trace_probe_call",
                                         probe.entries, dynamic=True, version=fops.generation))
    if profiler is not None and profiler.enabled:
        fops = tracing.global_trace.ftrace
        if profiler.graph:                   # fprofiler_ops: another subops of graph_ops
            graph_users.append(_hashes(fops))
        else:
            filt, notrace, version = _hashes(fops)
            out.append(RegisteredOps(("profile",), "function_profile_call", filt, notrace,
                                     version=version))
    if graph_users:
        # graph_ops (static) on the union of its subops' filters and the
        # records every one of them leaves out (ftrace_startup_subops())
        filters = [u[0] for u in graph_users]
        recs = None if any(f is None for f in filters) else frozenset().union(*filters)
        notrace = frozenset.intersection(*(frozenset(u[1]) for u in graph_users))
        out.append(RegisteredOps(("graph",), "ftrace_graph_func", recs, notrace,
                                 version=tuple(u[2] for u in graph_users)))
    st = kernel.stack_tracer
    if st is not None and st.registered:
        out.append(RegisteredOps(("stack",), "stack_trace_call", st.filter or None,
                                 version=st.generation))
    kps = kernel.kprobes
    if kps is not None:
        recs = ftrace_records(kernel)
        # (an fprobe's own ftrace_ops, not listed, is not modelled here)
        get = recs.by_addr.get
        armed = {get(kp.func) for kp in kps.probes
                 if kp.ftrace and kp.listed and kp.registered and not kp.disabled}
        armed.discard(None)
        if armed:
            out.append(RegisteredOps(("kprobe",), "kprobe_ftrace_handler", armed, save_regs=True,
                                     version=frozenset(armed)))
    ol = ftrace_records(kernel).ops_list
    for d in (ol.direct if ol is not None else ()):
        by_addr = ftrace_records(kernel).by_addr
        recs = frozenset(by_addr[f] for f in d.funcs if f in by_addr)
        out.append(RegisteredOps(("direct", d), "call_direct_funcs", recs, save_regs=True,
                                 dynamic=True, version=(d.addr, recs), direct=d.addr,
                                 trampoline="ftrace_regs_caller"))
    return out


def _hashes(fops) -> tuple:
    """(filter hash or None for every record, notrace hash, version) of an
    array's ``FtraceOps`` (None: nothing set)."""
    if fops is None:
        return None, frozenset(), 0
    return (fops.filter if fops.filtering() else None), fops.notrace, fops.generation


class FtraceOpsList:
    """The registered ops as last seen, their trampolines, the TOUCHED
    records and where ``ftrace_caller`` calls (one per kernel)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.profiler = None             # ftrace_profile.FunctionProfiler, once registered
        self.tramps: dict = {}           # ops key -> trampoline address
        self.static_keys: set = set()    # ops that keep their trampoline
        self.ops: list = []
        self.site_func = STUB_FUNC       # the call in ftrace_caller / ftrace_regs_caller
        self.touched: set[int] = set()
        self.touched_all_but: set | None = None    # every record but these was touched
        self._tramp_base = None
        self._counted: dict = {}         # ops key -> version whose records are TOUCHED
        self.direct: list = []           # ftrace_direct.DirectOps registered, in order
        self.modified: set[int] = set()  # addresses of the records ever patched DIRECT

    # --- updates ----------------------------------------------------------------
    def calls_enabled(self) -> bool:
        st = self.kernel.ftrace_sysctl
        return st is None or st.last

    def update(self) -> None:
        """What is registered now: trampolines for new ops, freed for
        DYNAMIC ops gone; the records patched now are TOUCHED."""
        ops = registered_ops(self.kernel, self.profiler)
        live = {o.key for o in ops}
        for key in [k for k in self.tramps if k not in live and k not in self.static_keys]:
            del self.tramps[key]
        for o in ops:
            if o.key not in self.tramps and o.trampoline is None:
                self.tramps[o.key] = self._alloc_tramp()
                if not o.dynamic:
                    self.static_keys.add(o.key)
        self.ops = ops
        self._counted = {k: v for k, v in self._counted.items() if k in live}
        if not self.calls_enabled():
            self._counted = {}
            return
        ips = ftrace_records(self.kernel).addrs
        for o in ops:
            if o.direct:
                self.modified.update(ips[r] for r in o.recs)
        if not ops:
            self.site_func = STUB_FUNC
        elif len(ops) == 1 and not ops[0].dynamic:
            self.site_func = ops[0].func
        else:
            self.site_func = LIST_FUNC
        for o in ops:
            if self._counted.get(o.key, self) == o.version:
                continue                 # (a filter set of thousands, at each fork followed)
            self._counted[o.key] = o.version
            if o.recs is None:
                nt = set(o.notrace)
                self.touched_all_but = nt if self.touched_all_but is None else self.touched_all_but & nt
            else:
                self.touched.update(r for r in o.recs if r not in o.notrace)

    def _alloc_tramp(self) -> int:
        """``execmem_alloc()``: the lowest free page-and-guard slot."""
        if self._tramp_base is None:
            ks = self.kernel.kallsyms
            tops = [(a // MODULE_PAGE + 1) * MODULE_PAGE for a, _t, _n, m in ks.symbols() if m]
            self._tramp_base = (max(tops) + MODULE_PAGE) if tops else kaslr_bases(self.kernel)[1]
        used = set(self.tramps.values())
        addr = self._tramp_base
        while addr in used:
            addr += EXECMEM_STRIDE
        return addr

    # --- the records --------------------------------------------------------------
    def rec_state(self) -> dict:
        """record -> [count, regs, the one ops, direct trampoline] for the
        records some ops takes."""
        state: dict[int, list] = {}
        n = len(ftrace_records(self.kernel))
        for o in self.ops:
            recs = range(n) if o.recs is None else o.recs
            nt = o.notrace
            for r in recs:
                if r in nt:
                    continue
                s = state.get(r)
                if s is None:
                    state[r] = [1, o.save_regs, o, o.direct]
                else:
                    s[0] += 1
                    s[1] = s[1] or o.save_regs
                    s[3] = s[3] or o.direct
        return state

    def is_touched(self, rec: int) -> bool:
        if rec in self.touched:
            return True
        return self.touched_all_but is not None and rec not in self.touched_all_but

    def sym(self, name: str) -> str:
        """``%pS`` of the function ``name``."""
        ks = self.kernel.kallsyms
        addr = ks.addr_of(name)
        if addr is not None:
            return ks.sprint_symbol(addr)
        return "%s+0x0/%#x" % (name, STAND_IN_SIZES.get(name, 0))

    def line(self, rec: int, state) -> str:
        """``t_show()`` of a record for enabled/touched_functions."""
        count, regs, ops, direct = state if state is not None else (0, False, None, 0)
        enabled = count and self.calls_enabled()
        recs = ftrace_records(self.kernel)
        # the R, I, D, O and M columns: I and O are never set here
        out = ["%s (%d)%s  %s  " % (recs.display(rec), count, " R" if regs else "  ",
                                   " D" if direct else "  "),
               " M " if recs.addrs[rec] in self.modified else "   "]
        if enabled and count == 1 and ops.trampoline is not None:
            out.append("\ttramp: %s (%s)" % (self.sym(ops.trampoline), self.sym(ops.func)))
        elif enabled and count == 1:
            func = self.sym(ops.func)
            out.append("\ttramp: 0x%x (%s) ->%s" % (self.tramps[ops.key], func, func))
        else:
            out.append(" ->" + self.sym(self.site_func))
        if direct:
            out.append("\n\tdirect-->" + self.kernel.kallsyms.sprint_symbol(direct))
        out.append("\n")
        return "".join(out)

    def enabled_text(self) -> str:
        self.update()
        if not self.calls_enabled():
            return ""
        state = self.rec_state()
        return "".join(self.line(r, state[r]) for r in sorted(state))

    def touched_text(self) -> str:
        self.update()
        state = self.rec_state()
        n = len(ftrace_records(self.kernel))
        if self.touched_all_but is not None:
            recs = [r for r in range(n) if r not in self.touched_all_but or r in self.touched]
        else:
            recs = sorted(self.touched)
        return "".join(self.line(r, state.get(r)) for r in recs)


def ftrace_ops_list(kernel) -> FtraceOpsList:
    recs = ftrace_records(kernel)
    st = recs.ops_list
    if st is None:
        st = recs.ops_list = FtraceOpsList(kernel)
    return st


def ftrace_ops_update(kernel) -> None:
    """Something registered or unregistered an ops, or changed its hash.
    (During boot the records are not made yet: the first listing looks.)"""
    if (kernel.booted and kernel.tracing is not None
            and kernel.config.enabled("DYNAMIC_FTRACE")):
        ftrace_ops_list(kernel).update()
