from fakefs.kernel.lib.versioned import VersionedSet


def test_every_change_gives_a_new_version_and_nothing_else_does():
    s = VersionedSet({1, 2, 3})
    seen = {s.version}
    for change in (lambda: s.add(4), lambda: s.discard(4), lambda: s.remove(3),
                   lambda: s.update({5}), lambda: s.difference_update({5}),
                   lambda: s.intersection_update({1, 2}), lambda: s.symmetric_difference_update({9}),
                   lambda: s.pop(), lambda: s.clear()):
        change()
        assert s.version not in seen
        seen.add(s.version)
    s2 = s
    s |= {7}
    s -= {7}
    s &= {1}
    s ^= {8}
    assert s is s2 and isinstance(s, VersionedSet) and s == {8}
    v = s.version
    assert v not in seen
    _ = (s | {1}, s - {8}, 8 in s, len(s), s.copy())
    assert s.version == v                         # reading changes nothing


def test_versions_are_unique_among_sets():
    a, b = VersionedSet(), VersionedSet()
    a.add(1)
    b.add(1)
    assert len({a.version, b.version}) == 2
