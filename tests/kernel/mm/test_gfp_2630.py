"""The 2.6.30 gfp flags (fakefs/kernel/mm/gfp_2630.py)."""

from fakefs.kernel.mm import gfp_2630


def test_module_constants_match_2630():
    assert gfp_2630.GFP_KERNEL == 0xd0 and gfp_2630.GFP_ATOMIC == 0x20
    assert gfp_2630.GFP_HIGHUSER_MOVABLE == 0x1200d2 and gfp_2630.GFP_NOFS == 0x50
