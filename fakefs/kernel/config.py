"""Kconfig-style build configuration and the kernel personas.

A persona is a kernel build: a version string plus the CONFIG_ options it was
built with.  ``Kconfig.from_persona(name, overrides)`` gives the config a
simulated kernel boots with; ``-o CONFIG_X=y`` style overrides change single
options the way a ``.config`` edit would.
"""

from __future__ import annotations

DEFAULT_PERSONA = "6.12-stackmap"

# LINUX_COMPILER of a build (the banner's second parenthesis)
DEBIAN_12_GCC = ("x86_64-linux-gnu-gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, "
                 "GNU ld (GNU Binutils for Debian) 2.40")

# Linux 6.12 as configured for the persona the stackmap series was measured on
_CONFIG_6_12 = {
    "CONFIG_TRACING": True,
    "CONFIG_FTRACE": True,
    "CONFIG_FUNCTION_TRACER": True,
    "CONFIG_DYNAMIC_FTRACE": True,
    "CONFIG_FUNCTION_PROFILER": True,
    "CONFIG_FUNCTION_GRAPH_TRACER": True,
    # off in Debian's build (docs/tracefs-6.12.md)
    "CONFIG_FUNCTION_GRAPH_RETVAL": True,
    "CONFIG_STACK_TRACER": True,
    "CONFIG_STACKTRACE": True,
    "CONFIG_KALLSYMS": True,
    "CONFIG_KALLSYMS_ALL": True,
    "CONFIG_FTRACE_STACKMAP": True,
    "CONFIG_TRACER_SNAPSHOT": True,
    "CONFIG_TRACER_SNAPSHOT_PER_CPU_SWAP": True,
    "CONFIG_MEM_ALLOC_PROFILING": True,
    "CONFIG_MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT": True,
    "CONFIG_MEM_ALLOC_PROFILING_DEBUG": False,
    "CONFIG_PROFILING": True,
    "CONFIG_MODULES": True,
    "CONFIG_NR_CPUS": 8192,
    "CONFIG_RANDOMIZE_BASE": True,
    "CONFIG_KPROBES": True,
    "CONFIG_KPROBE_EVENTS": True,
    "CONFIG_FPROBE_EVENTS": True,
    "CONFIG_PROBE_EVENTS_BTF_ARGS": True,
    "CONFIG_UPROBE_EVENTS": True,
    "CONFIG_HIST_TRIGGERS": True,
    "CONFIG_SYNTH_EVENTS": True,
    "CONFIG_HOTPLUG_CPU": True,
    # the latency tracers (off in Debian's build: docs/tracefs-6.12.md)
    "CONFIG_IRQSOFF_TRACER": True,
    "CONFIG_PREEMPT_TRACER": True,
    "CONFIG_SCHED_TRACER": True,
}

PERSONAS: dict[str, dict] = {
    "6.12-stackmap": {
        "description": "Linux 6.12 with the ftrace stackmap RFC v3 series applied",
        "version": (6, 12, 0),
        "release": "6.12.0-stackmap",
        "compiler": DEBIAN_12_GCC,
        "config": dict(_CONFIG_6_12),
    },
    "6.18": {
        "description": "Linux 6.18 (allocinfo 2.0, mem_profiling compression, no stackmap)",
        "version": (6, 18, 0),
        "release": "6.18.0",
        "compiler": DEBIAN_12_GCC,
        "config": dict(_CONFIG_6_12, CONFIG_FTRACE_STACKMAP=False),
    },
    "2.6.30-eqware": {
        "description": "Linux 2.6.30 on a small x86_64 board with EQware's heap-stress "
                       "/proc/allocinfo (2009); its debugfs tracing directory is modern: "
                       "6.12's files and formats (instances, error_log, the migrate-disable "
                       "column, event triggers...), not 2.6.30's",
        "version": (2, 6, 30),
        "release": "2.6.30-eqware",
        "compiler": "gcc version 4.3.2 (Debian 4.3.2-1.1) ",
        # out-of-tree patches in this build (no Kconfig symbol of their own)
        "patches": ["eqware-heap-stress"],
        "config": {
            "CONFIG_X86_64": True,
            "CONFIG_SMP": True,
            "CONFIG_NR_CPUS": 64,
            "CONFIG_HZ": 250,
            "CONFIG_HZ_250": True,
            "CONFIG_NO_HZ": False,
            "CONFIG_PROFILING": True,
            "CONFIG_PROC_FS": True,
            "CONFIG_SYSFS": True,
            "CONFIG_DEBUG_FS": True,
            "CONFIG_TRACING": True,
            "CONFIG_FTRACE": True,
            "CONFIG_FUNCTION_TRACER": True,
            "CONFIG_STACKTRACE": True,
            "CONFIG_KALLSYMS": True,
            "CONFIG_KALLSYMS_ALL": False,
            "CONFIG_FTRACE_STACKMAP": False,
            "CONFIG_TRACER_SNAPSHOT": False,
            "CONFIG_MEM_ALLOC_PROFILING": False,
            "CONFIG_MODULES": True,
            "CONFIG_ZONE_DMA": True,
            "CONFIG_ZONE_DMA32": True,
            "CONFIG_HIGHMEM": False,
            "CONFIG_SWAP": False,
            "CONFIG_SCHEDSTATS": False,
        },
    },
}


# Kconfig symbols the model reads besides those the personas list
# (tests/test_cli.py checks every literal enabled("X") in fakefs/ is known)
READ_SYMBOLS = frozenset({
    "CONFIG_HIST_TRIGGERS", "CONFIG_KPROBES", "CONFIG_KPROBE_EVENTS", "CONFIG_FPROBE_EVENTS",
    "CONFIG_LRU_GEN",
    "CONFIG_MEMCG", "CONFIG_MEM_ALLOC_PROFILING_DEBUG",
    "CONFIG_MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT", "CONFIG_NUMA", "CONFIG_NUMA_BALANCING",
    "CONFIG_RANDOMIZE_BASE", "CONFIG_SECURITY_DMESG_RESTRICT", "CONFIG_TRACER_SNAPSHOT_PER_CPU_SWAP",
    "CONFIG_FUNCTION_PROFILER", "CONFIG_DYNAMIC_FTRACE",
})


# what an enabled symbol selects (Kconfig ``select``), for the symbols
# whose selects the model reads: an override cannot switch these off while
# the selecting symbol is on
SELECTS = {
    "CONFIG_IRQSOFF_TRACER": ("CONFIG_TRACER_SNAPSHOT", "CONFIG_TRACER_SNAPSHOT_PER_CPU_SWAP"),
    "CONFIG_PREEMPT_TRACER": ("CONFIG_TRACER_SNAPSHOT", "CONFIG_TRACER_SNAPSHOT_PER_CPU_SWAP"),
    "CONFIG_SCHED_TRACER": ("CONFIG_TRACER_SNAPSHOT",),
}


def known_symbols() -> frozenset:
    """Every Kconfig symbol an override may set: those of the personas'
    configurations and those the model reads."""
    out = set(READ_SYMBOLS)
    for p in PERSONAS.values():
        out |= set(p["config"])
    return frozenset(out)


def parse_value(text: str):
    if text in ("y", "Y"):
        return True
    if text in ("n", "N", ""):
        return False
    if text == "m":
        return "m"
    try:
        return int(text, 0)
    except ValueError:
        return text.strip('"')


class Kconfig:
    def __init__(self, persona: str, options: dict):
        self.persona = persona
        self.options = dict(options)
        p = PERSONAS[persona]
        self.version = p["version"]
        self.release = p["release"]
        self.compiler = p.get("compiler", "gcc")

    @classmethod
    def from_persona(cls, persona: str = DEFAULT_PERSONA, overrides: dict | None = None) -> "Kconfig":
        if persona not in PERSONAS:
            raise KeyError(persona)
        opts = dict(PERSONAS[persona]["config"])
        for k, v in (overrides or {}).items():
            opts[k if k.startswith("CONFIG_") else "CONFIG_" + k] = v
        for sym, selected in SELECTS.items():
            if opts.get(sym):
                for other in selected:
                    opts[other] = True
        return cls(persona, opts)

    def __getitem__(self, name: str):
        return self.options.get(name if name.startswith("CONFIG_") else "CONFIG_" + name, False)

    def enabled(self, name: str) -> bool:
        return bool(self[name])

    def version_at_least(self, major: int, minor: int = 0) -> bool:
        return self.version[:2] >= (major, minor)
