"""The symbol table (kernel/kallsyms.c) and %pS printing."""

from __future__ import annotations

import os
import re

import pytest

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.kernel.kallsyms import BUNDLED_PATH, Kallsyms, kallsyms_init
from fakefs.sim.clock import ManualClock
from fakefs.sim.files import finish

PS_RE = re.compile(r"^[A-Za-z0-9_.$]+\+0x[0-9a-f]+/0x[0-9a-f]+$")
LINE_RE = re.compile(r"^[0-9a-f]{16} [tTwW] [^\s]+(\t\[[^\]\s]+\])?$")


def host_readable() -> bool:
    try:
        with open("/proc/kallsyms") as f:
            for line in f:
                if line.split()[1] in "tT":
                    return int(line.split()[0], 16) != 0
    except OSError:
        pass
    return False


@pytest.fixture(scope="module")
def ks():
    return Kallsyms.load(host=False)


def small():
    core = [
        (0x1000, "T", "_stext"), (0x1000, "T", "_text"),
        (0x1000, "T", "first"), (0x1040, "t", "__pfx_second"), (0x1050, "t", "second"),
        (0x1090, "T", "third.isra.0"), (0x10f0, "W", "weak_fn"), (0x1200, "T", "_etext"),
        (0x2000, "T", "_sinittext"), (0x2000, "T", "init_fn"), (0x2400, "T", "_einittext"),
    ]
    mods = [(0xffff0000, "t", "mod_a", "mymod"), (0xffff0100, "T", "mod_b", "mymod"),
            (0xffff2000, "t", "other_fn", "other")]
    return Kallsyms(core, mods)


def test_bundled_table_loads_quickly(ks):
    assert len(Kallsyms.load_bundled()) == len(ks)
    assert Kallsyms.load(host=False) is ks    # read once per process
    assert ks.source == "bundled"
    assert len(ks) > 50_000
    assert os.path.getsize(BUNDLED_PATH) < 1_000_000


def test_lookup_offset_and_size(ks):
    a = ks.addr_of("vfs_read")
    assert a
    name, off, size, mod = ks.lookup(a)
    assert (name, off, mod) == ("vfs_read", 0, None)
    assert ks.lookup(a + size - 1)[:2] == ("vfs_read", size - 1)
    nxt = ks.lookup(a + size)
    assert nxt[0] != "vfs_read" and nxt[1] == 0


def test_aliases_take_the_first_name():
    k = small()
    assert k.lookup(0x1000) == ("_stext", 0, 0x40, None)
    assert k.lookup(0x1042) == ("__pfx_second", 2, 0x10, None)
    assert k.lookup(0x1060) == ("second", 0x10, 0x40, None)


def test_section_ends_and_unknown_addresses():
    k = small()
    # the last text symbol runs to _etext, init text to _einittext
    assert k.lookup(0x1100) == ("weak_fn", 0x10, 0x110, None)
    assert k.lookup(0x1200) is None                     # _etext is outside text
    assert k.lookup(0x2300) == ("_sinittext", 0x300, 0x400, None)
    assert k.lookup(0x2400) is None
    assert k.lookup(0x500) is None
    assert k.sprint_symbol(0x500) == "0x500"
    assert k.sprint_symbol_no_offset(0x1500) == "0x1500"


def test_module_symbols():
    k = small()
    assert k.lookup(0xffff0010) == ("mod_a", 0x10, 0x100, "mymod")
    # the last symbol of a module ends with its page
    assert k.lookup(0xffff0200) == ("mod_b", 0x100, 0xf00, "mymod")
    assert k.lookup(0xffff1000) is None
    assert k.sprint_symbol(0xffff0104) == "mod_b+0x4/0xf00 [mymod]"
    assert k.sprint_symbol_no_offset(0xffff0104) == "mod_b [mymod]"
    assert k.lookup(0xffff2000) == ("other_fn", 0, 0x1000, "other")


def test_sprint_symbol_formats(ks):
    a = ks.addr_of("schedule")
    assert ks.sprint_symbol(a) == "schedule+0x0/%#x" % ks.lookup(a)[2]
    s = ks.sprint_symbol(a + 0x1f)
    assert PS_RE.match(s) and s.startswith("schedule+0x1f/0x")
    assert ks.sprint_symbol_no_offset(a + 0x1f) == "schedule"
    assert ks.sprint_symbol(0x1234) == "0x1234"
    assert ks.sprint_symbol_no_offset(0) == "0x0"


def test_names_and_clones():
    k = small()
    assert "second" in k and "nothere" not in k
    assert k.addr_of("second") == 0x1050
    assert k.addr_of("nothere") is None
    assert k.resolve("second") == "second"
    assert k.resolve("third") == "third.isra.0"
    assert k.resolve("nothere") is None
    fns = list(k.functions())
    assert "second" in fns and "__pfx_second" not in fns and "mod_b" in fns


def test_proc_text_format(ks):
    text = ks.proc_text()
    lines = text.splitlines()
    assert len(lines) == len(ks)
    for line in lines[:2000] + lines[-50:]:
        assert LINE_RE.match(line), line
    assert text.endswith("\n")
    again = Kallsyms.from_proc_text(text, source="host")
    assert again.proc_text() == text
    hidden = small().proc_text(show_value=False)
    assert hidden.splitlines()[0] == "0000000000000000 T _stext"
    assert hidden.splitlines()[-1] == "0000000000000000 t other_fn\t[other]"


def test_hidden_addresses_are_not_a_table():
    assert Kallsyms.from_proc_text("0000000000000000 T _stext\n0000000000000000 t foo\n") is None


def test_bundled_roundtrip(tmp_path):
    k = small()
    path = tmp_path / "ks.gz"
    k.write_bundled(str(path))
    back = Kallsyms.load_bundled(str(path))
    assert back.proc_text() == k.proc_text()
    assert list(back.symbols()) == list(k.symbols())


@pytest.mark.skipif(not host_readable(), reason="host /proc/kallsyms hides addresses")
def test_host_table():
    host = Kallsyms.from_proc_text(open("/proc/kallsyms").read())
    assert Kallsyms.load(host=True).proc_text() == host.proc_text()
    assert host.source == "host"
    a = host.addr_of("vfs_read")
    assert host.lookup(a + 3)[:2] == ("vfs_read", 3)


def test_kallsyms_init_honours_kernel_choice():
    k = Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    kallsyms_init(k)
    assert k.kallsyms.source == "bundled"


# --- the simulated kernel's own addresses (KASLR), never the host's ----------
def _boot(cmdline="", seed=1, host=True):
    from fakefs.kernel.init import Kernel
    from fakefs.sim.clock import ManualClock
    k = Kernel(cmdline=cmdline, seed=seed, nr_cpus=1, clock=ManualClock(), host_kallsyms=host)
    return sim.keep_time(k.boot([("fakefs.kernel.kallsyms", "kallsyms_init")]))


def test_the_boot_parameter_chooses_the_table():
    """``fakefs.kallsyms=bundled``: the same symbols on every host (the
    lessons boot with it); a name it does not know is reported."""
    bundled = Kallsyms.load(host=False)
    k = _boot(cmdline="fakefs.kallsyms=bundled")
    assert k.kallsyms.source == "bundled"
    text = [ln for ln in k.kallsyms.proc_text(show_value=False).splitlines()
            if ln.split()[1] in "tTwW"]                      # (not the data symbols)
    assert text == bundled.proc_text(show_value=False).splitlines()
    host = _boot(cmdline="fakefs.kallsyms=host").kallsyms
    assert host.source == ("host" if host_readable() else "bundled")
    k = _boot(cmdline="fakefs.kallsyms=vmlinux")
    assert any(r.text == "fakefs.kallsyms=vmlinux: no such table (host, bundled)"
               for r in k.log.records)


def test_kaslr_slide_is_the_simulated_machines():
    from fakefs.kernel.kallsyms import KASLR_ALIGN, KERNEL_TEXT_BASE, MODULE_PAGE
    src = Kallsyms.load(host=True)
    a, b, again = _boot(seed=1).kallsyms, _boot(seed=2).kallsyms, _boot(seed=1).kallsyms
    stext = a.addr_of("_stext")
    assert stext != src.addr_of("_stext")                   # not where the host's kernel is
    assert (stext - KERNEL_TEXT_BASE) % KASLR_ALIGN == 0 and stext > KERNEL_TEXT_BASE
    assert again.addr_of("_stext") == stext                 # same seed, same boot
    assert b.addr_of("_stext") != stext
    # the table is only moved: same names, same offsets and sizes
    fn = "schedule"
    assert a.lookup(a.addr_of(fn) + 5)[:3] == src.lookup(src.addr_of(fn) + 5)[:3]
    mods = [s for s in a.symbols() if s[3] is not None]
    if mods:
        src_mods = [s for s in src.symbols() if s[3] is not None]
        assert (mods[0][0] - src_mods[0][0]) % MODULE_PAGE == 0
        assert mods[0][0] != src_mods[0][0]


def test_nokaslr_keeps_the_link_address():
    from fakefs.kernel.kallsyms import KERNEL_TEXT_BASE
    k = _boot(cmdline="nokaslr")
    assert k.kallsyms.addr_of("_stext") == KERNEL_TEXT_BASE
    assert "nokaslr" not in k.cmdline.unknown


def test_no_host_address_in_system_map():
    """Every address System.map publishes is the simulated boot's."""
    from fakefs.kernel.system_map import system_map_text
    try:
        with open("/proc/kallsyms") as fh:
            host = {tuple(ln.split()[::2][:2]) for ln in fh if not ln.startswith("0" * 16)}
    except OSError:
        pytest.skip("host /proc/kallsyms not readable")
    k = _boot()
    pairs = {tuple(ln.split()[::2]) for ln in system_map_text(k.kallsyms).decode().splitlines()}
    assert pairs and not (pairs & host)      # no symbol where the host has it


# --- who sees the addresses: kallsyms_show_value() -----------------------------
def _read_as(k, path, uid):
    from fakefs.kernel.fs.pseudo import File
    n = k.tree.root.walk(path)
    f = File(n, os.O_RDONLY, uid=uid)
    n.fops.open(f)
    return n.fops.read(f, 0, 1 << 30).decode()


def _addresses(text):
    return {int(ln.split()[0], 16) != 0 for ln in text.splitlines()}


def test_proc_kallsyms_zeroes_addresses_for_a_reader_without_cap_syslog():
    """kptr_restrict 0 with Debian's perf_event_paranoid (3): only CAP_SYSLOG
    (the simulated root) sees addresses; 1 the same; 2 nobody.  Decided at
    open, with the opener's credentials."""
    from fakefs.kernel.fs.pseudo import File
    from fakefs.sim.clock import ManualClock
    k = sim.keep_time(Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False).boot(
        [("fakefs.kernel.printk", "devkmsg_init"), ("fakefs.kernel.kallsyms", "kallsyms_init")]))
    assert _read_as(k, "proc/kallsyms", 0) == k.kallsyms.proc_text()
    assert _addresses(_read_as(k, "proc/kallsyms", 0)) == {True}
    hidden = _read_as(k, "proc/kallsyms", 65534)
    assert hidden == k.kallsyms.proc_text(show_value=False) and _addresses(hidden) == {False}
    n = k.tree.root.walk("proc/kallsyms")
    opened = File(n, os.O_RDONLY, uid=0)
    n.fops.open(opened)
    for restrict, root_sees in (("1", True), ("2", False), ("0", True)):
        sysctl = k.tree.root.walk("proc/sys/kernel/kptr_restrict")
        w = File(sysctl, os.O_WRONLY)
        sysctl.fops.write(w, restrict.encode())
        assert _addresses(_read_as(k, "proc/kallsyms", 0)) == {root_sees}, restrict
        assert _addresses(_read_as(k, "proc/kallsyms", 1000)) == {False}, restrict
    assert _addresses(n.fops.read(opened, 0, 1 << 30).decode()) == {True}   # opened before the 2


def test_before_kptr_restrict_every_reader_saw_addresses():
    from fakefs.sim.clock import ManualClock
    k = sim.keep_time(Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False,
               persona="2.6.30-eqware").boot(
        [("fakefs.kernel.printk", "devkmsg_init"), ("fakefs.kernel.kallsyms", "kallsyms_init")]))
    assert k.tree.root.walk("proc/sys/kernel/kptr_restrict") is None
    assert _addresses(_read_as(k, "proc/kallsyms", 1000)) == {True}


def test_every_file_of_kernel_addresses_hides_them_the_same_way():
    """/proc/kallsyms, /proc/modules and debugfs' kprobes/list decide at
    open alike: root sees the addresses, another reader zeros, and with
    kptr_restrict 2 root sees zeros too."""
    from fakefs.kernel.fs.pseudo import File
    from fakefs.kernel.kprobes import Kprobe
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    finish(k, k.modules.load("trace_printk"))     # (its init: a Later)
    k.kprobes.register(Kprobe(None, "kernel_clone", 0, False))
    files = (("proc/kallsyms", 0), ("proc/modules", -1), ("sys/kernel/debug/kprobes/list", 0))

    def shown(uid):
        return [{int(ln.split()[field], 16) != 0 for ln in _read_as(k, path, uid).splitlines()}
                for path, field in files]

    assert shown(0) == [{True}] * 3 and shown(1000) == [{False}] * 3
    sysctl = k.tree.root.walk("proc/sys/kernel/kptr_restrict")
    sysctl.fops.write(File(sysctl, os.O_WRONLY), b"2")
    assert shown(0) == [{False}] * 3


def test_kallsyms_all_lists_data_symbols_with_known_contents():
    """CONFIG_KALLSYMS_ALL: data symbols after the text in address order,
    found by name; the banners hold what /proc/version prints from."""
    from fakefs.kernel.version import linux_banner, linux_proc_banner
    k = _boot(cmdline="fakefs.kallsyms=bundled")
    ks = k.kallsyms
    lines = ks.proc_text().splitlines()
    addrs = [int(ln.split()[0], 16) for ln in lines if "\t[" not in ln]
    assert addrs == sorted(addrs)
    data = [ln for ln in lines if ln.split()[1] in "RD"]
    assert [ln.split()[2] for ln in data][:2] == ["linux_banner", "linux_proc_banner"]
    etext = ks.addr_of("_etext")
    at = ks.addr_of("linux_proc_banner")
    assert at > etext and at % 0x20 == 0 and "R linux_proc_banner" in data[1]
    assert ks.data_contents[at] == linux_proc_banner(k).encode() + b"\0"
    assert linux_proc_banner(k) % ("Linux", k.config.release, "#1 SMP PREEMPT_DYNAMIC") \
        == linux_banner(k)
    from fakefs.kernel.init import Kernel
    from fakefs.sim.clock import ManualClock
    old = Kernel("2.6.30-eqware", "fakefs.kallsyms=bundled", seed=1, nr_cpus=1,
                 clock=ManualClock(), host_kallsyms=False)
    sim.keep_time(old.boot([("fakefs.kernel.kallsyms", "kallsyms_init")]))
    assert old.kallsyms.data == [] and "linux_proc_banner" not in old.kallsyms


# --------------------------------------------------------------- packed names
def test_name_table_is_the_list_and_dict_it_replaced():
    """``NameTable``: the i-th name, every name in order, a name's first
    position and all of them, as a list and a dict of first positions say
    (duplicates, a name that is a prefix of another, non-ASCII, absent)."""
    import random
    from fakefs.kernel._kallsyms import NameTable
    rnd = random.Random(7)
    names = ["n%d" % rnd.randrange(3000) for _ in range(20000)]
    names += ["", "n1", "n10", "caf\u00e9", "\ufffd", "n1"]
    t = NameTable(names)
    assert len(t) == len(names) and list(t) == names
    assert t[0] == names[0] and t[-1] == names[-1] and t[20001] == names[20001]
    with pytest.raises(IndexError):
        t[len(names)]
    first, every = {}, {}
    for i, n in enumerate(names):
        first.setdefault(n, i)
        every.setdefault(n, []).append(i)
    for n in list(first)[:500] + ["", "n1", "caf\u00e9", "\ufffd"]:
        assert t.index(n) == first[n] and t.positions(n) == every[n], n
    for n in ("n", "n1 ", "zz", "cafe", "n30000"):
        assert t.index(n) == -1 and t.positions(n) == []
    assert len(NameTable([])) == 0 and NameTable([]).index("x") == -1
    with pytest.raises(ValueError):
        NameTable(["a\nb"])


def test_lookups_by_name_as_before(ks):
    """``addr_of`` and ``in``: vmlinux's first symbol of a name, then the
    modules', then the data symbols' (what the dict by name answered)."""
    t = small()
    assert t.addr_of("second") == 0x1050 and t.addr_of("__pfx_second") == 0x1040
    assert "weak_fn" in t and "nope" not in t and t.addr_of("nope") is None
    assert t.resolve("third") == "third.isra.0"
    assert t.addr_of("mod_a") == 0xffff0000 and "other_fn" in t
    names = list(ks.core_names())
    for i in range(0, len(names), 997):
        assert ks.addr_of(names[i]) == ks.core_addrs()[names.index(names[i])]


@pytest.mark.parametrize("table", ["small", "bundled"])
def test_a_relocated_table_is_the_table_built_at_its_addresses(ks, table):
    """A relocated table shares its original's address array (``_shift``):
    every answer is the one a table built with the moved addresses gives,
    and so is a relocation of a relocation."""
    src = small() if table == "small" else ks
    text_base, module_base = 0xffffffff8a000000, 0xffffffffc2345000
    moved = src.relocated(text_base, module_base)
    again = moved.relocated(text_base + 0x400000, module_base + 0x1000)
    assert moved._addrs is src._addrs is again._addrs            # one array
    for rel, tb, mb in ((moved, text_base, module_base), (again, text_base + 0x400000, module_base + 0x1000)):
        core = [(a, t, n) for a, t, n, m in src.symbols() if m is None]
        mods = [s for s in src.symbols() if s[3] is not None]
        stext = src.addr_of("_stext")
        dt, dm = tb - stext, (mb - min(s[0] for s in mods)) if mods else 0
        built = Kallsyms([(a + dt, t, n) for a, t, n in core],
                         [(a + dm, t, n, m) for a, t, n, m in src._mod_order])
        assert list(rel.symbols()) == list(built.symbols())
        assert rel.core_addrs() == built.core_addrs() and rel._text == built._text
        assert rel._inittext == built._inittext
        assert rel.proc_text() == built.proc_text() and rel.proc_text(False) == built.proc_text(False)
        names = list(src.core_names())
        step = 1 if len(names) < 100 else 37
        for n in names[::step]:
            assert rel.addr_of(n) == built.addr_of(n), n
        # lookups at, inside and between symbols, and outside the text
        addrs = sorted(set(built.core_addrs()))
        probes = [a + d for a in addrs[::step] for d in (-1, 0, 1, 7)]
        probes += [addrs[0] - 4096, addrs[-1] + 4096, built._text[1], built._text[1] - 1]
        for a in probes:
            assert rel.lookup(a) == built.lookup(a), hex(a)
            assert rel.sprint_symbol(a) == built.sprint_symbol(a)


def _parsed_as_lines(text, source="host"):
    """/proc/kallsyms read the way from_proc_text() did before it read in
    place: the lines, the fixed-width vmlinux text lines among them."""
    from array import array

    from fakefs.kernel.kallsyms import TEXT_TYPES, _parse_line
    lines = text.splitlines()
    core = [ln for ln in lines if len(ln) > 19 and ln[17] in TEXT_TYPES and "\t" not in ln]
    if not core or any(len(ln) < 20 or ln[16] != " " or ln[18] != " " for ln in (core[0], core[-1])):
        return Kallsyms._from_proc_text_slow(lines, source)
    addrs = array("Q", (int(ln[:16], 16) for ln in core))
    if not addrs[-1]:
        return None
    mods = [m for m in (_parse_line(ln) for ln in lines if "\t" in ln) if m is not None and m[3] is not None]
    ks = Kallsyms.__new__(Kallsyms)
    ks._setup([ln[17] for ln in core], [ln[19:] for ln in core], addrs, mods, source)
    return ks


def test_proc_text_read_in_place_as_its_lines(ks):
    """from_proc_text() reads the text in place (no list of lines): the
    table is the one the lines gave, for the bundled table's text, the
    host's, a table with data symbols and modules, and texts that take the
    slow way or hide their addresses."""
    texts = [ks.proc_text(), small().proc_text()]
    if host_readable():
        texts.append(open("/proc/kallsyms").read())
    mixed = ("ffffffff81000000 T _stext\nffffffff81000000 t first\nffffffff81000010 d some_data\n"
             "ffffffff81000020 W weak_one\nffffffff81000040 T _etext\n"
             "ffffffffc0000000 t mod_fn\t[mymod]\nffffffffc0000040 t mod_two\t[mymod]\n"
             "ffffffffc0001000 b mod_bss\t[mymod]\n")
    texts += [mixed, mixed.replace("\n", "\n\n"),
              "c1000000 T _stext\nc1000010 t foo\n",                 # 32-bit: the slow way
              "0000000000000000 T _stext\n0000000000000000 t foo\n"]  # hidden
    for text in texts:
        new, old = Kallsyms.from_proc_text(text), _parsed_as_lines(text)
        if old is None:
            assert new is None
            continue
        assert list(new.symbols()) == list(old.symbols())
        assert new.proc_text() == old.proc_text() and new._types == old._types
        assert (new._text, new._inittext, new.source) == (old._text, old._inittext, old.source)
