"""/proc/interrupts (kernel/irq/proc.c ``show_interrupts()``, x86's
``arch_show_interrupts()``).

A row per device line with a handler (the machine's devices, requested at
boot: ``Interrupts.request_irq``), the count of each online CPU, the chip,
its number there, the flow (``edge``) and the handler's name; then x86's
per-CPU rows for the build of the persona (Debian's amd64 config: local
APIC, SMP, the thermal vector, MCE with Intel's threshold and AMD's
deferred errors, KVM's posted interrupts, I/O APIC).  The rows count what
the machine does: device interrupts, the local timer (ticks and hrtimer
expiries), rescheduling IPIs.  Interrupts the machine has no events for
count 0 (NMIs, spurious, perf, IRQ work, function-call IPIs and TLB
shootdowns among the CPUs — the call graph has their handlers, but the
machine does not raise them —, thermal, MCE polls).  A guest's legacy
lines (the timer, i8042, rtc, acpi) and the devices' other vectors are
not there: the machine has no such devices.
"""

from __future__ import annotations

from .fs.proc.base import proc_create
from .fs.proc.inode import ProcOps

PREC = 3            # the first column's width: nr_irqs of a small guest is below 1000
# x86's per-CPU rows, in arch_show_interrupts() order
ARCH_ROWS = ("NMI", "LOC", "SPU", "PMI", "IWI", "RTR", "RES", "CAL", "TLB", "TRM", "THR",
             "DFR", "MCE", "MCP")
ARCH_TEXT = {
    "NMI": "Non-maskable interrupts", "LOC": "Local timer interrupts",
    "SPU": "Spurious interrupts", "PMI": "Performance monitoring interrupts",
    "IWI": "IRQ work interrupts", "RTR": "APIC ICR read retries",
    "RES": "Rescheduling interrupts", "CAL": "Function call interrupts",
    "TLB": "TLB shootdowns", "TRM": "Thermal event interrupts",
    "THR": "Threshold APIC interrupts", "DFR": "Deferred Error APIC interrupts",
    "MCE": "Machine check exceptions", "MCP": "Machine check polls",
}
KVM_ROWS = (("PIN", "Posted-interrupt notification event"),
            ("NPI", "Nested posted-interrupt event"),
            ("PIW", "Posted-interrupt wakeup event"))


def show_interrupts(kernel) -> str:
    irq = kernel.irq
    cpus = [c for c, on in enumerate(kernel.sched.online) if on]     # for_each_online_cpu
    out = [" " * (PREC + 8) + "".join("CPU%-8d" % c for c in cpus) + "\n"]
    for nr in sorted(irq.lines):
        name, counts, chip, hwirq = irq.lines[nr]
        out.append("%*d: %s %8s %*d-%-8s  %s\n" % (
            PREC, nr, "".join("%10u " % counts[c] for c in cpus), chip, PREC, hwirq, "edge",
            name))
    per_cpu = {"LOC": irq.loc, "RES": irq.res}
    for label in ARCH_ROWS:
        counts = per_cpu.get(label)
        out.append("%*s: %s  %s\n" % (PREC, label, "".join(
            "%10u " % (counts[c] if counts is not None else 0) for c in cpus), ARCH_TEXT[label]))
    out.append("%*s: %10u\n" % (PREC, "ERR", 0))
    out.append("%*s: %10u\n" % (PREC, "MIS", 0))
    for label, text in KVM_ROWS:
        out.append("%*s: %s  %s\n" % (PREC, label, "".join("%10u " % 0 for _ in cpus), text))
    return "".join(out)


class InterruptsOps(ProcOps):
    """``/proc/interrupts``: seq_file; no write handler (EIO)."""

    def show(self, f):
        return show_interrupts(f.data)


def proc_interrupts_init(kernel) -> None:
    if kernel.config.version[:2] != (6, 12):        # the rows are 6.12's
        return
    proc_create(kernel, "interrupts", 0o444, None, InterruptsOps(), kernel)
