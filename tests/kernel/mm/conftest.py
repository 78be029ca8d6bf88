"""Fixtures of the allocation-model tests."""

import pytest

from mm_helpers import boot


@pytest.fixture
def kernel():
    return boot()
