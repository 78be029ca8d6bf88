"""What the simulated machine holds once it has booted (:mod:`.alloc_workload`).

The machine is a small KVM guest (default 16 GiB, ``kernel.nr_cpus`` CPUs,
two virtio disks, ext4 root) with a few services.  Boot leaves the long-lived
state a running system has:

* page extensions for every memory section (``alloc_page_ext``), the big
  boot hash tables (``alloc_large_system_hash``), block-mq request pools,
  the conntrack hash, sysfs/kernfs nodes, kernel threads and user processes;
* a small footprint at a large part of the kernel's other call sites, chosen
  per site from the site's allocator (kmalloc, named caches, pages, vmalloc,
  kvmalloc, percpu) with a heavy-tailed count; about one site in sixteen
  keeps allocating at run time (``wl.hot``);
* the netlink tables and the daemons' long-lived netlink sockets;
* the modules loaded by the distribution (and the ``ctagmod`` test module of
  the allocation-profiling documentation, 1010 pages at its init), then the
  ones named in ``modules-load=`` on the command line, as
  systemd-modules-load would load them;
* then the dynamic pools filled to their steady state
  (``AllocWorkload.prepopulate``).

:func:`boot` runs it all on a fresh :class:`~.alloc_workload.AllocWorkload`.
"""

from __future__ import annotations

from ..lib.rhashtable import rhashtable_init
from ..printk import KERN_ERR
from .alloc_tag import load_tag_table
from .alloc_tag_module import load_module
from .alloc_workload_sites import SITES, SiteProfile, lognormal
from .page_alloc import PAGE_SIZE

GiB = 1 << 30
DEFAULT_RAM = 16 * GiB
SECTION_SIZE = 128 << 20            # x86-64 SECTION_SIZE_BITS = 27
PAGE_EXT_SIZE = 16                  # struct page_ext flags + codetag_ref
MODULES_LOAD_PID = 231              # systemd-modules-load, early in boot
LOG_DAEMON = 3                      # syslog facility of system daemons

# the most one ordinary call site holds in the background footprint
BACKGROUND_MAX_BYTES = 1536 << 10

# modules a distribution loads on this guest at boot (in load order)
BOOT_MODULES = ("kvm", "kvm_intel", "overlay", "bridge", "veth", "tun", "xfs", "ctagmod")


def boot(wl) -> None:
    """Replay boot on the workload ``wl`` (its allocators are up, nothing
    is allocated yet)."""
    wl.slab.set_tags()
    wl.vm.set_tags()
    for key in SITES:
        wl.site(key)
    boot_mm(wl)
    boot_static(wl)
    boot_background(wl)
    boot_tasks(wl)
    boot_netlink(wl)
    for name in BOOT_MODULES + modules_load_param(wl):
        if name not in wl.modules:
            load_module(wl.kernel, name)
    # the running system as it is when somebody first looks at it
    wl.prepopulate()
    wl.vm.fragmentation = 0.3
    wl.at.warn_task = ("kworker/u%d:1" % (2 * wl.nr_cpus), 57, 0)


def modules_load_param(wl) -> tuple:
    """``modules-load=a,b`` / ``rd.modules-load=``: the kernel passes them
    to user space, where systemd-modules-load loads the modules."""
    known = load_tag_table(wl.at.version)[1]
    names = []
    for key, val in wl.kernel.cmdline.args:
        if key in ("modules-load", "rd.modules-load") and val:
            for name in val.replace(" ", ",").split(","):
                name = name.strip().replace("-", "_")
                if not name or name in names:
                    continue
                if name in known or name == "ctagmod":
                    names.append(name)
                else:               # what it says in the kernel log (daemon facility)
                    wl.kernel.log.printk("systemd-modules-load[%d]: Failed to find module '%s'"
                                         % (MODULES_LOAD_PID, name), level=KERN_ERR,
                                         facility=LOG_DAEMON)
    return tuple(names)


def boot_mm(wl) -> None:
    """Page extensions, hash tables: before the buddy allocator is busy."""
    at = wl.at
    tag = wl.site("page_ext")
    wl.page_ext = []
    if at.support and not at.compressed and tag is not None:
        table = PAGE_EXT_SIZE * (SECTION_SIZE // PAGE_SIZE)
        old = at.current
        at.current = tag
        try:
            for _ in range(wl.ram // SECTION_SIZE):
                wl.page_ext.append(wl.pa.alloc_pages_exact_noprof(table))
        finally:
            at.current = old
    # dentry, inode, mount, mountpoint, TCP, UDP ... hash tables (hashdist: vmalloc)
    tag = wl.site("sys_hash")
    scale = max(1, wl.ram // GiB)
    wl.sys_hash = []
    for entries_per_gib, esize in ((65536, 8), (32768, 8), (2048, 16), (2048, 16),
                                   (8192, 8), (8192, 16), (4096, 16), (4096, 16), (1024, 16)):
        n = 1 << (entries_per_gib * scale - 1).bit_length()
        wl.sys_hash.append(wl.vm.vmalloc(tag, n * esize))


def boot_static(wl) -> None:
    """Long-lived tables of drivers and subsystems."""
    slab = wl.slab
    pa = wl.pa
    # block-mq: two virtio disks, one hardware queue per CPU, plus the
    # scheduler tags of mq-deadline; request pools of up to order-4 pages
    rqs, rq_map, rq_map2 = wl.site("blk_rqs"), wl.site("blk_rq_map"), wl.site("blk_rq_map2")
    wl.blk = []
    for _disk in range(2):
        for _q in range(wl.nr_cpus):
            for depth in (256, 512):
                wl.blk.append(slab.kmalloc(rq_map, depth * 8, node=0))
                wl.blk.append(slab.kmalloc(rq_map2, depth * 8, node=0))
                left = depth * 448
                order = 4
                while left > 0:
                    while order and left < (PAGE_SIZE << (order - 1)):
                        order -= 1
                    wl.blk.append(pa.alloc_pages(rqs, order))
                    left -= PAGE_SIZE << order
    # conntrack hash (kvcalloc, large kmalloc at boot)
    ct = wl.site("ct_hash")
    buckets = max(16384, min(262144, wl.ram // 16384))
    wl.ct = [wl.vm.kvmalloc(ct, buckets * 8), wl.vm.kvmalloc(ct, 1024 * 8)]
    # sysfs and friends
    kn = wl.site("kernfs")
    wl.kernfs = []
    n = 15000 + 1500 * wl.nr_cpus
    for _ in range(8):
        wl.kernfs.append(wl.bulk(kn, "kernfs_node_cache", n // 8))
    wl.kernfs_dyn = []


def boot_background(wl) -> None:
    """A footprint at a good part of the kernel's call sites, and the
    subset of them that keeps allocating at run time."""
    at = wl.at
    rng = wl.kernel.subsystem_rng("alloc_workload:sites")
    special = {id(t) for t in wl.sites.values() if t is not None}
    # tags the allocators charge by themselves
    for t in (wl.slab.tag_slab_page, wl.slab.tag_slab_page_node, wl.slab.tag_obj_exts,
              wl.vm.tag_vmap_area, wl.vm.tag_vm_struct):
        if t is not None:
            special.add(id(t))
    for key in ("page_ext", "sys_hash"):
        spec = SITES[key]
        special.update(id(t) for t in wl.at.find_all(spec[0], spec[1]))
    wl.background = []
    hot = []
    for tag in list(at.iter_tags()) if at.cttype is not None else \
            [t for ts in at._index.values() for t in ts]:
        if tag.modname or id(tag) in special:
            continue
        p = SiteProfile(tag, rng)
        wl.profiles.append(p)
        if rng.random() < 0.55:
            n = int(lognormal(rng, 2.0, 1.5, 1, 4000))
            if p.kind in ("vmalloc", "kvmalloc"):
                n = min(n, 4)
            n = max(1, min(n, BACKGROUND_MAX_BYTES // p.size))
            wl.background.append(wl.alloc_profile(p, n))
        if rng.random() < 0.06:
            rate = lognormal(rng, 1.5, 1.3, 0.05, 60.0)
            life = lognormal(rng, 8.0, 1.5, 0.05, 600.0)
            if p.kind in ("vmalloc", "kvmalloc", "page"):
                rate = min(rate, 2.0)
            life = min(life, 2000.0 / rate,          # at most ~2000 live objects
                       BACKGROUND_MAX_BYTES / p.size / rate)
            hot.append((p, rate, life))
    wl.set_hot(hot)


def boot_tasks(wl) -> None:
    """Per-CPU and unbound kernel threads, then the services."""
    rng = wl.rng
    # per CPU: cpuhp, migration, ksoftirqd, kworker :0 :0H :1, idle_inject;
    # unbound: 72 kworker/u
    for _ in range(7 * wl.nr_cpus + 72):
        wl.tasks.new_process(kthread=True)
    services = (("systemd", 420, 110, 1), ("systemd-journal", 380, 60, 1),
                ("systemd-udevd", 220, 50, 1), ("systemd-network", 110, 50, 1),
                ("systemd-resolve", 150, 55, 1), ("systemd-logind", 100, 50, 1),
                ("dbus-daemon", 90, 45, 1), ("cron", 40, 40, 1), ("sshd", 120, 60, 1),
                ("agetty", 30, 30, 1), ("rsyslogd", 160, 70, 4), ("chronyd", 50, 40, 1),
                ("containerd", 900, 240, 12), ("bash", 90, 45, 1), ("tmux: server", 140, 50, 1))
    for _comm, rss, nvma, threads in services:
        rss = int(lognormal(rng, rss, 0.3, 16, 200000))
        wl.tasks.new_process(rss=rss, nvma=nvma, threads=threads)


def boot_netlink(wl) -> None:
    """One rhashtable per netlink protocol and the IPC ids, charged to
    their init sites, and the daemons' sockets."""
    tag = wl.site("nl_init")
    if tag is None:
        return
    for _proto in range(32):                 # MAX_LINKS
        wl.netlink_tables.append(rhashtable_init(wl.kernel, tag, automatic_shrinking=True))
    wl.nl_route = wl.netlink_tables[0]
    ipc = wl.site("ipc_ids")
    if ipc is not None:
        for _ in range(3):                   # sem, msg, shm ids of init_ipc_ns
            wl.netlink_tables.append(rhashtable_init(wl.kernel, ipc, automatic_shrinking=True))
    for _ in range(40):                      # daemons' long-lived sockets
        wl.nl_socks.append(wl.nl_sock())
