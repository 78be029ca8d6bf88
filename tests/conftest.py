"""Shared fixtures: real mounts for FUSE tests (helpers live in mountlib.py)."""

import os

import pytest

from mountlib import fuse_available, mounted


@pytest.fixture(scope="module")
def mnt():
    """One default mount shared by a test module."""
    if not fuse_available():
        pytest.skip("needs /dev/fuse and fusermount3")
    with mounted() as m:
        yield m


@pytest.fixture
def tracing(mnt):
    return os.path.join(mnt, "sys/kernel/tracing")
