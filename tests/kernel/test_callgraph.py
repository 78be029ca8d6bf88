"""Parsing the call-graph description."""

from __future__ import annotations

import pytest

from fakefs.kernel.callgraph import RET, CallGraph, load_callgraph
from fakefs.sim.workload import CODE_PATH_KINDS, EVENT_KINDS


def test_callgraph_file_parses():
    g = load_callgraph()
    assert g.calls["entry_SYSCALL_64_after_hwframe"] == [("do_syscall_64", 1.0)]
    assert set(g.events) == set(EVENT_KINDS) | set(CODE_PATH_KINDS)
    assert "idle" in g.profiles and g.profiles["idle"]["roots"]


def test_statements():
    g = CallGraph.parse("""
%param irq 0.01          # a comment
%loop idle_loop
%again 0.5 f g
%irq asm_a*2 asm_b
%event kmalloc __kmalloc|kmalloc
f: g*0.25 h*0.25
f: k
%profile user
%root entry
f: g
%end
""")
    assert g.params == {"irq": 0.01} and g.loop == {"idle_loop"} and g.again == {"f": 0.5, "g": 0.5}
    assert g.irq == [("asm_a", 2.0), ("asm_b", 1.0)]
    assert g.events == {"kmalloc": ["__kmalloc|kmalloc"]}
    assert g.calls["f"] == [("g", 0.25), ("h", 0.25), ("k", 1.0)]
    assert g.profiles["user"] == {"roots": [("entry", 1.0)], "calls": {"f": [("g", 1.0)]}}
    assert {"f", "g", "h", "k", "entry", "asm_a", "__kmalloc|kmalloc", "idle_loop"} <= g.tokens()


def test_calls_weighing_less_than_one_return_for_the_rest():
    g = CallGraph.parse("f: g*0.25 h*0.5\n")
    assert g.calls["f"] == [("g", 0.25), ("h", 0.5), (RET, 0.25)]


@pytest.mark.parametrize("text", ["%bogus x", "f g", "f: g*x", "f: *2", "%root f"])
def test_errors_name_the_line(text):
    with pytest.raises(ValueError, match="callgraph:2:"):
        CallGraph.parse("\n" + text)


def test_callers_of_reads_alternatives():
    from fakefs.kernel.callgraph import CallGraph
    g = CallGraph.parse("a: b|c d*2\ne: c\nf: g\n")
    assert g.callers_of("c") == ["a", "e"]
    assert g.callers_of("d") == ["a"]
    assert g.callers_of("zz") == []
