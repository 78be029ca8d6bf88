"""Dynamic events (kernel/trace/trace_dynevent.c) and the command files'
line parser (``trace_parse_run_command()`` of kernel/trace/trace.c).

:class:`DynEvents` is ``dyn_event_list`` with the registered kinds of
dynamic event (``dyn_event_operations``: kprobe, fprobe/tprobe and
event probe events): creation tries each kind in turn, ``-:[group/]event [args]`` and
``!<definition>`` remove the matching events, O_TRUNC removes them all
unless one is busy.  ``dynamic_events`` lists every dynamic event.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import FileOperations, KernelError

WRITE_BUFSIZE = 4096


class DynEventOps:
    """``struct dyn_event_operations``: a kind of dynamic event."""

    def create(self, raw: str) -> None:
        """Create from a command; KernelError(ECANCELED): not this kind."""
        raise KernelError(errno.ECANCELED)

    def show(self, ev) -> str:
        raise NotImplementedError

    def is_busy(self, ev) -> bool:
        raise NotImplementedError

    def free(self, ev) -> None:
        """Remove ``ev``; KernelError (EBUSY) when it cannot go."""
        raise NotImplementedError

    def match(self, system, event: str, argv: list[str], ev) -> bool:
        raise NotImplementedError


class DynEvents:
    """``dyn_event_list`` (events in creation order, each with ``.ops``)
    and ``dyn_event_ops_list``."""

    def __init__(self):
        self.events: list = []
        self.kinds: list[DynEventOps] = []
        self.caller_pid = 0            # who writes the command being run
        self.first_dynamic_id = 0      # the first event id after the built-in ones

    def register(self, ops: DynEventOps) -> None:
        self.kinds.append(ops)

    def add(self, ev) -> None:
        self.events.append(ev)

    def remove(self, ev) -> None:
        self.events.remove(ev)

    def referenced(self, call) -> bool:
        """Another dynamic event holds a reference on the event ``call``
        (an event probe attached to it: ``trace_event_get_ref()``)."""
        return any(getattr(ev, "attached", None) is call for ev in self.events)

    def of(self, ops) -> list:
        return [ev for ev in self.events if ev.ops is ops]

    def create(self, raw: str) -> None:
        """``create_dyn_event()``"""
        if raw[:1] in ("-", "!"):
            self.release(raw, None)
            return
        err = errno.ENODEV
        for ops in self.kinds:
            try:
                ops.create(raw)
                return
            except KernelError as e:
                err = e.errno
                if err != errno.ECANCELED:
                    break
        raise KernelError(errno.EINVAL if err == errno.ECANCELED else err)

    def release(self, raw: str, kind) -> None:
        """``dyn_event_release()``: ``-:[group/]event [args]`` (or, from
        dynamic_events, ``!<definition>``) removes each event of ``kind``
        (any kind: None) that matches; ENOENT when none did."""
        argv = raw.split()
        if not argv:
            raise KernelError(errno.EINVAL)
        head = argv[0]
        if head[0] == "-":
            if head[1:2] != ":":
                raise KernelError(errno.EINVAL)
            event = head[2:]
        else:
            colon = head.find(":")
            if colon < 0:
                raise KernelError(errno.EINVAL)
            event = head[colon + 1:]
        system = None
        slash = event.find("/")
        if slash >= 0:
            system, event = event[:slash], event[slash + 1:]
        if system is None and not event:
            raise KernelError(errno.EINVAL)
        err = errno.ENOENT
        for ev in list(self.events):
            if kind is not None and ev.ops is not kind:
                continue
            if not ev.ops.match(system, event, argv[1:], ev):
                continue
            try:
                ev.ops.free(ev)
                err = 0
            except KernelError as e:
                err = e.errno
                break
        if err:
            raise KernelError(err)

    def release_all(self, kind) -> None:
        """``dyn_events_release_all()``: EBUSY (nothing removed) if one is
        busy."""
        evs = [ev for ev in self.events if kind is None or ev.ops is kind]
        if any(ev.ops.is_busy(ev) for ev in evs):
            raise KernelError(errno.EBUSY)
        for ev in evs:
            ev.ops.free(ev)

    def show(self, kind=None) -> str:
        return "".join(ev.ops.show(ev) for ev in self.events if kind is None or ev.ops is kind)


def parse_run_command(data: bytes, createfn) -> int:
    """``trace_parse_run_command()``: one command per line, ``#`` starts a
    comment; the first failing command's error is the write's."""
    steps = parse_run_steps(data, createfn)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def parse_run_steps(data: bytes, createfn, pause=None):
    """``parse_run_command()`` as a generator for a caller that serves
    others meanwhile: after a command, when ``pause()`` says so, it yields
    (the commands so far have taken effect); its return value is the
    write's (a thousand probes in one write took seconds, the mount held)."""
    text = data.decode("latin-1")
    count = len(text)
    done = 0
    while done < count:
        chunk = text[done:done + WRITE_BUFSIZE - 1]
        pos = 0
        while True:
            nl = chunk.find("\n", pos)
            if nl >= 0:
                line, size = chunk[pos:nl], nl - pos + 1
            else:
                line = chunk[pos:]
                size = len(line)
                if done + size < count:
                    if pos:
                        break
                    raise KernelError(errno.EINVAL)    # line too long
            done += size
            hash_at = line.find("#")
            if hash_at >= 0:
                line = line[:hash_at]
            createfn(line)
            if pause is not None and pause():
                yield
            pos += size
            if done >= count:
                break
    return count


class DynamicEventsOps(FileOperations):
    """dynamic_events"""

    def open(self, f):
        if f.writable and f.trunc:
            f.data.release_all(None)

    def show(self, f):
        return f.data.show()

    def write(self, f, data):
        f.data.caller_pid = f.pid
        return parse_run_command(data, f.data.create)

    def write_steps(self, f, data, pause=None):
        f.data.caller_pid = f.pid
        return (yield from parse_run_steps(data, f.data.create, pause))
