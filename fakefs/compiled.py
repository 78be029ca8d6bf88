"""Which modules run compiled, and the guard against a stale build.

The build (``setup.py``, run by ``make install``) compiles two kinds of
module: the data plane's Cython (``.pyx``) and some Python modules as they
are (``compiled.txt``: the machine's event loop and what it calls per
event).  It writes, beside the package, ``_compiled.json``: each compiled
module's name, its sources (a ``.pyx`` with every ``.pxd``, which any of
them may cimport; a ``.py`` with the ``.pxd`` beside it, if any, and the
source and ``.pxd`` of each module whose types that cimports: compiled
against them, it cannot load beside one of them run from source) and their
SHA-256 as they were built.

A compiled module is an ``.so`` next to its source, and Python's import
prefers the ``.so``: edit ``machine.py`` without building again and the old
code would run, silently.  ``install()`` puts a finder first on
``sys.meta_path`` that checks, at each compiled module's import, that its
sources still are what was built:

- a Python module whose source (or its ``.pxd``, or a module whose types
  it uses) changed runs from its ``.py`` (slower, the right code), said
  once on stderr with what to run;
- a Cython module whose ``.pyx`` or any ``.pxd`` changed cannot run as it
  is written: its import fails (``StaleBuild``), saying so;
- ``FAKEFS_PURE_PYTHON=1`` runs every compiled Python module from its
  ``.py`` (a profiler sees its lines; the Cython modules are unchanged).

No manifest (nothing built by this setup.py yet): no check.  The finder
costs a dict lookup an import, and the hash of a compiled module's sources
at its import (each file read once a process).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys

PACKAGE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(PACKAGE, "_compiled.json")
PURE_ENV = "FAKEFS_PURE_PYTHON"


class StaleBuild(ImportError):
    """A Cython module's sources changed since it was built."""


def sources_hash(paths) -> str:
    """The SHA-256 of the files ``paths`` (relative to the package's parent):
    of each one's name and SHA-256, in that order (each file read once a
    process: the .pxd files are among every module's sources)."""
    h = hashlib.sha256()
    for rel in paths:
        digest = _digests.get(rel)
        if digest is None:
            with open(os.path.join(os.path.dirname(PACKAGE), rel), "rb") as f:
                digest = _digests[rel] = hashlib.sha256(f.read()).hexdigest()
        h.update(rel.encode() + b"\0" + digest.encode() + b"\n")
    return h.hexdigest()


_digests: dict = {}


class BuildGuard:
    """A ``sys.meta_path`` finder for the compiled modules of ``manifest``
    (name -> {"kind": "py" or "pyx", "sources": [...], "sha256": ...})."""

    def __init__(self, manifest: dict, pure: bool = False, warn=None):
        self.manifest = manifest
        self.pure = pure
        self.warn = warn if warn is not None else _stderr
        self.warned: set = set()

    def find_spec(self, fullname, path=None, target=None):
        built = self.manifest.get(fullname)
        if built is None:
            return None                     # not compiled: the usual finders
        top = os.path.dirname(PACKAGE)
        if not all(os.path.exists(os.path.join(top, rel)) for rel in built["sources"]):
            return None                     # (installed without its sources: nothing to check)
        if built["kind"] == "py":
            source = os.path.join(top, built["sources"][0])
            if self.pure:
                return importlib.util.spec_from_file_location(fullname, source)
            if sources_hash(built["sources"]) == built["sha256"]:
                return None                 # the .so, as built
            if fullname not in self.warned:
                self.warned.add(fullname)
                self.warn("fakefs: %s (or its .pxd, or a module whose types it uses) changed "
                          "since it was compiled: running it from source (make install compiles "
                          "it again)" % built["sources"][0])
            return importlib.util.spec_from_file_location(fullname, source)
        if sources_hash(built["sources"]) != built["sha256"]:
            raise StaleBuild("fakefs: %s or a .pxd changed since it was compiled: "
                             "run make install" % built["sources"][0], name=fullname)
        return None


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


def load_manifest(path: str = MANIFEST) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def install() -> None:
    """The guard first on ``sys.meta_path`` (once), if a build wrote its
    manifest."""
    if any(isinstance(f, BuildGuard) for f in sys.meta_path):
        return
    manifest = load_manifest()
    if manifest is not None:
        sys.meta_path.insert(0, BuildGuard(manifest, pure=os.environ.get(PURE_ENV) == "1"))
