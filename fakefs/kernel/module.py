"""Loadable modules (kernel/module/main.c, kernel/module/procfs.c).

The simulated kernel has a module loader: :class:`Modules` (one per
kernel, ``kernel.modules``) holds the modules it loaded, in load order,
and the images it can load (what ``/lib/modules/$(uname -r)`` would hold:
the sample modules of ``samples.py``).  Two other notions of a loaded
module are kept apart from it: allocation profiling's
(``mm/alloc_tag_module.py``: the modules of the call-site table loaded by
``modules-load=`` or later, their tags in ``AllocTagging.modules`` and
their memory in the allocation workload's ``modules``), which are not in
``/proc/modules`` yet; and the event catalogue's (``trace/event_catalog.py``:
the modules whose trace events Debian's kernel registers at boot, for the
events' ids and listing order), which have no text here.

* ``load(name)`` is ``finit_module()``: the module's text is placed in the
  module area, its symbols join kallsyms, ftrace makes records of its
  traceable functions and applies the cached ``:mod:`` commands, the
  ``MODULE_STATE_COMING`` notifiers run (kprobe events on its functions
  are registered, its ``trace_printk()`` formats are kept), then its init
  (the image's model of it) runs; the init text is freed after.  EEXIST if
  loaded, ENOENT if there is no such image.
* ``delete(name)`` is ``delete_module(O_NONBLOCK)``: ENOENT if not loaded,
  EWOULDBLOCK while another module uses it; else its exit runs, the
  ``MODULE_STATE_GOING`` notifiers, ftrace drops its records (filters
  keep what pointed at them as entries that match nothing, as
  ``clear_mod_from_hash()`` leaves them), its symbols go.
* ``/proc/modules`` (``m_show()``): newest first, ``name size refcount
  users, state address``, the address zero for a reader that may not see
  kernel addresses.

The loader's system calls are reached through the control file
``.fakefs/modules`` at the root of the mount (outside the kernel's files):
writing ``load NAME [PARAM=VALUE...]`` or ``delete NAME`` gets the system
call's errno;
reading lists the images (one name a line).  ``insmod``, ``modprobe``,
``rmmod`` and ``lsmod`` inside ``fakefs selftest`` and ``fakefs sandbox``
are fakefs's own commands that talk to it (``fakefs/selftest/kmod.py``),
never the host's module loader.
"""

from __future__ import annotations

import errno

from .fs.proc.inode import ProcOps
from .fs.pseudo import FileOperations, KernelError, Later, after_that
from .kallsyms import MODULE_PAGE, PFX, AddressesOps, kaslr_bases
from .lib.kstrtox import kstrtoul
from .printk import KERN_ERR, KERN_WARNING

CONTROL_DIR = ".fakefs"
CONTROL_NAME = "modules"
# room left above the module text at boot for ftrace's trampolines
# (execmem_alloc() hands them out from there, ftrace_ops_list.py)
TRAMPOLINE_ROOM = 256 * MODULE_PAGE
STATE_LIVE, STATE_COMING, STATE_GOING = "Live", "Loading", "Unloading"


class ModuleFunc:
    """A text symbol of a module image: offset in its text (core or init),
    kallsyms type, name, size and whether it has an ``__fentry__`` call
    (``__exit`` functions are ``notrace``, asm trampolines have none)."""

    __slots__ = ("offset", "type", "name", "size", "traceable", "init")

    def __init__(self, offset, typ, name, size, traceable=True, init=False):
        self.offset = offset
        self.type = typ
        self.name = name
        self.size = size
        self.traceable = traceable
        self.init = init


class ModuleImage:
    """What a ``.ko`` holds for the loader: its name, the size
    ``/proc/modules`` reports, its functions, its ``trace_printk()``
    formats, the modules it needs, and its init and exit (callables
    ``fn(kernel, module, ctx)``; ``ctx`` is who runs the system call)."""

    __slots__ = ("name", "size", "funcs", "formats", "depends", "init", "exit", "params")

    def __init__(self, name, size, funcs=(), formats=(), depends=(), init=None, exit=None,
                 params=()):
        self.name = name
        self.size = size
        self.funcs = tuple(funcs)
        self.formats = tuple(formats)
        self.depends = tuple(depends)
        self.init = init
        self.exit = exit
        self.params = tuple(params)          # ModuleParams (module_param*())


    def text_size(self, init: bool) -> int:
        ends = [f.offset + f.size for f in self.funcs if f.init == init]
        return max(ends, default=0)


class ModuleParam:
    """A ``module_param()``: ``kind`` is ulong, uint, int or charp-like
    ``string`` (``module_param_string()``, ``maxlen`` bytes with the NUL)."""

    __slots__ = ("name", "kind", "default", "maxlen")

    def __init__(self, name, kind, default, maxlen=0):
        self.name = name
        self.kind = kind
        self.default = default
        self.maxlen = maxlen

    def parse(self, val):
        """The ``param_set_*()`` of its kind: the value, or a KernelError."""
        if self.kind == "string":
            val = val or ""
            if len(val.encode()) >= self.maxlen:        # param_set_copystring()
                raise KernelError(errno.ENOSPC)
            return val
        if val is None:
            raise KernelError(errno.EINVAL)
        neg = self.kind == "int" and val.startswith("-")
        try:
            n = kstrtoul(val[1:] if neg else val, 0)
        except ValueError:
            raise KernelError(errno.EINVAL) from None
        limit = {"ulong": 1 << 64, "uint": 1 << 32, "int": 1 << 31}[self.kind]
        if n >= limit + (1 if neg else 0):
            raise KernelError(errno.ERANGE if self.kind != "ulong" else errno.EINVAL)
        return -n if neg else n


def parse_params(kernel, image: ModuleImage, args: str) -> dict:
    """``parse_args()`` of a load's parameter string: ``name=value`` words
    (``-`` and ``_`` alike in names); an unknown name is ignored with a
    warning (``unknown_module_param_cb()``); a bad value fails the load
    (EINVAL, ENOSPC for a string too long, ERANGE out of range)."""
    values = {p.name: p.default for p in image.params}
    by_name = {p.name: p for p in image.params}
    for word in args.split():
        name, eq, val = word.partition("=")
        key = name.replace("-", "_")
        p = by_name.get(key)
        if p is None:
            kernel.printk("%s: unknown parameter '%s' ignored" % (image.name, name), KERN_WARNING)
            continue
        try:
            values[key] = p.parse(val if eq else None)
        except KernelError as e:
            if e.errno == errno.ENOSPC:
                kernel.printk("%s: string doesn't fit in %u chars." % (name, p.maxlen - 1), KERN_ERR)
                kernel.printk("%s: `%s' too large for parameter `%s'" % (image.name, val, name), KERN_ERR)
            else:
                kernel.printk("%s: `%s' invalid for parameter `%s'" % (image.name, val, name), KERN_ERR)
            raise
    return values

class Module:
    """``struct module``: a loaded image, where its text is, its state and
    the modules using it (``source_list``)."""

    __slots__ = ("image", "name", "base", "init_base", "state", "users", "refcnt", "ftrace_recs",
                 "params")

    def __init__(self, image: ModuleImage, base: int, init_base: int):
        self.image = image
        self.name = image.name
        self.base = base
        self.init_base = init_base
        self.state = STATE_COMING
        self.users: list[str] = []
        self.refcnt = 0
        self.ftrace_recs: set[int] = set()   # addresses ftrace has records of now
        self.params: dict = {}               # the values of its module_param()s

    def symbols(self, init: bool) -> list:
        """(addr, type, name) of its core (or init) text."""
        base = self.init_base if init else self.base
        return [(base + f.offset, f.type, f.name) for f in self.image.funcs if f.init == init]

    def addr_of(self, name: str) -> int:
        for f in self.image.funcs:
            if f.name == name:
                return (self.init_base if f.init else self.base) + f.offset
        raise KeyError(name)

    def traceable(self, init: bool) -> list:
        """(addr, name) of the functions ftrace makes records of."""
        base = self.init_base if init else self.base
        return [(base + f.offset, f.name) for f in self.image.funcs
                if f.init == init and f.traceable and not f.name.startswith(PFX)]

    def line(self, show_value: bool) -> str:
        """``m_show()``"""
        users = "".join(u + "," for u in self.users) or "-"
        return "%s %u %i %s %s 0x%016x\n" % (self.name, self.image.size, self.refcnt, users, self.state,
                                             self.base if show_value else 0)


class Modules:
    """The kernel's module list and the images it can load."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.images: dict[str, ModuleImage] = {}
        self.loaded: dict[str, Module] = {}        # load order
        # fn(module, state) at MODULE_STATE_COMING (after ftrace's records),
        # MODULE_STATE_LIVE (its init ran) and MODULE_STATE_GOING (its exit ran)
        self.notifiers: list = []
        # trace_printk.c's list of the modules' formats (it outlives them)
        self.printk_formats = None

    def add_image(self, image: ModuleImage) -> None:
        self.images[image.name] = image

    def register_notifier(self, fn) -> None:
        """``fn(module, state)``, run after those registered before."""
        self.notifiers.append(fn)

    def _notify(self, mod: Module, state: str) -> None:
        for fn in self.notifiers:
            fn(mod, state)

    # --- placing -------------------------------------------------------------
    def _free_base(self, size: int) -> int:
        """First fit in the module area above what boot put there (the
        symbol table's module text, ftrace's trampolines), with a guard
        page after each module."""
        ks = self.kernel.kallsyms
        ours = {m.name for m in self.loaded.values()}
        tops = [(a // MODULE_PAGE + 1) * MODULE_PAGE for a, _t, _n, m in ks.symbols()
                if m is not None and m not in ours]
        lo = (max(tops) if tops else kaslr_bases(self.kernel)[1]) + TRAMPOLINE_ROOM
        used = []
        for m in self.loaded.values():
            used.append((m.base, m.base + _pages(m.image.text_size(False))))
            if m.init_base:
                used.append((m.init_base, m.init_base + _pages(m.image.text_size(True))))
        used.sort()
        addr = lo
        for a, b in used:
            if addr + size + MODULE_PAGE <= a:
                break
            addr = max(addr, b + MODULE_PAGE)
        return addr

    # --- the system calls -----------------------------------------------------
    def load(self, name: str, ctx=None, args: str = "") -> Module | Later:
        """``finit_module()`` of the image ``name`` with the parameter
        string ``args``: the module, or a ``Later`` for it while its init's
        work needs the machine further on (its caller moves it there)."""
        name = name.replace("-", "_")
        if name in self.loaded:
            raise KernelError(errno.EEXIST)
        image = self.images.get(name)
        if image is None:
            raise KernelError(errno.ENOENT)
        for dep in image.depends:
            if dep not in self.loaded:
                raise KernelError(errno.ENOENT)     # "Unknown symbol in module"
        params = parse_params(self.kernel, image, args)
        core = _pages(image.text_size(False))
        base = self._free_base(core)
        mod = Module(image, base, 0)
        mod.params = params
        self.loaded[name] = mod                     # on the list: the next base is past it
        init = _pages(image.text_size(True))
        if init:
            mod.init_base = self._free_base(init)
        for dep in image.depends:
            self.loaded[dep].users.append(name)
            self.loaded[dep].refcnt += 1
        ks = self.kernel.kallsyms
        ks.add_module(name, mod.symbols(False) + mod.symbols(True))
        self._notify(mod, STATE_COMING)
        ran = image.init(self.kernel, mod, ctx) if image.init is not None else None
        return after_that(ran, lambda: self._live(mod, name))     # (a Later: the init's work)

    def _live(self, mod: Module, name: str) -> Module:
        """The module's init is done: it is live, its init text goes."""
        ks = self.kernel.kallsyms
        mod.state = STATE_LIVE
        self._notify(mod, STATE_LIVE)
        # do_free_init(): the init text goes (ftrace's mod map keeps the
        # names of its traced functions for the trace's %ps: kallsyms too)
        ks.remove_module(name, {n for _a, t, n in mod.symbols(True)
                                if n.startswith(PFX) or t.isupper()})
        return mod

    def delete(self, name: str, ctx=None) -> None:
        """``delete_module(name, O_NONBLOCK)``"""
        name = name.replace("-", "_")
        mod = self.loaded.get(name)
        if mod is None:
            raise KernelError(errno.ENOENT)
        if mod.users or mod.refcnt:
            raise KernelError(errno.EWOULDBLOCK)
        mod.state = STATE_GOING
        if mod.image.exit is not None:
            mod.image.exit(self.kernel, mod, ctx)
        self._notify(mod, STATE_GOING)
        self.kernel.kallsyms.remove_module(name)
        del self.loaded[name]
        for dep in mod.image.depends:
            d = self.loaded.get(dep)
            if d is not None and name in d.users:
                d.users.remove(name)
                d.refcnt -= 1

    def proc_text(self, show_value: bool) -> str:
        return "".join(m.line(show_value) for m in reversed(self.loaded.values()))


def module_traceable(kernel, module: str, addr: int) -> bool:
    """Is the function at ``addr`` of ``module`` an ftrace record now?  (A
    module the loader does not know, in the host's table: every function.)"""
    mods = kernel.modules
    m = mods.loaded.get(module) if mods is not None else None
    return m is None or addr in m.ftrace_recs


def _pages(n: int) -> int:
    return -(-n // MODULE_PAGE) * MODULE_PAGE


class ProcModulesOps(AddressesOps, ProcOps):
    """/proc/modules (0444); addresses zero for an opener that may not see
    them (as ``modules_open()`` decides)."""

    observes = False

    def show(self, f):
        return f.data.proc_text(f.private)


class ModuleControlOps(FileOperations):
    """``.fakefs/modules``: the loader's system calls for fakefs's module
    commands (see the module's doc)."""

    observes = False

    def show(self, f):
        return "".join(n + "\n" for n in sorted(f.data.images))

    def write(self, f, data):
        words = data.decode("latin-1").split()
        if len(words) < 2 or words[0] not in ("load", "delete") or (
                words[0] == "delete" and len(words) != 2):
            raise KernelError(errno.EINVAL)
        mods = f.data
        if words[0] == "load":
            return after_that(mods.load(words[1], f, " ".join(words[2:])), lambda: len(data))
        mods.delete(words[1], f)
        return len(data)


def modules_init(kernel) -> Modules:
    """The loader, /proc/modules and the control file (no images yet:
    ``samples.samples_init`` is the initcall that adds them)."""
    mods = kernel.modules = Modules(kernel)
    proc = kernel.tree.makedirs("proc")
    kernel.tree.create_file("modules", 0o444, proc, mods, ProcModulesOps(kernel))
    ctl = kernel.tree.makedirs(CONTROL_DIR)
    kernel.tree.create_file(CONTROL_NAME, 0o600, ctl, mods, ModuleControlOps())
    return mods
