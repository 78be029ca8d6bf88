"""Tracepoints of the simulated kernel (include/trace/events/sched.h, kmem.h, signal.h).

Each :class:`EventDef` gives what tracefs shows for a TRACE_EVENT(): its
system, name, field layout (``format``), print fmt, the text printer, the
payload size in the ring buffer, how often it fires per CPU, and how to fill
its fields from the simulated workload.

The gfp flag table in the kmem print fmts is taken as a newer kernel prints
it (data/show_gfp_flags.txt); 6.12 lists the same flags in another order.
"""

from __future__ import annotations

import os

from ..cpu import online_cpu
from ._trace_commit import record_size
from .trace_export import COMMON_FIELDS, _field

with open(os.path.join(os.path.dirname(__file__), "data", "show_gfp_flags.txt")) as _fh:
    SHOW_GFP_FLAGS = _fh.read().strip()

GFP_KERNEL = 0xcc0
GFP_ATOMIC = 0x820
GFP_NOWAIT = 0x2800
GFP_ZERO_BIT = 0x100
GFP_ACCOUNT_BIT = 0x400000
GFP_NAMES = [(GFP_KERNEL | GFP_ACCOUNT_BIT, "GFP_KERNEL_ACCOUNT"), (GFP_KERNEL, "GFP_KERNEL"),
             (GFP_ATOMIC, "GFP_ATOMIC"), (GFP_NOWAIT, "GFP_NOWAIT"), (GFP_ZERO_BIT, "__GFP_ZERO"),
             (0x2000, "__GFP_NOWARN"), (0x10000, "__GFP_NORETRY"), (0x40000, "__GFP_COMP"),
             (GFP_ACCOUNT_BIT, "__GFP_ACCOUNT")]

# (cache name, object size, request sizes)
SLAB_CACHES = [("kmalloc-64", 64, (40, 48, 56, 64)), ("kmalloc-192", 192, (136, 160, 192)),
               ("dentry", 192, (192,)), ("filp", 256, (256,)), ("vm_area_struct", 176, (176,)),
               ("anon_vma_chain", 64, (64,)), ("buffer_head", 104, (104,)),
               ("skbuff_head_cache", 232, (232,)), ("task_struct", 9664, (9664,)),
               ("radix_tree_node", 576, (576,)), ("ext4_inode_cache", 1184, (1184,)),
               ("kmalloc-1k", 1024, (576, 768, 1024)), ("names_cache", 4096, (4096,))]
KMALLOC_SIZES = [(8, 8), (16, 13), (32, 24), (64, 60), (96, 72), (128, 100), (192, 168),
                 (256, 240), (512, 384), (1024, 1000), (2048, 1536), (4096, 4096)]


def show_gfp(flags: int) -> str:
    if not flags:
        return "none"
    out = []
    rest = flags
    for mask, name in GFP_NAMES:
        if rest & mask == mask:
            out.append(name)
            rest &= ~mask
    if rest:
        out.append("0x%x" % rest)
    return "|".join(out)


TASK_STATES = [(0, "R"), (1, "S"), (2, "D")]
# prev_state as the field holds it (__trace_sched_switch_state()): a bit per
# state, TASK_REPORT_MAX for a preempted task ("R+")
PREV_STATE_VALUES = {"R": 0, "S": 0x1, "D": 0x2, "T": 0x4, "t": 0x8, "X": 0x10, "Z": 0x20,
                     "P": 0x40, "I": 0x80, "R+": 0x100}


class EventDef:
    # field name -> function from the value kept in ``args`` to the value the
    # ring buffer holds, for fields ``args`` keeps in another form (filters
    # compare the latter)
    filter_values: dict = {}
    # field name -> {value kept in ``args``: the number the ring buffer
    # holds}, for those of ``filter_values`` that are such a table (one
    # number each: a record's field read back as the value; _trace_events_raw)
    filter_codes: dict = {}

    def __init__(self, system, name, fields, print_fmt, payload, rate, kind):
        self.system = system
        self.name = name
        self.fields = fields
        self.print_fmt = print_fmt
        self.payload = payload
        self.rate = rate          # events per second per CPU
        self.kind = kind          # workload stack kind
        self.tracepoint = name    # the tracepoint whose hits it records
        self.id = 0
        self.desc = None          # the catalogue's description, when there is one
        self.filter_fields = None  # trace_events_filter_fields.event_fields(), once computed
        self._dynamic = None      # indexes of its __data_loc fields, once computed

    def record_size(self, args) -> int:
        """Bytes a hit's record takes: the struct, plus the strings of its
        ``__data_loc`` fields (each with its NUL) that go after it
        (compiled: ``_trace_commit.record_size``)."""
        return record_size(self, args)

    def dynamic_fields(self) -> tuple:
        """The indexes of its ``__data_loc`` fields (computed once)."""
        dyn = self._dynamic
        if dyn is None:
            fields = self.desc.fields if self.desc is not None else ()
            dyn = self._dynamic = tuple(i for i, f in enumerate(fields) if f.is_dynamic)
        return dyn

    def format_text(self) -> str:
        if self.desc is not None:
            return self.desc.format_text(self.id)
        return ("name: %s\nID: %d\nformat:\n%s\n%s\nprint fmt: %s\n"
                % (self.name, self.id, COMMON_FIELDS, "".join(self.fields), self.print_fmt))

    def render(self, args, fmt) -> str:
        raise NotImplementedError

    def text(self, args, fmt) -> str:
        """The line's text after the context (``trace_event_raw_output_*``)."""
        return "%s: %s\n" % (self.name, self.render(args, fmt))

    def make(self, rng, cpu, task, stack, src):
        raise NotImplementedError


class SchedSwitch(EventDef):
    filter_values = {"prev_state": lambda s: PREV_STATE_VALUES.get(s, 0)}
    filter_codes = {"prev_state": PREV_STATE_VALUES}

    def render(self, a, fmt):
        pc, ppid, pprio, pstate, nc, npid, nprio = a
        return ("prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s "
                "next_pid=%d next_prio=%d" % (pc, ppid, pprio, pstate, nc, npid, nprio))

    def make(self, rng, cpu, task, stack, src):
        nxt = src.kernel.sched.curr[cpu]        # the workload made the switch
        state = "R+" if rng.random() < 0.15 else rng.choice(("S", "S", "S", "D", "R"))
        if task.pid == 0:
            state = "R"
        return (task.comm, task.pid, task.prio, state, nxt.comm, nxt.pid, nxt.prio)


class SchedWake(EventDef):
    def render(self, a, fmt):
        return "comm=%s pid=%d prio=%d target_cpu=%03d" % a

    def make(self, rng, cpu, task, stack, src):
        t = rng.choice(src.tasks) if src.tasks else task
        target = rng.randrange(src.kernel.nr_cpus)
        if not src.kernel.sched.online[target]:       # (a wakeup goes to an online CPU)
            target = online_cpu(src.kernel, target)
        return (t.comm, t.pid, t.prio, target)


def _call_site(stack):
    return stack[1] if len(stack) > 1 else stack[0]


def _slab_ptr(rng):
    return 0xffff888100000000 + rng.randrange(1 << 30) * 64


class KmemCacheAlloc(EventDef):
    def render(self, a, fmt):
        cs, ptr, req, alloc, gfp, node, acct = a
        return ("call_site=%s ptr=%s bytes_req=%d bytes_alloc=%d gfp_flags=%s node=%d accounted=%s"
                % (fmt.sym(cs, True, False), fmt.ptr(ptr), req, alloc, show_gfp(gfp), node,
                   "true" if acct else "false"))

    def make(self, rng, cpu, task, stack, src):
        name, size, reqs = rng.choice(SLAB_CACHES)
        gfp = rng.choice((GFP_KERNEL, GFP_KERNEL, GFP_KERNEL | GFP_ZERO_BIT, GFP_ATOMIC,
                          GFP_KERNEL | GFP_ACCOUNT_BIT))
        return (_call_site(stack), _slab_ptr(rng), rng.choice(reqs), size, gfp, -1,
                bool(gfp & GFP_ACCOUNT_BIT))


class Kmalloc(EventDef):
    def render(self, a, fmt):
        cs, ptr, req, alloc, gfp, node = a
        return ("call_site=%s ptr=%s bytes_req=%d bytes_alloc=%d gfp_flags=%s node=%d accounted=%s"
                % (fmt.sym(cs, True, False), fmt.ptr(ptr), req, alloc, show_gfp(gfp), node,
                   "true" if gfp & GFP_ACCOUNT_BIT else "false"))

    def make(self, rng, cpu, task, stack, src):
        alloc, req_max = rng.choice(KMALLOC_SIZES)
        req = rng.randrange(max(1, alloc // 2), req_max + 1)
        gfp = rng.choice((GFP_KERNEL, GFP_KERNEL | GFP_ZERO_BIT, GFP_ATOMIC, GFP_NOWAIT))
        return (_call_site(stack), _slab_ptr(rng), req, alloc, gfp, -1)


class KmemCacheFree(EventDef):
    def render(self, a, fmt):
        cs, ptr, name = a
        return "call_site=%s ptr=%s name=%s" % (fmt.sym(cs, True, False), fmt.ptr(ptr), name)

    def make(self, rng, cpu, task, stack, src):
        return (_call_site(stack), _slab_ptr(rng), rng.choice(SLAB_CACHES)[0])


class Kfree(EventDef):
    def render(self, a, fmt):
        cs, ptr = a
        return "call_site=%s ptr=%s" % (fmt.sym(cs, True, False), fmt.ptr(ptr))

    def make(self, rng, cpu, task, stack, src):
        return (_call_site(stack), _slab_ptr(rng))


# signals sent from elsewhere than the two paths the workload has (exit ->
# SIGCHLD, ITIMER_REAL -> SIGALRM): (sig, si_code, group, weight)
SIGNALS = [(17, 1, 1, 6), (14, 0x80, 1, 2), (10, 0, 1, 1), (15, 0, 1, 1), (9, 0, 1, 0.5),
           (13, 0x80, 0, 0.5), (28, 0x80, 1, 0.5), (2, 0x80, 1, 0.3), (23, 0x80, 1, 0.2)]
_SIG_WEIGHTS = [s[3] for s in SIGNALS]
TRACE_SIGNAL_DELIVERED, TRACE_SIGNAL_IGNORED, TRACE_SIGNAL_ALREADY_PENDING = 0, 1, 2
SIGCHLD, SIGALRM, CLD_EXITED, SI_KERNEL = 17, 14, 1, 0x80


class SignalGenerate(EventDef):
    def render(self, a, fmt):
        return "sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d" % a

    def make(self, rng, cpu, task, stack, src):
        ks = src.kernel.kallsyms
        names = set()
        for ip in stack[:16]:
            hit = ks.lookup(ip)
            if hit is not None:
                names.add(hit[0])
        users = [t for t in src.tasks if not t.kthread] or [task]
        if "it_real_fn" in names:
            sig, code, group = SIGALRM, SI_KERNEL, 1
            target = rng.choice(users)
        elif "do_notify_parent" in names:
            sig, code, group = SIGCHLD, CLD_EXITED, 1
            target = rng.choice(users)
        else:
            sig, code, group, _w = rng.choices(SIGNALS, _SIG_WEIGHTS)[0]
            target = rng.choice(users)
        r = rng.random()
        result = (TRACE_SIGNAL_ALREADY_PENDING if r < 0.05
                  else TRACE_SIGNAL_IGNORED if sig == SIGCHLD and r < 0.3
                  else TRACE_SIGNAL_DELIVERED)
        return (sig, 0, code, target.comm, target.pid, group, result)


_F = _field
_SCHED_WAKE_FIELDS = [_F("char comm[16]", 8, 16, 0), _F("pid_t pid", 24, 4, 1),
                      _F("int prio", 28, 4, 1), _F("int target_cpu", 32, 4, 1)]
_KMEM_ALLOC_FMT = ('"call_site=%%pS ptr=%%p bytes_req=%%zu bytes_alloc=%%zu gfp_flags=%%s node=%%d '
                   'accounted=%%s", (void *)REC->call_site, REC->ptr, REC->bytes_req, '
                   'REC->bytes_alloc, (REC->gfp_flags) ? %s : "none", REC->node, %s')
_SWITCH_FMT = ('"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s '
               'next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, '
               '(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | '
               '0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? '
               '__print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | '
               '0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), '
               '"|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, '
               '{ 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, '
               '{ 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & '
               '(((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | '
               '0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, '
               'REC->next_prio')


def all_events() -> list[EventDef]:
    """Fresh definitions, in the order their IDs are assigned."""
    gfp = SHOW_GFP_FLAGS
    return [
        SchedSwitch("sched", "sched_switch",
                    [_F("char prev_comm[16]", 8, 16, 0), _F("pid_t prev_pid", 24, 4, 1),
                     _F("int prev_prio", 28, 4, 1), _F("long prev_state", 32, 8, 1),
                     _F("char next_comm[16]", 40, 16, 0), _F("pid_t next_pid", 56, 4, 1),
                     _F("int next_prio", 60, 4, 1)],
                    _SWITCH_FMT, 64, 800, "sched_switch"),
        SchedWake("sched", "sched_waking", _SCHED_WAKE_FIELDS,
                  '"comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, '
                  'REC->target_cpu', 36, 600, "sched_waking"),
        SchedWake("sched", "sched_wakeup", _SCHED_WAKE_FIELDS,
                  '"comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, '
                  'REC->target_cpu', 36, 600, "sched_wakeup"),
        KmemCacheFree("kmem", "kmem_cache_free",
                      [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0),
                       _F("__data_loc char[] name", 24, 4, 0)],
                      '"call_site=%pS ptr=%p name=%s", (void *)REC->call_site, REC->ptr, '
                      '__get_str(name)', 48, 1450, "kmem_cache_free"),
        Kfree("kmem", "kfree",
              [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0)],
              '"call_site=%pS ptr=%p", (void *)REC->call_site, REC->ptr', 24, 780, "kfree"),
        Kmalloc("kmem", "kmalloc",
                [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0),
                 _F("size_t bytes_req", 24, 8, 0), _F("size_t bytes_alloc", 32, 8, 0),
                 _F("unsigned long gfp_flags", 40, 8, 0), _F("int node", 48, 4, 1)],
                _KMEM_ALLOC_FMT % (gfp, '(1 && (REC->gfp_flags & ( unsigned long)(( gfp_t)'
                                        '((((1UL))) << (22))))) ? "true" : "false"'),
                56, 800, "kmalloc"),
        KmemCacheAlloc("kmem", "kmem_cache_alloc",
                       [_F("unsigned long call_site", 8, 8, 0), _F("const void * ptr", 16, 8, 0),
                        _F("size_t bytes_req", 24, 8, 0), _F("size_t bytes_alloc", 32, 8, 0),
                        _F("unsigned long gfp_flags", 40, 8, 0), _F("int node", 48, 4, 1),
                        _F("bool accounted", 52, 1, 0)],
                       _KMEM_ALLOC_FMT % (gfp, 'REC->accounted ? "true" : "false"'),
                       56, 1500, "kmem_cache_alloc"),
        SignalGenerate("signal", "signal_generate",
                       [_F("int sig", 8, 4, 1), _F("int errno", 12, 4, 1), _F("int code", 16, 4, 1),
                        _F("char comm[16]", 20, 16, 0), _F("pid_t pid", 36, 4, 1),
                        _F("int group", 40, 4, 1), _F("int result", 44, 4, 1)],
                       '"sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d", REC->sig, '
                       'REC->errno, REC->code, REC->comm, REC->pid, REC->group, REC->result',
                       48, 20, "signal_generate"),
    ]
