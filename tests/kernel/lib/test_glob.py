import pytest

from fakefs.kernel.lib.glob import glob_literals, glob_match, glob_regex

CASES = [
    ("sched*", "schedule", True), ("*sched", "schedule", False), ("?chedule", "schedule", True),
    ("[a-c]at", "bat", True), ("[a-c]at", "dat", False), ("[!a-c]at", "bat", False),
    ("[!a-c]at", "dat", True), ("[!x]", "x", False), ("[!x]", "y", True), ("[!x]", "", False),
    ("[]]x", "]x", True),                    # a leading ']' is a member
    ("[!]x]", "]", False), ("[!]x]", "x", False), ("[!]x]", "y", True),
    ("[a-]", "-", True), ("[a-]", "a", True), ("[a-]", "b", False),   # '-' before ']' is literal
    ("[z-a]", "m", False), ("[z-a]", "z", False), ("[!z-a]", "m", True),   # an empty range
    ("[]", "[]", True), ("[]", "]", False),  # never closed: '[' and ']' are literals
    ("[ab", "[ab", True), ("[ab", "a", False),   # unclosed class: '[' is literal
    ("[a-", "[a-", True),
    ("a\\*", "a*", True), ("a\\*", "ab", False),
    ("a\\", "a", True),                      # a trailing backslash matches the end
    ("a\\", "a\\", False), ("", "", True), ("*", "", True),
]


@pytest.mark.parametrize("pat,s,hit", CASES)
def test_glob_match_and_its_regex(pat, s, hit):
    assert glob_match(pat, s) is hit
    assert bool(glob_regex(pat).fullmatch(s)) is hit


def test_glob_literals_skip_classes():
    assert glob_literals("ab[cd]ef*g") == ("ab", "g", ["ab", "ef", "g"])
    assert glob_literals("[ab") == ("[ab", "[ab", ["[ab"])
