"""fakefs heatmap: the LegoOS-style table from /proc/profile and System.map."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from fakefs.views import heatmap as hm

STEXT = 0xffffffff81000000
MAP = "".join("%016x %s %s\n" % (STEXT + a, t, n) for a, t, n in [
    (0x0, "T", "_stext"), (0x0, "T", "startup_64"), (0x40, "T", "__pfx_foo"), (0x50, "T", "foo"),
    (0x90, "t", "bar"), (0xc0, "T", "_etext"), (0xd0, "t", "init_thing")])
SEED = "/work/shared/seeds/003_9705ab5b9705f318.txt"


def profile(step, counts):
    return struct.pack("<I", step) + struct.pack("<%dI" % len(counts), *counts)


def write(tmp_path, step, counts):
    p = tmp_path / "profile"
    m = tmp_path / "System.map"
    p.write_bytes(profile(step, counts))
    m.write_text(MAP)
    return str(p), str(m)


def test_parse_map_walks_text_only():
    stext, addrs, names = hm.parse_system_map(MAP)
    assert stext == STEXT
    assert names == ["_stext", "startup_64", "__pfx_foo", "foo", "bar", "_etext"]


def test_attribution_by_bucket_start():
    stext, addrs, names = hm.parse_system_map(MAP)
    counts = [0] * 12                         # step 16: 0xc0 bytes
    counts[0] = 5                             # startup_64
    counts[4] = 7                             # __pfx_foo: padding belongs to foo
    counts[5] = 1                             # foo
    counts[8] = 3                             # foo's last bucket (readprofile: bar)
    counts[9] = 2                             # bar
    counts[11] = 4
    rows, total = hm.heatmap(16, counts, stext, addrs, names)
    assert total == 22
    assert rows == [(STEXT + 0x50, "foo", 11), (STEXT + 0x90, "bar", 6), (STEXT, "_stext", 5)]
    rows, total = hm.heatmap(16, counts, stext, addrs, names, exclude=["foo"])
    assert total == 11 and rows[0][1] == "bar"


def test_percent_correct_and_lego():
    assert hm.percent(112082, 151994) == "    73.74"
    assert hm.percent(1519, 151994) == "     1.00"
    assert hm.percent(1519, 151994, lego=True) == "     0.15"
    assert hm.percent(112082, 151994, lego=True) == "    73.11"
    assert hm.percent(5, 0) == "     0.00"


SEED_ROWS = [(0xffffffff8101a600, "cpu_idle", 112082), (0xffffffff810666f0, "__schedule", 19192),
             (0xffffffff8104f500, "mlx4_ib_poll_cq", 5551), (0xffffffff8103bf50, "delay_tsc", 5393),
             (0xffffffff81034a10, "victim_flush_async", 3766),
             (0xffffffff8102b220, "slob_alloc.constprop.3", 1992),
             (0xffffffff810668d0, "schedule", 1519),
             (0xffffffff810648f0, "fit_send_reply_with_rdma", 956),
             (0xffffffff81062370, "ibapi_send_reply_timeout", 307),
             (0xffffffff8105a0d0, "ib_mad_completion_handler", 232)]


def seed_table():
    lines = open(SEED).read().splitlines()
    start = next(i for i, ln in enumerate(lines) if "Kernel Heatmap (top #10)" in ln)
    return [re.sub(r"^\[ *[0-9.]+\] ?", "", ln) for ln in lines[start:start + 16]]


@pytest.mark.skipif(not __import__("os").path.exists(SEED), reason=(
    "needs seed 003's text (%s), which is not part of this repository" % SEED))
def test_lego_mode_reproduces_the_seed_table():
    out = hm.format_heatmap(SEED_ROWS, 151994, 10, 1 << 20, lego_percent=True)
    assert out.splitlines() == seed_table()


def test_correct_mode_differs_only_in_percent():
    out = hm.format_heatmap(SEED_ROWS, 151994, 10, 1 << 20).splitlines()
    assert out[3] == "ffffffff8101a600              cpu_idle      112082      73.74"
    assert out[9] == "ffffffff810668d0              schedule        1519       1.00"
    assert out[-2] == "                                            151994     100.00"
    assert out[-1] == ""


def test_top_is_capped_by_buckets_and_zero_rows():
    out = hm.format_heatmap([(STEXT, "a", 3)], 3, 10, 4)
    assert out.startswith("Kernel Heatmap (top #4)\n")
    assert out.count("\n") == 7


def test_main(tmp_path, capsys):
    p, m = write(tmp_path, 16, [5, 0, 0, 0, 7, 1, 0, 0, 3, 2, 0, 4])
    assert hm.main(["-p", p, "-m", m, "-n", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Kernel Heatmap (top #2)"
    assert out[3] == "ffffffff81000050                   foo          11      50.00"
    assert out[4] == "ffffffff81000090                   bar           6      27.27"
    assert out[6].endswith("22     100.00")
    assert hm.main(["-p", str(tmp_path / "nope"), "-m", m]) == 1
    assert "nope" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("readprofile") is None and not __import__("os").path.exists(
    "/usr/sbin/readprofile"), reason="util-linux readprofile not installed")
def test_readprofile_agrees_on_this_layout(tmp_path):
    """readprofile shifts by one bucket; the heatmap does not (see module doc)."""
    p, m = write(tmp_path, 16, [5, 0, 0, 0, 7, 1, 0, 0, 3, 2, 0, 4])
    rp = shutil.which("readprofile") or "/usr/sbin/readprofile"
    out = subprocess.run([rp, "-p", p, "-m", m], capture_output=True, text=True, check=True).stdout
    got = {ln.split()[1]: int(ln.split()[0]) for ln in out.splitlines()}
    # each symbol gets the bucket before it and loses its own last one
    assert got == {"startup_64": 5, "foo": 8, "bar": 5, "*unknown*": 4, "total": 18}


def test_long_names_are_whole_and_a_missing_profile_says_why(tmp_path, capsys):
    out = hm.format_heatmap([(0xffffffff81000000, "a_function_with_a_very_long_name", 7)], 7, 10, 10)
    assert "a_function_with_a_very_long_name" in out
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot" / "System.map").write_text("ffffffff81000000 T _stext\n")
    assert hm.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "proc/profile: no such file" in err and "profile=" in err and "Errno" not in err
