"""Event filters (kernel/trace/trace_events_filter.c): setting them.

The ``filter`` files of events and systems, per trace array
(``apply_event_filter()``, ``apply_subsystem_event_filter()``), and the
error reports of a refused filter (``append_filter_err()``: the ``filter``
file's text and the ``error_log`` entry).  The language itself is
``trace_events_filter_parse.py`` (over the fields of
``trace_events_filter_fields.py``), compiled by
``trace_events_filter_compile.py``.

Semantics kept from the kernel where they are surprising:

* after a failed write the event keeps no filter at all: its ``filter``
  file shows the expression, a caret line and ``parse_error: <text>``;
* a subsystem filter gives every event of the system either the filter or
  that error text, and the write succeeds either way.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..lib.ctype import skip_spaces, strstrip
from .trace_events_filter_compile import compile_filter
from .trace_events_filter_fields import event_fields
from .trace_events_filter_parse import (ERR_TEXT, FILT_ERR_BAD_SUBSYS_FILTER, FILT_ERR_ERRNO,
                                        FilterError, Parser)

ERR_LOC = "event filter parse error"

DEFAULT_SYS_FILTER_MESSAGE = (
    "### global filter ###\n"
    "# Use this to set filters for multiple events.\n"
    "# Only events with the given fields will be affected.\n"
    "# If no events are modified, an error message will be displayed here")

PAGE_SIZE = 4096


# --- the per-array filter state (event_filter / trace_subsystem_dir) -------

class _SeqBuf:
    """A trace_seq: one page; a write that does not fit sets ``full``."""

    def __init__(self):
        self.buf = []
        self.len = 0
        self.full = False

    def puts(self, s: str, strict: bool = False) -> None:
        if self.full:
            return
        left = PAGE_SIZE - self.len
        if len(s) > left or (strict and len(s) >= left):
            self.full = True
            return
        self.buf.append(s)
        self.len += len(s)

    def text(self) -> str:
        return "".join(self.buf)


class EventFilters:
    """Filter strings of one trace array's events and systems.

    ``strings[ev]`` is what ``events/<sys>/<ev>/filter`` shows (absent:
    ``none``).  A system's ``filter`` file always shows the global-filter
    help: the kernel keeps a string there only when a system has no events
    or memory runs out.  Compiled filters live in ``tr.event_filters``,
    where the tracepoint code looks for them.
    """

    def __init__(self, tr):
        self.tr = tr
        self.strings: dict = {}

    # -- helpers --------------------------------------------------------------
    def _kernel(self):
        return self.tr.kernel

    def _parser(self, ev) -> Parser:
        k = self._kernel()
        return Parser(event_fields(ev), k.kallsyms, k.nr_cpus)

    def _comm_of(self):
        k = self._kernel()
        sched = k.sched
        tracing = self.tr.tracing

        def comm(pid):
            t = sched.find(pid)
            if t is not None:
                return t.comm
            return tracing.savedcmd.lookup(pid) or ""
        return comm

    def _cpu_of(self):
        sched = self._kernel().sched

        def cpu_of(e):
            pid = e[2]
            if pid:
                for c, t in enumerate(sched.curr):
                    if t.pid == pid:
                        return c
            return -1
        return cpu_of

    def build(self, ev, text: str):
        """Parse and compile ``text`` for ``ev``: the filter function, or a
        raised FilterError."""
        tree = self._parser(ev).parse(text)
        return compile_filter(tree, event_fields(ev), self._comm_of(), self._cpu_of())

    def create_filter(self, ev, text: str):
        """``create_event_filter(..., set_str=true)`` (a trigger's ``if``):
        the filter function; a refused one goes to error_log as
        ``append_filter_err()`` reports it, and is raised as KernelError."""
        try:
            return self.build(ev, text)
        except FilterError as e:
            self._error_text(text, e)
            raise KernelError(e.errno)

    def _error_text(self, text: str, err: FilterError) -> str:
        """``append_filter_err()``: the string the filter file shows, and the
        error_log entry."""
        seq = _SeqBuf()
        seq.puts(text)
        if err.lasterr > 0:
            pos = min(err.pos, len(text))
            if pos:
                pos += 1
            seq.puts("\n" + "^".rjust(pos), strict=True)
            seq.puts("\nparse_error: %s\n" % ERR_TEXT[err.lasterr], strict=True)
            self.tr.log_err(ERR_LOC, text, ERR_TEXT, err.lasterr, err.pos)
        else:
            seq.puts("\nError: (%d)\n" % err.lasterr, strict=True)
            self.tr.log_err(ERR_LOC, text, ERR_TEXT, FILT_ERR_ERRNO, 0)
        return seq.text()

    # -- apply_event_filter() -------------------------------------------------
    def apply_event_filter(self, ev, raw: str) -> None:
        """Set (``0``: remove) ``ev``'s filter."""
        text = strstrip(raw)
        if skip_spaces(text) == "0":
            self.strings.pop(ev, None)
            self.tr.event_filters.pop(ev, None)
            return
        try:
            flt = self.build(ev, text)
        except FilterError as e:
            # the event loses its filter and shows the error instead
            self.tr.event_filters.pop(ev, None)
            self.strings[ev] = self._error_text(text, e)
            raise KernelError(e.errno)
        self.strings[ev] = text
        self.tr.event_filters[ev] = flt

    # -- apply_subsystem_event_filter() ---------------------------------------
    def apply_subsystem_filter(self, system: str, raw: str) -> None:
        events = [ev for ev in self.tr.tracing.events if ev.system == system]
        if not events:
            raise KernelError(errno.ENODEV)
        text = strstrip(raw)
        filters = self.tr.event_filters
        zero = skip_spaces(text) == "0"
        built = [(ev, None) for ev in events] if zero else [(ev, self._built(ev, text)) for ev in events]
        for ev, flt in built:
            if zero:
                self.strings.pop(ev, None)
                filters.pop(ev, None)
            elif flt is None:
                filters.pop(ev, None)
                self.strings[ev] = self._error_text(
                    text, FilterError(errno.EINVAL, FILT_ERR_BAD_SUBSYS_FILTER, 0))
            else:
                self.strings[ev] = text
                filters[ev] = flt

    def _built(self, ev, text: str):
        """``build()``, None where refused."""
        try:
            return self.build(ev, text)
        except FilterError:
            return None

    # -- reads ------------------------------------------------------------------
    def event_text(self, ev) -> str:
        s = self.strings.get(ev)
        return "none\n" if s is None else s + "\n"

    def system_text(self, system: str) -> str:
        return DEFAULT_SYS_FILTER_MESSAGE + "\n"


def filters_of(tr) -> EventFilters:
    st = tr.filter_state
    if st is None:
        st = tr.filter_state = EventFilters(tr)
    return st


def write_text(data: bytes) -> str:
    """The C string a filter write hands over (up to the first NUL)."""
    if len(data) >= PAGE_SIZE:
        raise KernelError(errno.EINVAL)
    text = data.decode("latin-1")
    nul = text.find("\0")
    return text if nul < 0 else text[:nul]

