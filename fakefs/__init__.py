"""fakefs: a FUSE filesystem serving the tracefs and procfs of a simulated Linux kernel."""

from . import compiled as _compiled

__version__ = "0.1.0"

# before any compiled module is imported: a stale build runs the source or fails
_compiled.install()
