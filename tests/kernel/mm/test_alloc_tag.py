import errno
import os
import re

import pytest

from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.mm.alloc_tag import (CODETAG_FLAG_INACCURATE, parse_dointvec_minmax,
                                        string_get_size)
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


# --------------------------------------------------------------------- boot parameter (6.12)
@pytest.mark.parametrize("val,enabled,support,early_ok,sysctl_msg", [
    ("0", False, True, True, None),
    ("1", True, True, True, None),
    ("never", False, False, True, "permission denied (read-only?)"),
    ("neverever", False, False, True, "permission denied (read-only?)"),
    ("never,compressed", False, False, True, "permission denied (read-only?)"),
    ("y", True, True, True, "invalid value"),
    ("on", True, True, True, "invalid value"),
    ("off", False, True, True, "invalid value"),
    ("1,compressed", True, True, True, "invalid value"),
    ("foo", False, True, True, "invalid value"),          # kstrtobool: "f..." is false
    ("maybe", True, True, False, "invalid value"),
    ("o", True, True, False, "invalid value"),
])
def test_boot_param_612(val, enabled, support, early_ok, sysctl_msg):
    k = boot("sysctl.vm.mem_profiling=%s" % val)
    at = k.alloc_tag
    assert (at.enabled, at.support) == (enabled, support)
    log = dmesg(k)
    assert ("Malformed early option 'sysctl.vm.mem_profiling'" in log) == (not early_ok)
    if sysctl_msg:
        assert "Failed to set sysctl parameter 'vm.mem_profiling=%s': %s" % (val, sysctl_msg) in log
    else:
        assert "Failed to set sysctl" not in log
    assert "Memory allocation profiling is" not in log          # 6.12 prints nothing itself
    mode = k.tree.root.walk("proc/sys/vm/mem_profiling").mode & 0o777
    assert mode == (0o644 if support else 0o444)
    assert k.tree.root.walk("proc/allocinfo") is not None        # 6.12: always there
    assert read(k, "proc/sys/vm/mem_profiling") == (b"1\n" if enabled else b"0\n")


def test_boot_param_empty_value():
    k = boot("sysctl.vm.mem_profiling=")
    log = dmesg(k)
    assert "Malformed early option 'sysctl.vm.mem_profiling'" in log
    assert "Setting sysctl args: `' invalid for parameter `sysctl.vm.mem_profiling'" in log
    assert k.alloc_tag.enabled


def test_never_is_all_zero_and_read_only():
    k = boot("sysctl.vm.mem_profiling=never")
    lines = lines_of(k)[2:]
    assert lines and all(line.startswith("           0        0 ") for line in lines)
    with pytest.raises(KernelError) as e:
        write(k, "proc/sys/vm/mem_profiling", b"1\n")
    assert e.value.errno == errno.EACCES


def test_kconfig_default_off_means_never():
    k = boot(MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=False)
    assert not k.alloc_tag.enabled and not k.alloc_tag.support
    assert k.tree.root.walk("proc/sys/vm/mem_profiling").mode & 0o777 == 0o444
    k = boot("sysctl.vm.mem_profiling=0", MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=False)
    assert k.alloc_tag.support and not k.alloc_tag.enabled
    assert k.tree.root.walk("proc/sys/vm/mem_profiling").mode & 0o777 == 0o644


def test_debug_selects_default_on_and_makes_sysctl_read_only():
    k = boot(MEM_ALLOC_PROFILING_DEBUG=True, MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=False)
    assert k.alloc_tag.enabled and k.alloc_tag.support
    assert k.tree.root.walk("proc/sys/vm/mem_profiling").mode & 0o777 == 0o444
    k = boot("sysctl.vm.mem_profiling=1", MEM_ALLOC_PROFILING_DEBUG=True)
    assert "Failed to set sysctl parameter 'vm.mem_profiling=1': permission denied (read-only?)" in dmesg(k)


def test_no_config_no_files():
    k = boot(MEM_ALLOC_PROFILING=False)
    assert k.tree.root.walk("proc/allocinfo") is None
    assert k.tree.root.walk("proc/sys/vm/mem_profiling") is None


# --------------------------------------------------------------------- newer kernels
def test_613_compressed_and_messages():
    k = boot("sysctl.vm.mem_profiling=1,compressed", version=(6, 13))
    at = k.alloc_tag
    assert at.enabled and at.support and at.compressed
    assert "Memory allocation profiling is enabled with compression and is turned on!" in dmesg(k)
    # compressed: page references live in page flags, no page_ext allocated
    assert at.find("mm/page_ext.c", "alloc_page_ext", 271).bytes == 0
    assert at.find("mm/readahead.c", "page_cache_ra_unbounded").bytes > 0
    k = boot("sysctl.vm.mem_profiling=0", version=(6, 13))
    assert "Memory allocation profiling is enabled without compression and is turned off!" in dmesg(k)
    for bad in ("1,foo", "1,", "maybe"):
        k = boot("sysctl.vm.mem_profiling=" + bad, version=(6, 13))
        assert "Malformed early option 'sysctl.vm.mem_profiling'" in dmesg(k)


def test_613_never_has_no_allocinfo():
    k = boot("sysctl.vm.mem_profiling=never", version=(6, 13))
    assert "Memory allocation profiling is disabled!" in dmesg(k)
    assert k.tree.root.walk("proc/allocinfo") is None
    assert k.tree.root.walk("proc/sys/vm/mem_profiling").mode & 0o777 == 0o444
    k = boot(version=(6, 13), MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=False)
    assert k.tree.root.walk("proc/allocinfo") is None


def test_613_compression_failure_disables_profiling():
    cfg = dict(NUMA=True, NUMA_BALANCING=True, NODES_SHIFT=10, LRU_GEN=True)
    k = boot("sysctl.vm.mem_profiling=1,compressed", version=(6, 13), **cfg)
    assert re.search(r"\d+ allocation tags cannot be references using \d+ available page flag bits\. "
                     r"Memory allocation profiling is disabled!", dmesg(k))
    assert not k.alloc_tag.enabled and not k.alloc_tag.support
    assert k.tree.root.walk("proc/allocinfo") is None


def test_618_write_refused_after_shutdown():
    k = boot(persona="6.18")
    from fakefs.kernel.mm.alloc_tag import shutdown_mem_profiling
    shutdown_mem_profiling(k.alloc_tag, True)
    assert k.tree.root.walk("proc/allocinfo") is None
    with pytest.raises(KernelError) as e:
        write(k, "proc/sys/vm/mem_profiling", b"1\n")
    assert e.value.errno == errno.EINVAL


def test_mainline_sysctl_rework():
    k = boot("sysctl.vm.mem_profiling=never", version=(7, 0))
    node = k.tree.root.walk("proc/sys/vm/mem_profiling")
    assert node.mode & 0o777 == 0o644
    assert "Memory allocation profiling is not supported!" in dmesg(k)
    assert "Failed to set sysctl" not in dmesg(k)
    with pytest.raises(KernelError) as e:
        write(k, "proc/sys/vm/mem_profiling", b"1\n")
    assert e.value.errno == errno.EINVAL
    k = boot(version=(7, 0), MEM_ALLOC_PROFILING_DEBUG=True)
    with pytest.raises(KernelError) as e:
        write(k, "proc/sys/vm/mem_profiling", b"0\n")
    assert e.value.errno == errno.EACCES
    k = boot("sysctl.vm.mem_profiling=1,compressed", version=(7, 0))
    node = k.tree.root.walk("proc/sys/vm/mem_profiling_compressed")
    assert node.mode & 0o777 == 0o444 and read(k, "proc/sys/vm/mem_profiling_compressed") == b"1\n"


# --------------------------------------------------------------------- sysctl semantics
@pytest.mark.parametrize("data,value,count", [
    (b"0", 0, 1), (b"1\n", 1, 2), (b" 0 ", 0, 3), (b"0x1", 1, 3), (b"01", 1, 2),
    (b"1 2", 1, 2), (b"\t1\n\n", 1, 4), (b"-0", 0, 2),
])
def test_sysctl_accepts(data, value, count):
    assert parse_dointvec_minmax(data) == (value, count)


@pytest.mark.parametrize("data", [b"2", b"-1", b"abc", b"on", b"yes", b"1x", b"1,compressed", b"",
                                  b"   \n", b"08", b"0x", b"99999999999999999999999"])
def test_sysctl_rejects(data):
    with pytest.raises(KernelError) as e:
        parse_dointvec_minmax(data)
    assert e.value.errno == errno.EINVAL


def test_sysctl_file_read_write(kernel):
    path = "proc/sys/vm/mem_profiling"
    assert read(kernel, path) == b"1\n"
    assert write(kernel, path, b"0\n") == 2
    assert read(kernel, path) == b"0\n" and not kernel.alloc_tag.enabled
    assert write(kernel, path, b"1 2") == 2
    assert kernel.alloc_tag.enabled
    with pytest.raises(KernelError):
        write(kernel, path, b"2\n")
    assert kernel.alloc_tag.enabled
    node = kernel.tree.root.walk(path)
    f = File(node, os.O_RDONLY)
    node.fops.open(f)
    assert node.fops.read(f, 0, 1) == b"1"
    assert node.fops.read(f, 1, 10) == b""                       # no partial reads past 0
    f = File(node, os.O_WRONLY)
    node.fops.open(f)
    assert node.fops.write(f, b"0") == 1
    assert node.fops.write(f, b"1") == 1                          # past the start: ignored
    assert not kernel.alloc_tag.enabled


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
