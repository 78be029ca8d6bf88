"""lib/vsprintf.c: how ``%p`` prints a pointer."""

from __future__ import annotations


def hashed_ptr(ptr: int) -> str:
    """``%p`` (``ptr_to_id()``): the pointer's 32-bit hash printed as 16 hex
    digits, so that no address leaks."""
    h = (ptr * 0x9E3779B97F4A7C15 >> 17) & 0xFFFFFFFF
    return "%016x" % h
