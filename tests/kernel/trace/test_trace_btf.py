"""vmlinux's BTF as probe events read it (trace_btf.py, data/btf-6.12.json.gz)."""

from fakefs.kernel.fs.vfs import DENTRY_NAME, FILE_DENTRY
from fakefs.kernel.trace.trace_btf import Btf, return_kind


def _params(btf, func):
    return [(name, btf.skip_modifiers(tid)[0][0]) for name, tid in btf.find_func_proto(func)[2]]


def _offset(btf, struct, path):
    """Bit offset of a dotted member path inside ``struct`` (named members
    and anonymous structs/unions, as probe arguments reach them)."""
    t = next(t for t in btf.types if t[0] == "struct" and t[1] == struct)
    off = 0
    for name in path.split("."):
        member, anon, _container = btf.find_struct_member(t, name)
        off += anon + member[2]
        t = btf.skip_modifiers(member[1])[0]
    return off


def test_prototypes_are_the_built_kernels():
    btf = Btf.vmlinux()
    assert _params(btf, "kfree") == [("object", "ptr")]
    assert _params(btf, "vfs_read") == [("file", "ptr"), ("buf", "ptr"), ("count", "int"),
                                        ("pos", "ptr")]
    # a tracepoint's stub: the tracepoint's data, then TP_PROTO
    assert _params(btf, "__probestub_kfree") == [("__data", "ptr"), ("call_site", "int"),
                                                 ("ptr", "ptr")]
    assert [n for n, _k in _params(btf, "__probestub_sched_switch")] == [
        "__data", "preempt", "prev", "next", "prev_state"]
    assert btf.find_func_proto("no_such_function") is None
    assert btf.type(0) == ["void"] and btf.type(len(btf.types) + 1) is None


def test_layouts_agree_with_the_vfs_model():
    btf = Btf.vmlinux()
    assert _offset(btf, "dentry", "d_name.name") == DENTRY_NAME * 8
    assert _offset(btf, "file", "f_path.dentry") == FILE_DENTRY * 8


def test_members_of_anonymous_unions_are_found_after_named_ones():
    btf = Btf.vmlinux()
    page = next(t for t in btf.types if t[0] == "struct" and t[1] == "page")
    assert not any(m[0] == "lru" for m in page[3])          # only inside an anonymous union
    member, anon, container = btf.find_struct_member(page, "lru")
    assert member[0] == "lru" and container is not page
    assert btf.find_struct_member(page, "no_such_member") is None


def test_skip_modifiers_goes_under_typedefs_and_qualifiers():
    btf = Btf.vmlinux()
    count = dict(btf.find_func_proto("vfs_read")[2])["count"]
    assert btf.type(count)[0] == "typedef" and btf.type(count)[1] == "size_t"
    t, tid = btf.skip_modifiers(count)
    assert t[0] == "int" and t[1] == "long unsigned int" and btf.type(tid) is t


def test_return_kinds_for_funcgraph_retval():
    assert return_kind("kfree") == "void"
    assert return_kind("vfs_read") == "long"           # ssize_t
    assert return_kind("kernel_clone") == "int"        # pid_t
    assert return_kind("getname_flags") == "pointer"
    assert return_kind("capable") == "bool"
    assert return_kind("strlen") == "ulong"            # size_t
    assert return_kind("no_such_function") is None


def test_parameter_kinds():
    from fakefs.kernel.trace.trace_btf import param_kinds
    assert param_kinds("vfs_read") == ["pointer", "pointer", "ulong", "pointer"]
    assert param_kinds("__probestub_sched_switch") == ["pointer", "bool", "pointer", "pointer",
                                                       "int"]
    assert param_kinds("no_such_function") == []
