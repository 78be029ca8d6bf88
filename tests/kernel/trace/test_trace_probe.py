"""Probe arguments (trace_probe.py, trace_probe_tmpl.py): parsing, error
positions, print formats and fetching from a hit's state."""

import errno

import pytest

from fakefs.kernel.trace.trace_probe import (FL_FENTRY, FL_KERNEL, FL_RETURN, ParseContext,
                                             parse_event_name, parse_probe_arg,
                                             sanitize_event_name, split_symbol_offset)
from fakefs.kernel.trace.trace_probe_log import ERR_TEXTS, ProbeError, ProbeLog
from fakefs.kernel.trace.trace_probe_tmpl import (ProbeMemory, ProbeRegs, data_size, fetch_args,
                                                  print_args, print_fmt)


class FakeArray:
    def __init__(self):
        self.logged = []

    def log_err(self, loc, cmd, errs, err_type, pos):
        self.logged.append((loc, cmd, errs[err_type], pos))


class FakeSyms:
    def sprint_symbol(self, addr):
        return "func+0x%x/0x100" % (addr & 0xff)


def parse(words, flags=FL_KERNEL | FL_FENTRY):
    """Parse argument words of ``p vfs_read <words>``: (args, log entries)."""
    tr = FakeArray()
    argv = ["p", "vfs_read"] + words
    log = ProbeLog(tr, "trace_kprobe", argv)
    ctx = ParseContext(flags)
    args, size = [], 0
    try:
        for i, w in enumerate(words):
            log.set_index(i + 2)
            ctx.offset = 0
            a, size = parse_probe_arg(args, i, w, ctx, log, size)
            args.append(a)
    except ProbeError as e:
        return e.errno, tr.logged
    return args, tr.logged


def caret(marked):
    """ftracetest's check_error(): the command and where its ^ is."""
    return marked.replace("^", ""), marked.index("^")


@pytest.mark.parametrize("marked,text", [
    ("p vfs_read ^$retval", "$retval is not available on probe"),
    ("p vfs_read ^$stack10000", "Invalid stack number"),
    ("p vfs_read ^$arg10000", "Invalid argument number"),
    ("p vfs_read ^$none_var", "Invalid $-variable specified"),
    ("p vfs_read ^%none_reg", "Invalid register name"),
    ("p vfs_read ^@12345678abcde", "Invalid memory address"),
    ("p vfs_read ^@+10", "File offset is not available with kprobe"),
    ("p vfs_read arg1=\\^x", "Invalid immediate value"),
    ('p vfs_read arg1=\\"abcd^', "String is not closed with '\"'"),
    ("p vfs_read ^+0@0)", "Dereference needs a brace"),
    ("p vfs_read ^+0ab1(@0)", "Invalid dereference offset"),
    ("p vfs_read ^-+8(%ax)", "Invalid dereference offset"),
    ("p vfs_read +0(+0(@0^)", "Dereference brace is not closed"),
    ("p vfs_read +0(^$comm)", "$comm can not be dereferenced"),
    ("p vfs_read ^&1", "Invalid fetch argument"),
    ("p vfs_read +0(^+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0))))))))))))))",
     "Dereference is too much nested"),
    ("p vfs_read +0(@11):u8[10^", "Array is not closed"),
    ("p vfs_read +0(@11):u8[10]^a", "Array has wrong suffix"),
    ("p vfs_read +0(@11):u8[^10a]", "Invalid array size"),
    ("p vfs_read +0(@11):u8[^256]", "Array number is too big"),
    ("p vfs_read @11:^unknown_type", "Unknown type is specified"),
    ("p vfs_read $stack0:^string", "String accepts only memory argument"),
    ("p vfs_read @11:^b10@a/16", "Invalid bitfield"),
    ("p vfs_read ^arg123456789012345678901234567890=@11", "Argument name is too long"),
    ("p vfs_read ^=@11", "Argument name is not specified"),
    ("p vfs_read ^var.1=@11", "Argument name must follow the same rules as C identifiers"),
    ("p vfs_read var1=@11 ^var1=@12", "This argument name is already used"),
    ("p vfs_read ^+1234567(+1234567(+1234567(+1234567(+1234567(+1234567(@1234))))))",
     "Argument expression is too long"),
    ("p vfs_read arg1=^", "No argument expression"),
])
def test_error_positions(marked, text):
    cmd, pos = caret(marked)
    err, logged = parse(cmd.split()[2:])
    assert isinstance(err, int)
    assert logged == [("trace_kprobe", cmd, text, pos)]


def test_error_texts_are_the_kernels():
    assert ERR_TEXTS[0] == "Failed to find the given file"
    assert "Probe point is not an instruction boundary" in ERR_TEXTS
    assert len(ERR_TEXTS) == len(set(ERR_TEXTS))


def test_errnos():
    assert parse(["x" * 64])[0] == errno.E2BIG            # ARG_TOO_LONG
    assert isinstance(parse(["%ax"], FL_KERNEL)[0], list)   # registers: anywhere
    assert parse(["$arg1"], FL_KERNEL)[0] == errno.EINVAL  # not at an entry
    assert parse(["hoge"])[0] == errno.EOPNOTSUPP        # a BTF name: no BTF here


def test_good_arguments_and_listing_text():
    args, logged = parse(["%ax", "@0x10", "$stack", "$stack1", "+0(%ax)", "-0(%ax)",
                          "+10(@vfs_read-10)", "+0(+10(+20($stack)))", "name=%ax:x16",
                          "$comm", "$comm:string", "+0($stack):string", "\\1", '\\"foo"',
                          "%di:b4@4/32", "+0(%di):u8[4]", "%ax:symbol", "%ax:symstr"])
    assert not logged
    assert [a.name for a in args[:3]] == ["arg1", "arg2", "arg3"]
    assert args[8].name == "name" and args[8].comm == "%ax:x16"
    assert [a.type.name for a in args[-4:]] == ["u32", "u8", "symbol", "symstr"]


def test_return_probe_args():
    args, logged = parse(["$retval", "$arg2", "$arg1", "$arg2"], FL_KERNEL | FL_RETURN)
    assert not logged
    assert args[1].code[0] == ("edata", 0) and args[2].code[0] == ("edata", 1)
    assert args[3].code[0] == ("edata", 0)


def test_event_names():
    tr = FakeArray()
    log = ProbeLog(tr, "trace_kprobe", ["p:a/b", "x"])
    assert parse_event_name("grp/ev", log, 2) == ("grp", "ev")
    assert parse_event_name("grp/", log, 2) == ("grp", None)
    assert parse_event_name("ev", log, 2) == (None, "ev")
    with pytest.raises(ProbeError):
        parse_event_name("foo/bar.1", log, 2)
    assert tr.logged[-1][2:] == ("Event name must follow the same rules as C identifiers", 6)
    assert sanitize_event_name("p_foo.isra.0_0") == "p_foo_isra_0_0"
    assert split_symbol_offset("vfs_read+10") == ("vfs_read", 10)
    assert split_symbol_offset("vfs_read-0x10") == ("vfs_read", -16)
    for bad in ("hoge+1000-1000", "vfs_read++5", "vfs_read-+5", "vfs_read+"):
        with pytest.raises(ValueError):
            split_symbol_offset(bad)


def test_print_fmt_and_fetch():
    args, _ = parse(["a=%di:s8", "b=%di:x16", "c=+0(%si):string", "d=+0(%si):char[4]",
                     "e=%di:b4@4/8", "f=+0(%dx):string"])
    assert print_fmt(args, False) == (
        '"(%lx) a=%d b=0x%x c=\\"%s\\" d={\'%c\',\'%c\',\'%c\',\'%c\'} e=%u f=\\"%s\\"", '
        "REC->__probe_ip, REC->a, REC->b, __get_str(c), REC->d[0], REC->d[1], REC->d[2], "
        "REC->d[3], REC->e, __get_str(f)")
    mem = ProbeMemory(1, (0xffffffff81000000, 0xffffffff82000000),
                      {0xffff888000001000: b"test\0"})
    regs = ProbeRegs({"di": 0x1f5, "si": 0xffff888000001000, "dx": 0x10, "sp": 0}, [0],
                     "sh", mem, FakeSyms())
    values = fetch_args(args, regs)
    assert values[2] == "test" and values[5] is None          # user address: fault
    assert values[0] == -11                                   # signed as filters see it
    assert print_args(args, values, FakeSyms()) == (
        " a=-11 b=0x1f5 c=\"test\" d={'t','e','s','t'} e=15 f=(fault)")
    assert data_size(args, values) == 1 + 2 + 4 + 4 + 1 + 4 + len(b"test") + 1


def test_stack_and_memory_agree():
    args, _ = parse(["$stack", "$stack0", "+0($stack)", "+8($stack)", "$stack1"])
    mem = ProbeMemory(1, (0xffffffff81000000, 0xffffffff82000000),
                      stack=(0xffffc90000003f00, [0xffffffff81001234, 7]))
    regs = ProbeRegs({"sp": 0xffffc90000003f00}, [0xffffffff81001234, 7], "sh", mem, FakeSyms())
    v = fetch_args(args, regs)
    assert v == (0xffffc90000003f00, 0xffffffff81001234, 0xffffffff81001234, 7, 7)
