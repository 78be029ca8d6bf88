import pytest

from fakefs.kernel.lib.bitmap import cpulist_parse


@pytest.mark.parametrize("text,nbits,cpus", [
    ("0", 4, {0}), ("0-3", 4, {0, 1, 2, 3}), ("0,2", 4, {0, 2}), (" 1 , 3 ", 4, {1, 3}),
    ("N", 4, {3}), ("0-N", 4, {0, 1, 2, 3}), ("all", 4, {0, 1, 2, 3}), ("ALL", 2, {0, 1}),
    ("0-7:2/4", 8, {0, 1, 4, 5}), ("all:1/2", 4, {0, 2}), ("", 4, set()), ("1\n", 4, {1}),
    ("4", 4, None), ("3-1", 4, None), ("0-x", 4, None), ("x", 4, None), ("1-", 4, None),
    ("0-3:2", 4, None), ("0-3:3/2", 4, None), ("0-3:1/0", 4, None), ("1;2", 4, None),
])
def test_cpulist_parse(text, nbits, cpus):
    assert cpulist_parse(text, nbits) == cpus
