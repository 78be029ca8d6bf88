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


def test_kstrtoul_raises_like_the_kernel():
    import pytest
    from fakefs.kernel.lib.kstrtox import RangeError, kstrtoul
    assert kstrtoul("+10\n", 10) == 10 and kstrtoul("0x1f", 16) == 31 and kstrtoul("017") == 15
    for bad in ("", "-1", "++1", " 1", "1 ", "1_0", "0x", "1\n\n"):
        with pytest.raises(ValueError):
            kstrtoul(bad, 0)
    # the overflow is seen before the junk after it (ERANGE, not EINVAL)
    with pytest.raises(RangeError):
        kstrtoul("99999999999999999999x", 10)
    with pytest.raises(RangeError):
        kstrtoul("18446744073709551616", 10)


def test_kstrtoul_from_user_takes_66_bytes_up_to_a_nul():
    import pytest
    from fakefs.kernel.lib.kstrtox import kstrtoul_from_user
    assert kstrtoul_from_user(b"1\0junk") == 1
    assert kstrtoul_from_user(b"0" * 65 + b"7") == 7
    assert kstrtoul_from_user(b"0" * 66 + b"7x") == 0    # from the 67th byte on: not read
    with pytest.raises(ValueError):
        kstrtoul_from_user(b"1x\0")
