"""The simulated kernel: a pure model, no FUSE and no trio in here.

Modules are named after the kernel files they model (``trace/ring_buffer.py``
models ``kernel/trace/ring_buffer.c`` and so on).
"""
