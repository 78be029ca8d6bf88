"""The tracefs ``README`` (``readme_msg[]`` in kernel/trace/trace.c).

Only the paragraphs for features this kernel has are included: ftracetest
greps README to decide whether a test applies, so advertising a feature
that is not there would turn UNSUPPORTED into FAIL.  The paragraph on the
``gid=`` mount option is left out for that reason: a FUSE mount cannot take
tracefs mount options, and ftracetest's mount_options/test_ownership tests
look for it.
"""

CORE = "tracing mini-HOWTO:\n\n# echo 0 > tracing_on : quick way to disable tracing\n# echo 1 > tracing_on : quick way to re-enable tracing\n\n Important files:\n  trace\t\t\t- The static contents of the buffer\n\t\t\t  To clear the buffer write into this file: echo > trace\n  trace_pipe\t\t- A consuming read to see the contents of the buffer\n  current_tracer\t- function and latency tracers\n  available_tracers\t- list of configured tracers for current_tracer\n  error_log\t- error log for failed commands (that support it)\n  buffer_size_kb\t- view and modify size of per cpu buffer\n  buffer_total_size_kb  - view total size of all cpu buffers\n\n  trace_clock\t\t- change the clock used to order events\n       local:   Per cpu clock but may not be synced across CPUs\n      global:   Synced across CPUs but slows tracing down.\n     counter:   Not a clock, but just an increment\n      uptime:   Jiffy counter from time of boot\n        perf:   Same clock that perf events use\n     x86-tsc:   TSC cycle counter\n\n  timestamp_mode\t- view the mode used to timestamp events\n       delta:   Delta difference against a buffer-wide timestamp\n    absolute:   Absolute (standalone) timestamp\n\n  trace_marker\t\t- Writes into this file writes into the kernel buffer\n  tracing_cpumask\t- Limit which CPUs to trace\n  instances\t\t- Make sub-buffers with: mkdir instances/foo\n\t\t\t  Remove sub-buffer with rmdir\n  trace_options\t\t- Set format or modify how tracing happens\n\t\t\t  Disable an option by prefixing 'no' to the\n\t\t\t  option name\n  saved_cmdlines_size\t- echo command number in here to store comm-pid list\n"


# CONFIG_DYNAMIC_FTRACE: the probe commands this kernel has (no snapshot,
# dump or cpudump: see ftrace_probes.py)
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
# CONFIG_FUNCTION_TRACER (only with the pid files, see ftrace_files.pid_files_wanted)
FTRACE_PID = (
    "  set_ftrace_pid\t- Write pid(s) to only function trace those pids\n"
    "\t\t    (function)\n"
    "  set_ftrace_notrace_pid\t- Write pid(s) to not function trace those pids\n"
    "\t\t    (function)\n"
)


def readme_text(config, pid_files: bool = False) -> str:
    text = CORE
    if config.enabled("FUNCTION_TRACER") and config.enabled("DYNAMIC_FTRACE"):
        text += DYNAMIC_FTRACE % (STACKTRACE_TRIGGER if config.enabled("STACKTRACE") else "")
    if config.enabled("FUNCTION_TRACER") and pid_files:
        text += FTRACE_PID
    return text
