"""Taints and ``WARN()`` reports (kernel/panic.c).

``kernel.tainted`` holds the taint flags set so far (``add_taint``);
:func:`print_tainted` shows them the way oops headers do (``Tainted: G
W`` ...), and :func:`warn_report` prints the splat of a ``WARN()`` that
fired (``__warn``) and taints the kernel with ``W``.
"""

from __future__ import annotations

from .printk import KERN_WARNING

# (flag, shown when not set) in the order of taint_flags[]
TAINT_ORDER = [("P", "G"), ("F", " "), ("S", " "), ("R", " "), ("M", " "), ("B", " "),
               ("U", " "), ("D", " "), ("A", " "), ("W", " "), ("C", " "), ("I", " "),
               ("O", " "), ("E", " "), ("L", " "), ("K", " "), ("X", " "), ("T", " "),
               ("N", " ")]

HARDWARE_NAME = "QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.3-debian-1.16.3-2 04/01/2014"


def add_taint(kernel, flag: str) -> None:
    kernel.tainted.add(flag)


def print_tainted(kernel) -> str:
    """``print_tainted()``: 'Not tainted' or 'Tainted: G        W  '."""
    t = kernel.tainted
    if not t:
        return "Not tainted"
    return "Tainted: " + "".join(c if c in t else off for c, off in TAINT_ORDER)


def warn_report(kernel, at: tuple, sym: str, msg: str, task: tuple, trace: tuple,
                modules: list) -> None:
    """``__warn()``: the report of a ``WARN()`` at ``at`` = (file, line) in
    function ``sym``, run by ``task`` = (comm, pid, cpu) called from the
    frames ``trace``, with ``modules`` listed as linked in (newest first,
    each with its taint flags)."""
    comm, pid, cpu = task
    lines = ["------------[ cut here ]------------"]
    lines += msg.rstrip("\n").split("\n")
    lines.append("WARNING: CPU: %d PID: %d at %s:%d %s" % (cpu, pid, at[0], at[1], sym))
    lines.append("Modules linked in: %s" % " ".join(modules))
    lines.append("CPU: %d UID: 0 PID: %d Comm: %s %s %s #1"
                 % (cpu, pid, comm, print_tainted(kernel), kernel.config.release))
    lines.append("Hardware name: " + HARDWARE_NAME)
    lines.append("RIP: 0010:%s" % sym)
    lines.append("Call Trace:")
    lines.append(" <TASK>")
    lines.append(" ? __warn+0x8c/0x190")
    lines.append(" ? %s" % sym)
    lines.append(" ? report_bug+0x164/0x190")
    lines.append(" ? handle_bug+0x58/0x90")
    lines.append(" ? exc_invalid_op+0x17/0x70")
    lines.append(" ? asm_exc_invalid_op+0x1a/0x20")
    lines += [" " + frame for frame in trace]
    lines.append(" </TASK>")
    lines.append("---[ end trace 0000000000000000 ]---")
    for line in lines:
        kernel.printk(line, KERN_WARNING)
    add_taint(kernel, "W")
