# cython: language_level=3
"""The proc connector's reports, taken without the GIL (``cnproc.py`` reads them).

What only a living process can tell — the file an exec ran: its (device,
inode), where a uprobe is, and its path — must be read before the process
exits, and a shell's command may live a millisecond.  Taken in Python, a
report costs one GIL hand-over per system call (the wake-up, each recv(),
each /proc read); behind a busy daemon each waits up to the switch interval
(5 ms): ``ls`` was gone before its exe was read, and so, once in ~25 loaded
runs, was the ``sh`` of ftracetest's add_remove_uprobe.tc.  Here the watch
thread waits, receives and reads /proc in C without the GIL (``watch``), as
the host wakes it; Python takes the queue at a request's drain (``take``).

One ordered queue holds what was received (the watch and a request's
drain both receive into it, under one mutex: the machine gets the events
in the order the host sent them); it holds QUEUE_MAX at most (more is
dropped and counted, as the host drops what its socket cannot hold).  Only the events of the wanted
processes are kept — those the machine follows (``set_wanted``) and the
children they forked since — the rule of ``HostWatch._wanted``; an exec of
one is read at once: ``stat``, ``readlink`` of /proc/PID/exe, its comm, and
its argv[0].
"""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset, strlen
from libc.stdint cimport uint8_t, uint16_t, uint32_t, int64_t
from libc.stdio cimport snprintf

cdef extern from "<errno.h>" nogil:
    int errno
    enum:
        EAGAIN
        EINTR
        ENOBUFS
        EBADF

cdef extern from "<sys/types.h>":
    ctypedef long ssize_t

cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    enum:
        MSG_DONTWAIT
        MSG_TRUNC

cdef extern from "<poll.h>" nogil:
    struct pollfd:
        int fd
        short events
        short revents
    int poll(pollfd *fds, unsigned long nfds, int timeout)
    enum:
        POLLIN
        POLLNVAL

cdef extern from "<sys/stat.h>" nogil:
    struct stat:
        unsigned long st_dev
        unsigned long st_ino
    int c_stat "stat" (const char *path, stat *buf)

cdef extern from "<fcntl.h>" nogil:
    int c_open "open" (const char *path, int flags)
    enum:
        O_RDONLY
        O_CLOEXEC

cdef extern from "<unistd.h>" nogil:
    ssize_t c_read "read" (int fd, void *buf, size_t n)
    int c_close "close" (int fd)
    ssize_t readlink(const char *path, char *buf, size_t n)

cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    int pthread_mutex_init(pthread_mutex_t *m, void *attr)
    int pthread_mutex_lock(pthread_mutex_t *m)
    int pthread_mutex_unlock(pthread_mutex_t *m)
    int pthread_mutex_destroy(pthread_mutex_t *m)

# include/uapi/linux/netlink.h, connector.h, cn_proc.h
cdef enum:
    NLMSG_HDR_SIZE = 16
    CN_MSG_SIZE = 20
    PROC_EVENT_HDR = 16               # what, cpu, timestamp_ns
    CN_IDX_PROC = 1
    CN_VAL_PROC = 1
    PROC_EVENT_FORK = 0x00000001
    PROC_EVENT_EXEC = 0x00000002
    SLOT = 256                        # a proc event's datagram is ~100 bytes
    PATH_MAX = 4096
    COMM_MAX = 64
    QUEUE_MAX = 1 << 16               # held while nobody takes them


cdef struct Program:
    unsigned long dev
    unsigned long ino
    char *exe                         # each malloc'ed with the Program
    char *comm
    char *argv0


cdef struct Entry:
    uint16_t size
    uint8_t data[SLOT]
    Program *program                  # an exec's, read when taken (NULL: gone)


cdef inline uint32_t _u32(const uint8_t *p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef ssize_t _read_file(const char *path, char *buf, size_t n) noexcept nogil:
    """Up to ``n - 1`` bytes of ``path``, NUL-terminated; -1 when unreadable."""
    cdef int fd = c_open(path, O_RDONLY | O_CLOEXEC)
    cdef ssize_t got
    if fd < 0:
        return -1
    got = c_read(fd, buf, n - 1)
    c_close(fd)
    if got < 0:
        return -1
    buf[got] = 0
    return got


cdef Program *_read_program(int pid) noexcept nogil:
    """What the exec of ``pid`` ran, or NULL once it is gone (its exe first:
    the identity is what a probe needs)."""
    cdef char path[64]
    cdef char exe[PATH_MAX]
    cdef char comm[COMM_MAX]
    cdef char argv0[PATH_MAX]
    cdef stat st
    cdef ssize_t n
    cdef size_t le, lc, la
    cdef Program *p
    snprintf(path, 64, "/proc/%d/exe", pid)
    if c_stat(path, &st) != 0:
        return NULL
    n = readlink(path, exe, PATH_MAX - 1)
    exe[n if n > 0 else 0] = 0
    snprintf(path, 64, "/proc/%d/comm", pid)
    n = _read_file(path, comm, COMM_MAX)
    if n < 0:
        comm[0] = 0
    elif n > 0 and comm[n - 1] == b'\n':
        comm[n - 1] = 0
    snprintf(path, 64, "/proc/%d/cmdline", pid)
    if _read_file(path, argv0, PATH_MAX) < 0:      # argv[0]: up to its NUL
        argv0[0] = 0
    le, lc, la = strlen(exe) + 1, strlen(comm) + 1, strlen(argv0) + 1
    p = <Program *> malloc(sizeof(Program) + le + lc + la)
    if p == NULL:
        return NULL
    p.dev = st.st_dev
    p.ino = st.st_ino
    p.exe = (<char *> p) + sizeof(Program)
    p.comm = p.exe + le
    p.argv0 = p.comm + lc
    memcpy(p.exe, exe, le)
    memcpy(p.comm, comm, lc)
    memcpy(p.argv0, argv0, la)
    return p


cdef void _push(int **arr, size_t *n, size_t *cap, int v) noexcept nogil:
    """``v`` appended to the growing array ``*arr`` (dropped if memory runs out)."""
    cdef int *grown
    if n[0] == cap[0]:
        grown = <int *> realloc(arr[0], (cap[0] * 2 + 64) * sizeof(int))
        if grown == NULL:
            return
        arr[0] = grown
        cap[0] = cap[0] * 2 + 64
    arr[0][n[0]] = v
    n[0] += 1


cdef class Reports:
    """The reports of one proc-connector socket (``fd``), queued in order."""

    cdef int fd
    cdef pthread_mutex_t lock
    cdef Entry *queue
    cdef size_t count, cap
    cdef int *wanted                  # set_wanted's pids, then children forked since
    cdef size_t nwanted, wanted_cap
    cdef int *fresh                   # the children forked since the last take()
    cdef size_t nfresh, fresh_cap
    cdef public long overruns         # times the host dropped reports (ENOBUFS)
    cdef public int failed            # recv()'s errno once it fails for good (0: never)

    def __cinit__(self, int fd):
        self.fd = fd
        pthread_mutex_init(&self.lock, NULL)
        self.queue = NULL
        self.count = self.cap = 0
        self.wanted = NULL
        self.nwanted = self.wanted_cap = 0
        self.fresh = NULL
        self.nfresh = self.fresh_cap = 0
        self.overruns = 0
        self.failed = 0

    def __dealloc__(self):
        cdef size_t i
        for i in range(self.count):
            free(self.queue[i].program)
        free(self.queue)
        free(self.wanted)
        free(self.fresh)
        pthread_mutex_destroy(&self.lock)

    def set_wanted(self, pids) -> None:
        """The processes whose events are kept: ``pids``, the children
        forked since the last ``take()`` (not handed over yet: the caller
        cannot name them) and the children they fork from now on."""
        cdef list got = [int(p) for p in pids]
        cdef size_t n = len(got), i
        cdef size_t cap = n + 64
        cdef int *arr = <int *> malloc(cap * sizeof(int))
        if arr == NULL:
            raise MemoryError()
        for i in range(n):
            arr[i] = got[i]
        with nogil:
            pthread_mutex_lock(&self.lock)
            free(self.wanted)
            self.wanted = arr
            self.nwanted = n
            self.wanted_cap = cap
            for i in range(self.nfresh):
                if not self._is_wanted(self.fresh[i]):
                    self._want(self.fresh[i])
            pthread_mutex_unlock(&self.lock)

    def watch(self, int wake_fd) -> None:
        """Take what the host reports as it comes (without the GIL) until
        ``wake_fd`` is readable (what was written to it is left there);
        OSError when the socket fails for good (never a busy loop)."""
        cdef pollfd fds[2]
        cdef int r = 0
        cdef int err = 0
        fds[0].fd = self.fd
        fds[0].events = POLLIN
        fds[1].fd = wake_fd
        fds[1].events = POLLIN
        with nogil:
            while True:
                fds[0].revents = 0
                fds[1].revents = 0
                r = poll(fds, 2, -1)
                if r < 0:
                    err = errno
                    if err == EINTR:
                        continue
                    break
                if fds[0].revents:
                    pthread_mutex_lock(&self.lock)
                    self._receive()
                    pthread_mutex_unlock(&self.lock)
                if fds[1].revents:
                    break
                if fds[0].revents & POLLNVAL or self.failed:
                    r = -1
                    err = self.failed or EBADF
                    break
        if r < 0:
            raise OSError(err, "poll")

    def pending(self) -> int:
        """Events queued and not yet taken."""
        return self.count

    def take(self) -> list:
        """Everything the host reported so far about the wanted processes,
        in order: (datagram bytes, program) where program is None or an
        exec's (dev, ino, exe, comm, argv0) as bytes."""
        cdef Entry *got
        cdef size_t n, i
        cdef Program *p
        with nogil:
            pthread_mutex_lock(&self.lock)
            self._receive()
            got = self.queue
            n = self.count
            self.queue = NULL
            self.count = self.cap = 0
            self.nfresh = 0
            pthread_mutex_unlock(&self.lock)
        out = []
        try:
            for i in range(n):
                p = got[i].program
                prog = None
                if p != NULL:
                    prog = (p.dev, p.ino, <bytes> p.exe, <bytes> p.comm, <bytes> p.argv0)
                out.append(((<char *> got[i].data)[:got[i].size], prog))
        finally:
            for i in range(n):
                free(got[i].program)
            free(got)
        return out

    cdef bint _is_wanted(self, int pid) noexcept nogil:
        cdef size_t i
        for i in range(self.nwanted):
            if self.wanted[i] == pid:
                return True
        return False

    cdef void _want(self, int pid) noexcept nogil:
        _push(&self.wanted, &self.nwanted, &self.wanted_cap, pid)

    cdef void _forked(self, int pid) noexcept nogil:
        self._want(pid)
        _push(&self.fresh, &self.nfresh, &self.fresh_cap, pid)

    cdef void _receive(self) noexcept nogil:
        """Under the mutex: every datagram the socket holds, the wanted
        ones queued (an exec's program read now)."""
        cdef uint8_t buf[SLOT]
        cdef ssize_t n
        cdef int pid
        while True:
            n = recv(self.fd, buf, SLOT, MSG_DONTWAIT | MSG_TRUNC)
            if n < 0:
                if errno == ENOBUFS:
                    self.overruns += 1
                    continue
                if errno == EINTR:
                    continue
                if errno != EAGAIN:         # (EWOULDBLOCK on Linux)
                    self.failed = errno     # (a closed socket: the watch ends)
                return                      # EAGAIN: all taken
            if n > SLOT:
                continue                    # not a proc event
            pid = self._keeps(buf, n)
            if pid < 0:
                continue
            if self.count >= QUEUE_MAX:
                self.overruns += 1          # nobody took them: as the host drops
                continue
            self._queue(buf, n, pid)

    cdef int _keeps(self, const uint8_t *d, ssize_t n) noexcept nogil:
        """Is the datagram ``d`` about a wanted process?  -1: no; 0: yes;
        an exec's pid: yes, and its program is to be read."""
        cdef uint32_t what
        cdef int off = NLMSG_HDR_SIZE + CN_MSG_SIZE
        if n < off + PROC_EVENT_HDR + 4:    # not about a process
            return -1
        if _u32(d + NLMSG_HDR_SIZE) != CN_IDX_PROC or _u32(d + NLMSG_HDR_SIZE + 4) != CN_VAL_PROC:
            return -1
        what = _u32(d + off)
        off += PROC_EVENT_HDR
        if what == PROC_EVENT_FORK:          # parent pid, tgid, child pid, tgid
            if n < off + 16:
                return -1
            if self._is_wanted(<int> _u32(d + off)):
                if not self._is_wanted(<int> _u32(d + off + 8)):
                    self._forked(<int> _u32(d + off + 8))
                return 0
            return -1
        if not self._is_wanted(<int> _u32(d + off)):
            return -1
        return <int> _u32(d + off) if what == PROC_EVENT_EXEC else 0

    cdef void _queue(self, const uint8_t *d, ssize_t n, int exec_pid) noexcept nogil:
        cdef Entry *q
        cdef size_t cap
        if self.count == self.cap:
            cap = self.cap * 2 + 64
            q = <Entry *> realloc(self.queue, cap * sizeof(Entry))
            if q == NULL:
                return
            self.queue = q
            self.cap = cap
        self.queue[self.count].size = <uint16_t> n
        memcpy(self.queue[self.count].data, d, n)
        self.queue[self.count].program = _read_program(exec_pid) if exec_pid > 0 else NULL
        self.count += 1
