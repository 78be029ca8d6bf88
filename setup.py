"""The compiled data plane (docs/data-plane.md): Cython modules built by
``pip install`` (``make install``); everything else is in pyproject.toml.

Two kinds: the ``.pyx`` modules (C types), and the Python modules listed in
``compiled.txt``, compiled as they are.  The build writes
``fakefs/_compiled.json``, what each was built from (``fakefs/compiled.py``:
a source changed since runs from its ``.py``, or fails for a ``.pyx``)."""

import glob
import importlib.util
import json
import os
import re

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = ["fakefs.kernel._frames", "fakefs.sim._walk", "fakefs.kernel._kallsyms", "fakefs.sim._reach", "fakefs.sim._workload", "fakefs.kernel.lib._jhash", "fakefs.kernel.lib._mt",
          "fakefs.kernel.trace._trace_events_raw", "fakefs.kernel.trace._ring_buffer_bpage", "fakefs.kernel.trace._ring_buffer",
          "fakefs.kernel.trace._ring_buffer_read", "fakefs.kernel.trace._ring_buffer_page", "fakefs.kernel.trace._trace_stackmap",
          "fakefs.kernel.trace._trace_function", "fakefs.kernel.trace._trace_commit", "fakefs.kernel.trace._trace_hits",
          "fakefs.kernel.trace._trace_functions_graph", "fakefs.sim._trace_calls", "fakefs.sim._trace_machine_hits", "fakefs.sim._event_queue", "fakefs.fuse._proc_reports"]
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "compiled.txt")) as f:
    PYTHON = [line.strip() for line in f if line.strip() and not line.startswith("#")]
# each floating-point operation rounded on its own, as Python's are: the
# compiled modules compute the same doubles as their specifications
CFLAGS = ["-O2", "-ffp-contract=off"]


# fakefs/compiled.py (the guard that reads the manifest) by its path: the
# package itself is not imported here (its modules are being built)
_spec = importlib.util.spec_from_file_location("_fakefs_compiled", os.path.join(HERE, "fakefs", "compiled.py"))
_compiled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_compiled)
sources_hash = _compiled.sources_hash


def manifest():
    """What each compiled module is built from, as it is now: a ``.pyx``
    with every ``.pxd`` (any of them may be cimported), a ``.py`` with the
    ``.pxd`` beside it if there is one (Cython's augmenting declarations)
    and the sources of the compiled Python modules whose types that
    cimports (``typed_by``).  (A ``.pyx`` cimports none: it would not load
    beside them run as Python, ``FAKEFS_PURE_PYTHON``.)"""
    pxd = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "fakefs/**/*.pxd"),
                                                             recursive=True))
    out = {}
    for name in NATIVE:
        sources = [name.replace(".", "/") + ".pyx"] + pxd
        out[name] = {"kind": "pyx", "sources": sources, "sha256": sources_hash(sources)}
    for path in PYTHON:
        name = path[:-3].replace("/", ".")
        sources = [path] + typed_by(path[:-3] + ".pxd")
        out[name] = {"kind": "py", "sources": sources, "sha256": sources_hash(sources)}
    return out


CIMPORT = re.compile(r"^\s*(?:from\s+(fakefs[\w.]*)\s+cimport|cimport\s+(fakefs[\w.]*))", re.M)


def typed_by(pxd: str, seen=None) -> list:
    """A compiled Python module's ``.pxd`` (if any), then what its types
    come from: the source and ``.pxd`` of each module it
    cimports, theirs in turn.  Compiled against those types, the module runs from its source
    when one of them changed, as that module does (``compiled.BuildGuard``):
    its ``.so`` would not load beside a module run as Python."""
    seen = set() if seen is None else seen
    if pxd in seen or not os.path.exists(os.path.join(HERE, pxd)):
        return []
    seen.add(pxd)
    out = [pxd]
    with open(os.path.join(HERE, pxd)) as f:
        text = f.read()
    for m in CIMPORT.finditer(text):
        stem = (m.group(1) or m.group(2)).replace(".", "/")
        if stem + ".py" in PYTHON and stem + ".py" not in out:
            out.append(stem + ".py")
        out += [p for p in typed_by(stem + ".pxd", seen) if p not in out]
    return out


BUILT_FROM = manifest()
PY_C_DIR = "build/cython"
# what the C files were made from (BUILT_FROM when Cython last ran): pip runs
# this file three times an install, and only the first must make them again
C_STAMP = os.path.join(HERE, "build", "c-sources.json")


def forget_stale_c():
    """The C of a module whose sources changed since Cython last made it
    goes, so Cython makes it again: Cython itself compares times, and
    misses a .pxd removed (a module augmented by it kept its old C and an
    old extension type was built)."""
    try:
        with open(C_STAMP) as f:
            was = json.load(f)
    except (FileNotFoundError, ValueError):
        was = {}
    for name, now in BUILT_FROM.items():
        if was.get(name, {}).get("sha256") != now["sha256"]:
            stem = name.replace(".", "/") + ".c"
            for c in (os.path.join(HERE, stem), os.path.join(HERE, PY_C_DIR, stem)):
                if os.path.exists(c):
                    os.remove(c)


def stamp_c():
    """Cython made every C file from the sources as they are now."""
    os.makedirs(os.path.dirname(C_STAMP), exist_ok=True)
    with open(C_STAMP, "w") as f:
        json.dump(BUILT_FROM, f, indent=1, sort_keys=True)


forget_stale_c()


class BuildExt(build_ext):
    """build_ext, then the manifest beside the package (an editable
    install's modules are there) and in the build's tree; the C compiled
    on every CPU."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self):
        super().run()
        for top in {HERE, os.path.abspath(self.build_lib)}:
            if os.path.isdir(os.path.join(top, "fakefs")):
                with open(os.path.join(top, "fakefs", "_compiled.json"), "w") as f:
                    json.dump(BUILT_FROM, f, indent=1, sort_keys=True)


pyx = cythonize(
    [Extension(name, [name.replace(".", "/") + ".pyx"], extra_compile_args=CFLAGS) for name in NATIVE],
    compiler_directives={"language_level": 3}, nthreads=os.cpu_count() or 1)
# the Python modules: their C under build/ (the .py is the source), their
# annotations ignored (Python's semantics); the classes a module's .pxd types
# are extension types (docs/data-plane.md "Typed fields"), and a typed read
# of None raises Python's AttributeError (nonecheck), not a crash
py = cythonize(
    [Extension(path[:-3].replace("/", "."), [path], extra_compile_args=CFLAGS) for path in PYTHON],
    compiler_directives={"language_level": 3, "binding": True, "annotation_typing": False,
                         "nonecheck": True},
    build_dir=PY_C_DIR, nthreads=os.cpu_count() or 1)
stamp_c()                   # (after Cython succeeded: a failure leaves the old stamp)
setup(ext_modules=pyx + py, cmdclass={"build_ext": BuildExt})
