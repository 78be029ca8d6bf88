"""/proc/allocinfo: tags, their counters, the format, show_mem (alloc_tag.py)."""

import errno
import os
import re

import pytest

from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.mm.alloc_tag import CODETAG_FLAG_INACCURATE, load_tag_table, string_get_size
from fakefs.kernel.mm.alloc_tag_module import load_module
from mm_helpers import boot, read, write

LINE = re.compile(r"^ *-?\d+ +\d+ [^ :]+:\d+ (\[\w+\] )?func:\S+ \n$")


@pytest.fixture
def kernel():
    return boot()


def lines_of(k):
    return k.alloc_tag.allocinfo_text().splitlines(keepends=True)


def dmesg(k):
    return k.log.dmesg()

# --------------------------------------------------------------------- format
def test_header_and_every_line_byte_format(kernel):
    text = read(kernel, "proc/allocinfo").decode()
    assert text.startswith("allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n")
    lines = text.splitlines(keepends=True)[2:]
    assert len(lines) == kernel.alloc_tag.cttype.count > 3000
    assert all(LINE.match(line) for line in lines)
    assert any(line.startswith("           0        0 ") for line in lines)     # zeros listed


def test_line_is_12_8_columns_plus_trailing_space(kernel):
    at = kernel.alloc_tag
    t = at.find("kernel/fork.c", "alloc_thread_stack_node")
    t.bytes, t.calls = 9192960, 2800
    assert "     9192960     2800 kernel/fork.c:322 func:alloc_thread_stack_node \n" in lines_of(kernel)
    t.bytes, t.calls = 123456789012345, 123456789
    assert "123456789012345 123456789 kernel/fork.c:322 func:alloc_thread_stack_node \n" in lines_of(kernel)


def test_module_lines_and_link_order(kernel):
    lines = lines_of(kernel)[2:]
    files = [line.split()[2] for line in lines]
    assert files[0].startswith("init/")
    first_mod = next(i for i, line in enumerate(lines) if "] func:" in line)
    assert all("] func:" in line for line in lines[first_mod:])        # modules after vmlinux
    assert "     4136960     1010 drivers/staging/ctagmod/ctagmod.c:20 [ctagmod] func:ctagmod_start \n" \
        in lines
    # inside one object file: descending line numbers
    fork = [int(f.split(":")[1]) for f in files if f.startswith("kernel/fork.c:")]
    assert fork == sorted(fork, reverse=True) and len(fork) > 5
    order = []
    for f in files:
        top = f.split("/")[0]
        if not order or order[-1] != top:
            order.append(top)
    assert order.index("kernel") < order.index("mm") < order.index("fs") < order.index("lib") \
        < order.index("drivers") < order.index("net")


def test_version_2_header_and_inaccurate_marker():
    k = boot(persona="6.18")
    t = k.alloc_tag.find("kernel/fork.c", "copy_signal")
    t.flags |= CODETAG_FLAG_INACCURATE
    text = k.alloc_tag.allocinfo_text()
    assert text.startswith("allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n")
    assert re.search(r"kernel/fork\.c:\d+ func:copy_signal accurate:no \n", text)
    k12 = boot()
    t = k12.alloc_tag.find("kernel/fork.c", "copy_signal")
    t.flags |= CODETAG_FLAG_INACCURATE
    assert "accurate:no" not in k12.alloc_tag.allocinfo_text()


def test_allocinfo_mode_and_write_is_eio(kernel):
    node = kernel.tree.root.walk("proc/allocinfo")
    assert node.mode & 0o7777 == 0o400
    with pytest.raises(KernelError) as e:
        write(kernel, "proc/allocinfo", b"1\n")
    assert e.value.errno == errno.EIO


def test_reads_in_chunks_give_the_same_text(kernel):
    node = kernel.tree.root.walk("proc/allocinfo")
    f = File(node, os.O_RDONLY)
    node.fops.open(f)
    whole = node.fops.read(f, 0, 1 << 22)
    parts = []
    off = 0
    while True:
        c = node.fops.read(f, off, 4096)
        if not c:
            break
        parts.append(c)
        off += len(c)
    assert b"".join(parts) == whole


def test_render_5000_tags_fast(kernel):
    k = kernel
    for name in sorted(load_tag_table((6, 12))[1]):
        if name not in k.alloc_tag.modules:
            load_module(k, name)
    assert k.alloc_tag.cttype.count >= 5000
    text = read(k, "proc/allocinfo")
    assert len(text.splitlines()) >= 5000 + 2       # the header's two lines, every tag

# --------------------------------------------------------------------- alloc_tag_init
def test_no_config_no_files():
    k = boot(MEM_ALLOC_PROFILING=False)
    assert k.tree.root.walk("proc/allocinfo") is None
    assert k.tree.root.walk("proc/sys/vm/mem_profiling") is None


def test_613_compression_failure_disables_profiling():
    cfg = dict(NUMA=True, NUMA_BALANCING=True, NODES_SHIFT=10, LRU_GEN=True)
    k = boot("sysctl.vm.mem_profiling=1,compressed", version=(6, 13), **cfg)
    assert re.search(r"\d+ allocation tags cannot be references using \d+ available page flag bits\. "
                     r"Memory allocation profiling is disabled!", dmesg(k))
    assert not k.alloc_tag.enabled and not k.alloc_tag.support
    assert k.tree.root.walk("proc/allocinfo") is None

# --------------------------------------------------------------------- helpers and reports
@pytest.mark.parametrize("n,text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.00 KiB"),
                                    (40265318, "38.4 MiB"), (127664128, "122 MiB"),
                                    (4136960, "3.95 MiB"), (1 << 40, "1.00 TiB")])
def test_string_get_size(n, text):
    assert string_get_size(n) == text


def test_show_mem_top_users(kernel):
    at = kernel.alloc_tag
    tops = at.top_users(10)
    assert len(tops) == 10
    assert [t.bytes for t in tops] == sorted((t.bytes for t in tops), reverse=True)
    assert tops[0].bytes == max(t.bytes for t in at.iter_tags())
    lines = at.show_mem_lines()
    assert lines[0] == "Memory allocations:"
    assert re.match(r"^ +\d+(\.\d+)? [KMG]iB +\d+ mm/page_ext\.c:271 func:alloc_page_ext$", lines[1])
    assert any("[ctagmod]" in line for line in lines)


def test_the_table_is_the_file_row_by_row():
    """load_tag_table() keeps one string object for equal values: its rows
    are still the file's, in order, builtin and per module."""
    import os

    from fakefs.kernel.mm.alloc_tag import DATA_DIR, table_version
    builtin, modules = load_tag_table((6, 12))
    want_b, want_m = [], {}
    with open(os.path.join(DATA_DIR, "alloc_tags-%s.tsv" % table_version((6, 12)))) as fh:
        for line in fh:
            p = line.rstrip("\n").split("\t")
            if len(p) >= 4:
                row = (p[0], int(p[1]), p[2], p[4] if len(p) > 4 else "")
                (want_m.setdefault(p[3], []) if p[3] else want_b).append(row)
    assert builtin == want_b and modules == want_m and len(builtin) > 3000
    callees = {id(r[3]) for rows in [builtin, *modules.values()] for r in rows}
    assert len(callees) == len({r[3] for rows in [builtin, *modules.values()] for r in rows})
