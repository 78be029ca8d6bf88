"""The simulated machine's allocations as /proc/allocinfo shows them."""

import statistics
import time

import pytest

from fakefs.kernel.mm.alloc_tag import load_tag_table
from fakefs.kernel.mm.alloc_workload import SITES, load_module, unload_module
from mm_helpers import boot, read, run, write


@pytest.fixture
def kernel():
    return boot()


def table(k):
    out = {}
    for line in k.alloc_tag.allocinfo_text().splitlines()[2:]:
        b, c, where = line.split(None, 2)
        out.setdefault(where.strip(), (int(b), int(c)))
    return out


def test_every_scripted_site_exists(kernel):
    wl = kernel.alloc_workload
    missing = [key for key in SITES if wl.site(key) is None]
    assert not missing


def test_shape_like_the_documentation(kernel):
    k = kernel
    run(k, 5)
    tags = list(k.alloc_tag.iter_tags())
    top = [t.function for t in sorted(tags, key=lambda t: t.bytes)[-10:]]
    for f in ("alloc_page_ext", "alloc_slab_page", "page_cache_ra_unbounded",
              "alloc_large_system_hash", "alloc_anon_folio", "ctagmod_start"):
        assert f in top
    assert sorted(tags, key=lambda t: t.bytes)[-1].function == "alloc_page_ext"
    nonzero = [t for t in tags if t.calls]
    assert len(tags) > 3000 and len(nonzero) > 1000
    total = sum(t.bytes for t in tags)
    assert 100 << 20 < total < 1 << 30
    assert all(t.bytes >= 0 and t.calls >= 0 for t in tags)
    kernfs = k.alloc_tag.find("fs/kernfs/dir.c", "__kernfs_new_node")
    assert kernfs.calls > 10000 and kernfs.bytes == kernfs.calls * 128
    stack = k.alloc_tag.find("kernel/fork.c", "alloc_thread_stack_node")
    assert stack.calls and stack.bytes * 5 == stack.calls * 16416        # 4 pages + 32-byte array


def test_counts_are_live_they_go_up_and_down(kernel):
    k = kernel
    at = k.alloc_tag
    ra = at.find("mm/readahead.c", "page_cache_ra_unbounded")
    sk = at.find("net/core/skbuff.c", "__alloc_skb")
    seen_ra, seen_sk = set(), set()
    for _ in range(40):
        run(k, 0.5)
        seen_ra.add(ra.calls)
        seen_sk.add(sk.calls)
    assert len(seen_ra) > 5 and len(seen_sk) > 5
    assert min(seen_sk) < max(seen_sk)


def test_deterministic_for_a_seed():
    a, b, c = boot(seed=7), boot(seed=7), boot(seed=8)
    for k in (a, b, c):
        run(k, 3)
    assert a.alloc_tag.allocinfo_text() == b.alloc_tag.allocinfo_text()
    assert a.alloc_tag.allocinfo_text() != c.alloc_tag.allocinfo_text()


def test_disable_freezes_everything_enable_resumes(kernel):
    k = kernel
    run(k, 1)
    write(k, "proc/sys/vm/mem_profiling", b"0\n")
    frozen = read(k, "proc/allocinfo")
    run(k, 3)
    assert read(k, "proc/allocinfo") == frozen
    write(k, "proc/sys/vm/mem_profiling", b"1\n")
    run(k, 3)
    assert read(k, "proc/allocinfo") != frozen


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


def test_never_stays_zero():
    k = boot("sysctl.vm.mem_profiling=never")
    run(k, 2)
    assert all(t.bytes == 0 and t.calls == 0 for t in k.alloc_tag.iter_tags())


def test_module_tags_appear_at_load_and_go_at_unload(kernel):
    k = kernel
    at = k.alloc_tag
    text = at.allocinfo_text()
    assert "[zram]" not in text and "[kvm]" in text
    load_module(k, "zram")
    text = at.allocinfo_text()
    assert text.count(" [zram] func:") == len(at.modules["zram"]) > 5
    assert text.rstrip("\n").rsplit("\n", 1)[1].find("[zram]") > 0         # newest id: last
    unload_module(k, "kvm")                                                # frees id 1
    assert "[kvm]" not in at.allocinfo_text()
    unload_module(k, "zram")
    load_module(k, "isofs")                                                # reuses id 1
    mods = []
    for line in at.allocinfo_text().splitlines():
        if "] func:" in line:
            m = line.split("[", 1)[1].split("]", 1)[0]
            if not mods or mods[-1] != m:
                mods.append(m)
    assert mods[0] == "isofs" and mods[1] == "kvm_intel"
    assert "WARNING" not in k.log.dmesg()


def test_module_unload_with_live_memory_612_warns():
    k = boot()
    unload_module(k, "ctagmod", leak=True)
    log = k.log.dmesg()
    assert ("drivers/staging/ctagmod/ctagmod.c:20 module ctagmod func:ctagmod_start "
            "has 4136960 allocated at module unload") in log
    assert "------------[ cut here ]------------" in log
    assert "ctagmod: memory allocation(s) from the module still alive, cannot unload cleanly" in log
    assert "[ctagmod]" not in k.alloc_tag.allocinfo_text()


def test_module_unload_with_live_memory_613_is_info():
    k = boot(version=(6, 13))
    unload_module(k, "ctagmod", leak=True)
    log = k.log.dmesg()
    assert "has 4136960 allocated at module unload" in log
    assert "cut here" not in log


def test_ctagmod_missing_annotation_under_debug():
    k = boot(MEM_ALLOC_PROFILING_DEBUG=True)
    run(k, 25)
    log = k.log.dmesg()
    assert log.count("current->alloc_tag not set") == 1
    assert "Modules linked in: ctagmod" in log
    k = boot()
    run(k, 25)
    assert "current->alloc_tag not set" not in k.log.dmesg()


def test_netlink_table_charged_to_its_init_site(kernel):
    k = kernel
    nl = k.alloc_tag.find("net/netlink/af_netlink.c", "netlink_proto_init", 2940)
    assert nl.calls == 32                     # one bucket table per protocol, resized in place
    wl = k.alloc_workload
    assert wl.nl_route.alloc_tag is nl
    sizes = set()
    for _ in range(30):
        run(k, 2)
        sizes.add(wl.nl_route.size)
    assert max(sizes) >= 128


@pytest.mark.parametrize("nr_cpus", [2, 16])
def test_step_cost_budget(nr_cpus):
    k = boot(nr_cpus=nr_cpus)
    wl = k.alloc_workload
    wl.run_for(2_000_000_000)
    costs = []
    for _ in range(100):
        t0 = time.perf_counter()
        wl.step(wl.now, wl.now + 20_000_000)
        costs.append(time.perf_counter() - t0)
    assert statistics.median(costs) < 0.005


def test_render_5000_tags_fast(kernel):
    k = kernel
    for name in sorted(load_tag_table((6, 12))[1]):
        if name not in k.alloc_tag.modules:
            load_module(k, name)
    assert k.alloc_tag.cttype.count >= 5000
    best = min(_timed(lambda: read(k, "proc/allocinfo")) for _ in range(3))
    assert best < 0.1


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def test_modules_load_from_the_command_line():
    k = boot("modules-load=btrfs,zram rd.modules-load=nosuchmod")
    mods = list(k.alloc_tag.modules)
    assert mods[-2:] == ["btrfs", "zram"]
    assert "Unknown kernel command line parameters" in k.log.dmesg()     # passed to user space
