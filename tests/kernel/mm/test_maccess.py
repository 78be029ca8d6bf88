"""User memory known by its regions (mm/maccess.py): values and strings
read where bytes were placed, a fault (None) anywhere else."""

from fakefs.kernel.mm.maccess import UserRegions


def test_values_and_strings_at_their_addresses():
    m = UserRegions({0x1000: b"/etc/passwd\0", 0x100c: b"\x01\x02\x03\x04"})
    assert m.read_string(0x1000) == b"/etc/passwd"
    assert m.read_string(0x1005) == b"passwd"           # from inside a string
    assert m.read(0x1000, 2) == int.from_bytes(b"/e", "little")
    assert m.read(0x100c, 4) == 0x04030201
    assert m.read(0x100a, 4) == int.from_bytes(b"d\0\x01\x02", "little")   # adjacent regions


def test_anything_else_faults():
    m = UserRegions({0x1000: b"ab\0", 0x2000: b"xyz"})
    assert m.read(0x0fff, 1) is None
    assert m.read(0x1002, 2) is None                    # runs off the region
    assert m.read_string(0x2000) is None                # no NUL before the end
    assert m.read_string(0x3000) is None
    assert UserRegions().read(0, 1) is None


def test_a_string_stops_at_the_limit():
    m = UserRegions({0x1000: b"a" * 5000 + b"\0"})
    assert m.read_string(0x1000) == b"a" * 4095
    assert m.read_string(0x1000, 8) == b"a" * 8
