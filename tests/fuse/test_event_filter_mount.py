"""Event filters and error_log through a real mount, the way a shell uses them."""

import os
import re
import subprocess

from mountlib import mounted, requires_fuse

pytestmark = requires_fuse


def sh(cmd, cwd):
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def test_event_filter_through_the_mount():
    with mounted() as mnt:
        t = os.path.join(mnt, "sys/kernel/tracing")
        flt = "events/sched/sched_switch/filter"
        assert open(os.path.join(t, flt)).read() == "none\n"

        r = sh("echo 'common_pid != 0' > %s && cat %s" % (flt, flt), t)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "common_pid != 0\n"

        # a bad filter: the write fails with EINVAL, the file and error_log say why
        r = sh("echo > error_log; echo 'common_pid == 1 &&' > %s" % flt, t)
        assert r.returncode != 0 and "Invalid argument" in r.stderr, r
        assert open(os.path.join(t, flt)).read() == (
            "common_pid == 1 &&\n                  ^\n"
            "parse_error: Meaningless filter expression\n\n")
        log = open(os.path.join(t, "error_log")).read()
        assert re.fullmatch(r"\[ *\d+\.\d{6}\] event filter parse error: error: "
                            r"Meaningless filter expression\n"
                            r"  Command: common_pid == 1 &&\n {29}\^\n", log), log
        r = sh("echo > error_log && wc -c < error_log", t)
        assert r.stdout.strip() == "0"

        # filtered trace content: no idle task switching out
        r = sh("echo 'common_pid != 0' > %s && echo 1 > events/sched/sched_switch/enable "
               "&& sleep 0.3 && echo 0 > tracing_on && cat trace" % flt, t)
        assert r.returncode == 0, r.stderr
        lines = [ln for ln in r.stdout.splitlines() if "sched_switch:" in ln]
        assert lines
        assert not any(re.match(r"^\s*<idle>-0 ", ln) for ln in lines)
        assert all("prev_pid=0 " not in ln for ln in lines)

        # the harness's reset_events_filter
        r = sh("grep -v ^none events/*/*/filter | while read line; do "
               "echo 0 > `echo $line | cut -f1 -d:`; done; grep -c -v ^none events/*/*/filter",
               t)
        counts = r.stdout.split()
        assert len(counts) >= 2000 and all(c.endswith(":0") for c in counts), r.stdout[:500]
        assert "none\n" == open(os.path.join(t, flt)).read()
