"""fakefs picture: folded stacks, flame graph, allocinfo chart and profile heatmap.

The pictures are checked by their content: the frames, labels, counts and
sizes in the SVG (parsed as XML), not only that a file appeared.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from fakefs.views import pictures
from fakefs.views.charts import parse_allocinfo
from fakefs.cli import main
from fakefs.views.flamegraph import WIDTH, XPAD, frame_name, parse_folded
from fakefs.views.svgdoc import human_bytes
from mountlib import REPO, mounted, requires_fuse

NS = "{http://www.w3.org/2000/svg}"

# innermost frame first, as the kernel lists them; stacks 12 and 40 differ
# only in offsets, so they merge
STACK_MAP = """\
stack_id 12 [ref 5, depth 4]
    [0] vfs_read+0x9/0x360
    [1] ksys_read+0x3d/0xe0
    [2] do_syscall_64+0x8f/0x280
    [3] entry_SYSCALL_64_after_hwframe+0x36/0x7e

stack_id 40 [ref 2, depth 4]
    [0] vfs_read+0x11/0x360
    [1] ksys_read+0x40/0xe0
    [2] do_syscall_64+0x8f/0x280
    [3] entry_SYSCALL_64_after_hwframe+0x36/0x7e

stack_id 77 [ref 3, depth 4]
    [0] ext4_file_read_iter+0x5/0x90 [ext4]
    [1] vfs_read+0x120/0x360
    [2] do_syscall_64+0x8f/0x280
    [3] entry_SYSCALL_64_after_hwframe+0x36/0x7e

stack_id 90 [ref 10, depth 3]
    [0] pv_native_safe_halt+0xb/0x10
    [1] default_idle+0x21/0x30
    [2] 0xffffffffc0ffee00

"""

FOLDED = """\
0xffffffffc0ffee00;default_idle;pv_native_safe_halt 10
entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_read;vfs_read 7
entry_SYSCALL_64_after_hwframe;do_syscall_64;vfs_read;ext4_file_read_iter [ext4] 3
"""


def svg_root(text):
    assert text.startswith("<?xml")
    root = ET.fromstring(text.encode())
    assert root.tag == NS + "svg"
    return root


def groups(root, cls):
    return [g for g in root.iter(NS + "g") if g.get("class") == cls]


def title_of(el):
    return el.find(NS + "title").text


# ------------------------------------------------------------------ folded
def test_frame_name_drops_offsets_keeps_module_tags():
    assert frame_name("vfs_read+0x9/0x360") == "vfs_read"
    assert frame_name("ext4_file_read_iter+0x5/0x90 [ext4]") == "ext4_file_read_iter [ext4]"
    assert frame_name("0xffffffffc0ffee00") == "0xffffffffc0ffee00"
    assert frame_name("a;b+0x1/0x2") == "a:b"


def test_folded_stacks_outermost_first_merged_and_weighted_by_refs():
    assert pictures.folded_stacks(STACK_MAP) == FOLDED
    assert pictures.folded_stacks("") == ""
    # the total weight is the sum of the ref counts
    assert sum(n for _, n in parse_folded(FOLDED)) == 5 + 2 + 3 + 10


# ------------------------------------------------------------------ flame
def frames(svg):
    out = {}
    for g in groups(svg_root(svg), "frame"):
        rect = g.find(NS + "rect")
        text = g.find(NS + "text")
        out.setdefault(g.get("data-name"), []).append({
            "count": int(g.get("data-count")), "title": title_of(g),
            "x": float(rect.get("x")), "y": float(rect.get("y")),
            "w": float(rect.get("width")), "label": None if text is None else text.text})
    return out


def test_flame_graph_frames_counts_and_widths():
    svg = pictures.flame_graph_svg(FOLDED, "my <flame> & graph")
    root = svg_root(svg)
    assert root.find(NS + "title").text == "my <flame> & graph"
    texts = {t.get("class"): t for t in root.iter(NS + "text") if t.get("class")}
    assert texts["title"].text == "my <flame> & graph"
    assert texts["total"].get("data-total") == "20"
    assert texts["total"].text.startswith("Total: 20 ")
    f = frames(svg)
    expect = {"all": [20], "entry_SYSCALL_64_after_hwframe": [10], "do_syscall_64": [10],
              "ksys_read": [7], "vfs_read": [3, 7], "ext4_file_read_iter [ext4]": [3],
              "0xffffffffc0ffee00": [10], "default_idle": [10], "pv_native_safe_halt": [10]}
    assert {k: sorted(d["count"] for d in v) for k, v in f.items()} == expect
    scale = (WIDTH - 2 * XPAD) / 20
    for name, drawn in f.items():
        for d in drawn:
            # every frame: its name, count and share in the tooltip
            assert d["title"] == "%s (%d, %.2f%%)" % (name, d["count"], 100 * d["count"] / 20)
            # width proportional to the weight
            assert d["w"] == pytest.approx(d["count"] * scale, abs=0.01)
            # a label is the name, or a cut of it that fits
            if d["label"] is not None:
                assert d["label"] == name or (d["label"].endswith("..")
                                              and name.startswith(d["label"][:-2]))
                assert len(d["label"]) * 6.6 <= d["w"]
    assert f["all"][0]["x"] == XPAD and f["all"][0]["w"] == WIDTH - 2 * XPAD
    # the root at the bottom, callees above, children inside their parent
    assert f["default_idle"][0]["y"] < f["0xffffffffc0ffee00"][0]["y"] < f["all"][0]["y"]
    ext4 = f["ext4_file_read_iter [ext4]"][0]
    parent = [d for d in f["vfs_read"] if d["count"] == 3][0]
    assert parent["x"] <= ext4["x"] and ext4["x"] + ext4["w"] <= parent["x"] + parent["w"] + 0.01
    assert ext4["y"] < parent["y"]
    # siblings side by side: 0xff… (10) then entry_SYSCALL… (10), sorted by name
    a, b = f["0xffffffffc0ffee00"][0], f["entry_SYSCALL_64_after_hwframe"][0]
    assert a["x"] + a["w"] == pytest.approx(b["x"], abs=0.01)


def test_flame_graph_cuts_long_labels_and_escapes():
    long = "a_really_long_function_name_that_cannot_fit_in_a_small_box"
    svg = pictures.flame_graph_svg("big 990\n%s 10\nx<&>y 0\n" % long)
    f = frames(svg)
    assert f[long][0]["label"] is None or f[long][0]["label"].endswith("..")
    assert f["big"][0]["label"] == "big"
    assert "x<&>y" not in f                       # weight 0: nothing to draw
    with pytest.raises(ValueError):
        pictures.flame_graph_svg("no count here\n")


# ------------------------------------------------------------------ allocinfo
ALLOCINFO = """\
allocinfo - version: 2.0
#     <size>  <calls> <tag info>
        4096        1 init/main.c:1311 func:do_initcalls 
     1572864      384 mm/page_ext.c:271 func:alloc_page_ext 
           0        0 mm/slub.c:2480 func:alloc_slab_page 
       10240       10 fs/ext4/super.c:1419 [ext4] func:ext4_alloc_inode 
    52428800    12800 arch/x86/kvm/x86.c:11541 [kvm] func:kvm_arch_vcpu_create 
         100        2 kernel/fork.c:188 func:alloc_task_struct_node accurate:no 
"""


def test_human_bytes():
    assert human_bytes(100) == "100 B"
    assert human_bytes(1023) == "1023 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(1572864) == "1.5 MiB"
    assert human_bytes(50 << 20) == "50.0 MiB"
    assert human_bytes(3 << 30) == "3.0 GiB"


def test_allocinfo_parse():
    sites = parse_allocinfo(ALLOCINFO)
    assert [(s.bytes, s.calls, s.where, s.module, s.function, s.inaccurate) for s in sites][3:] == [
        (10240, 10, "fs/ext4/super.c:1419", "ext4", "ext4_alloc_inode", False),
        (52428800, 12800, "arch/x86/kvm/x86.c:11541", "kvm", "kvm_arch_vcpu_create", False),
        (100, 2, "kernel/fork.c:188", None, "alloc_task_struct_node", True)]
    with pytest.raises(ValueError):
        parse_allocinfo("allocinfo - version: 1.0\ngarbage\n")


def test_allocinfo_chart_sorted_labelled_with_total():
    root = svg_root(pictures.allocinfo_chart_svg(ALLOCINFO, top=4))
    bars = groups(root, "bar")
    got = [(b.get("data-bytes"), b.find(NS + "text[@class='function']").text,
            b.find(NS + "text[@class='where']").text, b.find(NS + "text[@class='size']").text)
           for b in bars]
    assert got == [
        ("52428800", "kvm_arch_vcpu_create [kvm]", "arch/x86/kvm/x86.c:11541", "50.0 MiB  (12800 calls)"),
        ("1572864", "alloc_page_ext", "mm/page_ext.c:271", "1.5 MiB  (384 calls)"),
        ("10240", "ext4_alloc_inode [ext4]", "fs/ext4/super.c:1419", "10.0 KiB  (10 calls)"),
        ("4096", "do_initcalls", "init/main.c:1311", "4.0 KiB  (1 calls)")]
    widths = [float(b.find(NS + "rect").get("width")) for b in bars]
    assert widths == sorted(widths, reverse=True)
    assert widths[1] / widths[0] == pytest.approx(1572864 / 52428800, rel=1e-3)
    # module sites in their own colour
    fills = [b.find(NS + "rect").get("fill") for b in bars]
    assert fills[0] == fills[2] != fills[1] == fills[3]
    total = 4096 + 1572864 + 10240 + 52428800 + 100
    head = [t for t in root.iter(NS + "text") if t.get("class") == "total"][0]
    assert head.get("data-total") == str(total)
    assert head.text == ("Total: %s (%d bytes) in 6 sites, 5 with bytes allocated, 13197 calls"
                         % (human_bytes(total), total))
    assert "52428800 bytes" in title_of(bars[0]) and "[kvm]" in title_of(bars[0])
    # the zero-byte site is never drawn; the not-accurate one says so
    all_bars = groups(svg_root(pictures.allocinfo_chart_svg(ALLOCINFO)), "bar")
    assert len(all_bars) == 5 and "(not accurate)" in title_of(all_bars[-1])


# ------------------------------------------------------------------ profile
STEXT = 0xffffffff81000000
SYSTEM_MAP = "".join("%016x %s %s\n" % (STEXT + a, t, n) for a, t, n in [
    (0x0, "T", "_stext"), (0x0, "T", "startup_64"), (0x40, "T", "__pfx_schedule"),
    (0x50, "T", "schedule"), (0x90, "t", "pv_native_safe_halt"), (0xc0, "T", "_etext"),
    (0xd0, "t", "init_thing")])


def profile_buffer(step, counts):
    return struct.pack("=I%dI" % len(counts), step, *counts)


def test_profile_heatmap_top_functions_and_ticks():
    # step 16: buckets 0..3 _stext (= startup_64; the first name of an address, as
    # fakefs heatmap does), 4 __pfx_schedule (counts as schedule),
    # 5..8 schedule, 9..11 pv_native_safe_halt
    counts = [1, 0, 0, 1, 2, 3, 0, 0, 0, 40, 0, 50]
    root = svg_root(pictures.profile_heatmap_svg(profile_buffer(16, counts), SYSTEM_MAP, top=2))
    fns = groups(root, "fn")
    assert [(g.get("data-name"), int(g.get("data-ticks"))) for g in fns] == [
        ("pv_native_safe_halt", 90), ("schedule", 5)]
    assert [g.find(NS + "text[@class='name']").text for g in fns] == ["pv_native_safe_halt",
                                                                       "schedule"]
    assert fns[0].find(NS + "text[@class='ticks']").text == (
        "90 ticks  %.2f%%  %x" % (9000 / 97, STEXT + 0x90))
    assert title_of(fns[1]) == "schedule at %x: 5 ticks, %.2f%%" % (STEXT + 0x50, 500 / 97)
    w = [float(g.find(NS + "rect").get("width")) for g in fns]
    assert w[1] / w[0] == pytest.approx(5 / 90, rel=1e-2)
    head = [t for t in root.iter(NS + "text") if t.get("class") == "total"][0]
    assert head.get("data-total") == "97" and head.text.startswith("Total: 97 ticks in 3 functions")
    # the heat strip holds every tick; the hottest cell is the darkest
    cells = [r for r in root.iter(NS + "rect") if r.get("class") == "cell"]
    assert sum(int(c.get("data-ticks")) for c in cells) == 97
    hot = max(cells, key=lambda c: int(c.get("data-ticks")))
    assert "hottest: pv_native_safe_halt, 90" in title_of(hot)
    rgb = lambda c: sum(map(int, re.findall(r"\d+", c.get("fill"))))  # noqa: E731
    assert rgb(hot) == min(rgb(c) for c in cells)
    top3 = groups(svg_root(pictures.profile_heatmap_svg(profile_buffer(16, counts), SYSTEM_MAP)),
                  "fn")
    assert [g.get("data-name") for g in top3] == ["pv_native_safe_halt", "schedule", "_stext"]


def test_profile_heatmap_rejects_junk():
    with pytest.raises(ValueError):
        pictures.profile_heatmap_svg(b"", SYSTEM_MAP)
    with pytest.raises(ValueError):
        pictures.profile_heatmap_svg(profile_buffer(16, [1]), "no map here\n")


# ------------------------------------------------------------------ a real kernel
def test_pictures_of_an_in_process_kernel():
    from fakefs import sim
    from fakefs.sim.files import read_file, write_file
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                 cmdline="profile=2 sysctl.vm.mem_profiling=1")
    t = "sys/kernel/tracing/"
    write_file(k, t + "options/stackmap", b"1")
    write_file(k, t + "options/stacktrace", b"1")
    write_file(k, t + "current_tracer", b"function")
    k.clock.advance(200_000_000)
    k.timekeeper.run_until_now()
    write_file(k, t + "tracing_on", b"0")
    smap = read_file(k, t + "stack_map").decode()
    refs = [int(r) for r in re.findall(r"^stack_id \d+ \[ref (\d+), depth \d+\]$", smap, re.M)]
    assert len(refs) > 50
    folded = pictures.folded_stacks(smap)
    stacks = parse_folded(folded)
    assert sum(n for _, n in stacks) == sum(refs)
    assert len(stacks) <= len(refs)
    # the leaves are the traced functions (frame [0]), the roots entry points
    leaves = {frame_name(s) for s in re.findall(r"^    \[0\] (.*)$", smap, re.M)}
    assert {f[-1] for f, _ in stacks} == leaves
    assert not any("+0x" in fr for f, _ in stacks for fr in f)
    root = svg_root(pictures.flame_graph_svg(folded))
    assert groups(root, "frame")[0].get("data-count") == str(sum(refs))
    # allocinfo: every line parsed, the chart's total the sum of the first column
    info = read_file(k, "proc/allocinfo").decode()
    total = sum(int(l.split()[0]) for l in info.splitlines()[2:])
    head = [x for x in svg_root(pictures.allocinfo_chart_svg(info)).iter(NS + "text")
            if x.get("class") == "total"][0]
    assert int(head.get("data-total")) == total > 0
    # profile: the ticks of the heatmap are the counters' sum
    prof = read_file(k, "proc/profile")
    counters = struct.unpack("=%dI" % (len(prof) // 4), prof)[1:]
    svg = pictures.profile_heatmap_svg(prof, read_file(k, "boot/System.map").decode())
    head = [x for x in svg_root(svg).iter(NS + "text") if x.get("class") == "total"][0]
    assert int(head.get("data-total")) == sum(counters) > 0


# ------------------------------------------------------------------ the command
def tree(tmp_path, stack_map=None, allocinfo=None, profile=None, system_map=None):
    for rel, data in (("sys/kernel/tracing/stack_map", stack_map), ("proc/allocinfo", allocinfo),
                      ("proc/profile", profile), ("boot/System.map", system_map)):
        if data is not None:
            p = tmp_path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(tmp_path)


def test_picture_command_writes_each_kind(tmp_path, capsys):
    mnt = tree(tmp_path / "m", STACK_MAP, ALLOCINFO, profile_buffer(16, [0, 0, 0, 0, 0, 7]),
               SYSTEM_MAP)
    assert main(["picture", "folded", mnt]) == 0
    assert capsys.readouterr().out == FOLDED
    out = tmp_path / "f.svg"
    assert main(["picture", "flamegraph", mnt, "-o", str(out), "--title", "T"]) == 0
    assert groups(svg_root(out.read_text()), "frame")[0].get("data-count") == "20"
    assert main(["picture", "allocinfo", mnt, "-n", "1"]) == 0
    bars = groups(svg_root(capsys.readouterr().out), "bar")
    assert [b.get("data-function") for b in bars] == ["kvm_arch_vcpu_create"]
    assert main(["picture", "profile", mnt]) == 0
    fns = groups(svg_root(capsys.readouterr().out), "fn")
    assert [(g.get("data-name"), g.get("data-ticks")) for g in fns] == [("schedule", "7")]


def test_picture_command_errors_in_words(tmp_path, capsys):
    mnt = tree(tmp_path, "", "allocinfo - version: 1.0\n#\n  0 0 a.c:1 func:f \n",
               profile_buffer(16, [0, 0]), SYSTEM_MAP)
    assert main(["picture", "folded", mnt]) == 1
    assert "enable options/stackmap and options/stacktrace first" in capsys.readouterr().err
    assert main(["picture", "allocinfo", mnt]) == 1
    assert "sysctl.vm.mem_profiling=1" in capsys.readouterr().err
    assert main(["picture", "profile", mnt]) == 1
    assert "no ticks yet" in capsys.readouterr().err
    os.unlink(os.path.join(mnt, "proc/profile"))
    assert main(["picture", "profile", mnt]) == 1
    assert "boot with --cmdline profile=2" in capsys.readouterr().err
    assert main(["picture", "flamegraph", str(tmp_path / "nowhere")]) == 1
    assert "no such directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["picture", "pie", mnt])


@requires_fuse
def test_pictures_of_a_mount():
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def fakefs(*args):
        r = subprocess.run([sys.executable, "-m", "fakefs", *args], capture_output=True,
                           text=True, env=env, timeout=120)
        return r

    with mounted(cmdline="profile=2 trace_options=stackmap,stacktrace ftrace=function",
                 extra_args=["--clock", "virtual"]) as mnt:
        assert fakefs("clock", mnt, "+200ms").returncode == 0
        with open(os.path.join(mnt, "sys/kernel/tracing/tracing_on"), "w") as fh:
            fh.write("0\n")
        with open(os.path.join(mnt, "sys/kernel/tracing/stack_map")) as fh:
            smap = fh.read()
        r = fakefs("picture", "folded", mnt)
        assert r.returncode == 0, r.stderr
        refs = sum(int(n) for n in re.findall(r"\[ref (\d+),", smap))
        assert refs > 0 and sum(n for _, n in parse_folded(r.stdout)) == refs
        r = fakefs("picture", "profile", mnt)
        assert r.returncode == 0, r.stderr
        assert groups(svg_root(r.stdout), "fn")
