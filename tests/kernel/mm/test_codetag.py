from fakefs.kernel.mm.codetag import CodeTag, codetag_register_type, codetag_to_text


def tags(prefix, n, mod=None):
    return [CodeTag("%s.c" % prefix, 100 - i, "f%d" % i, mod) for i in range(n)]


def test_text_with_and_without_module():
    assert codetag_to_text(CodeTag("mm/slub.c", 2478, "alloc_slab_page")) == \
        "mm/slub.c:2478 func:alloc_slab_page"
    assert codetag_to_text(CodeTag("drivers/staging/ctagmod/ctagmod.c", 20, "ctagmod_start", "ctagmod")) == \
        "drivers/staging/ctagmod/ctagmod.c:20 [ctagmod] func:ctagmod_start"


def test_vmlinux_first_then_modules_in_idr_order_with_id_reuse():
    ct = codetag_register_type("alloc_tags", tags("vmlinux", 3))
    a, b, c = tags("a", 2, "a"), tags("b", 1, "b"), tags("c", 2, "c")
    ct.module_init("a", a)
    ct.module_init("b", b)
    assert [t.modname for t in ct] == [None] * 3 + ["a", "a", "b"]
    assert ct.count == 6
    assert ct.unload_module("a") is True
    ct.module_init("c", c)                      # takes a's free id 1: listed before b
    assert [t.modname for t in ct] == [None] * 3 + ["c", "c", "b"]
    assert [i for i, _m in ct.modules()] == [0, 1, 2]
    assert ct.count == 6


def test_empty_module_is_not_registered_and_unload_callback_decides():
    seen = []

    def unload(cttype, cmod):
        seen.append(cmod.mod)
        return cmod.mod != "busy"

    ct = codetag_register_type("alloc_tags", tags("v", 1), module_unload=unload)
    assert ct.module_init("empty", []) is None
    ct.module_init("busy", tags("x", 1, "busy"))
    assert ct.unload_module("busy") is False    # reported, but removed anyway
    assert seen == ["busy"]
    assert [t.modname for t in ct] == [None]
    assert ct.unload_module("never-loaded") is True
