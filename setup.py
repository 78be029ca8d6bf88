"""The compiled data plane (docs/data-plane.md): Cython modules built by
``pip install`` (``make install``); everything else is in pyproject.toml."""

from Cython.Build import cythonize
from setuptools import Extension, setup

NATIVE = ["fakefs.kernel._walk", "fakefs.kernel._kallsyms", "fakefs.kernel._reach", "fakefs.kernel._workload", "fakefs.kernel.lib._jhash", "fakefs.kernel.lib._mt",
          "fakefs.kernel.trace._trace_events_raw", "fakefs.kernel.trace._ring_buffer_bpage", "fakefs.kernel.trace._ring_buffer", "fakefs.kernel.trace._trace_stackmap",
          "fakefs.kernel.trace._trace_function", "fakefs.kernel.trace._trace_commit", "fakefs.kernel.trace._trace_machine_hits",
          "fakefs.kernel.trace._trace_functions_graph", "fakefs.fuse._proc_reports"]
# each floating-point operation rounded on its own, as Python's are: the
# compiled modules compute the same doubles as their specifications
CFLAGS = ["-O2", "-ffp-contract=off"]

setup(ext_modules=cythonize(
    [Extension(name, [name.replace(".", "/") + ".pyx"], extra_compile_args=CFLAGS) for name in NATIVE],
    compiler_directives={"language_level": 3}))
