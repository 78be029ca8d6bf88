"""Kprobe event directories through a real mount: a directory removed or
made again by a write is seen so by the very next command (the entries
are invalidated before the write is answered)."""

import os
import subprocess

from mountlib import requires_fuse

pytestmark = requires_fuse

SCRIPT = r'''
set -e
echo 'p:testprobe kernel_clone $stack' > kprobe_events
test -d events/kprobes/testprobe
echo 1 > events/kprobes/testprobe/enable
cat events/kprobes/testprobe/enable > /dev/null
echo 0 > events/kprobes/testprobe/enable
echo '-:testprobe' >> kprobe_events
! test -d events/kprobes/testprobe
! test -d events/kprobes
echo 'p:testprobe kernel_clone' > kprobe_events
echo 'p:event1 kernel_clone' > kprobe_events
test -d events/kprobes/event1
! test -d events/kprobes/testprobe
echo 1 > events/kprobes/event1/enable
echo 0 > events/kprobes/event1/enable
echo > kprobe_events
! test -d events/kprobes
echo ok
'''


def test_removed_event_dirs_are_gone_at_once(tracing):
    for _ in range(5):
        r = subprocess.run(["sh", "-c", SCRIPT], cwd=tracing, capture_output=True, text=True,
                           timeout=60)
        assert r.stdout.strip() == "ok", r.stderr
    assert os.path.exists(os.path.join(tracing, "kprobe_events"))
