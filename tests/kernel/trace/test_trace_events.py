import os

from fakefs.kernel.fs.pseudo import File, PseudoTree
from fakefs.kernel.trace.trace_events import event_trace_add_tracer
from fakefs.kernel.trace.ring_buffer import RingBuffer
from fakefs.kernel.config import Kconfig


class K:
    def __init__(self, stackmap=True):
        self.tree = PseudoTree()
        self.config = Kconfig.from_persona(overrides={"FTRACE_STACKMAP": stackmap})


class Tracing:
    events = []
    event_systems = {}
    ftrace_events = []          # no catalogue: the hand-written entry types


class Tr:
    def __init__(self, stackmap=True):
        self.kernel = K(stackmap)
        self.tracing = Tracing()
        self.buffer = RingBuffer(1, 1)      # header_page shows its sub-buffer size


def read(node):
    f = File(node, os.O_RDONLY)
    return node.fops.read(f, 0, 65536).decode()


def make(stackmap=True):
    tr = Tr(stackmap)
    event_trace_add_tracer(tr, tr.kernel.tree.root)
    return tr.kernel.tree.root.children["events"]


def test_stack_id_event_format():
    ev = make()
    assert read(ev.walk("ftrace/stack_id/format")) == (
        "name: stack_id\nID: 20\nformat:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
        "\tfield:int stack_id;\toffset:8;\tsize:4;\tsigned:1;\n\n"
        "print fmt: \"<stack_id %d>\", REC->stack_id\n")
    assert sorted(ev.walk("ftrace/stack_id").children) == ["format", "hist"]


def test_function_and_print_files():
    ev = make()
    assert sorted(ev.walk("ftrace/function").children) == ["format", "hist", "id"]
    assert read(ev.walk("ftrace/function/id")) == "1\n"
    assert "print fmt: \" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip\n" in \
        read(ev.walk("ftrace/function/format"))
    # print's trigger file: test_trace_events_trigger.py
    assert sorted(ev.walk("ftrace/print").children) == ["format", "hist", "id", "trigger"]


def test_no_stack_id_without_the_series():
    ev = make(stackmap=False)
    assert ev.walk("ftrace/stack_id") is None
    assert read(ev.walk("header_page")).endswith("\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n")
