"""Shared fixtures: real mounts for FUSE tests (helpers live in mountlib.py), and the
``mount`` mark (``make check`` runs ``-m "not mount"``)."""

import os

import pytest

import mountlib
from mountlib import fuse_problem, mounted

MOUNT_FIXTURES = {"mnt", "tracing"}


def mounts_fakefs(item) -> bool:
    """The test mounts fakefs: it takes a mount fixture, or its module uses mountlib
    (mounted(), requires_fuse, ...) or runs ``fakefs sandbox``."""
    if MOUNT_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    if module is None:
        return False
    return any(v is mountlib or v is mountlib.requires_fuse
               or getattr(v, "__module__", None) == "mountlib" for v in vars(module).values()) \
        or "sandbox_run" in vars(module)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if mounts_fakefs(item):
            item.add_marker(pytest.mark.mount)


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
