"""The memory of tasks: the workload's processes and the followed real ones."""

from __future__ import annotations

import pytest
from mm_helpers import boot

from fakefs.kernel.mm.alloc_tasks import EXEC_LOOKUPS, FREE_SITES, HOST_KEPT, LOOKUP_NS, PUTNAME


@pytest.fixture
def kernel():
    return boot()


def _inuse(k) -> dict:
    wl = k.alloc_calls
    return {name: wl.caches[name].inuse for name in ("vm_area_struct", "vma_lock", "task_struct",
                                                     "mm_struct", "names_cache")}


def _frees(k) -> list:
    """(cpu, ts, cache, the free site in force) of every kmem_cache_free fired."""
    trace = k.alloc_calls.trace
    got = []
    tp = trace.tp_cache_free
    tp.probes.append(lambda cpu, ts, _p, _f, _c, args: got.append((cpu, ts, args[2],
                                                                   trace.free_site)))
    return got


def test_a_followed_process_gives_back_at_exit_what_its_fork_and_exec_took(kernel):
    k = kernel
    tasks = k.alloc_calls.tasks
    before = _inuse(k)
    tasks.host_fork(4001, 1, 10_000)
    forked = _inuse(k)
    assert forked["task_struct"] == before["task_struct"] + 1
    assert forked["vm_area_struct"] > before["vm_area_struct"]
    tasks.host_exec(4001, 1, 20_000)
    assert _inuse(k)["names_cache"] == before["names_cache"]       # looked up and put back
    tasks.host_exit(4001, 0, 30_000)
    assert 4001 not in tasks.host
    assert _inuse(k) == before


def test_the_frees_happen_where_and_when_the_process_does_them_with_their_call_sites(kernel):
    k = kernel
    tasks = k.alloc_calls.tasks
    tasks.host_fork(4001, 1, 10_000)
    got = _frees(k)
    tasks.host_exec(4001, 1, 20_000)
    for i in range(1, EXEC_LOOKUPS):                 # (the loader's, as the machine makes them)
        tasks.lookup(1, 20_000 + i * LOOKUP_NS)
    names = [g for g in got if g[2] == "names_cache"]
    assert len(names) == EXEC_LOOKUPS and all(g[3] is PUTNAME for g in names)
    assert [g[1] for g in names] == sorted(g[1] for g in names)
    assert names[0][1] == 20_000 and names[-1][1] > 20_000
    old_mm = [g for g in got if g[2] == "vm_area_struct"]            # the fork's copy goes
    assert old_mm and all(g[:2] == (1, 20_000) and g[3] is FREE_SITES["vm_area_struct"]
                          for g in old_mm)
    del got[:]
    tasks.host_exit(4001, 0, 30_000)
    assert {g[:2] for g in got} == {(0, 30_000)}
    caches = {g[2] for g in got}
    assert {"vm_area_struct", "vma_lock", "task_struct", "mm_struct"} <= caches
    assert all(g[3] is FREE_SITES[g[2]] for g in got)
    assert k.alloc_calls.trace.free_site is None
    assert k.alloc_calls.trace.when is None                      # put back as it was


def test_an_exit_while_the_machine_stands_still_frees_untraced(kernel):
    k = kernel
    tasks = k.alloc_calls.tasks
    before = _inuse(k)
    tasks.host_exec(4002, 0, 5_000)            # its fork was not seen: a new one
    got = _frees(k)
    tasks.host_exit(4002, None, 0)
    assert _inuse(k) == before and got == []
    tasks.host_exit(4002, 1, 6_000)                   # gone already: nothing
    tasks.host_exit(4999, 1, 6_000)                   # never known: nothing
    assert _inuse(k) == before


def test_processes_whose_exit_is_never_reported_are_bounded(kernel):
    k = kernel
    tasks = k.alloc_calls.tasks
    before = _inuse(k)
    for pid in range(10_000, 10_000 + HOST_KEPT + 5):
        tasks.host_fork(pid, 0, 1000)
    assert len(tasks.host) == HOST_KEPT
    assert 10_000 not in tasks.host and 10_000 + HOST_KEPT + 4 in tasks.host
    tasks.host_fork(10_010, 0, 2000)             # a pid reused: the old one is gone
    assert len(tasks.host) == HOST_KEPT
    for pid in list(tasks.host):
        tasks.host_exit(pid, 0, 3000)
    assert _inuse(k) == before


def test_a_thread_shares_its_process_memory_and_an_unseen_fork_is_not_invented(kernel):
    k = kernel
    tasks = k.alloc_calls.tasks
    before = _inuse(k)
    tasks.host_fork(4003, 0, 1000, thread=True)
    got = _inuse(k)
    assert got["task_struct"] == before["task_struct"] + 1
    assert got["vm_area_struct"] == before["vm_area_struct"]          # no mm of its own
    assert got["mm_struct"] == before["mm_struct"]
    tasks.host_exit(4003, 0, 2000)
    assert _inuse(k) == before
    tasks.host_exec(4004, 0, 3000)      # a process whose fork nobody saw
    got = _inuse(k)
    assert got["task_struct"] == before["task_struct"]                 # its new mm only
    assert got["mm_struct"] == before["mm_struct"] + 1
    tasks.host_exit(4004, 0, 4000)
    assert _inuse(k) == before


def test_a_fork_copies_an_mm_and_an_exec_makes_a_new_one(kernel):
    """allocinfo: the fork's VMAs under vm_area_dup, the exec's under
    vm_area_alloc; the mm_struct from dup_mm, then from mm_alloc."""
    k = kernel
    at = k.alloc_tag
    tags = {f: at.find("kernel/fork.c", f) for f in ("vm_area_dup", "vm_area_alloc", "dup_mm",
                                                      "mm_alloc")}
    calls = {f: t.calls for f, t in tags.items()}
    tasks = k.alloc_calls.tasks
    tasks.host_fork(4005, 0, 1000)
    assert tags["vm_area_dup"].calls > calls["vm_area_dup"]
    assert tags["dup_mm"].calls == calls["dup_mm"] + 1
    assert tags["vm_area_alloc"].calls == calls["vm_area_alloc"]
    tasks.host_exec(4005, 0, 2000)
    assert tags["vm_area_alloc"].calls > calls["vm_area_alloc"]
    assert tags["mm_alloc"].calls == calls["mm_alloc"] + 1
