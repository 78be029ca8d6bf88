"""The ``fakefs`` command (``command.main``) and what its commands share: the boot
arguments (``mountargs``), the private namespaces a command's stages run in
(``namespace``), ``fakefs sandbox`` (``sandbox``) and its seal
(``sandbox_seal``)."""

from .command import main

__all__ = ["main"]
