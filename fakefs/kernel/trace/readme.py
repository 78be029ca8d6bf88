"""The tracefs ``README`` (``readme_msg[]`` in kernel/trace/trace.c).

Only the paragraphs for features this kernel has are included: ftracetest
greps README to decide whether a test applies, so advertising a feature
that is not there would turn UNSUPPORTED into FAIL.  The paragraph on the
``gid=`` mount option is left out for that reason: a FUSE mount cannot take
tracefs mount options, and ftracetest's mount_options/test_ownership tests
look for it.
"""

CORE = "tracing mini-HOWTO:\n\n# echo 0 > tracing_on : quick way to disable tracing\n# echo 1 > tracing_on : quick way to re-enable tracing\n\n Important files:\n  trace\t\t\t- The static contents of the buffer\n\t\t\t  To clear the buffer write into this file: echo > trace\n  trace_pipe\t\t- A consuming read to see the contents of the buffer\n  current_tracer\t- function and latency tracers\n  available_tracers\t- list of configured tracers for current_tracer\n  error_log\t- error log for failed commands (that support it)\n  buffer_size_kb\t- view and modify size of per cpu buffer\n  buffer_total_size_kb  - view total size of all cpu buffers\n\n  trace_clock\t\t- change the clock used to order events\n       local:   Per cpu clock but may not be synced across CPUs\n      global:   Synced across CPUs but slows tracing down.\n     counter:   Not a clock, but just an increment\n      uptime:   Jiffy counter from time of boot\n        perf:   Same clock that perf events use\n     x86-tsc:   TSC cycle counter\n\n  timestamp_mode\t- view the mode used to timestamp events\n       delta:   Delta difference against a buffer-wide timestamp\n    absolute:   Absolute (standalone) timestamp\n\n  trace_marker\t\t- Writes into this file writes into the kernel buffer\n  tracing_cpumask\t- Limit which CPUs to trace\n  instances\t\t- Make sub-buffers with: mkdir instances/foo\n\t\t\t  Remove sub-buffer with rmdir\n  trace_options\t\t- Set format or modify how tracing happens\n\t\t\t  Disable an option by prefixing 'no' to the\n\t\t\t  option name\n  saved_cmdlines_size\t- echo command number in here to store comm-pid list\n"


def readme_text(config) -> str:
    return CORE
