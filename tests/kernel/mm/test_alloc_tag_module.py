"""Modules: their tags come and go, their init allocates (alloc_tag_module.py)."""

import errno

import pytest

from fakefs.kernel.fs.pseudo import KernelError
from fakefs.kernel.mm.alloc_tag_module import load_module, module_load, module_unload, unload_module
from mm_helpers import boot


@pytest.fixture
def kernel():
    return boot()


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


def test_tags_load_once_and_unload_once(kernel):
    at = kernel.alloc_tag
    with pytest.raises(KernelError) as e:
        module_load(at, "kvm")
    assert e.value.errno == errno.EEXIST
    with pytest.raises(KernelError) as e:
        module_unload(at, "zram")
    assert e.value.errno == errno.ENOENT


def test_ctagmod_taints_staging(kernel):
    assert "C" in kernel.tainted
    assert "ctagmod" in kernel.alloc_calls.modules
