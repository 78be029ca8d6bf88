"""Kernel command line parsing (init/main.c, kernel/params.c, lib/cmdline.c).

Handlers are registered like ``early_param()`` / ``__setup()``: a name (or a
prefix ending in ``=`` for ``__setup``) and a function taking the value.
``sysctl.<path>=<value>`` entries are collected for the sysctl tables, as
``do_sysctl_args()`` does.  Parameters nobody claims are reported the way
``print_unknown_bootoptions()`` reports them.
"""

from __future__ import annotations


def split_cmdline(cmdline: str) -> list[tuple[str, str | None]]:
    """Split like ``next_arg()``: whitespace separates, double quotes group,
    the first ``=`` separates name and value (quotes removed)."""
    out: list[tuple[str, str | None]] = []
    i, n = 0, len(cmdline)
    while i < n:
        while i < n and cmdline[i].isspace():
            i += 1
        if i >= n:
            break
        in_quote = False
        start = i
        while i < n and (in_quote or not cmdline[i].isspace()):
            if cmdline[i] == '"':
                in_quote = not in_quote
            i += 1
        word = cmdline[start:i]
        if "=" in word:
            name, val = word.split("=", 1)
            out.append((name.replace('"', ""), val.replace('"', "")))
        else:
            out.append((word.replace('"', ""), None))
    return out


class CommandLine:
    def __init__(self, cmdline: str = ""):
        self.text = cmdline.strip()
        self.args = split_cmdline(self.text)
        self.sysctl: dict[str, str] = {}
        self.unknown: list[str] = []

    def has(self, name: str) -> bool:
        """Whether ``name`` (bare or with a value) is on the command line."""
        key = name.replace("-", "_")
        for arg, _ in self.args:
            if arg == "--":
                return False
            if arg.replace("-", "_") == key:
                return True
        return False

    def parse(self, handlers: dict, printk=None) -> None:
        """Dispatch every argument to ``handlers`` (name -> fn(value)).

        Names are matched like ``parameq()`` (``-`` and ``_`` are the same).
        """
        norm = {k.replace("-", "_"): v for k, v in handlers.items()}
        for name, val in self.args:
            if name == "--":
                break
            key = name.replace("-", "_")
            fn = norm.get(key)
            if fn is not None:
                fn(val)
                continue
            if key.startswith("sysctl.") and val is not None:
                self.sysctl[name[len("sysctl."):].replace(".", "/")] = val
                continue
            self.unknown.append(name if val is None else f"{name}={val}")
        if self.unknown and printk is not None:
            printk("Unknown kernel command line parameters \"%s\", "
                   "will be passed to user space." % " ".join(self.unknown))


def kstrtobool(text: str) -> bool:
    """``kstrtobool()``: y/Y/1/on and n/N/0/off."""
    if not text:
        raise ValueError(text)
    c = text[0]
    if c in "yYtT1":
        return True
    if c in "nNfF0":
        return False
    if c in "oO" and len(text) > 1:
        if text[1] in "nN":
            return True
        if text[1] in "fF":
            return False
    raise ValueError(text)
