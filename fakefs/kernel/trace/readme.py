"""The tracefs ``README`` (``readme_msg[]`` in kernel/trace/trace.c).

Only the paragraphs for features this kernel has are included: ftracetest
greps README to decide whether a test applies, so advertising a feature
that is not there would turn UNSUPPORTED into FAIL.  The paragraph on the
``gid=`` mount option is left out for that reason: a FUSE mount cannot take
tracefs mount options, and ftracetest's mount_options/test_ownership tests
look for it.
"""

CORE = "tracing mini-HOWTO:\n\n# echo 0 > tracing_on : quick way to disable tracing\n# echo 1 > tracing_on : quick way to re-enable tracing\n\n Important files:\n  trace\t\t\t- The static contents of the buffer\n\t\t\t  To clear the buffer write into this file: echo > trace\n  trace_pipe\t\t- A consuming read to see the contents of the buffer\n  current_tracer\t- function and latency tracers\n  available_tracers\t- list of configured tracers for current_tracer\n  error_log\t- error log for failed commands (that support it)\n  buffer_size_kb\t- view and modify size of per cpu buffer\n  buffer_total_size_kb  - view total size of all cpu buffers\n\n  trace_clock\t\t- change the clock used to order events\n       local:   Per cpu clock but may not be synced across CPUs\n      global:   Synced across CPUs but slows tracing down.\n     counter:   Not a clock, but just an increment\n      uptime:   Jiffy counter from time of boot\n        perf:   Same clock that perf events use\n     x86-tsc:   TSC cycle counter\n\n  timestamp_mode\t- view the mode used to timestamp events\n       delta:   Delta difference against a buffer-wide timestamp\n    absolute:   Absolute (standalone) timestamp\n\n  trace_marker\t\t- Writes into this file writes into the kernel buffer\n\n  trace_marker_raw\t\t- Writes into this file writes binary data into the kernel buffer\n  tracing_cpumask\t- Limit which CPUs to trace\n  instances\t\t- Make sub-buffers with: mkdir instances/foo\n\t\t\t  Remove sub-buffer with rmdir\n  trace_options\t\t- Set format or modify how tracing happens\n\t\t\t  Disable an option by prefixing 'no' to the\n\t\t\t  option name\n  saved_cmdlines_size\t- echo command number in here to store comm-pid list\n"


# CONFIG_DYNAMIC_FTRACE: the probe commands this kernel has (ftrace_probes.py)
DYNAMIC_FTRACE = (
    "\n  available_filter_functions - list of functions that can be filtered on\n"
    "  set_ftrace_filter\t- echo function name in here to only trace these\n"
    "\t\t\t  functions\n"
    "\t     accepts: func_full_name or glob-matching-pattern\n"
    "\t     modules: Can select a group via module\n"
    "\t      Format: :mod:<module-name>\n"
    "\t     example: echo :mod:ext3 > set_ftrace_filter\n"
    "\t    triggers: a command to perform when function is hit\n"
    "\t      Format: <function>:<trigger>[:count]\n"
    "\t     trigger: traceon, traceoff\n"
    "\t\t      enable_event:<system>:<event>\n"
    "\t\t      disable_event:<system>:<event>\n"
    "%s"
    "\t\t      dump\n"
    "\t\t      cpudump\n"
    "\t     example: echo do_fault:traceoff > set_ftrace_filter\n"
    "\t              echo do_trap:traceoff:3 > set_ftrace_filter\n"
    "\t     The first one will disable tracing every time do_fault is hit\n"
    "\t     The second will disable tracing at most 3 times when do_trap is hit\n"
    "\t       The first time do trap is hit and it disables tracing, the\n"
    "\t       counter will decrement to 2. If tracing is already disabled,\n"
    "\t       the counter will not decrement. It only decrements when the\n"
    "\t       trigger did work\n"
    "\t     To remove trigger without count:\n"
    "\t       echo '!<function>:<trigger> > set_ftrace_filter\n"
    "\t     To remove trigger with a count:\n"
    "\t       echo '!<function>:<trigger>:0 > set_ftrace_filter\n"
    "  set_ftrace_notrace\t- echo function name in here to never trace.\n"
    "\t    accepts: func_full_name, *func_end, func_begin*, *func_middle*\n"
    "\t    modules: Can select a group via module command :mod:\n"
    "\t    Does not accept triggers\n"
)
STACKTRACE_TRIGGER = "\t\t      stacktrace\n"
SNAPSHOT_TRIGGER = "\t\t      snapshot\n"
# CONFIG_TRACER_SNAPSHOT
SNAPSHOT = ("\n  snapshot\t\t- Like 'trace' but shows the content of the static\n"
            "\t\t\t  snapshot buffer. Read the contents for more\n"
            "\t\t\t  information\n")
# CONFIG_STACK_TRACER (stack_trace_filter with CONFIG_DYNAMIC_FTRACE)
STACK_TRACER = ("  stack_trace\t\t- Shows the max stack trace when active\n"
                "  stack_max_size\t- Shows current max stack size that was traced\n"
                "\t\t\t  Write into this file to reset the max size (trigger a\n"
                "\t\t\t  new trace)\n")
STACK_TRACE_FILTER = ("  stack_trace_filter\t- Like set_ftrace_filter but limits what stack_trace\n"
                      "\t\t\t  traces\n")
# the events/ directory and its event triggers (trace_events_trigger.py);
# the trigger commands between EVENTS_HEAD and EVENTS_TAIL
EVENTS_HEAD = (
    "  events/\t\t- Directory containing all trace event subsystems:\n"
    "      enable\t\t- Write 0/1 to enable/disable tracing of all events\n"
    "  events/<system>/\t- Directory containing all trace events for <system>:\n"
    "      enable\t\t- Write 0/1 to enable/disable tracing of all <system>\n"
    "\t\t\t  events\n"
    "      filter\t\t- If set, only events passing filter are traced\n"
    "  events/<system>/<event>/\t- Directory containing control files for\n"
    "\t\t\t  <event>:\n"
    "      enable\t\t- Write 0/1 to enable/disable tracing of <event>\n"
    "      filter\t\t- If set, only events passing filter are traced\n"
    "      trigger\t\t- If set, a command to perform when event is hit\n"
    "\t    Format: <trigger>[:count][if <filter>]\n"
    "\t   trigger: traceon, traceoff\n"
    "\t            enable_event:<system>:<event>\n"
    "\t            disable_event:<system>:<event>\n"
)
EVENTS_STACKTRACE = "\t\t    stacktrace\n"
EVENTS_SNAPSHOT = "\t\t    snapshot\n"
EVENTS_TAIL = (
    "\t   example: echo traceoff > events/block/block_unplug/trigger\n"
    "\t            echo traceoff:3 > events/block/block_unplug/trigger\n"
    "\t            echo 'enable_event:kmem:kmalloc:3 if nr_rq > 1' > \\\n"
    "\t                  events/block/block_unplug/trigger\n"
    "\t   The first disables tracing every time block_unplug is hit.\n"
    "\t   The second disables tracing the first 3 times block_unplug is hit.\n"
    "\t   The third enables the kmalloc event the first 3 times block_unplug\n"
    "\t     is hit and has value of greater than 1 for the 'nr_rq' event field.\n"
    "\t   Like function triggers, the counter is only decremented if it\n"
    "\t    enabled or disabled tracing.\n"
    "\t   To remove a trigger without a count:\n"
    "\t     echo '!<trigger> > <system>/<event>/trigger\n"
    "\t   To remove a trigger with a count:\n"
    "\t     echo '!<trigger>:0 > <system>/<event>/trigger\n"
    "\t   Filters can be ignored when removing a trigger.\n"
)
# CONFIG_FUNCTION_TRACER (only with the pid files, see ftrace_files.pid_files_wanted)
FTRACE_PID = (
    "  set_ftrace_pid\t- Write pid(s) to only function trace those pids\n"
    "\t\t    (function)\n"
    "  set_ftrace_notrace_pid\t- Write pid(s) to not function trace those pids\n"
    "\t\t    (function)\n"
)

# CONFIG_KPROBE_EVENTS (with CONFIG_DYNAMIC_EVENTS): the 6.12 lines for the
# probe commands this kernel takes (the s line with CONFIG_HIST_TRIGGERS,
# the f/t lines with CONFIG_FPROBE_EVENTS, uprobe_events and the uprobe
# place with CONFIG_UPROBE_EVENTS, the <argname> line with
# CONFIG_PROBE_EVENTS_BTF_ARGS).  ``ustring`` and ``+u`` read the task's
# user memory (``Task.mm``: a real process's own, a simulated task's model)
# CONFIG_UPROBE_EVENTS (trace_uprobe.py)
UPROBE_FILE = ("  uprobe_events\t\t- Create/append/remove/show the userspace dynamic events\n"
               "\t\t\t  Write into this file to define/undefine new trace events.\n")
UPROBE_PLACE = "   place (uprobe): <path>:<offset>[%return][(ref_ctr_offset)]\n"
# CONFIG_PROBE_EVENTS_BTF_ARGS (trace_probe_btf.py)
BTF_ARGS = "\t           <argname>[->field[->field|.field...]],\n"
# CONFIG_FPROBE_EVENTS (trace_fprobe.py)
FPROBE_FORMATS = (
    "\t           f[:[<group>/][<event>]] <func-name>[%return] [<args>]\n"
    "\t           t[:[<group>/][<event>]] <tracepoint> [<args>]\n"
)
PROBE_EVENTS = (
    "  dynamic_events\t\t- Create/append/remove/show the generic dynamic events\n"
    "\t\t\t  Write into this file to define/undefine new trace events.\n"
    "  kprobe_events\t\t- Create/append/remove/show the kernel dynamic events\n"
    "\t\t\t  Write into this file to define/undefine new trace events.\n"
    "{uprobe_file}"
    "\t  accepts: event-definitions (one definition per line)\n"
    "\t   Format: p[:[<group>/][<event>]] <place> [<args>]\n"
    "\t           r[maxactive][:[<group>/][<event>]] <place> [<args>]\n"
    + FPROBE_FORMATS +
    "{synthetic}"
    "\t           e[:[<group>/][<event>]] <attached-group>.<attached-event> [<args>] [if <filter>]\n"
    "\t           -:[<group>/][<event>]\n"
    "\t    place: [<module>:]<symbol>[+<offset>]|<memaddr>\n"
    "place (kretprobe): [<module>:]<symbol>[+<offset>]%return|<memaddr>\n"
    "{uprobe_place}"
    "\t     args: <name>=fetcharg[:type]\n"
    "\t fetcharg: (%<register>|$<efield>), @<address>, @<symbol>[+|-<offset>],\n"
    "\t           $stack<index>, $stack, $retval, $comm, $arg<N>,\n"
    "{btf_args}"
    "\t           +|-[u]<offset>(<fetcharg>), \\imm-value, \\\"imm-string\"\n"
    "\t     kernel return probes support: $retval, $arg<N>, $comm\n"
    "\t     type: s8/16/32/64, u8/16/32/64, x8/16/32/64, char, string, symbol,\n"
    "\t           b<bit-width>@<bit-offset>/<container-size>, ustring,\n"
    "\t           symstr, %pd/%pD, <type>\\[<array-size>\\]\n"
    "{synthetic_fields}"
    "\t    efield: For event probes ('e' types), the field is on of the fields\n"
    "\t            of the <attached-group>/<attached-event>.\n"
)


# CONFIG_HIST_TRIGGERS (trace_events_hist_trigger.py): the trigger list's
# lines and the hist paragraph of 6.12 with its handlers and actions
# (trace_events_hist_actions.py; snapshot() with CONFIG_TRACER_SNAPSHOT),
# and the synthetic_events paragraph (CONFIG_SYNTH_EVENTS)
EVENTS_HIST_CMDS = (
    "\t            enable_hist:<system>:<event>\n"
    "\t            disable_hist:<system>:<event>\n"
)
EVENTS_HIST = "\t\t    hist (see below)\n"
HIST = (
    "      hist trigger\t- If set, event hits are aggregated into a hash table\n"
    "\t    Format: hist:keys=<field1[,field2,...]>\n"
    "\t            [:<var1>=<field|var_ref|numeric_literal>[,<var2>=...]]\n"
    "\t            [:values=<field1[,field2,...]>]\n"
    "\t            [:sort=<field1[,field2,...]>]\n"
    "\t            [:size=#entries]\n"
    "\t            [:pause][:continue][:clear]\n"
    "\t            [:name=histname1]\n"
    "\t            [:nohitcount]\n"
    "\t            [:<handler>.<action>]\n"
    "\t            [if <filter>]\n\n"
    "\t    Note, special fields can be used as well:\n"
    "\t            common_timestamp - to record current timestamp\n"
    "\t            common_cpu - to record the CPU the event happened on\n"
    "\n"
    "\t    A hist trigger variable can be:\n"
    "\t        - a reference to a field e.g. x=current_timestamp,\n"
    "\t        - a reference to another variable e.g. y=$x,\n"
    "\t        - a numeric literal: e.g. ms_per_sec=1000,\n"
    "\t        - an arithmetic expression: e.g. time_secs=current_timestamp/1000\n"
    "\n"
    "\t    hist trigger arithmetic expressions support addition(+), subtraction(-),\n"
    "\t    multiplication(*) and division(/) operators. An operand can be either a\n"
    "\t    variable reference, field or numeric literal.\n"
    "\n"
    "\t    When a matching event is hit, an entry is added to a hash\n"
    "\t    table using the key(s) and value(s) named, and the value of a\n"
    "\t    sum called 'hitcount' is incremented.  Keys and values\n"
    "\t    correspond to fields in the event's format description.  Keys\n"
    "\t    can be any field, or the special string 'common_stacktrace'.\n"
    "\t    Compound keys consisting of up to two fields can be specified\n"
    "\t    by the 'keys' keyword.  Values must correspond to numeric\n"
    "\t    fields.  Sort keys consisting of up to two fields can be\n"
    "\t    specified using the 'sort' keyword.  The sort direction can\n"
    "\t    be modified by appending '.descending' or '.ascending' to a\n"
    "\t    sort field.  The 'size' parameter can be used to specify more\n"
    "\t    or fewer than the default 2048 entries for the hashtable size.\n"
    "\t    If a hist trigger is given a name using the 'name' parameter,\n"
    "\t    its histogram data will be shared with other triggers of the\n"
    "\t    same name, and trigger hits will update this common data.\n\n"
    "\t    Reading the 'hist' file for the event will dump the hash\n"
    "\t    table in its entirety to stdout.  If there are multiple hist\n"
    "\t    triggers attached to an event, there will be a table for each\n"
    "\t    trigger in the output.  The table displayed for a named\n"
    "\t    trigger will be the same as any other instance having the\n"
    "\t    same name.  The default format used to display a given field\n"
    "\t    can be modified by appending any of the following modifiers\n"
    "\t    to the field name, as applicable:\n\n"
    "\t            .hex        display a number as a hex value\n"
    "\t            .sym        display an address as a symbol\n"
    "\t            .sym-offset display an address as a symbol and offset\n"
    "\t            .execname   display a common_pid as a program name\n"
    "\t            .syscall    display a syscall id as a syscall name\n"
    "\t            .log2       display log2 value rather than raw number\n"
    "\t            .buckets=size  display values in groups of size rather than raw number\n"
    "\t            .usecs      display a common_timestamp in microseconds\n"
    "\t            .percent    display a number of percentage value\n"
    "\t            .graph      display a bar-graph of a value\n\n"
    "\t    The 'pause' parameter can be used to pause an existing hist\n"
    "\t    trigger or to start a hist trigger but not log any events\n"
    "\t    until told to do so.  'continue' can be used to start or\n"
    "\t    restart a paused hist trigger.\n\n"
    "\t    The 'clear' parameter will clear the contents of a running\n"
    "\t    hist trigger and leave its current paused/active state\n"
    "\t    unchanged.\n\n"
    "\t    The 'nohitcount' (or NOHC) parameter will suppress display of\n"
    "\t    raw hitcount in the histogram.\n\n"
    "\t    The enable_hist and disable_hist triggers can be used to\n"
    "\t    have one event conditionally start and stop another event's\n"
    "\t    already-attached hist trigger.  The syntax is analogous to\n"
    "\t    the enable_event and disable_event triggers.\n\n"
    "\t    Hist trigger handlers and actions are executed whenever a\n"
    "\t    a histogram entry is added or updated.  They take the form:\n\n"
    "\t        <handler>.<action>\n\n"
    "\t    The available handlers are:\n\n"
    "\t        onmatch(matching.event)  - invoke on addition or update\n"
    "\t        onmax(var)               - invoke if var exceeds current max\n"
    "\t        onchange(var)            - invoke action if var changes\n\n"
    "\t    The available actions are:\n\n"
    "\t        trace(<synthetic_event>,param list)  - generate synthetic event\n"
    "\t        save(field,...)                      - save current event fields\n"
)
HIST_SNAPSHOT = "\t        snapshot()                           - snapshot the trace buffer\n\n"
SYNTH_EVENTS = (
    "  events/synthetic_events\t- Create/append/remove/show synthetic events\n"
    "\t  Write into this file to define/undefine new synthetic events.\n"
    "\t     example: echo 'myevent u64 lat; char name[]; long[] stack' >> synthetic_events\n"
)
SYNTH_COMMAND = "\t           s:[synthetic/]<event> <field> [<field>]\n"
SYNTH_FIELDS = (
    "\t    field: <stype> <name>;\n"
    "\t    stype: u8/u16/u32/u64, s8/s16/s32/s64, pid_t,\n"
    "\t           [unsigned] char/int/long\n"
)

def readme_text(config, pid_files: bool = False) -> str:
    text = CORE
    stack, snap = config.enabled("STACKTRACE"), config.enabled("TRACER_SNAPSHOT")
    if config.enabled("FUNCTION_TRACER") and config.enabled("DYNAMIC_FTRACE"):
        text += DYNAMIC_FTRACE % ((STACKTRACE_TRIGGER if stack else "")
                                  + (SNAPSHOT_TRIGGER if snap else ""))
    if config.enabled("FUNCTION_TRACER") and pid_files:
        text += FTRACE_PID
    if snap:
        text += SNAPSHOT
    if config.enabled("STACK_TRACER") and config.enabled("FUNCTION_TRACER"):
        text += STACK_TRACER
        if config.enabled("DYNAMIC_FTRACE"):
            text += STACK_TRACE_FILTER
    hist = config.enabled("HIST_TRIGGERS")
    if config.enabled("KPROBES") and config.enabled("KPROBE_EVENTS"):
        probes = PROBE_EVENTS if config.enabled("FPROBE_EVENTS") else PROBE_EVENTS.replace(FPROBE_FORMATS, "")
        uprobes = config.enabled("UPROBE_EVENTS")
        text += probes.replace("{synthetic}", SYNTH_COMMAND if hist else "").replace(
            "{synthetic_fields}", SYNTH_FIELDS if hist else "").replace(
            "{uprobe_file}", UPROBE_FILE if uprobes else "").replace(
            "{uprobe_place}", UPROBE_PLACE if uprobes else "").replace(
            "{btf_args}", BTF_ARGS if config.enabled("PROBE_EVENTS_BTF_ARGS") else "")
    text += EVENTS_HEAD
    if hist:
        text += EVENTS_HIST_CMDS
    if stack:
        text += EVENTS_STACKTRACE
    if snap:
        text += EVENTS_SNAPSHOT
    if hist:
        text += EVENTS_HIST
    text += EVENTS_TAIL
    if hist:
        text += HIST
        if snap:
            text += HIST_SNAPSHOT
        if config.enabled("SYNTH_EVENTS"):
            text += SYNTH_EVENTS
    return text
