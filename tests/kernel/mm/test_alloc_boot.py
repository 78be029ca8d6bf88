"""What the machine holds after boot (alloc_boot.py)."""

import pytest

from fakefs.kernel.mm.alloc_boot import BOOT_MODULES
from mm_helpers import boot, run, write


@pytest.fixture
def kernel():
    return boot()


def table(k):
    out = {}
    for line in k.alloc_tag.allocinfo_text().splitlines()[2:]:
        b, c, where = line.split(None, 2)
        out.setdefault(where.strip(), (int(b), int(c)))
    return out


def test_boot_with_0_then_enable_counts_from_zero():
    k = boot("sysctl.vm.mem_profiling=0")
    assert all(t.bytes == 0 and t.calls == 0 for t in k.alloc_tag.iter_tags())
    write(k, "proc/sys/vm/mem_profiling", b"1")
    run(k, 3)
    t = table(k)
    assert t["mm/page_ext.c:271 func:alloc_page_ext"] == (0, 0)       # allocated at boot, untagged
    assert t["drivers/staging/ctagmod/ctagmod.c:20 [ctagmod] func:ctagmod_start"] == (0, 0)
    assert t["mm/filemap.c:1944 func:__filemap_get_folio"][1] > 0
    assert all(b >= 0 for b, _c in t.values())


def test_netlink_table_charged_to_its_init_site(kernel):
    k = kernel
    nl = k.alloc_tag.find("net/netlink/af_netlink.c", "netlink_proto_init", 2940)
    assert nl.calls == 32                     # one bucket table per protocol, resized in place
    wl = k.alloc_calls
    assert wl.nl_route.alloc_tag is nl
    sizes = set()
    for _ in range(30):
        run(k, 2)
        sizes.add(wl.nl_route.size)
    assert max(sizes) >= 128


def test_modules_load_from_the_command_line():
    k = boot("modules-load=btrfs,zram rd.modules-load=nosuchmod")
    mods = list(k.alloc_tag.modules)
    assert mods[-2:] == ["btrfs", "zram"]
    assert "Unknown kernel command line parameters" in k.log.dmesg()     # passed to user space
    # a module that does not exist is not loaded, and user space says so
    assert "systemd-modules-load[231]: Failed to find module 'nosuchmod'" in k.log.dmesg()
    assert "'btrfs'" not in k.log.dmesg()


def test_the_distribution_modules_are_loaded_at_boot(kernel):
    assert tuple(kernel.alloc_tag.modules) == BOOT_MODULES
    assert tuple(kernel.alloc_calls.modules) == BOOT_MODULES
