"""What the simulated machine holds once it has booted (:mod:`.alloc_calls`).

The machine is a small KVM guest (default 16 GiB, ``kernel.nr_cpus`` CPUs,
two virtio disks, ext4 root) with a few services.  Boot leaves the long-lived
state a running system has:

* page extensions for every memory section (``alloc_page_ext``), the big
  boot hash tables (``alloc_large_system_hash``), block-mq request pools,
  the conntrack hash, sysfs/kernfs nodes, kernel threads and user processes;
* a small footprint at a large part of the kernel's other call sites, chosen
  per site from the site's allocator (kmalloc, named caches, pages, vmalloc,
  kvmalloc, percpu) with a heavy-tailed count; about one site in sixteen
  keeps allocating at run time (``calls.hot``);
* the netlink tables and the daemons' long-lived netlink sockets;
* the modules loaded by the distribution (and the ``ctagmod`` test module of
  the allocation-profiling documentation, 1010 pages at its init), then the
  ones named in ``modules-load=`` on the command line, as
  systemd-modules-load would load them;
* then (the machine's part of boot, ``init.MACHINE``) the dynamic pools
  filled to their steady state (:mod:`fakefs.sim.alloc_history`).

:func:`alloc_boot_init` brings the allocators up (``kernel.alloc_calls``,
:class:`~.alloc_calls.AllocCalls`) and :func:`boot` runs it all on them;
:func:`alloc_late_init`, after the machine's part, leaves them as a running
system's and applies the command line's sysctls.
"""

from __future__ import annotations

from ..lib.rhashtable import rhashtable_init
from ..printk import KERN_ERR
from .alloc_calls import DEFAULT_RAM, GiB, AllocCalls
from .alloc_tag import load_tag_table
from .alloc_tag_module import load_module
from .alloc_sites import SITES, SiteProfile, lognormal
from .mem_profiling import do_sysctl_args
from .page_alloc import PAGE_SHIFT, PAGE_SIZE, PageAllocator
from .percpu import Percpu
from .slub import SlabAllocator
from .vmalloc import Vmalloc
SECTION_SIZE = 128 << 20            # x86-64 SECTION_SIZE_BITS = 27
PAGE_EXT_SIZE = 16                  # struct page_ext flags + codetag_ref
MODULES_LOAD_PID = 231              # systemd-modules-load, early in boot
LOG_DAEMON = 3                      # syslog facility of system daemons

# the most one ordinary call site holds in the background footprint
BACKGROUND_MAX_BYTES = 1536 << 10

# modules a distribution loads on this guest at boot (in load order)
BOOT_MODULES = ("kvm", "kvm_intel", "overlay", "bridge", "veth", "tun", "xfs", "ctagmod")


def alloc_boot_init(kernel) -> None:
    """After alloc_tag_init: the simulated allocators come up and replay
    boot.  (The machine's running state follows, its allocations at run
    time start with its time: :mod:`fakefs.sim.alloc_workload`.)"""
    if kernel.alloc_tag is None:
        return                  # built without CONFIG_MEM_ALLOC_PROFILING
    boot(start(kernel))


def alloc_late_init(kernel) -> None:
    """After the machine's running state: the allocators as a running
    system's (vmalloc's fragmentation, the task a warning names), then the
    sysctl values from the command line."""
    calls = kernel.alloc_calls
    if calls is None:
        return
    calls.vm.fragmentation = 0.3
    calls.at.warn_task = ("kworker/u%d:1" % (2 * calls.nr_cpus), 57, 0)
    do_sysctl_args(calls.at)


def start(kernel) -> AllocCalls:
    """The allocators and the call sites' state, nothing allocated yet."""
    at = kernel.alloc_tag
    kernel.page_alloc = PageAllocator(kernel, at, DEFAULT_RAM >> PAGE_SHIFT)
    kernel.slab = SlabAllocator(kernel, at, kernel.page_alloc)
    kernel.vmalloc = Vmalloc(kernel, at, kernel.page_alloc, kernel.slab)
    kernel.percpu = Percpu(kernel, at)
    kernel.alloc_calls = calls = AllocCalls(kernel)
    return calls


def boot(calls) -> None:
    """Replay boot on the call sites ``calls`` (its allocators are up, nothing
    is allocated yet)."""
    calls.slab.set_tags()
    calls.vm.set_tags()
    for key in SITES:
        calls.site(key)
    boot_mm(calls)
    boot_static(calls)
    boot_background(calls)
    boot_tasks(calls)
    boot_netlink(calls)
    for name in BOOT_MODULES + modules_load_param(calls):
        if name not in calls.modules:
            load_module(calls.kernel, name)


def modules_load_param(calls) -> tuple:
    """``modules-load=a,b`` / ``rd.modules-load=``: the kernel passes them
    to user space, where systemd-modules-load loads the modules."""
    known = load_tag_table(calls.at.version)[1]
    names = []
    for key, val in calls.kernel.cmdline.args:
        if key in ("modules-load", "rd.modules-load") and val:
            for name in val.replace(" ", ",").split(","):
                name = name.strip().replace("-", "_")
                if not name or name in names:
                    continue
                if name in known or name == "ctagmod":
                    names.append(name)
                else:               # what it says in the kernel log (daemon facility)
                    calls.kernel.log.printk("systemd-modules-load[%d]: Failed to find module '%s'"
                                         % (MODULES_LOAD_PID, name), level=KERN_ERR,
                                         facility=LOG_DAEMON)
    return tuple(names)


def boot_mm(calls) -> None:
    """Page extensions, hash tables: before the buddy allocator is busy."""
    at = calls.at
    tag = calls.site("page_ext")
    calls.page_ext = []
    if at.support and not at.compressed and tag is not None:
        table = PAGE_EXT_SIZE * (SECTION_SIZE // PAGE_SIZE)
        old = at.current
        at.current = tag
        try:
            for _ in range(calls.ram // SECTION_SIZE):
                calls.page_ext.append(calls.pa.alloc_pages_exact_noprof(table))
        finally:
            at.current = old
    # dentry, inode, mount, mountpoint, TCP, UDP ... hash tables (hashdist: vmalloc)
    tag = calls.site("sys_hash")
    scale = max(1, calls.ram // GiB)
    calls.sys_hash = []
    for entries_per_gib, esize in ((65536, 8), (32768, 8), (2048, 16), (2048, 16),
                                   (8192, 8), (8192, 16), (4096, 16), (4096, 16), (1024, 16)):
        n = 1 << (entries_per_gib * scale - 1).bit_length()
        calls.sys_hash.append(calls.vm.vmalloc(tag, n * esize))


def boot_static(calls) -> None:
    """Long-lived tables of drivers and subsystems."""
    slab = calls.slab
    pa = calls.pa
    # block-mq: two virtio disks, one hardware queue per CPU, plus the
    # scheduler tags of mq-deadline; request pools of up to order-4 pages
    rqs, rq_map, rq_map2 = calls.site("blk_rqs"), calls.site("blk_rq_map"), calls.site("blk_rq_map2")
    calls.blk = []
    for _disk in range(2):
        for _q in range(calls.nr_cpus):
            for depth in (256, 512):
                calls.blk.append(slab.kmalloc(rq_map, depth * 8, node=0))
                calls.blk.append(slab.kmalloc(rq_map2, depth * 8, node=0))
                left = depth * 448
                order = 4
                while left > 0:
                    while order and left < (PAGE_SIZE << (order - 1)):
                        order -= 1
                    calls.blk.append(pa.alloc_pages(rqs, order))
                    left -= PAGE_SIZE << order
    # conntrack hash (kvcalloc, large kmalloc at boot)
    ct = calls.site("ct_hash")
    buckets = max(16384, min(262144, calls.ram // 16384))
    calls.ct = [calls.vm.kvmalloc(ct, buckets * 8), calls.vm.kvmalloc(ct, 1024 * 8)]
    # sysfs and friends
    kn = calls.site("kernfs")
    calls.kernfs = []
    n = 15000 + 1500 * calls.nr_cpus
    for _ in range(8):
        calls.kernfs.append(calls.bulk(kn, "kernfs_node_cache", n // 8))


def boot_background(calls) -> None:
    """A footprint at a good part of the kernel's call sites, and the
    subset of them that keeps allocating at run time."""
    at = calls.at
    rng = calls.kernel.subsystem_rng("alloc_workload:sites")
    special = {id(t) for t in calls.sites.values() if t is not None}
    # tags the allocators charge by themselves
    for t in (calls.slab.tag_slab_page, calls.slab.tag_slab_page_node, calls.slab.tag_obj_exts,
              calls.vm.tag_vmap_area, calls.vm.tag_vm_struct):
        if t is not None:
            special.add(id(t))
    for key in ("page_ext", "sys_hash"):
        spec = SITES[key]
        special.update(id(t) for t in calls.at.find_all(spec[0], spec[1]))
    calls.background = []
    hot = []
    for tag in list(at.iter_tags()) if at.cttype is not None else \
            [t for ts in at._index.values() for t in ts]:
        if tag.modname or id(tag) in special:
            continue
        p = SiteProfile(tag, rng)
        calls.profiles.append(p)
        if rng.random() < 0.55:
            n = int(lognormal(rng, 2.0, 1.5, 1, 4000))
            if p.kind in ("vmalloc", "kvmalloc"):
                n = min(n, 4)
            n = max(1, min(n, BACKGROUND_MAX_BYTES // p.size))
            calls.background.append(calls.alloc_profile(p, n))
        if rng.random() < 0.06:
            rate = lognormal(rng, 1.5, 1.3, 0.05, 60.0)
            life = lognormal(rng, 8.0, 1.5, 0.05, 600.0)
            if p.kind in ("vmalloc", "kvmalloc", "page"):
                rate = min(rate, 2.0)
            life = min(life, 2000.0 / rate,          # at most ~2000 live objects
                       BACKGROUND_MAX_BYTES / p.size / rate)
            hot.append((p, rate, life))
    calls.hot = hot


def boot_tasks(calls) -> None:
    """Per-CPU and unbound kernel threads, then the services."""
    rng = calls.rng
    # per CPU: cpuhp, migration, ksoftirqd, kworker :0 :0H :1, idle_inject;
    # unbound: 72 kworker/u
    for _ in range(7 * calls.nr_cpus + 72):
        calls.tasks.new_process(kthread=True)
    services = (("systemd", 420, 110, 1), ("systemd-journal", 380, 60, 1),
                ("systemd-udevd", 220, 50, 1), ("systemd-network", 110, 50, 1),
                ("systemd-resolve", 150, 55, 1), ("systemd-logind", 100, 50, 1),
                ("dbus-daemon", 90, 45, 1), ("cron", 40, 40, 1), ("sshd", 120, 60, 1),
                ("agetty", 30, 30, 1), ("rsyslogd", 160, 70, 4), ("chronyd", 50, 40, 1),
                ("containerd", 900, 240, 12), ("bash", 90, 45, 1), ("tmux: server", 140, 50, 1))
    for _comm, rss, nvma, threads in services:
        rss = int(lognormal(rng, rss, 0.3, 16, 200000))
        calls.tasks.new_process(rss=rss, nvma=nvma, threads=threads)


def boot_netlink(calls) -> None:
    """One rhashtable per netlink protocol and the IPC ids, charged to
    their init sites, and the daemons' sockets."""
    tag = calls.site("nl_init")
    if tag is None:
        return
    for _proto in range(32):                 # MAX_LINKS
        calls.netlink_tables.append(rhashtable_init(calls.kernel, tag, automatic_shrinking=True))
    calls.nl_route = calls.netlink_tables[0]
    ipc = calls.site("ipc_ids")
    if ipc is not None:
        for _ in range(3):                   # sem, msg, shm ids of init_ipc_ns
            calls.netlink_tables.append(rhashtable_init(calls.kernel, ipc, automatic_shrinking=True))
    for _ in range(40):                      # daemons' long-lived sockets
        calls.nl_socks.append(calls.nl_sock())
