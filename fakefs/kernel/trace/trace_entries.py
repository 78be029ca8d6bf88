"""Ring-buffer entry types and their payload sizes (kernel/trace/trace_entries.h).

An entry is a tuple ``(ts, type, pid, flags, preempt_count, a, b)``:

=============  ==========================  =====================
type           a                           b
=============  ==========================  =====================
TRACE_FN       ip                          parent_ip
TRACE_STACK    tuple of return addresses   -
TRACE_STACK_ID stack_id                    -
TRACE_PRINT    ip                          buf (str, ends in a newline)
TRACE_RAW_DATA id                          buf[] as shown (bytes)
TRACE_FUNC_REPEATS (ip, parent_ip, count)  delta of the last repeat (clock units)
TRACE_USER_STACK tgid                      tuple of user return addresses (at most 8)
TRACE_GRAPH_ENT func                       depth
TRACE_GRAPH_RET (func, depth, overrun,     -
                calltime, rettime, retval)
TRACE_CTX      (prev_pid, prev_prio,       -
TRACE_WAKE      prev_state, next_pid,
                next_prio, next_state,
                next_cpu); states as
                task_state_index()
=============  ==========================  =====================

Payload sizes are what ``sizeof()`` gives on a 64-bit kernel: the common
``struct trace_entry`` header is 8 bytes (type u16, flags u8, preempt_count
u8, pid int).
"""

TRACE_FN = 1
TRACE_CTX = 2       # the wakeup tracers' context switch (ctx_switch_entry)
TRACE_WAKE = 3      # and wakeup
TRACE_STACK = 4
TRACE_GRAPH_RET = 10
TRACE_GRAPH_ENT = 11
TRACE_USER_STACK = 12
TRACE_PRINT = 5
TRACE_RAW_DATA = 18
TRACE_FUNC_REPEATS = 19
TRACE_STACK_ID = 20  # appended after the 6.12 types by the stackmap series
TRACE_LAST_TYPE = TRACE_STACK_ID        # __TRACE_LAST_TYPE - 1

TRACE_ENTRY_HDR = 8

# struct trace_entry.flags
TRACE_FLAG_IRQS_OFF = 0x01
TRACE_FLAG_IRQS_NOSUPPORT = 0x02
TRACE_FLAG_NEED_RESCHED = 0x04
TRACE_FLAG_HARDIRQ = 0x08
TRACE_FLAG_SOFTIRQ = 0x10
TRACE_FLAG_PREEMPT_RESCHED = 0x20
TRACE_FLAG_NMI = 0x40
TRACE_FLAG_BH_OFF = 0x80

FN_PAYLOAD = TRACE_ENTRY_HDR + 8 + 8          # ip, parent_ip
STACK_ID_PAYLOAD = TRACE_ENTRY_HDR + 4        # int stack_id
USERSTACK_PAYLOAD = TRACE_ENTRY_HDR + 8 + 8 * 8   # unsigned int tgid (padded), caller[8]
# struct ftrace_graph_ent_entry: func, int depth; struct ftrace_graph_ret_entry
# (packed): struct ftrace_graph_ret (func, retval with CONFIG_FUNCTION_GRAPH_RETVAL,
# depth, overrun, calltime, rettime), then calltime and rettime once more (members
# of the entry that trace_entries.h declares and __trace_graph_return() never sets)
GRAPH_ENT_PAYLOAD = TRACE_ENTRY_HDR + 8 + 4
GRAPH_RET_PAYLOAD = TRACE_ENTRY_HDR + 8 + 4 + 4 + 8 + 8 + 8 + 8
GRAPH_RET_RETVAL_PAYLOAD = GRAPH_RET_PAYLOAD + 8
CTX_PAYLOAD = TRACE_ENTRY_HDR + 4 + 4 + 4 + 4   # three pids/cpu, four chars
# task_state_index() -> its letter (TASK_STATE_TO_CHAR_STR)
TASK_STATE_CHARS = "RSDTtXZPI"
FUNC_REPEATS_PAYLOAD = TRACE_ENTRY_HDR + 8 + 8 + 2 + 2 + 4   # ip, parent_ip, count, delta


def stack_payload(nr: int) -> int:
    """struct stack_entry: header, int size (padded to 8), unsigned long caller[nr]."""
    return TRACE_ENTRY_HDR + 8 + 8 * nr

