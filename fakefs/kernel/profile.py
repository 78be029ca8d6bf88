"""The kernel profiler (kernel/profile.c) and its tick source.

``profile=`` on the command line (or, on kernels that have it, a write to
``/sys/kernel/profiling``) turns on one kind of profiling and sets
``prof_shift``; ``profile_init()`` then sizes a buffer of 32-bit counters,
one per ``1 << prof_shift`` bytes of kernel text between ``_stext`` and
``_etext``:

* ``CPU_PROFILING`` (``profile=N``): every timer tick of every CPU that
  interrupted kernel code adds a hit at the interrupted PC (``tick()``).
  The simulated CPUs tick at ``CONFIG_HZ``; what each one runs then comes
  from the machine (:mod:`fakefs.sim.profile_ticks`).  An idle CPU sits in
  the idle loop's halt instruction (``halt_pc()``); a tick that interrupted
  user space does not count.
* ``SCHED_PROFILING`` (``profile=schedule[,N]``): one hit per call of the
  scheduler, at the return address into the function that called it.
* ``KVM_PROFILING`` (``profile=kvm[,N]``): one hit per VM exit at the guest
  PC.  No guests run on the simulated machine, so the counters stay zero.
* ``profile=sleep`` existed up to 6.10 and needed CONFIG_SCHEDSTATS.

Version differences kept: 2.6.30 prints ``%ld`` shifts without clamping
them, names the kvm mode "KVM", and folds out-of-text hits into the last
counter (which readprofile calls ``*unknown*``); 6.12 clamps the shift to
``[0, BITS_PER_LONG-1]``, refuses a shift that leaves no counter, and drops
out-of-text hits.

``/proc/profile`` itself is :mod:`fakefs.kernel.fs.proc.profile`.
"""

from __future__ import annotations

import zlib
from array import array

from .printk import KERN_INFO, KERN_WARNING

CPU_PROFILING = 1
SCHED_PROFILING = 2
SLEEP_PROFILING = 3          # up to 6.10
KVM_PROFILING = 4

BITS_PER_LONG = 64
DEFAULT_HZ = 250

# Where a halted idle CPU is interrupted, most specific first.
IDLE_HALT_FUNCS = ("pv_native_safe_halt", "native_safe_halt", "default_idle",
                   "mwait_idle", "cpu_idle", "poll_idle")


# ------------------------------------------------------------ lib/cmdline.c
def simple_strtoull(s: str, pos: int = 0) -> tuple[int, int]:
    """Parse an unsigned number with base auto-detection (0x.., 0.., dec).

    Returns (value modulo 2**64, index after the digits); no digits leaves
    the index where the number would have started (after a "0x" only if a
    hex digit follows it)."""
    n = len(s)
    base = 10
    if pos < n and s[pos] == "0":
        if pos + 2 < n and s[pos + 1] in "xX" and s[pos + 2] in "0123456789abcdefABCDEF":
            base = 16
            pos += 2
        else:
            base = 8
    value = 0
    while pos < n:
        c = s[pos]
        if "0" <= c <= "9":
            d = ord(c) - 48
        elif "a" <= c.lower() <= "f":
            d = ord(c.lower()) - 87
        else:
            break
        if d >= base:
            break
        value = (value * base + d) & 0xFFFFFFFFFFFFFFFF
        pos += 1
    return value, pos


def _to_int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def get_option(s: str) -> tuple[int, int | None, str]:
    """``get_option()``: (0 no int | 1 int | 2 int and comma | 3 range,
    the int, the rest of the string)."""
    if not s:
        return 0, None, s
    pos = 0
    neg = s[0] == "-"
    if neg:
        pos = 1
    value, end = simple_strtoull(s, pos)
    value = _to_int(-value if neg else value)
    if end == pos:
        return 0, value, s[end:]
    rest = s[end:]
    if rest.startswith(","):
        return 2, value, rest[1:]
    if rest.startswith("-"):
        return 3, value, rest
    return 1, value, rest


class Profiler:
    """``prof_on``, ``prof_shift``, ``prof_len`` and the counters."""

    def __init__(self, kernel):
        self.kernel = kernel
        cfg = kernel.config
        # 6.11 reworked profile_setup() (no more sleep profiling, clamped
        # shifts) and stopped folding stray hits into the last counter
        self.modern = cfg.version_at_least(6, 11)
        self.prof_on = 0
        self.prof_shift = 0          # as stored (2.6.30: unsigned long, unclamped)
        self.prof_len = 0
        self.buffer: array | None = None
        self.stext = 0
        self.etext = 0
        self.hz = int(cfg["CONFIG_HZ"] or DEFAULT_HZ)
        self.nohz = bool(cfg["CONFIG_NO_HZ_IDLE"] or cfg["CONFIG_NO_HZ"])
        self.smp = cfg.options.get("CONFIG_SMP", True)
        self.rng = kernel.subsystem_rng("profile")
        self._pc_cache: dict[int, tuple] = {}
        self._halt_pc: int | None = None
        self._hooked = False
        self.proc_entry = None

    # --------------------------------------------------------------- setup
    @property
    def shift(self) -> int:
        """The shift the hardware applies (x86 masks the count)."""
        return self.prof_shift & (BITS_PER_LONG - 1)

    @property
    def step(self) -> int:
        return 1 << self.shift

    def setup(self, text: str) -> None:
        """``profile_setup()``: parse ``[schedule|kvm[,]]N`` (and, before
        6.11, ``sleep[,N]``)."""
        if self.modern:
            self._setup_modern(text)
        else:
            self._setup_2630(text)

    def _setup_modern(self, s: str) -> None:
        log = self.kernel.log
        select = None
        if s.startswith("schedule"):
            self.prof_on = SCHED_PROFILING
            select = "schedule"
        elif s.startswith("kvm"):
            self.prof_on = KVM_PROFILING
            select = "kvm"
        else:
            ret, par, _ = get_option(s)
            if ret:
                self.prof_shift = max(0, min(par, BITS_PER_LONG - 1))
                self.prof_on = CPU_PROFILING
                log.printk("kernel profiling enabled (shift: %u)" % self.prof_shift, KERN_INFO)
        if select:
            if s[len(select):len(select) + 1] == ",":
                s = s[len(select) + 1:]
            ret, par, _ = get_option(s)
            if ret:
                self.prof_shift = max(0, min(par, BITS_PER_LONG - 1))
            log.printk("kernel %s profiling enabled (shift: %u)" % (select, self.prof_shift),
                       KERN_INFO)

    def _setup_2630(self, s: str) -> None:
        log = self.kernel.log
        cfg = self.kernel.config

        def set_shift(par):
            self.prof_shift = par & ((1 << BITS_PER_LONG) - 1)

        def signed(v):
            return v - (1 << BITS_PER_LONG) if v >> (BITS_PER_LONG - 1) else v

        for word, kind, label in (("sleep", SLEEP_PROFILING, "sleep"),
                                  ("schedule", SCHED_PROFILING, "schedule"),
                                  ("kvm", KVM_PROFILING, "KVM")):
            if s.startswith(word):
                if kind == SLEEP_PROFILING and not cfg.enabled("SCHEDSTATS"):
                    log.printk("kernel sleep profiling requires CONFIG_SCHEDSTATS", KERN_WARNING)
                    return
                self.prof_on = kind
                if s[len(word):len(word) + 1] == ",":
                    s = s[len(word) + 1:]
                ret, par, _ = get_option(s)
                if ret:
                    set_shift(par)
                log.printk("kernel %s profiling enabled (shift: %d)"
                           % (label, signed(self.prof_shift)), KERN_INFO)
                return
        ret, par, _ = get_option(s)
        if ret:
            set_shift(par)
            self.prof_on = CPU_PROFILING
            log.printk("kernel profiling enabled (shift: %d)" % signed(self.prof_shift), KERN_INFO)

    def text_bounds(self) -> tuple[int, int]:
        ks = self.kernel.kallsyms
        lo = ks.addr_of("_stext") if ks is not None else None
        hi = ks.addr_of("_etext") if ks is not None else None
        if lo is None or hi is None:
            lo, hi = ks._text if ks is not None else (0, 0)
        return lo, hi

    def init(self) -> int:
        """``profile_init()``: size and allocate the buffer; 0 or -errno."""
        if not self.prof_on:
            return 0
        self.stext, self.etext = self.text_bounds()
        self.prof_len = (self.etext - self.stext) >> self.shift
        if not self.prof_len and self.modern:
            self.kernel.log.printk("profiling shift: %u too large" % self.prof_shift, KERN_WARNING)
            self.prof_on = 0
            return -22
        self.buffer = array("I", [0]) * self.prof_len
        self._started()
        return 0

    @property
    def size(self) -> int:
        """``/proc/profile``'s size: the step word plus the counters."""
        return (1 + self.prof_len) * 4

    # ---------------------------------------------------------------- hits
    def hits(self, kind: int, pc: int, nr: int = 1) -> None:
        """``profile_hits()``: add ``nr`` at ``pc`` if ``kind`` is on."""
        if self.prof_on != kind or self.buffer is None:
            return
        idx = (pc - self.stext) >> self.shift
        if not self.modern:
            # the old kernels fold everything outside the text into the end
            if not 0 <= idx < self.prof_len:
                idx = self.prof_len - 1
            if idx < 0:
                return
        elif not 0 <= idx < self.prof_len:
            return
        buf = self.buffer
        buf[idx] = (buf[idx] + nr) & 0xFFFFFFFF

    def reset(self) -> None:
        if self.buffer is not None:
            self.buffer = array("I", [0]) * self.prof_len

    def read(self, off: int, size: int) -> bytes:
        """``read_profile()``: the step's first four bytes, then counters."""
        total = self.size
        if off >= total or size <= 0:
            return b""
        size = min(size, total - off)
        out = bytearray()
        if off < 4:
            step = (self.step & 0xFFFFFFFF).to_bytes(4, "little" if _LITTLE else "big")
            take = min(4 - off, size)
            out += step[off:off + take]
            off += take
            size -= take
        if size > 0:
            lo = off - 4
            first, last = lo // 4, (lo + size + 3) // 4
            chunk = self.buffer[first:last].tobytes()
            skip = lo - first * 4
            out += chunk[skip:skip + size]
        return bytes(out)

    # ------------------------------------------------------------- ticking
    def _started(self) -> None:
        """Profiling is on: the machine is seen (its ticks come from
        :mod:`fakefs.sim.profile_ticks`, ``tick()``); SCHED_PROFILING hits
        at every switch into the scheduler."""
        if self._hooked:
            return
        self._hooked = True
        self.kernel.add_machine_watcher(lambda: bool(self.prof_on))
        wl = self.kernel.workload
        if self.prof_on == SCHED_PROFILING and wl is not None:
            wl.switch_hooks.append(self._on_switch)
            self.kernel.sched.switch_hooks.append(self._on_sched_switch)

    def tick(self, pc: int | None, user_mode: bool = False, weight: int = 1) -> None:
        """``profile_tick(CPU_PROFILING)``: the timer interrupted a CPU at
        ``pc`` (``weight`` ticks like it, for a skipped stretch); a tick
        that interrupted user space adds nothing."""
        if pc is not None and not user_mode:
            self.hits(CPU_PROFILING, pc, weight)

    def _on_switch(self, cpu, prev, nxt, stack) -> None:
        """``schedule_debug()``'s hit: the return address into the caller
        of the scheduler."""
        if len(stack) > 1:
            self.hits(SCHED_PROFILING, stack[1])

    def _on_sched_switch(self, cpu, ts, prev, nxt) -> None:
        """The same hit when a machine drives the scheduler: the return
        address in the walk of the task going to sleep."""
        wl = self.kernel.workload
        if not wl.driven:
            return                        # the walk's own switches count
        wl.follow(cpu, prev)
        stack = wl.switch_path(self.rng, cpu)[0]
        wl.follow(cpu, nxt)
        self._on_switch(cpu, prev, nxt, stack)

    def halt_pc(self) -> int:
        """The instruction after ``hlt`` in the idle routine."""
        if self._halt_pc is None:
            ks = self.kernel.kallsyms
            pc = self.stext
            for name in IDLE_HALT_FUNCS:
                a = ks.addr_of(name) if ks is not None else None
                if a is not None:
                    hit = ks.lookup(a)
                    size = hit[2] if hit else 16
                    pc = a + max(0, min(size - 1, 10))
                    break
            self._halt_pc = pc
        return self._halt_pc

    def pc_in(self, ip: int, rng) -> int:
        """A PC inside the function holding ``ip``: each function has a few
        hot instructions (its loops), chosen once from its name; they stay
        out of the function's last bucket where it spans several."""
        c = self._pc_cache.get(ip)
        if c is None:
            ks = self.kernel.kallsyms
            hit = ks.lookup(ip) if ks is not None else None
            if hit is None:
                c = (ip, (0, 0, 0))
            else:
                name, off, size, _mod = hit
                start = ip - off
                step = self.step
                hi = size - step if size > 2 * step else size
                lo = min(9, max(0, hi - 1))
                span = max(1, hi - lo)
                h = zlib.crc32(name.encode())
                spots = tuple(lo + (h >> (8 * k) & 0xFFFF) * 7919 % span for k in range(3))
                c = (start, spots)
            if len(self._pc_cache) > 1 << 16:
                self._pc_cache.clear()
            self._pc_cache[ip] = c
        start, spots = c
        x = rng.random()
        return start + (spots[0] if x < 0.6 else spots[1] if x < 0.9 else spots[2])


_LITTLE = True     # x86: native order is little-endian


def profiler(kernel) -> Profiler:
    p = kernel.profile
    if p is None:
        p = kernel.profile = Profiler(kernel)
    return p


def register_params(kernel) -> None:
    p = profiler(kernel)
    if not kernel.config.options.get("CONFIG_PROFILING", True):
        return

    def profile_param(val):
        if val is None:          # "profile" alone is not "profile="
            kernel.cmdline.unknown.append("profile")
            return
        p.setup(val)
    kernel.early_param("profile", profile_param)


def profile_init(kernel) -> None:
    """start_kernel()'s profile_init(): the buffer, when profile= asks for one."""
    p = profiler(kernel)
    if not kernel.config.options.get("CONFIG_PROFILING", True):
        return
    p.init()            # fs/proc/profile.proc_profile_init makes the files
