"""FOPEN_NOFLUSH for opens whose FLUSH would do nothing: one FUSE request
less per ``cat`` of a pseudo-file.

The kernel sends FLUSH at every ``close()`` unless the open reply carried
``FOPEN_NOFLUSH`` (fs/fuse/file.c ``fuse_flush()``, Linux 5.17+); libfuse
sets that flag from ``fuse_file_info.noflush`` (3.14's ``fill_open()``).
pyfuse3 3.5 does not expose the bit: ``FileInfo._copy_to_fuse()`` copies
``fh``, ``direct_io``, ``keep_cache`` and ``nonseekable`` only.

``install()`` wraps that copy: pyfuse3 calls it through the FileInfo type's
Cython vtable (exported as the ``__pyx_vtable__`` capsule), so the one slot
of that table is pointed at a ctypes function that calls the original and
then sets ``noflush`` when the open's file handle was ``mark()``-ed.  The
bit's position is read from the libfuse header pyfuse3 was built against
(``fuse_common.h``, installed with libfuse3-dev); when the header, the
vtable or pyfuse3's version is not the expected one nothing is patched and
every close sends its FLUSH, as before.

What gets marked is the adapter's choice: an open (for reading or writing)
of a file whose operations have no ``flush`` of their own, i.e. a FLUSH the
adapter would answer without doing anything.  A write to such a file takes
effect in its WRITE (or at open, for O_TRUNC), never at close.
"""

from __future__ import annotations

import ctypes
import logging
import re

import pyfuse3

log = logging.getLogger(__name__)

HEADER = "/usr/include/fuse3/fuse_common.h"
PYFUSE3_VERSIONS = ("3.5.0",)          # whose FileInfo vtable has this one slot
BITS_OFFSET = 4                         # after ``int flags``
FH_OFFSET = 16                          # after the two 32-bit bitfield words

_COPY = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

_marked: set[int] = set()
_state: dict = {}                       # the original and our function (kept alive)


def noflush_bit(header_text: str) -> int | None:
    """The bit of ``noflush`` in the first bitfield word of
    ``struct fuse_file_info``, from the header's declarations."""
    m = re.search(r"struct fuse_file_info \{(.*?)\n\};", header_text, re.S)
    if m is None:
        return None
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    bit = 0
    for name, width in re.findall(r"unsigned int (\w+)\s*:\s*(\d+)\s*;", body):
        if name == "noflush":
            return bit if int(width) == 1 and bit < 32 else None
        bit += int(width)
    return None


def mark(fh: int) -> None:
    """The open being answered with ``fh`` needs no FLUSH at close."""
    if _state:
        _marked.add(fh)


def install(header: str = HEADER) -> bool:
    """Patch pyfuse3 (once); False when it cannot be done safely."""
    if _state:
        return True
    try:
        from importlib.metadata import version
        if version("pyfuse3") not in PYFUSE3_VERSIONS:
            return False
        with open(header) as fh:
            bit = noflush_bit(fh.read())
        capsule = pyfuse3.FileInfo.__pyx_vtable__
    except (OSError, AttributeError, ImportError) as e:
        log.debug("FOPEN_NOFLUSH not used: %s", e)
        return False
    if bit is None:
        return False
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    vtab = get(capsule, None)
    if not vtab:
        return False
    slot = ctypes.cast(vtab, ctypes.POINTER(ctypes.c_void_p))
    original = _COPY(slot[0])
    mask = 1 << bit

    def copy_to_fuse(self_ptr, out):
        ret = original(self_ptr, out)
        if ret and _marked:
            try:
                fh = ctypes.c_uint64.from_address(out + FH_OFFSET).value
                if fh in _marked:
                    _marked.discard(fh)
                    word = ctypes.c_uint32.from_address(out + BITS_OFFSET)
                    word.value |= mask
            except Exception:       # never instead of the open's reply
                log.exception("setting FOPEN_NOFLUSH failed")
        return ret

    ours = _COPY(copy_to_fuse)
    _state.update(original=original, ours=ours, slot=slot)
    slot[0] = ctypes.cast(ours, ctypes.c_void_p).value
    return True
