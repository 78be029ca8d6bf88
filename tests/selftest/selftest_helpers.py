"""Helpers of the selftest harness's tests: fake harness files and arguments."""

from __future__ import annotations

import argparse
from pathlib import Path

from fakefs.selftest import command

FUNCTIONS = "clear_trace() { echo > trace; }\n"


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def make_tc(desc: str, body: str = "", flags: str = "", requires: str = "") -> str:
    s = "#!/bin/sh\n# description: %s\n" % desc
    if requires:
        s += "# requires: %s\n" % requires
    if flags:
        s += "# flags: %s\n" % flags
    return s + body


def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fakefs selftest")
    command.add_arguments(p)
    return p.parse_args(argv)
