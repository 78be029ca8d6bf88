"""The ftrace-direct sample modules (samples/ftrace/ftrace-direct.c and
ftrace-direct-too.c of 6.12, CONFIG_SAMPLE_FTRACE_DIRECT=m).

Each has an asm trampoline ``my_tramp`` (global, no ``__fentry__``, no
``__pfx_`` padding: plain asm at the start of ``.text``) that saves the
argument registers and calls ``my_direct_func`` (a C function: traceable),
whose ``trace_printk()`` prints what it was given.  The init puts the
function's address in its ops' filter and calls
``register_ftrace_direct(&direct, my_tramp)`` (``ftrace_direct.py``); the
exit (``__exit``: notrace) unregisters it.

* ``ftrace-direct``: on ``wake_up_process(p)``, prints ``waking up
  <comm>-<pid>`` of the task woken.  Who is woken is drawn (deterministic
  per instant) among the machine's kernel threads, which is whom
  ``wake_up_process()`` mostly wakes.
* ``ftrace-direct-too``: on ``handle_mm_fault(vma, address, flags,
  regs)``, prints ``handle mm fault vma=%p address=%lx flags=%x regs=%p``
  with drawn plausible values (a slab pointer, a user address, the flags
  of a user fault, the faulting task's ``pt_regs`` at the top of its
  kernel stack); ``%p`` prints hashed.

Each call of the probed function by the machine is a record in the
top-level buffer at that call's instant, in the caller's context.
"""

from __future__ import annotations

from .lib.vsprintf import hashed_ptr
from .module import ModuleFunc, ModuleImage
from .trace.ftrace_direct import DirectOps, register_ftrace_direct, unregister_ftrace_direct
from .trace.trace_printk import trace_printk
from .trace.trace_probe_tmpl import DIRECT_MAP, mix64

PFX_LEN = 16
DIRECT_FMT = "waking up %s-%d\n"
TOO_FMT = "handle mm fault vma=%p address=%lx flags=%x regs=%p\n"
# the trace_printk() call in my_direct_func (its return address is the ip)
PRINTK_OFF = {"ftrace_direct": 0x2f, "ftrace_direct_too": 0x2b}
# fault flags of a user fault (FAULT_FLAG_DEFAULT | USER, WRITE, VMA_LOCK:
# the per-VMA-lock first try, then the mmap_lock retry)
FAULT_FLAGS = (0x1254, 0x1255, 0x1254, 0x1255, 0x254, 0x255)
STACK_AREA = 0xffffc90000000000
PT_REGS_SIZE = 0xa8
THREAD_SIZE = 0x4000
VMA_SIZE = 0xb8                                   # struct vm_area_struct, its slab's stride


def _image(name: str, target: str, tramp_size: int, func_size: int, handler) -> ModuleImage:
    text = [ModuleFunc(0, "T", "my_tramp", tramp_size, False)]
    off = (tramp_size + 15) // 16 * 16
    text.append(ModuleFunc(off, "T", "__pfx_my_direct_func", PFX_LEN, False))
    text.append(ModuleFunc(off + PFX_LEN, "T", "my_direct_func", func_size, True))
    off += PFX_LEN + func_size
    off = (off + 15) // 16 * 16
    text.append(ModuleFunc(off, "t", "__pfx_%s_exit" % name, PFX_LEN, False))
    text.append(ModuleFunc(off + PFX_LEN, "t", "%s_exit" % name, 0x20, False))
    text.append(ModuleFunc(off + PFX_LEN, "T", "cleanup_module", 0x20, False))
    init = [ModuleFunc(0, "t", "__pfx_%s_init" % name, PFX_LEN, False, True),
            ModuleFunc(PFX_LEN, "t", "%s_init" % name, 0x40, True, True),
            ModuleFunc(PFX_LEN, "T", "init_module", 0x40, False, True)]
    fmt = DIRECT_FMT if name == "ftrace_direct" else TOO_FMT
    state: dict = {}

    def init_fn(kernel, mod, _ctx):
        func = kernel.kallsyms.addr_of(target)
        ops = state["ops"] = DirectOps((func,) if func is not None else (),
                                       _printer(kernel, mod, handler))
        register_ftrace_direct(kernel, ops, mod.addr_of("my_tramp"))

    def exit_fn(kernel, mod, _ctx):
        ops = state.pop("ops", None)
        if ops is not None:
            unregister_ftrace_direct(kernel, ops, mod.addr_of("my_tramp"))

    return ModuleImage(name, 12288, text + init, (fmt,), init=init_fn, exit=exit_fn)


def _printer(kernel, mod, text_of):
    """my_direct_func: a trace_printk() of what ``text_of`` makes of the
    call, in the caller's context."""
    ip = mod.addr_of("my_direct_func") + PRINTK_OFF[mod.name]

    def on_call(cpu, ts, stack, task):
        act = kernel.trace_hits
        flags, pc = act.context_flags(stack) if act is not None else (0, 0)
        trace_printk(kernel, (task.pid, cpu, ts), ip, text_of(kernel, cpu, ts, task), flags, pc)
    return on_call


def _waking_up(kernel, cpu: int, ts: int, _task) -> str:
    """ftrace-direct's my_direct_func(p): the task woken."""
    sched = kernel.sched
    kthreads = [t for t in sched.tasks.values() if t.kthread]
    if not kthreads:
        p = sched.idle[cpu]
    else:
        p = kthreads[mix64(ts * 131 + cpu) % len(kthreads)]
    return DIRECT_FMT % (p.comm, p.pid)


def _mm_fault(_kernel, cpu: int, ts: int, task) -> str:
    """ftrace-direct-too's my_direct_func(vma, address, flags, regs)."""
    m = mix64(ts * 131 + cpu)
    vma = DIRECT_MAP | (m >> 20 & 0x3ffffff) * VMA_SIZE
    base = 0x7f0000000000 if m & 1 else 0x550000000000
    address = base | (m >> 4 & 0xffffffff) << 12 | (m >> 40 & 0xfff)
    flags = FAULT_FLAGS[(m >> 52) % len(FAULT_FLAGS)]
    regs = STACK_AREA + (mix64(task.pid) & 0xffffff) * THREAD_SIZE + THREAD_SIZE - PT_REGS_SIZE
    return "handle mm fault vma=%s address=%x flags=%x regs=%s\n" % (
        hashed_ptr(vma), address, flags, hashed_ptr(regs))


def ftrace_direct_images() -> list:
    return [_image("ftrace_direct", "wake_up_process", 0x1f, 0x40, _waking_up),
            _image("ftrace_direct_too", "handle_mm_fault", 0x25, 0x50, _mm_fault)]
