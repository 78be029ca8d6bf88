"""The README's tour runs as written (on a mount point of its own), and the
sandbox examples of docs/sandbox.md."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from mountlib import REPO, fresh_mountpoint, is_mounted, requires_fuse

# the series' reader of stack_map_bin, where the tour looks for it (beside the clone)
DUMP = os.path.normpath(os.path.join(REPO, "..", "shared", "upstream", "stackmap_dump.py"))
DUMP_LINE = 'python3 "$DUMP" stack_map_bin --top 3'


def tour() -> str:
    with open(os.path.join(REPO, "README.md")) as fh:
        text = fh.read()
    section = text[text.index("## A short tour"):]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_tour_uses_only_commands_it_sets_up():
    block = tour()
    assert block.startswith("make install")
    assert "export PATH" not in block           # fakefs is on PATH in a new shell too
    assert "/tmp/k" in block and "fakefs umount" in block
    assert DUMP_LINE in block.splitlines()
    assert re.search(r'^DUMP="\$\{DUMP:-\$PWD/\.\./shared/upstream/stackmap_dump\.py\}"',
                     block, re.M)


def test_the_readme_says_where_the_series_tool_comes_from():
    with open(os.path.join(REPO, "README.md")) as fh:
        text = fh.read()
    for words in ("tools/tracing/stackmap_dump.py", "patch 3/3", "RFC PATCH v3", "seed 004",
                  "DUMP=", "skips it"):
        assert words in text, words


def tour_script(mnt: str, dump_there: bool) -> str:
    """The tour as written on ``mnt``; without the series' tool, its line is
    left out (the README says the test skips it)."""
    lines = tour().replace("/tmp/k", mnt).splitlines()
    if not dump_there:
        lines = [ln for ln in lines if not ln.startswith(DUMP_LINE)]
    return "set -e\n" + "\n".join(lines) + "\n"


@requires_fuse
def test_the_readme_tour_runs_as_written(tmp_path):
    """In a shell whose PATH has where `make install` links fakefs (BINDIR,
    from the environment: the test leaves the user's ~/.local/bin alone;
    HOME stays, pip's settings are there), and not the venv."""
    dump_there = os.path.isfile(DUMP)
    bindir = tmp_path / "bin"
    with fresh_mountpoint("fakefs-tour-") as mnt:
        venv_bin = os.path.join(REPO, ".venv", "bin")
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
                if p and os.path.realpath(p) != os.path.realpath(venv_bin)]
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "DUMP")}
        env.update(BINDIR=str(bindir), PATH=os.pathsep.join([str(bindir)] + path))
        out = subprocess.run(["sh", "-c", tour_script(mnt, dump_there)], cwd=REPO,
                             capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert os.path.realpath(bindir / "fakefs") == os.path.realpath(
            os.path.join(venv_bin, "fakefs"))           # what make install linked
        text = out.stdout
        assert re.search(r"<stack_id \d+>", text)           # grep in trace
        assert re.search(r"^successes: [1-9]", text, re.M)  # stack_map_stat
        assert re.search(r"^stack_id \d+ \[ref \d+, depth \d+\]", text, re.M)  # stack_map
        assert not is_mounted(mnt)
    if not dump_there:
        pytest.skip("the tour's %s step: %s is absent (the series' tools/tracing/"
                    "stackmap_dump.py, seed 004's patch 3/3; README.md says where it comes "
                    "from); the rest of the tour ran and passed" % (DUMP_LINE, DUMP))
    assert "Total: 3 unique stacks" in out.stderr               # stackmap_dump.py --top 3
    assert len(re.findall(r"^    \[0\] 0x[0-9a-f]{16}$", text, re.M)) == 3, text[-2000:]


def sandbox_block() -> list[str]:
    """The commands of docs/sandbox.md's first block, without comments."""
    with open(os.path.join(REPO, "docs/sandbox.md")) as fh:
        text = fh.read()
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    return [ln.split("  #")[0].strip() for ln in block.splitlines() if ln.strip()]


def test_the_sandbox_examples_run_as_written():
    from fakefs.cli import namespace, sandbox
    import shutil
    problem = sandbox.host_problem(namespace.use_userns())
    if problem is not None:
        pytest.skip("fakefs sandbox cannot run here: %s" % problem)
    for tool in ("trace-cmd", "/usr/sbin/readprofile"):
        if not shutil.which(tool):
            pytest.skip("%s is not installed (make install brings it)" % tool)
    # a user's PATH: fakefs where make install puts it, no sbin directories
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and
            not p.rstrip("/").endswith("sbin")]
    env = dict(namespace.child_env(), PATH=os.pathsep.join(
        [os.path.join(REPO, ".venv", "bin")] + path))
    # without a tracefs line to cover (user namespace, none on the host)
    # trace-cmd cannot find the fake, and the sandbox says why
    no_line = sandbox.tracefs_line_problem(namespace.use_userns())
    outs = []
    for cmd in sandbox_block():
        # the interactive one gets its commands on standard input
        out = subprocess.run(["sh", "-c", cmd], input="cat /sys/kernel/tracing/tracing_on\n",
                             capture_output=True, text=True, env=env, timeout=120)
        if no_line is not None and "trace-cmd" in cmd:
            assert out.returncode != 0 and no_line in out.stderr, (cmd, out.stderr[-2000:])
            outs.append(None)
            continue
        assert out.returncode == 0, (cmd, out.stderr[-2000:])
        outs.append(out.stdout)
    assert len(outs) == 3
    assert no_line is not None or outs[0].split()[-2:] == ["function", "nop"]   # trace-cmd list -t
    assert no_line is not None or outs[0].split()[0] == "function_graph"
    assert outs[1].strip() == "1"                            # the shell's cat
    assert re.search(r"^\s*\d+ total", outs[2], re.M)        # readprofile | sort | head


@requires_fuse
def test_make_run_mounts_in_the_foreground_until_ctrl_c():
    """README's first command: `make run` (with MNT= and CMDLINE= as it says)."""
    import signal
    import time
    with fresh_mountpoint("fakefs-run-") as mnt:
        p = subprocess.Popen(["make", "-s", "run", "MNT=" + mnt,
                              "CMDLINE=ftrace_stackmap.bits=12 trace_options=stackmap,stacktrace"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True)
        try:
            for _ in range(300):
                if is_mounted(mnt):
                    break
                time.sleep(0.1)
            assert is_mounted(mnt)
            t = os.path.join(mnt, "sys/kernel/tracing")
            with open(os.path.join(t, "options/stackmap")) as fh:
                assert fh.read() == "1\n"
            with open(os.path.join(t, "stack_map_stat")) as fh:
                assert fh.read().startswith("entries: 0 / 4096\n")
            os.killpg(p.pid, signal.SIGINT)               # Ctrl-C
            out = p.communicate(timeout=30)[0]
            assert "Ctrl-C to unmount" in out
            assert not is_mounted(mnt)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
