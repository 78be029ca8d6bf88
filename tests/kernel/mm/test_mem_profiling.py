"""The mem_profiling boot parameter and sysctl (mem_profiling.py)."""

import errno
import os

import pytest

from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.kernel.mm.alloc_tag import shutdown_mem_profiling
from fakefs.kernel.mm.mem_profiling import parse_dointvec_minmax
from mm_helpers import boot, read, write


@pytest.fixture
def kernel():
    return boot()


def lines_of(k):
    return k.alloc_tag.allocinfo_text().splitlines(keepends=True)


def dmesg(k):
    return k.log.dmesg()

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


def test_618_write_refused_after_shutdown():
    k = boot(persona="6.18")
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
