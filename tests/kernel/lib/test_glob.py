import pytest

from fakefs.kernel.lib.glob import glob_regex


@pytest.mark.parametrize("pat,s,hit", [
    ("sched*", "schedule", True), ("*sched", "schedule", False), ("?chedule", "schedule", True),
    ("[a-c]at", "bat", True), ("[!a-c]at", "bat", False), ("[]]x", "]x", True),
    ("[ab", "[ab", True),                    # unclosed class: '[' is literal
    ("a\\*", "a*", True), ("a\\*", "ab", False),
    ("a\\", "a", True),                      # a trailing backslash matches the end
    ("a\\", "a\\", False), ("", "", True), ("*", "", True),
])
def test_glob_match(pat, s, hit):
    assert bool(glob_regex(pat).fullmatch(s)) is hit
