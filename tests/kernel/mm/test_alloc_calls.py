"""The kernel's call sites as the machine's work reaches them (alloc_calls.py):
a code path allocates at its site, and frees whatever it returned."""

from mm_helpers import boot


def test_free_takes_any_handle_the_code_paths_return():
    k = boot()
    calls = k.alloc_calls
    tag = calls.site("filp")
    b0 = tag.bytes
    objs = [calls.cache_alloc("filp", "filp") for _ in range(3)]
    assert tag.bytes > b0
    called = []
    calls.free([objs, None, lambda: called.append(1)])
    assert tag.bytes == b0 and called == [1]
    proc = calls.tasks.new_process(rss=16, nvma=12)
    task = calls.site("task")
    live = task.bytes
    calls.free(proc)                            # a process: its exit
    assert task.bytes < live
