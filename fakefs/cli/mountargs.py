"""The arguments that choose and boot the simulated kernel, shared by
``fakefs mount`` and ``fakefs sandbox`` (which passes them on to a
``fakefs mount -f`` it starts)."""

from __future__ import annotations

import argparse
import sys

from ..kernel.config import DEFAULT_PERSONA, PERSONAS


def add_boot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-d", "--debug", action="store_true", help="log debugging output")
    p.add_argument("-o", action="append", default=[], metavar="OPT[,OPT...]",
                   help="FUSE mount options (fsname=, allow_other, ...), tracefs's uid=N, gid=N, "
                        "mode=OCTAL (owner and mode of the tracing directory; the tree is the "
                        "mounting user's otherwise) and CONFIG_X=y overrides")
    p.add_argument("--cmdline", default="", help="kernel command line (boot parameters)")
    p.add_argument("--seed", type=int, default=1, help="seed of the simulated workload")
    p.add_argument("--persona", default=DEFAULT_PERSONA,
                   help="kernel build to simulate ('help' lists them)")
    p.add_argument("--clock", choices=("wall", "virtual"), default="wall",
                   help="wall: simulated time follows the real clock (default); virtual: it "
                        "moves only when told (fakefs clock MOUNTPOINT +1s), so the same seed "
                        "and commands give the same files, timestamps included")


def check_persona(persona: str) -> int | None:
    """``--persona help`` lists them (0), an unknown one is an error (2);
    None: go on."""
    if persona == "help":
        for name, p in PERSONAS.items():
            mark = " (default)" if name == DEFAULT_PERSONA else ""
            print(f"{name}{mark}: {p.get('description', '')}")
        return 0
    if persona not in PERSONAS:
        print(f"fakefs: unknown persona '{persona}' (try --persona help)", file=sys.stderr)
        return 2
    return None


def boot_argv(args) -> list[str]:
    """The parsed boot arguments again, for a ``fakefs mount`` command line."""
    argv = ["--cmdline", args.cmdline, "--seed", str(args.seed), "--persona", args.persona,
            "--clock", args.clock]
    for o in args.o:
        argv += ["-o", o]
    if args.debug:
        argv.append("-d")
    return argv
