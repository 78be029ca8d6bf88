"""``insmod``, ``modprobe``, ``rmmod`` and ``lsmod`` for the simulated kernel.

Inside ``fakefs selftest`` and ``fakefs sandbox`` these commands are
fakefs's: a directory of them comes first in PATH, and where the host
has kmod its programs are bound over by the same script (in the private
namespace only), so no test ever loads a module into the host's kernel.
They make the loader's system calls through the daemon's control file
``.fakefs/modules`` (``fakefs/kernel/module.py``) and print what kmod
prints.  ``install(dir, control)`` writes the script; the program is
chosen by the name it is run as (kmod's way).
"""

from __future__ import annotations

import errno
import os
import shutil
import sys

from .scripts import write_script

COMMANDS = ("insmod", "modprobe", "rmmod", "lsmod")
KMOD_PATHS = ("/usr/bin/kmod", "/bin/kmod", "/usr/sbin/modprobe", "/sbin/modprobe",
              "/usr/sbin/insmod", "/sbin/insmod", "/usr/sbin/rmmod", "/sbin/rmmod",
              "/usr/sbin/lsmod", "/sbin/lsmod", "/usr/bin/lsmod", "/bin/lsmod")
PROC_MODULES = "/proc/modules"


def _call(control: str, verb: str, name: str, params: list | None = None) -> int:
    """0, or the errno of the system call (``params``: the load's
    ``name=value`` words)."""
    try:
        with open(control, "w") as f:
            f.write("%s %s\n" % (verb, " ".join([name] + list(params or ()))))
    except OSError as e:
        return e.errno or errno.EIO
    return 0


def _images(control: str) -> list[str]:
    with open(control) as f:
        return f.read().split()


def _loaded(proc_modules: str) -> dict:
    out = {}
    try:
        with open(proc_modules) as f:
            for line in f:
                p = line.split()
                if len(p) >= 4:
                    out[p[0]] = (int(p[1]), int(p[2]), p[3])
    except OSError:
        pass
    return out


def main(argv: list[str], control: str, proc_modules: str = PROC_MODULES) -> int:
    prog = os.path.basename(argv[0])
    args = argv[1:]
    if prog == "kmod" and args:
        prog, args = args[0], args[1:]
    release = os.uname().release
    opts = [a for a in args if a.startswith("-")]
    names = [a for a in args if not a.startswith("-")]
    if prog == "lsmod":
        print("Module                  Size  Used by")
        for name, (size, ref, users) in _loaded(proc_modules).items():     # /proc/modules order
            print("%-19s %8d  %d%s" % (name, size, ref, "" if users == "-" else " " + users.rstrip(",")))
        return 0
    if prog not in COMMANDS or not names:
        print("%s: the simulated kernel's %s takes a module name (fakefs)" % (prog, prog),
              file=sys.stderr)
        return 1
    if prog == "insmod":
        path = names[0]
        name = os.path.basename(path).split(".ko")[0].replace("-", "_")
        if name not in _images(control):
            print("insmod: ERROR: could not load module %s: No such file or directory" % path,
                  file=sys.stderr)
            return 1
        err = _call(control, "load", name, names[1:])
        if err:
            print("insmod: ERROR: could not insert module %s: %s" % (path, os.strerror(err)),
                  file=sys.stderr)
            return 1
        return 0
    remove = prog == "rmmod" or "-r" in opts or "--remove" in opts
    loaded = _loaded(proc_modules)
    rc = 0
    for arg in (names if remove or "-a" in opts else names[:1]):
        name = arg.replace("-", "_")
        if remove:
            if name not in loaded:
                if prog == "rmmod":
                    print("rmmod: ERROR: Module %s is not currently loaded" % name, file=sys.stderr)
                else:
                    print("modprobe: FATAL: Module %s is not currently loaded" % name, file=sys.stderr)
                rc = 1
                continue
            err = _call(control, "delete", name)
            if err == errno.EWOULDBLOCK:
                print("%s: ERROR: Module %s is in use by: %s" % (prog, name, loaded[name][2].rstrip(",")),
                      file=sys.stderr)
                rc = 1
            elif err:
                print("%s: ERROR: could not remove module %s: %s" % (prog, name, os.strerror(err)),
                      file=sys.stderr)
                rc = 1
            continue
        if name in loaded:
            continue
        if name not in _images(control):
            print("modprobe: FATAL: Module %s not found in directory /lib/modules/%s" % (arg, release),
                  file=sys.stderr)
            rc = 1
            continue
        # modprobe MODULE [PARAM=VALUE...]: the words after the name are its
        # parameters (with -a, every word is a module)
        err = _call(control, "load", name, [] if "-a" in opts else names[1:])
        if err and err != errno.EEXIST:
            print("modprobe: ERROR: could not insert '%s': %s" % (name, os.strerror(err)),
                  file=sys.stderr)
            rc = 1
    return rc


def install(bindir: str, control: str, proc_modules: str = PROC_MODULES) -> str:
    """Write the commands into ``bindir`` (one script, linked under each
    name); returns the script's path (to bind over the host's kmod)."""
    script = write_script(bindir, "kmod", "the simulated kernel's module commands", "kmod",
                          control, proc_modules)
    for cmd in COMMANDS:
        link = os.path.join(bindir, cmd)
        if not os.path.lexists(link):
            os.symlink("kmod", link)
    return script


def host_kmod_paths() -> list[str]:
    """The host's kmod programs (real files, symlinks resolved), to bind over."""
    out = []
    for p in KMOD_PATHS + tuple(filter(None, (shutil.which(c) for c in COMMANDS))):
        if os.path.exists(p):
            real = os.path.realpath(p)
            if real not in out:
                out.append(real)
    return out
