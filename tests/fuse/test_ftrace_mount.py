"""set_ftrace_filter and friends through a real mount, from a shell."""

import os
import re
import subprocess

import pytest

from mountlib import mounted, requires_fuse

pytestmark = requires_fuse

# test.d/functions' reset_ftrace_filter(), as ftracetest runs it before every test
RESET = r'''
reset_ftrace_filter() {
    if [ ! -f set_ftrace_filter ]; then
      return 0
    fi
    echo > set_ftrace_filter
    grep -v '^#' set_ftrace_filter | while read t; do
	tr=`echo $t | cut -d: -f2`
	if [ "$tr" = "" ]; then
	    continue
	fi
	if ! grep -q "$t" set_ftrace_filter; then
		continue;
	fi
	name=`echo $t | cut -d: -f1 | cut -d' ' -f1`
	if [ $tr = "enable_event" -o $tr = "disable_event" ]; then
	    tr=`echo $t | cut -d: -f2-4`
	    limit=`echo $t | cut -d: -f5`
	else
	    tr=`echo $t | cut -d: -f2`
	    limit=`echo $t | cut -d: -f3`
	fi
	if [ "$limit" != "unlimited" ]; then
	    tr="$tr:$limit"
	fi
	echo "!$name:$tr" > set_ftrace_filter
    done
}
'''


def sh(cmd, cwd):
    r = subprocess.run(["dash", "-ec", RESET + cmd], cwd=cwd, capture_output=True, text=True,
                       timeout=120)
    return r


@pytest.fixture(scope="module")
def tracing():
    with mounted() as mnt:
        yield os.path.join(mnt, "sys/kernel/tracing")


def test_reset_round_trip_of_every_probe(tracing):
    r = sh('''
echo 'schedule:traceoff' > set_ftrace_filter
echo 'schedule:traceon:3' >> set_ftrace_filter
echo 'kernel_clone:stacktrace' >> set_ftrace_filter
echo 'schedule:enable_event:sched:sched_switch' >> set_ftrace_filter
echo 'schedule:disable_event:sched:sched_waking:2' >> set_ftrace_filter
echo 'non_exist_func:mod:non_exist_module' >> set_ftrace_filter
echo schedule >> set_ftrace_filter
cat set_ftrace_filter
echo ---
cat events/sched/sched_switch/enable
reset_ftrace_filter
cat set_ftrace_filter
cat events/sched/sched_switch/enable
echo 0 > events/enable
echo 1 > tracing_on
''', tracing)
    assert r.returncode == 0, r.stderr
    before, after = r.stdout.split("---\n")
    # traceoff and traceon:3 on the same function fight: the count goes down
    before = re.sub(r"traceon:count=[0-3]\n", "traceon:count=N\n", before)
    assert set(before.splitlines()) == {
        "schedule", "non_exist_func:mod:non_exist_module", "schedule:traceoff:unlimited",
        "schedule:traceon:count=N", "kernel_clone:stacktrace:unlimited",
        "schedule:enable_event:sched:sched_switch:unlimited",
        "schedule:disable_event:sched:sched_waking:count=2"}
    lines = after.splitlines()
    assert lines[0] in ("0*", "1*")
    assert lines[1:] == ["#### all functions enabled ####", lines[0][0]]


def test_reads_in_any_block_size_agree(tracing):
    # ~180 probes, ~7.6 KB: the listing crosses a page (dd bs=1 asks once a
    # byte: *lock*'s 96 KB took 96k requests, 20 s)
    r = sh('''
echo '*_unlock*:traceoff' > set_ftrace_filter
echo 'sched_tick' > set_ftrace_filter
a=`cat set_ftrace_filter | md5sum`
b=`dd if=set_ftrace_filter bs=1 2>/dev/null | md5sum`
c=`dd if=set_ftrace_filter bs=100 2>/dev/null | md5sum`
[ "$a" = "$b" ] && [ "$a" = "$c" ]
grep -c traceoff set_ftrace_filter
echo '!*:traceoff' >> set_ftrace_filter
echo > set_ftrace_filter
cat set_ftrace_filter
echo 1 > tracing_on
''', tracing)
    assert r.returncode == 0, r.stderr
    n, rest = r.stdout.split("\n", 1)
    assert int(n) > 100 and rest == "#### all functions enabled ####\n"


def test_errors_reach_the_shell(tracing):
    r = sh('''
! echo no_such_function_xyz > set_ftrace_filter
! echo 'schedule:dumpall' > set_ftrace_filter
! echo '!schedule:traceoff' > set_ftrace_filter
! echo 'schedule:traceoff' > set_ftrace_notrace
printf schedule > set_ftrace_filter
cat set_ftrace_filter
echo > set_ftrace_filter
''', tracing)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "schedule\n"          # an unterminated word counts at close


def test_filtered_function_tracer_and_traceoff(tracing):
    r = sh('''
echo 0 > events/enable
echo 0 > tracing_on
echo schedule > set_ftrace_filter
echo function > current_tracer
echo > trace
echo 1 > tracing_on
sleep 0.2
echo 0 > tracing_on
grep -v '^#' trace | awk '{print $5}' | sort | uniq -c
echo ---
echo > set_ftrace_filter
echo nop > current_tracer
echo > trace
echo 1 > events/sched/sched_switch/enable
echo 1 > tracing_on
echo 'schedule:traceoff' > set_ftrace_filter
sleep 0.05
cat tracing_on
a=`grep -v '^#' trace | wc -l`
sleep 0.1
b=`grep -v '^#' trace | wc -l`
[ $a -eq $b ]
reset_ftrace_filter
echo 0 > events/sched/sched_switch/enable
echo 1 > tracing_on
''', tracing)
    assert r.returncode == 0, r.stderr
    counts, rest = r.stdout.split("---\n")
    fields = counts.split()
    assert fields[1::2] == ["schedule"] and int(fields[0]) > 50
    assert rest == "0\n"


def test_instance_filter_is_its_own(tracing):
    r = sh('''
mkdir instances/ft
echo kernel_clone > instances/ft/set_ftrace_filter
echo 'schedule:traceoff' >> instances/ft/set_ftrace_filter
cat instances/ft/set_ftrace_filter
echo ---
cat set_ftrace_filter
test ! -e instances/ft/available_filter_functions
rmdir instances/ft
''', tracing)
    assert r.returncode == 0, r.stderr
    inst, top = r.stdout.split("---\n")
    assert inst == "kernel_clone\nschedule:traceoff:unlimited\n"
    assert top == "#### all functions enabled ####\n"
