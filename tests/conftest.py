"""Shared fixtures: real mounts for FUSE tests (helpers live in mountlib.py)."""

import os

import pytest

from mountlib import fuse_problem, mounted


@pytest.fixture(scope="module")
def mnt():
    """One default mount shared by a test module."""
    problem = fuse_problem()
    if problem:
        pytest.skip(problem)
    with mounted() as m:
        yield m


@pytest.fixture
def tracing(mnt):
    return os.path.join(mnt, "sys/kernel/tracing")
