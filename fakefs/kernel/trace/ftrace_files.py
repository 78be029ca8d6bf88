"""The dynamic ftrace files (kernel/trace/ftrace.c): ``available_filter_functions``
(and ``_addrs``) at the top level, ``set_ftrace_filter``/``set_ftrace_notrace``
and the pid files per trace array (``ftrace_create_filter_files()``,
``ftrace_init_tracefs()``, ``ftrace_init_dyn_tracefs()``).

A filter file reads words across writes as ``struct trace_parser`` does and
hands each to ``FtraceOps.process_regex()`` (ftrace.py; the stack tracer's
``stack_trace_filter`` is the same file on its own ops, trace_stack.py).  Differences from
the kernel, on purpose: a filter file's function set is updated by each
write (the kernel updates it when the file is closed; FUSE delivers RELEASE
after ``close()`` has returned, so a following command could still see the
old set), and a word left unterminated at the end of the writes is
processed at FLUSH, errors ignored (as the kernel ignores them at release).
The pid files exist only while ``pid_files_wanted()``.  The top level also
has the function profiler's ``function_profile_enabled`` and
``trace_stat/functionN`` (``ftrace_profile_tracefs()``; the model is
``ftrace_profile.py``), ``enabled_functions`` and ``touched_functions``
(the registered ops and the records they patch: ``ftrace_ops_list.py``) and
trace.c's ``dyn_ftrace_total_info`` (the record pages, ``ftrace_records.py``).
"""

from __future__ import annotations

import contextlib
import errno
import re

from ..fs.pseudo import FileOperations, KernelError, TRACE_MODE_READ, TRACE_MODE_WRITE
from ..lib.ctype import SPACE
from .ftrace import ops_of
from .ftrace_ops_list import ftrace_ops_list
from .ftrace_profile import register_function_profiler
from .ftrace_records import dyn_ftrace_total_info, ftrace_records
from .trace_parser import user_ulong
from .trace_ref import ArrayFileOps
from .trace_stat import StatFileOps

# trace_parser size of the filter files (KSYM_SYMBOL_LEN + 4)
FTRACE_BUFF_MAX = 670
# a word: up to the kernel's isspace() (lib/ctype.c, Latin-1) or a NUL
_WORD = re.compile("[^%s\\0]+" % re.escape("".join(sorted(SPACE))))
# writes from this long on build the names' trigram index first (stepped)
INDEX_AT = 16384


class _Parser:
    """``struct trace_parser``: the word being read across writes."""

    __slots__ = ("buf", "cont")

    def __init__(self):
        self.buf = ""
        self.cont = False


class FtraceRegexOps(FileOperations):
    """A file of function globs and commands (``ftrace_regex_open()``,
    ``ftrace_filter_write()``): the words go to ``owner(f)``'s
    ``process_regex()``; its ``kernel`` is caught up first (calls so far
    were made under the old settings).  Here ``f.data`` is the owner (the
    stack tracer's ``stack_trace_filter``)."""

    def __init__(self, notrace: bool):
        self.notrace = notrace

    def owner(self, f):
        return f.data

    def open(self, f):
        f.private = _Parser()
        if f.trunc:
            owner = self.owner(f)
            owner.clear_functions(self.notrace)
        super().open(f)

    def show(self, f):
        return self.owner(f).filter_text(self.notrace)

    def write(self, f, data):
        steps = self.write_steps(f, data)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def write_steps(self, f, data, pause=None):
        """``write()`` as a generator for a caller that serves others
        meanwhile: after a word, when ``pause()`` says so, the changes so far
        take effect (``settle()``) and it yields; its return value is
        ``write()``'s.  The words go to the owner in one batch (one change
        of its hashes per write, not one per word)."""
        if not data:
            return 0
        owner = self.owner(f)
        p = f.private
        text = data.decode("latin-1")
        if pause is not None:
            # the names' index a part at a time (a long list: with trigrams)
            index = ftrace_records(owner.kernel).index
            for _ in index.build_steps() if len(text) >= INDEX_AT else index.sort_steps():
                if pause():
                    yield
        batch = getattr(owner, "batch", None)
        with batch() if batch is not None else contextlib.nullcontext():
            i = 0
            if p.cont:                   # the word of the last write goes on
                m = _WORD.match(text)
                j = m.end() if m else 0
                p.buf += text[:j]
                if len(p.buf) >= FTRACE_BUFF_MAX:
                    p.buf, p.cont = "", False
                    raise KernelError(errno.EINVAL)
                if j >= len(text):
                    return len(data)
                p.cont = False
                word, p.buf = p.buf, ""
                i = j
                if word:
                    owner.process_regex(word, not self.notrace)
            for m in _WORD.finditer(text, i):
                word = m.group()
                if len(word) >= FTRACE_BUFF_MAX:
                    p.buf, p.cont = "", False
                    raise KernelError(errno.EINVAL)
                if m.end() >= len(text):  # the word may go on in the next write
                    p.buf, p.cont = word, True
                    break
                owner.process_regex(word, not self.notrace)
                if pause is not None and pause():
                    if batch is not None:
                        owner.settle()
                    yield
        return len(data)

    def flush(self, f):
        """What ``ftrace_regex_release()`` does with an unfinished word: it
        is processed, errors go unreported."""
        p = f.private
        if p is None or not p.buf:
            return
        word, p.buf, p.cont = p.buf, "", False
        try:
            self.owner(f).process_regex(word, not self.notrace)
        except KernelError:
            pass

    def release(self, f):
        self.flush(f)
        super().release(f)


class FtraceFilterOps(FtraceRegexOps, ArrayFileOps):
    """set_ftrace_filter / set_ftrace_notrace (``ftrace_filter_fops``) of a
    trace array (``f.data``), which the open file pins."""

    def owner(self, f):
        return ops_of(f.data)


class FtracePidOps(ArrayFileOps):
    """set_ftrace_pid / set_ftrace_notrace_pid (``ftrace_pid_fops``)."""

    def __init__(self, notrace: bool):
        self.notrace = notrace

    def open(self, f):
        if f.trunc:
            ops_of(f.data).clear_pids(self.notrace)
        super().open(f)

    def show(self, f):
        return ops_of(f.data).pids_text(self.notrace)

    def write(self, f, data):
        if not data:
            return 0
        ops_of(f.data).write_pids(data.decode("latin-1"), self.notrace)
        return len(data)


class AvailableFilterFunctionsOps(FileOperations):
    observes = False

    def __init__(self, addrs: bool = False):
        self.addrs = addrs

    def show(self, f):
        recs = ftrace_records(f.data.kernel)
        return recs.avail_addrs_text() if self.addrs else recs.avail_text()


class EnabledFunctionsOps(FileOperations):
    """enabled_functions / touched_functions (``ftrace_enabled_fops``,
    ``ftrace_touched_fops``: FTRACE_ITER_ENABLED / FTRACE_ITER_TOUCHED)."""

    observes = False

    def __init__(self, touched: bool):
        self.touched = touched

    def show(self, f):
        st = ftrace_ops_list(f.data.kernel)
        return st.touched_text() if self.touched else st.enabled_text()


class DynInfoOps(FileOperations):
    """dyn_ftrace_total_info (``tracing_dyn_info_fops``)."""

    observes = False

    def show(self, f):
        return dyn_ftrace_total_info(f.data.kernel)


class FunctionProfileOps(FileOperations):
    """function_profile_enabled (``ftrace_profile_fops``): 0 or 1."""

    observes = False

    def show(self, f):
        return "%u\n" % f.data.enabled

    def write(self, f, data):
        val = user_ulong(data)
        prof = f.data
        prof.set_enabled(val != 0)
        return len(data)


def ftrace_profile_tracefs(tr, d) -> None:
    """``ftrace_profile_tracefs()``: a stat file per possible CPU in
    ``trace_stat/`` (``register_stat_tracer()`` makes the directory with
    its first file) and the switch."""
    k = tr.kernel
    prof = register_function_profiler(k, ops_of(tr) if k.config.enabled("DYNAMIC_FTRACE") else None)
    sd = k.tree.create_dir("trace_stat", d, 0o750)
    for cpu in range(k.nr_cpus):
        k.tree.create_file("function%d" % cpu, TRACE_MODE_WRITE, sd, prof, StatFileOps(cpu))
    k.tree.create_file("function_profile_enabled", TRACE_MODE_WRITE, d, prof, FunctionProfileOps())


def pid_files_wanted(kernel) -> bool:
    """set_ftrace_pid and set_ftrace_notrace_pid filter on pids.  Only the
    simulated tasks call functions here: the processes that use the mount
    (ftracetest's shell writing its own pid) are not tasks of this kernel,
    so the files are there only once the kernel tracks them
    (``kernel.host_tasks``)."""
    return kernel.host_tasks


def ftrace_create_files(tr, d) -> None:
    """The function-tracing files of a trace array (``ftrace_create_filter_files()``,
    ``ftrace_init_tracefs()``; for the top level also
    ``ftrace_init_dyn_tracefs()``)."""
    k = tr.kernel
    cfg = k.config
    if not cfg.enabled("FUNCTION_TRACER"):
        return
    ops_of(tr)
    f = k.tree.create_file
    W, R = TRACE_MODE_WRITE, TRACE_MODE_READ
    if cfg.enabled("DYNAMIC_FTRACE"):
        if tr.is_top:
            f("available_filter_functions", R, d, tr, AvailableFilterFunctionsOps())
            f("available_filter_functions_addrs", R, d, tr, AvailableFilterFunctionsOps(True))
            f("enabled_functions", R, d, tr, EnabledFunctionsOps(False))
            f("touched_functions", R, d, tr, EnabledFunctionsOps(True))
        f("set_ftrace_filter", W, d, tr, FtraceFilterOps(False))
        f("set_ftrace_notrace", W, d, tr, FtraceFilterOps(True))
    if pid_files_wanted(k):
        f("set_ftrace_pid", W, d, tr, FtracePidOps(False))
        f("set_ftrace_notrace_pid", W, d, tr, FtracePidOps(True))
    if tr.is_top and cfg.enabled("FUNCTION_PROFILER"):
        ftrace_profile_tracefs(tr, d)
    if tr.is_top and cfg.enabled("DYNAMIC_FTRACE"):
        # (trace.c's tracer_init_tracefs_work_func() makes it)
        f("dyn_ftrace_total_info", R, d, tr, DynInfoOps())
