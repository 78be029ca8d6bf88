"""CallSites: the ways up from an allocation's call site (the rest is in
test_reach.py and mm/test_kmem_trace.py)."""

from __future__ import annotations

from workload_helpers import boot

from fakefs.kernel.call_sites import CallerTable
from fakefs.kernel.walkgraph import table_items


def callers_by_dict(tables) -> dict:
    """The reverse of the pick tables as a dict of lists (what CallerTable
    stands for): callee -> [(caller, weight), ...] in table order."""
    rev: dict = {}
    for caller, table in enumerate(tables):
        for callee, w in zip(*table_items(table)):
            if callee >= 0 and w > 0:
                rev.setdefault(callee, []).append((caller, w))
    return rev


def test_a_caller_table_gives_each_function_s_callers_as_the_dict_would():
    wg = boot(nr_cpus=2).workload.wg
    for tables in (wg.base_table, *wg.tables.values()):         # (made in C: _reach.caller_arrays)
        rev, table = callers_by_dict(tables), CallerTable(tables)
        assert rev and len(table.caller) == sum(map(len, rev.values()))
        for f in range(len(tables)):
            assert table.get(f, ()) == rev.get(f, ()), f
        assert table.get(-1, None) is None and table.get(len(tables), None) is None


def test_a_caller_table_keeps_a_caller_s_repeated_calls_in_order():
    # two functions call 2 (1 twice: its table lists 2 twice); 3 calls nobody
    tables = [([1, 2], [1.0, 3.0], None), ([2, 0, 2], [0.5, 1.0, 3.0], None), None,
              ([-1], [1.0], None)]
    table = CallerTable(tables)
    assert table.get(2) == [(0, 2.0), (1, 0.5), (1, 2.0)]
    assert table.get(0) == [(1, 0.5)] and table.get(1) == [(0, 1.0)]
    assert table.get(3, ()) == ()
