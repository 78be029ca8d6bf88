"""The mount table of the private namespace (fakefs/selftest/namespace.py)."""

from __future__ import annotations

from fakefs.selftest import namespace

def test_mount_field_unescape():
    assert namespace._unescape_mount_field(r"/a\040b\011c") == "/a b\tc"
