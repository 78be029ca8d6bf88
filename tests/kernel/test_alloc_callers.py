"""The source callers of the allocation call sites the walk graph lacks
(data/alloc_callers.txt, written by tools/mkallocpaths.py)."""

from __future__ import annotations

import importlib.util
import os

from fakefs.kernel.alloc_callers import ALLOC_CALLERS_PATH, AllocCallers, load_alloc_callers
from fakefs.kernel.kallsyms import Kallsyms, source_name

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "mkallocpaths.py")


def _tool():
    spec = importlib.util.spec_from_file_location("mkallocpaths", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_data_says_where_it_comes_from():
    with open(ALLOC_CALLERS_PATH, encoding="ascii") as f:
        head = f.read(400)
    assert "tools/mkallocpaths.py" in head and "linux-source-6.12" in head


def test_callers_are_the_sources():
    """A few edges checked by hand against the 6.12 source."""
    data = load_alloc_callers()
    # direct calls: x509_cert_parser.c, mm/slub.c
    assert {"x509_note_issuer", "x509_note_subject"} <= set(data["x509_fabricate_name"])
    assert "__memcg_slab_post_alloc_hook" in data["alloc_slab_obj_exts"]
    # through a member: nfnetlink_rcv_batch() calls nc->call(), which
    # nf_tables_cb[NFT_MSG_NEWTABLE].call is; ipcget_new() calls ops->getnew()
    assert "nfnetlink_rcv_batch" in data["nf_tables_newtable"]
    assert "ipcget_new" in data["newseg"]
    # the ASN.1 decoder calls the actions of x509.asn1
    assert "asn1_ber_decoder" in data["x509_note_issuer"]
    # SYSCALL_DEFINE3(shmget, ...): __x64_sys_shmget -> __do_sys_shmget
    assert data["__do_sys_shmget"] == ("__x64_sys_shmget",)


def test_names_resolve_with_the_symbol_table():
    ks = Kallsyms.load(host=False)
    ac = AllocCallers(ks)
    # a compiler clone's callers are its source function's
    assert ks.resolve("x509_fabricate_name") == "x509_fabricate_name.isra.0"
    assert source_name("x509_fabricate_name.isra.0") == "x509_fabricate_name"
    assert ac.callers("x509_fabricate_name.isra.0") == ac.callers("x509_fabricate_name")
    # ipcget_new() is inlined in this build: newseg's caller is ipcget()
    assert ks.addr_of("ipcget_new") is None
    assert "ipcget" in ac.callers("newseg") and "ipcget_new" not in ac.callers("newseg")
    for name in ac.data:
        for c in ac.callers(name):
            assert ks.addr_of(c), (name, c)
    # SYSCALL_DEFINE0(setsid): the stub and its body share an address (one
    # frame in a real stack); shmget's body is inlined in its stub
    assert ks.addr_of("__x64_sys_setsid") == ks.addr_of("__do_sys_setsid")
    assert ac.callers("__do_sys_setsid") == ("x64_sys_call",)
    assert ac.callers("__do_sys_shmget") == ("__x64_sys_shmget",)
    # a call's return address is in its caller
    ret = ac.ret("ipcget", "newseg")
    assert ks.lookup(ret)[0] == "ipcget" and ret == ac.ret("ipcget", "newseg")


def test_a_caller_the_table_lacks_is_spliced_out():
    ks = Kallsyms.load(host=False)
    ac = AllocCallers(ks, {"f": ("no_such_symbol", "vfs_read"), "no_such_symbol": ("vfs_write", "f")})
    assert ac.callers("f") == ("vfs_write", "vfs_read")
    assert ac.outer("no_such_symbol") == "vfs_write"
    assert ac.callers("vfs_read") == () and ac.outer("nothing") is None


def test_the_generator_reads_calls_through_members_and_callbacks(tmp_path):
    """The tool's C reader on a made-up file: direct calls, an ops table
    and the call through it, a work item, a system call."""
    m = _tool()
    src = tmp_path / "demo.c"
    src.write_text("""
/* a comment with a call(x) */
struct demo_ops { int (*run)(int); };
struct demo { const struct demo_ops *ops; };
static int helper(int x) { return alloc_thing(x); }
#if 0
static int dead(void) { return helper(1); }
#endif
static int demo_run(int x) { return helper(x) + strlen("call(y)"); }
static const struct demo_ops my_ops = { .run = demo_run, };
int demo_dispatch(struct demo *d) { return d->ops->run(1); }
static void demo_work_fn(struct work_struct *w) { helper(2); }
void demo_start(struct work_struct *w) { INIT_WORK(w, demo_work_fn); }
SYSCALL_DEFINE1(demo, int, x) { return demo_dispatch(NULL); }
""")
    _path, got = m.parse_file(str(src))
    defs = {d[0]: d for d in got["defs"]}
    assert set(defs) == {"helper", "demo_run", "demo_dispatch", "demo_work_fn", "demo_start",
                         "__do_sys_demo"}
    assert defs["helper"][1] and not defs["demo_dispatch"][1]          # static or not
    assert defs["helper"][3] == {"alloc_thing"}                         # no call in strings, comments
    assert defs["demo_run"][3] == {"helper", "strlen"}
    assert ("demo", ("ops",), "run") in defs["demo_dispatch"][4]        # d->ops->run(...)
    assert ("demo_ops", (), "run", "demo_run") in got["inits"]
    assert ("process_one_work", "demo_work_fn") in defs["demo_start"][7]
    assert got["structs"]["demo"][0] == {"ops": "demo_ops"}
    assert "run" in got["structs"]["demo_ops"][1]
