"""Ftrace and loadable modules (``ftrace_module_init()``,
``ftrace_module_enable()``, ``ftrace_free_mem()``, ``ftrace_release_mod()``
of kernel/trace/ftrace.c).

* A coming module's traceable functions (its ``__mcount_loc`` entries:
  core and init text) become records after every other record
  (``available_filter_functions`` lists them ``name [module]``), then the
  ``:mod:`` commands each trace array cached for it are applied and
  dropped (``process_cached_mods()``): ``*:mod:trace_printk`` written
  before ``modprobe trace-printk`` filters its functions.
* Once its init has run, the records of its init text go
  (``ftrace_free_mem()``); when it is unloaded, all its records go
  (``ftrace_release_mod()``).  An entry of a trace array's filter or
  notrace hash that named one of them stays in the hash as an entry that
  matches nothing (``clear_func_from_hash()``/``clear_mod_from_hash()`` set
  its ip to 0): the file no longer lists it, but a filter left with only
  such entries is not empty, so the function tracer traces nothing, until
  the file is truncated.  Other holders (function probes, the stack
  tracer's filter) drop the records.

The records are numbered in list order; a module's going renumbers those
after it, so every holder is carried over to the new numbers by address.
"""

from __future__ import annotations

from ..module import STATE_COMING, STATE_LIVE
from .ftrace_ops_list import ftrace_ops_update
from .ftrace_records import FtraceRecords


def ftrace_module_notify(kernel):
    """The loader's notifier (registered first: records before the others)."""
    def notify(mod, state):
        tracing = kernel.tracing
        if tracing is None or not kernel.config.enabled("DYNAMIC_FTRACE"):
            return
        if state == STATE_COMING:
            recs = set(a for a, _n in mod.traceable(False) + mod.traceable(True))
        elif state == STATE_LIVE:
            recs = set(a for a, _n in mod.traceable(False))
        else:
            recs = set()
        mod.ftrace_recs = recs
        renumber(kernel)
        if state == STATE_COMING:
            process_cached_mods(kernel, mod.name)
    return notify


def renumber(kernel) -> None:
    """The records again from the symbol table; every holder carried over
    by address (a record gone: a zeroed hash entry, see the module's doc)."""
    tracing = kernel.tracing
    old = tracing.ftrace_records
    if old is None:
        return                      # made on first use, with the modules loaded then
    new = FtraceRecords(kernel)
    new.ops_list = old.ops_list
    tracing.ftrace_records = new
    oaddrs, by_addr = old.addrs, new.by_addr

    def carry(recs):
        out = set()
        lost = 0
        for r in recs:
            n = by_addr.get(oaddrs[r])
            if n is None:
                lost += 1
            else:
                out.add(n)
        return out, lost

    for tr in tracing.arrays():
        fops = tr.ftrace
        if fops is None:
            continue
        fops.filter, lost = carry(fops.filter)
        fops.zeroed[0] += lost
        fops.notrace, lost = carry(fops.notrace)
        fops.zeroed[1] += lost
        for probe in fops.probes:
            entries = {}
            for r, data in probe.entries.items():
                n = by_addr.get(oaddrs[r])
                if n is not None:
                    entries[n] = data
            probe.entries = entries
        fops.changed()
    st = kernel.stack_tracer
    if st is not None and st.filter:
        st.filter = carry(st.filter)[0]
        st.generation += 1
    ol = new.ops_list
    if ol is not None:
        ol.touched = carry(ol.touched)[0]
        if ol.touched_all_but is not None:
            ol.touched_all_but = carry(ol.touched_all_but)[0]
        ol._counted = {}
    ftrace_ops_update(kernel)


def process_cached_mods(kernel, name: str) -> None:
    """``process_cached_mods()``: each array's cached ``:mod:`` commands
    for the module, applied to its hashes and dropped."""
    for tr in kernel.tracing.arrays():
        fops = tr.ftrace
        if fops is None:
            continue
        for enable, head in ((True, fops.mod_trace), (False, fops.mod_notrace)):
            mine = [fn for fn, m in head if m == name]
            if not mine:
                continue
            head[:] = [(fn, m) for fn, m in head if m != name]
            target = fops.filter if enable else fops.notrace
            for fn in mine:
                recs, _clear = fops.records.match(fn or "*", name)
                target.update(recs)
            fops.changed()
