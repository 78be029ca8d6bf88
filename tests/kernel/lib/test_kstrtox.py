import pytest

from fakefs.kernel.lib.kstrtox import kstrtoll, kstrtoull


@pytest.mark.parametrize("s,val", [
    ("0", 0), ("10", 10), ("+10", 10), ("0x1f", 31), ("0X1F", 31), ("017", 15), ("7\n", 7),
    ("18446744073709551615", (1 << 64) - 1), ("0xffffffffffffffff", (1 << 64) - 1),
    ("18446744073709551616", None), ("", None), ("-1", None), ("0x", None), ("08", None),
    ("1x", None), ("1 ", None), ("1\n\n", None), ("+", None), ("++1", None),
])
def test_kstrtoull(s, val):
    assert kstrtoull(s) == val


@pytest.mark.parametrize("s,val", [
    ("-1", -1), ("-0x10", -16), ("9223372036854775807", (1 << 63) - 1),
    ("-9223372036854775808", -(1 << 63)), ("9223372036854775808", None),
    ("-9223372036854775809", None), ("--1", None), ("-", None), ("+5", 5),
])
def test_kstrtoll(s, val):
    assert kstrtoll(s) == val
