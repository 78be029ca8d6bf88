"""The compiled modules (fakefs/compiled.py): what the build compiled runs
compiled, a stale build runs the source (Python) or fails (Cython), and the
Python modules compiled as they are give the same bytes as their source."""

import importlib
import json
import os
import subprocess
import sys

import pytest

from fakefs import compiled

ROOT = os.path.dirname(compiled.PACKAGE)


def listed():
    with open(os.path.join(ROOT, "compiled.txt")) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def test_the_build_compiled_every_listed_module_from_its_source_as_it_is():
    manifest = compiled.load_manifest()
    assert manifest is not None, "no fakefs/_compiled.json: run make install"
    for path in listed():
        name = path[:-3].replace("/", ".")
        built = manifest[name]
        assert built["kind"] == "py" and built["sources"][0] == path
        assert compiled.sources_hash(built["sources"]) == built["sha256"], \
            "%s changed since it was compiled: run make install" % path
        if os.environ.get(compiled.PURE_ENV) != "1":
            assert importlib.import_module(name).__file__.endswith(".so"), name
    for name, built in manifest.items():
        if built["kind"] == "pyx":
            assert compiled.sources_hash(built["sources"]) == built["sha256"], name


def _guard(name, sha, kind="py", pure=False):
    said = []
    path = name.replace(".", "/") + (".py" if kind == "py" else ".pyx")
    sources = [path] if kind == "py" else [path, "fakefs/sim/_walk.pxd"]
    real = compiled.sources_hash(sources)
    g = compiled.BuildGuard({name: {"kind": kind, "sources": sources,
                                    "sha256": real if sha is None else sha}},
                            pure=pure, warn=said.append)
    return g, said


def test_a_python_module_changed_since_the_build_runs_from_its_source_saying_so():
    g, said = _guard("fakefs.kernel.timer", "0" * 64)
    spec = g.find_spec("fakefs.kernel.timer")
    assert spec.origin == os.path.join(ROOT, "fakefs/kernel/timer.py")
    g.find_spec("fakefs.kernel.timer")
    assert len(said) == 1 and "fakefs/kernel/timer.py (or its .pxd" in said[0]


def test_a_module_compiled_against_anothers_types_is_built_from_that_one_too():
    """A module whose ``.pxd`` cimports another compiled module's types
    lists that module's source and ``.pxd`` among its own: when one of them
    changes, both run from source (the ``.so`` compiled against the old
    types would not load beside the module run as Python)."""
    import re
    manifest = compiled.load_manifest()
    assert manifest is not None, "no fakefs/_compiled.json: run make install"
    py = set(listed())
    checked = 0
    for path in listed():
        pxd = path[:-3] + ".pxd"
        if not os.path.exists(os.path.join(ROOT, pxd)):
            continue
        sources = manifest[path[:-3].replace("/", ".")]["sources"]
        with open(os.path.join(ROOT, pxd)) as f:
            for m in re.finditer(r"^from (fakefs[\w.]*) cimport", f.read(), re.M):
                dep = m.group(1).replace(".", "/")
                if dep + ".py" in py:
                    assert dep + ".py" in sources and dep + ".pxd" in sources, (path, dep)
                    checked += 1
    assert checked >= 4
    arrivals = manifest["fakefs.sim.alloc_arrivals"]["sources"]
    assert "fakefs/kernel/tracepoint.py" in arrivals        # (through sched.pxd)


def test_no_cython_module_cimports_a_python_modules_types():
    """A ``.pyx`` is compiled whatever ``FAKEFS_PURE_PYTHON`` says: typed by a
    compiled Python module's ``.pxd``, it would not load beside that module
    run from source."""
    import glob
    import re
    py = {p[:-3].replace("/", ".") for p in listed()}
    for path in glob.glob(os.path.join(ROOT, "fakefs/**/*.pyx"), recursive=True):
        with open(path) as f:
            text = f.read()
        names = re.findall(r"^\s*from\s+(fakefs[\w.]*)\s+cimport", text, re.M)
        assert not py.intersection(names), (path, py.intersection(names))


def test_a_python_module_as_built_is_left_to_the_usual_finder():
    g, said = _guard("fakefs.kernel.timer", None)
    assert g.find_spec("fakefs.kernel.timer") is None and said == []
    assert g.find_spec("fakefs.kernel.sched") is None          # not in its manifest


def test_pure_python_runs_the_source_of_a_module_as_built():
    g, said = _guard("fakefs.kernel.timer", None, pure=True)
    assert g.find_spec("fakefs.kernel.timer").origin.endswith("fakefs/kernel/timer.py")
    assert said == []


def test_a_module_installed_without_its_sources_is_not_checked():
    g = compiled.BuildGuard({"fakefs.sim._walk": {
        "kind": "pyx", "sources": ["fakefs/sim/_walk.pyx", "fakefs/no_such.pxd"],
        "sha256": "0" * 64}})
    assert g.find_spec("fakefs.sim._walk") is None


def test_a_cython_module_changed_since_the_build_fails_to_import():
    g, _ = _guard("fakefs.sim._walk", "0" * 64, kind="pyx")
    with pytest.raises(compiled.StaleBuild, match="_walk.pyx or a .pxd changed"):
        g.find_spec("fakefs.sim._walk")
    g, _ = _guard("fakefs.sim._walk", None, kind="pyx")
    assert g.find_spec("fakefs.sim._walk") is None


CHILD = r"""
import hashlib, json, sys
from fakefs import sim
import fakefs.sim.machine as machine
from fakefs.sim.files import write_file, read_file
from fakefs.sim.clock import ManualClock
T = "sys/kernel/tracing/"
k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
for p, v in (("current_tracer", "function"), ("events/enable", "1"), ("options/stacktrace", "1")):
    write_file(k, T + p, v.encode())
for _ in range(4):
    k.clock.advance(25_000_000)
    k.timekeeper.run_until_now()
print(json.dumps([machine.__file__, hashlib.sha1(read_file(k, T + "trace")).hexdigest()]))
"""


def _child(pure):
    env = dict(os.environ)
    env.pop(compiled.PURE_ENV, None)
    if pure:
        env[compiled.PURE_ENV] = "1"
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    return json.loads(out.splitlines()[-1])


def test_the_compiled_python_modules_give_the_bytes_of_their_source():
    (so, compiled_trace), (py, source_trace) = _child(False), _child(True)
    assert so.endswith(".so") and py.endswith("machine.py")
    assert compiled_trace == source_trace
