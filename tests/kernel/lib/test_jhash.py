"""The compiled jhash2 of unsigned longs (``_jhash.pyx``) is lookup3 as
``jhash.jhash2()`` computes it over the longs' 32-bit halves."""

from __future__ import annotations

import random

from fakefs.kernel.lib.jhash import jhash2, jhash2_ulongs, jhash2_ulongs_py


def test_the_compiled_hash_is_the_specification():
    rng = random.Random(4)
    for n in list(range(0, 12)) + [31, 64, 65, 100]:    # every tail length, and a long one
        for _ in range(20):
            ips = tuple(rng.getrandbits(64) for _ in range(n))
            seed = rng.getrandbits(32)
            assert jhash2_ulongs(ips, seed) == jhash2_ulongs_py(ips, seed), (n, seed)


def test_halves_low_first():
    assert jhash2_ulongs((0x1_0000_0002,), 9) == jhash2([2, 1], 9)
    assert jhash2_ulongs((), 1) == jhash2([], 1) == 0xdeadbef0
