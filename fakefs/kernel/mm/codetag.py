"""Code tagging (lib/codetag.c, include/linux/codetag.h).

A code tag is a static record describing one place in the source: file,
line, function and, for code built as a loadable module, the module name.
Each *type* of tag (allocation tags are the only one modelled) keeps its tags
grouped by the image that contains them: vmlinux first, registered with id 0
when the type is created, then every loaded module under the lowest free id
(the kernel uses an idr).  Iterating a type walks the ids in ascending order,
and inside one image the tags in their section order.

Unloading a module drops its range from the type after letting the type
check it (``module_unload`` callback; allocation tags complain there about
memory still allocated through the module's tags).
"""

from __future__ import annotations

CODETAG_FLAG_INACCURATE = 1 << 0


class CodeTag:
    """One tag: where in the source (``struct codetag``)."""

    __slots__ = ("modname", "function", "filename", "lineno", "flags", "text")

    def __init__(self, filename: str, lineno: int, function: str, modname: str | None = None):
        self.filename = filename
        self.lineno = lineno
        self.function = function
        self.modname = modname or None
        self.flags = 0
        self.text = codetag_to_text(self)

    def __repr__(self):
        return "<%s %s>" % (type(self).__name__, self.text)


def codetag_to_text(ct: CodeTag) -> str:
    """``file:line [module] func:name`` (or without the module part)."""
    if ct.modname:
        return "%s:%u [%s] func:%s" % (ct.filename, ct.lineno, ct.modname, ct.function)
    return "%s:%u func:%s" % (ct.filename, ct.lineno, ct.function)


class CodetagModule:
    """The tags of one image (``struct codetag_module``); ``mod`` is None for vmlinux."""

    __slots__ = ("mod", "tags")

    def __init__(self, mod, tags: list):
        self.mod = mod
        self.tags = tags


class CodetagType:
    """All tags of one type, per image, in idr order (``struct codetag_type``).

    ``module_load(cttype, cmod)`` and ``module_unload(cttype, cmod) -> bool``
    are the type's callbacks (``struct codetag_type_desc``).
    """

    def __init__(self, section: str, module_load=None, module_unload=None):
        self.section = section
        self.module_load = module_load
        self.module_unload = module_unload
        self.mod_idr: dict[int, CodetagModule] = {}
        self._ids: list[int] = []          # sorted idr keys
        self.count = 0
        self.generation = 0               # bumps whenever the module list changes

    # --- registration -------------------------------------------------------
    def _idr_alloc(self, cmod: CodetagModule) -> int:
        ids = self._ids
        new_id = 0
        for i in ids:                      # lowest free id, like idr_alloc(.., 0, 0)
            if i != new_id:
                break
            new_id += 1
        self.mod_idr[new_id] = cmod
        ids.append(new_id)
        ids.sort()
        return new_id

    def module_init(self, mod, tags: list) -> int | None:
        """Add an image's tags (``codetag_module_init``); empty ranges are ignored."""
        if not tags:
            return None
        cmod = CodetagModule(mod, list(tags))
        mod_id = self._idr_alloc(cmod)
        self.count += len(cmod.tags)
        self.generation += 1
        if self.module_load is not None:
            self.module_load(self, cmod)
        return mod_id

    def find_module(self, mod) -> tuple[int, CodetagModule] | None:
        for mod_id in self._ids:
            cmod = self.mod_idr[mod_id]
            if cmod.mod is not None and cmod.mod == mod:
                return mod_id, cmod
        return None

    def unload_module(self, mod) -> bool:
        """Drop a module's tags (``codetag_unload_module``).  Returns False when
        the type's ``module_unload`` reported the module still in use."""
        found = self.find_module(mod)
        if found is None:
            return True
        mod_id, cmod = found
        ok = True
        if self.module_unload is not None and not self.module_unload(self, cmod):
            ok = False
        self.count -= len(cmod.tags)
        del self.mod_idr[mod_id]
        self._ids.remove(mod_id)
        self.generation += 1
        return ok

    # --- iteration ------------------------------------------------------------
    def modules(self):
        """(id, CodetagModule) in iteration order."""
        return [(i, self.mod_idr[i]) for i in self._ids]

    def __iter__(self):
        for i in list(self._ids):
            yield from self.mod_idr[i].tags

    def __len__(self):
        return self.count


def codetag_register_type(section: str, builtin_tags: list, module_load=None,
                          module_unload=None) -> CodetagType:
    """Create a tag type and register vmlinux's tags under id 0."""
    cttype = CodetagType(section, module_load, module_unload)
    cttype.module_init(None, builtin_tags)
    return cttype
