"""The README's tour runs as written (on a mount point of its own)."""

from __future__ import annotations

import os
import re
import subprocess

from mountlib import REPO, fresh_mountpoint, is_mounted, requires_fuse


def tour() -> str:
    with open(os.path.join(REPO, "README.md")) as fh:
        text = fh.read()
    section = text[text.index("## A short tour"):]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_tour_uses_only_commands_it_sets_up():
    block = tour()
    assert block.startswith("make install")
    assert "/tmp/k" in block and "fakefs umount" in block


@requires_fuse
def test_the_readme_tour_runs_as_written():
    with fresh_mountpoint("fakefs-tour-") as mnt:
        script = "set -e\n" + tour().replace("/tmp/k", mnt)
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        out = subprocess.run(["sh", "-c", script], cwd=REPO, capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        text = out.stdout
        assert re.search(r"<stack_id \d+>", text)           # grep in trace
        assert re.search(r"^successes: [1-9]", text, re.M)  # stack_map_stat
        assert re.search(r"^stack_id \d+ \[ref \d+, depth \d+\]", text, re.M)  # stack_map
        assert not is_mounted(mnt)
