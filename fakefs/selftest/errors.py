"""What every stage of the harness shares: its setup error and its messages."""

from __future__ import annotations

import sys


class SelftestError(Exception):
    """A setup problem (not a test failure); reported and exit status 2."""


def log(msg: str) -> None:
    print("selftest: " + msg, file=sys.stderr, flush=True)
