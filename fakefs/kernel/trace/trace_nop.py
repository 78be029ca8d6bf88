"""Tracers (``struct tracer`` of kernel/trace/trace.h) and the nop tracer
(kernel/trace/trace_nop.c), whose two test options show how a tracer's
``set_flag`` may accept or refuse an option."""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..printk import KERN_DEBUG


class Tracer:
    """A tracer (``struct tracer``): name, options, instance support."""

    name = "nop"
    options: dict[str, bool] = {}
    allow_instances = True
    use_max_tr = False      # it takes snapshots of the worst section (the max buffer)
    print_max = False       # its ``trace`` shows the max buffer

    def __init__(self, tr):
        self.tr = tr                       # the array it is a tracer of
        self.opts = dict(self.options)
        self.enabled = False               # the array's current tracer (``tracer->enabled``)

    def init(self, tr) -> None:
        pass

    def reset(self, tr) -> None:
        pass

    def flag_changed(self, tr, name: str, on: bool) -> None:
        """``tracer->flag_changed()``: a core option of the array is about to
        change; a KernelError refuses it."""

    def text_view(self, tr, formatter, lat: bool):
        """``tracer->print_header``/``print_line`` with a reader's own state
        (``tracer->open``): an object with ``header(nonempty, lat_header)``,
        ``line(entry, cpu, next_on_cpu) -> (text, took_next)`` and
        ``lines(streams)``; None: the default printer."""
        return None

    def takes_calls(self, tr) -> bool:
        """Does it register an ftrace callback for the array's ops (every
        traced function call may be its: the function tracer; a latency
        tracer with ``function-trace``)?"""
        return False

    def calls_on(self, cpu: int) -> bool:
        """Does its callback record a call made on ``cpu`` now?"""
        return True

    def call_writer(self, tr, cpu: int):
        """The compiled writer of the array's calls on ``cpu`` (see
        ``FunctionTracer.call_writer``): None, not it."""
        return None

    def set_flag(self, name: str, on: bool) -> None:
        """``__set_tracer_option()``: the tracer's ``set_flag`` may refuse
        (a KernelError), else the option takes the value."""
        self.opts[name] = on


class NopTracer(Tracer):
    name = "nop"
    options = {"test_nop_accept": False, "test_nop_refuse": False}

    def set_flag(self, name: str, on: bool) -> None:
        """nop_set_flag(): each test option says so in the kernel log;
        ``test_nop_refuse`` refuses either way."""
        verdict = "refuse" if name == "test_nop_refuse" else "accept"
        self.tr.kernel.printk("nop_test_%s flag set to %d: we %s. Now cat trace_options to see the result"
                              % (verdict, on, verdict), KERN_DEBUG)
        if name == "test_nop_refuse":
            raise KernelError(errno.EINVAL)
        super().set_flag(name, on)
