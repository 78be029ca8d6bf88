"""The 2.6.30 OOM killer: victim choice, TIF_MEMDIE, messages."""

from __future__ import annotations

from fakefs.kernel.mm.oom_kill_2630 import OOM_DISABLE, OomKiller
from fakefs.kernel.mm.page_alloc_2630 import GFP_HIGHUSER_MOVABLE, PF_EXITING, PF_KTHREAD, MmTask, PageAllocator


def task(pid, comm, vm, **kw):
    t = MmTask(pid, comm, **kw)
    t.rss = list(range(vm))
    return t


def killer(tasks, log=None):
    pa = PageAllocator(32 << 20, nr_cpus=1)
    oom = OomKiller(pa, lambda: tasks, hz=250,
                    printk=(lambda text, level=6: log.append(text)) if log is not None else None)
    return pa, oom


def test_biggest_process_dies_with_messages():
    init = task(1, "init", 100)
    hog = task(20, "memhog", 20000)
    sh = task(21, "sh", 300)
    kthread = task(3, "kswapd0", 0, flags=PF_KTHREAD)
    log = []
    pa, oom = killer([init, kthread, sh, hog], log)
    oom.init_task = init
    oom.out_of_memory([], GFP_HIGHUSER_MOVABLE, 0, sh)
    assert hog.memdie and not sh.memdie and hog.exit_at == pa.jiffies + oom.exit_delay
    assert log == [
        "sh invoked oom-killer: gfp_mask=0x1200d2, order=0, oomkilladj=0",
        "Out of memory: kill process 20 (memhog) score %d or a child" % (20000 // 16),
        "Killed process 20 (memhog)",
    ]


def test_no_second_victim_while_one_is_dying():
    hog = task(20, "memhog", 20000)
    other = task(22, "app", 5000)
    pa, oom = killer([hog, other])
    oom.out_of_memory([], 0xd0, 0, other)
    assert hog.memdie and oom.nr_kills == 1
    oom.out_of_memory([], 0xd0, 0, other)
    assert oom.nr_kills == 1 and not other.memdie


def test_init_kthreads_and_oom_disable_are_spared():
    init = task(1, "init", 90000)
    k = task(2, "kthreadd", 0, flags=PF_KTHREAD)
    d = task(30, "critical", 50000)
    d.oomkilladj = OOM_DISABLE
    small = task(31, "sh", 10)
    pa, oom = killer([init, k, d, small])
    oom.init_task = init
    oom.out_of_memory([], 0xd0, 0, small)
    assert small.memdie and not d.memdie and not init.memdie


def test_badness_adjustments():
    pa, oom = killer([])
    a = task(10, "a", 4096)
    assert oom.badness(a, 0) == 4096 // 16           # root: /4 twice
    a.uid = 1000
    assert oom.badness(a, 0) == 4096
    a.nice = 5
    assert oom.badness(a, 0) == 8192
    a.oomkilladj = 2
    assert oom.badness(a, 0) == 8192 << 2
    a.oomkilladj = -3
    assert oom.badness(a, 0) == 8192 >> 3
    b = task(11, "b", 4096)
    b.uid = 1000
    b.utime = 250 * 64 * 8                            # lots of CPU time
    assert oom.badness(b, 0) < 4096


def test_exiting_current_gets_memdie_quietly():
    t = task(40, "dying", 3000)
    t.flags |= PF_EXITING
    log = []
    pa, oom = killer([t], log)
    oom.out_of_memory([], 0xd0, 0, t)
    assert t.memdie
    assert not any("Killed process" in line for line in log)
