"""Taints and WARN() reports (kernel/panic.py)."""

from types import SimpleNamespace

from fakefs.kernel.panic import add_taint, print_tainted, warn_report
from fakefs.kernel.printk import KERN_WARNING


def kernel():
    k = SimpleNamespace(tainted=set(), config=SimpleNamespace(release="6.12.0"), log=[])
    k.printk = lambda text, level: k.log.append((level, text))
    return k


def test_print_tainted_in_flag_order():
    k = kernel()
    assert print_tainted(k) == "Not tainted"
    add_taint(k, "C")
    add_taint(k, "W")
    assert print_tainted(k) == "Tainted: G        WC        "
    add_taint(k, "P")
    assert print_tainted(k).startswith("Tainted: P ")


def test_warn_report_prints_the_splat_then_taints():
    k = kernel()
    warn_report(k, ("lib/x.c", 12), "f+0x1/0x2", "first\nsecond\n", ("rmmod", 42, 1),
                ("g+0x3/0x4",), ["b(C)", "a"])
    lines = [text for _level, text in k.log]
    assert {level for level, _text in k.log} == {KERN_WARNING}
    assert lines[:3] == ["------------[ cut here ]------------", "first", "second"]
    assert "WARNING: CPU: 1 PID: 42 at lib/x.c:12 f+0x1/0x2" in lines
    assert "Modules linked in: b(C) a" in lines
    assert "CPU: 1 UID: 0 PID: 42 Comm: rmmod Not tainted 6.12.0 #1" in lines   # W comes after
    assert lines[-3:] == [" g+0x3/0x4", " </TASK>", "---[ end trace 0000000000000000 ]---"]
    assert k.tainted == {"W"}
