"""The simulated machine's allocations as /proc/allocinfo shows them."""


import pytest

from mm_helpers import boot, read, run, write


@pytest.fixture
def kernel():
    return boot()


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


def test_never_stays_zero():
    k = boot("sysctl.vm.mem_profiling=never")
    run(k, 2)
    assert all(t.bytes == 0 and t.calls == 0 for t in k.alloc_tag.iter_tags())


def test_ctagmod_missing_annotation_under_debug():
    k = boot(MEM_ALLOC_PROFILING_DEBUG=True)
    run(k, 25)
    log = k.log.dmesg()
    assert log.count("current->alloc_tag not set") == 1
    assert "Modules linked in: ctagmod" in log
    k = boot()
    run(k, 25)
    assert "current->alloc_tag not set" not in k.log.dmesg()



# --- owed time: the workload runs when what it does can be seen ------------

def _advance(k, seconds: float) -> None:
    """Time passes with requests every 100 ms that do not look at memory."""
    for _ in range(int(seconds * 10)):
        k.clock.advance(100_000_000)
        k.timekeeper.run_until_now()


def test_nobody_looking_the_workload_owes_its_time_and_reading_allocinfo_pays_it(kernel):
    k = kernel
    wl = k.alloc_workload
    steps, now = wl.steps, wl.now
    _advance(k, 1.0)
    assert wl.steps == steps and wl.now == now and wl.owed == 1_000_000_000
    read(k, "proc/allocinfo")
    assert wl.owed == 0 and wl.now == now + 1_000_000_000 and wl.steps == steps + 50


def test_an_unseen_stretch_longer_than_two_seconds_is_simulated_for_its_last_two(kernel):
    k = kernel
    wl = k.alloc_workload
    now = wl.now
    _advance(k, 5.0)
    k.log.dmesg()                                  # the log is a reader too
    assert wl.owed == 0 and wl.now == now + 2_000_000_000


def test_the_sysctl_counts_owed_time_under_the_setting_it_had(kernel):
    k = kernel
    sk = k.alloc_tag.find("net/core/skbuff.c", "__alloc_skb")
    _advance(k, 1.0)
    calls = sk.calls
    write(k, "proc/sys/vm/mem_profiling", b"0\n")    # the second before is counted
    assert sk.calls > calls
    calls = sk.calls
    _advance(k, 1.0)
    read(k, "proc/allocinfo")
    assert sk.calls == calls                         # while off, nothing charged


def test_owed_and_watched_runs_agree_within_sampling_error():
    """One kernel read every 100 ms, one read once after 2 s: the owed
    time is simulated in the same 20 ms steps, so the allocators did the
    very same work."""
    grown = []
    for look_often in (True, False):
        k = boot(seed=3)
        pa = k.page_alloc
        before = pa.nr_allocs, pa.nr_frees
        for _ in range(20):
            k.clock.advance(100_000_000)
            k.timekeeper.run_until_now()
            if look_often:
                read(k, "proc/allocinfo")
        read(k, "proc/allocinfo")
        grown += [pa.nr_allocs - before[0], pa.nr_frees - before[1]]
    assert grown[:2] == grown[2:] and min(grown) > 100, grown
