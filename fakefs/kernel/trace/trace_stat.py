"""Statistic files (kernel/trace/trace_stat.c): ``trace_stat/<name>``.

A stat tracer has its tables filled up to the machine's present
(``settle()``), gives its records (``stat_start``), a sort key
(``stat_cmp_key``), ``stat_headers()`` and ``stat_show(record)``.  Opening
the file sorts the records, largest key first; among equal keys the record
given later comes first (``insert_stat()`` puts a new node to the left of
the equal ones).  The order is kept until the next open, but each record is
shown as it is when the text is made (read at offset 0), as ``seq_read``
calls ``stat_show`` on the live record.  A show that fails ends the text
there; a read past that point returns its error (``seq_read_iter``).  The
file has mode 0640 and no write handler (EINVAL).
"""

from __future__ import annotations

from ..fs.pseudo import FileOperations, KernelError


class _Session:
    """``struct stat_session`` of one open file: the sorted records, and
    the error that cut the text short."""

    __slots__ = ("order", "error")

    def __init__(self, order):
        self.order = order
        self.error: KernelError | None = None


class StatFileOps(FileOperations):
    """``tracing_stat_fops`` for the stat tracer ``f.data`` restricted to
    one of its tables (``key``: the CPU of a function profile)."""

    def __init__(self, key):
        self.key = key

    def open(self, f):
        ts = f.data
        ts.settle()
        recs = ts.stat_start(self.key)
        cmp = ts.stat_cmp_key
        ranked = sorted(((cmp(self.key, r), i, r) for i, r in enumerate(recs)),
                        key=lambda x: (x[0], x[1]), reverse=True)
        f.private = _Session([r for _k, _i, r in ranked])

    def show(self, f):
        ts = f.data
        ts.settle()
        sess = f.private
        sess.error = None
        out = [ts.stat_headers()]
        for r in sess.order:
            try:
                out.append(ts.stat_show(self.key, r))
            except KernelError as e:
                sess.error = e
                break
        return "".join(out)

    def read(self, f, off, size):
        data = super().read(f, off, size)
        err = f.private.error
        if not data and size and err is not None:
            raise KernelError(err.errno)
        return data
