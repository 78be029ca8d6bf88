"""fakefs: a FUSE filesystem serving the tracefs and procfs of a simulated Linux kernel."""

__version__ = "0.1.0"
