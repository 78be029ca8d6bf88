"""What every stage of the harness shares: its setup error and its messages."""

from __future__ import annotations

import sys

from ..cli.namespace import NamespaceError


class SelftestError(NamespaceError):
    """A setup problem (not a test failure); reported and exit status 2.
    The shared namespace code (fakefs/cli/namespace.py) raises its base class."""


def log(msg: str) -> None:
    print("selftest: " + msg, file=sys.stderr, flush=True)
