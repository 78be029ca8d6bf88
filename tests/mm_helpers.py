"""Helpers for the allocation-model tests: kernels booted with just procfs and
the allocation model (fast), and cat/echo-like file access."""

from __future__ import annotations

from fakefs.kernel.init import ALLOC_INITCALLS, Kernel
from fakefs.sim.clock import ManualClock
from fakefs import sim

MM_INITCALLS = [("fakefs.kernel.fs.proc.base", "proc_root_init"), *ALLOC_INITCALLS]


def boot(cmdline: str = "", version=None, seed: int = 1, nr_cpus: int = 2, persona=None, **config):
    """Boot a model kernel; ``version=(6, 13)`` pretends to be that release,
    keyword arguments are Kconfig overrides (``MEM_ALLOC_PROFILING_DEBUG=True``)."""
    kw = {"persona": persona} if persona else {}
    k = Kernel(cmdline=cmdline, seed=seed, nr_cpus=nr_cpus, clock=ManualClock(),
               config_overrides=config, **kw)
    if version is not None:
        k.config.version = tuple(version) + (0,) * (3 - len(version))
    return sim.boot_kernel(k, initcalls=MM_INITCALLS)


def run(k, seconds: float) -> None:
    """Let ``seconds`` of simulated time pass, observed every second as a
    reader of /proc/allocinfo would (of a longer unobserved stretch, the
    kernel simulates only what can be seen)."""
    left = int(seconds * 1e9)
    while left > 0:
        k.clock.advance(min(left, 1_000_000_000))
        k.timekeeper.run_until_now()
        if k.alloc_tag is not None:
            k.alloc_tag.settle()
        left -= 1_000_000_000


def read(k, path: str, flags: int = 0) -> bytes:
    """open + read everything + release, as cat does."""
    import os
    from fakefs.kernel.fs.pseudo import File
    node = k.tree.root.walk(path)
    f = File(node, flags or os.O_RDONLY)
    node.fops.open(f)
    out = b""
    while True:
        chunk = node.fops.read(f, len(out), 4096)
        if not chunk:
            break
        out += chunk
    node.fops.release(f)
    return out


def write(k, path: str, data: bytes, flags: int = 0):
    """open(O_WRONLY|O_TRUNC) + write + release; returns bytes written."""
    import os
    from fakefs.kernel.fs.pseudo import File
    node = k.tree.root.walk(path)
    f = File(node, flags or (os.O_WRONLY | os.O_TRUNC))
    node.fops.open(f)
    try:
        return node.fops.write(f, data)
    finally:
        node.fops.release(f)
