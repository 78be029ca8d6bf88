"""fakefs's own commands for the selftests' namespace (``kmod.py``'s
insmod/modprobe/rmmod/lsmod, ``ping.py``'s ping): a Python script in a
directory put first in PATH, calling ``main(argv, *args)`` of a module of
this package with the arguments fixed when it was written."""

from __future__ import annotations

import os
import stat
import sys

# the directory holding the fakefs package (the scripts import it from there)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_script(bindir: str, name: str, comment: str, module: str, *args) -> str:
    """Write ``bindir/name`` running ``fakefs.selftest.<module>.main(sys.argv,
    *args)``; its path."""
    os.makedirs(bindir, exist_ok=True)
    script = os.path.join(bindir, name)
    with open(script, "w") as f:
        f.write("#!%s\n# fakefs: %s\nimport sys\nsys.path.insert(0, %r)\n"
                "from fakefs.selftest.%s import main\nsys.exit(main(sys.argv%s))\n"
                % (sys.executable, comment, ROOT, module, "".join(", %r" % (a,) for a in args)))
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script
