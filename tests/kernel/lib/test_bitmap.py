import errno

import pytest

from fakefs.kernel.lib.bitmap import bitmap_parse, bitmap_string, cpulist_parse


@pytest.mark.parametrize("text,nbits,cpus", [
    ("0", 4, {0}), ("0-3", 4, {0, 1, 2, 3}), ("0,2", 4, {0, 2}), (" 1 , 3 ", 4, {1, 3}),
    ("N", 4, {3}), ("0-N", 4, {0, 1, 2, 3}), ("all", 4, {0, 1, 2, 3}), ("ALL", 2, {0, 1}),
    ("0-7:2/4", 8, {0, 1, 4, 5}), ("all:1/2", 4, {0, 2}), ("", 4, set()), ("1\n", 4, {1}),
    ("4", 4, None), ("3-1", 4, None), ("0-x", 4, None), ("x", 4, None), ("1-", 4, None),
    ("0-3:2", 4, None), ("0-3:3/2", 4, None), ("0-3:1/0", 4, None), ("1;2", 4, None),
])
def test_cpulist_parse(text, nbits, cpus):
    assert cpulist_parse(text, nbits) == cpus


def test_bitmap_parse_is_hex_chunks_from_the_right():
    """What a stock 2-CPU kernel answers on tracing_cpumask."""
    assert bitmap_parse("3", 2) == 3 and bitmap_parse("\n", 2) == 0 and bitmap_parse(" 1 ", 2) == 1
    assert bitmap_parse("ff,ffffffff", 40) == (1 << 40) - 1
    for text, err in (("1,2", errno.EOVERFLOW), ("4", errno.EOVERFLOW), ("ff", errno.EOVERFLOW),
                      ("100000000", errno.EOVERFLOW), ("x", errno.EINVAL)):
        try:
            bitmap_parse(text, 2)
        except OSError as e:
            assert e.errno == err, text
        else:
            raise AssertionError(text)


def test_bitmap_string_pads_the_first_chunk_to_its_bits():
    assert bitmap_string(3, 2) == "3"
    assert bitmap_string(1, 8) == "01"
    assert bitmap_string((1 << 40) - 1, 40) == "ff,ffffffff"
    assert bitmap_string(1, 64) == "00000000,00000001"


def test_bitmap_list_string_ranges():
    from fakefs.kernel.lib.bitmap import bitmap_list_string
    assert bitmap_list_string(0b11) == "0-1"
    assert bitmap_list_string(0b1) == "0"
    assert bitmap_list_string(0b1_0000_1101) == "0,2-3,8"
    assert bitmap_list_string(0) == ""
