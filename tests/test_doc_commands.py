"""Every command written inline in the README and the docs is accounted for.

The shell blocks are run elsewhere (tests/test_readme.py, tests/test_docs.py,
the lessons' runner).  Here: each inline code span that starts with a
program is in LEDGER with how it is checked, and those that can run against
a mount are run as written (placeholders MNT, MOUNTPOINT, TRACE, FILE,
[TEST…] filled in).  A new inline command without an entry, or an entry no
document has any more, fails the test: the docs cannot rot unnoticed.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from mountlib import REPO, fresh_mountpoint, is_mounted, mounted, requires_fuse

# every page: the README, the selftests' and all of docs/ (the lessons included)
DOCS = ["README.md", "selftests/README.md"] + sorted(
    os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs/**/*.md"), recursive=True))

PROGRAMS = {"fakefs", "make", "python", "python3", "sort", "readprofile", "trace-cmd", "unshare",
            "chmod", "numfmt", "cat", "echo", "mount", "umount", "perf", "sysctl", "grep", "head",
            "tail", "mkdir", "rmdir", "sleep", "dmesg", "sudo", "sh", "find", "ls", "fusermount3"}

WORD = "word"       # names a program or an option in prose: nothing to run
RUN = "run"         # run as written by a test in this file
CI = "ci"           # run by `make test` (.ci/run): checked against the Makefile
HOST = "host"       # changes the host: shown for the reader to run, not run by tests


def covered(test: str) -> tuple[str, str]:
    """Run by a named test elsewhere (its file and function must exist)."""
    return ("test", test)


LEDGER: dict[str, tuple[str, str] | str] = {
    # README.md and the pages taken out of it: docs/cli.md, sandbox.md,
    # tracefs.md, procfs.md, time.md, how-it-is-built.md, fidelity.md
    "cat": WORD, "echo": WORD, "mount": WORD, "sleep 1": WORD, "find": WORD,
    "fakefs": WORD, "fakefs …": WORD, "perf": WORD, "umount": WORD, "fusermount3 -u": WORD,
    'sudo "$(command -v fakefs)" …': WORD,
    "umount -z": covered("tests/fuse/test_mount_lifecycle.py::"
                         "test_umount_of_a_stale_mount_still_held_says_so_and_suggests_z"),
    "mount -t tracefs nodev /sys/kernel/tracing": HOST,
    # docs/sandbox.md, what a sealed COMMAND gets
    "mount --bind": covered("tests/test_sandbox.py::"
                            "test_a_root_command_cannot_unmount_mount_or_bind_over_the_fake"),
    "perf list": covered("tests/test_sandbox.py::test_perf_counts_no_host_events"),
    "perf stat": covered("tests/test_sandbox.py::test_perf_counts_no_host_events"),
    "perf record": covered("tests/test_sandbox.py::test_perf_counts_no_host_events"),
    "perf ftrace": covered("tests/test_sandbox.py::test_perf_ftrace_shows_a_command_s_vfs_read_calls"),
    "perf ftrace -G vfs_read -- sleep 1":
        covered("tests/test_sandbox.py::test_perf_ftrace_shows_a_command_s_vfs_read_calls"),
    "perf ftrace -T vfs_read -- sleep 1":
        covered("tests/test_sandbox.py::test_perf_ftrace_shows_a_command_s_vfs_read_calls"),
    "make run": covered("tests/test_readme.py::test_make_run_mounts_in_the_foreground_until_ctrl_c"),
    'make run CMDLINE="ftrace_stackmap.bits=12 trace_options=stackmap,stacktrace"':
        covered("tests/test_readme.py::test_make_run_mounts_in_the_foreground_until_ctrl_c"),
    "make install": CI, "make unit": CI, "make selftests": CI, "make test": CI,
    "make ftracetest-table": covered("tests/test_doc_commands.py::test_selftest_table_as_written"),
    "make bench": covered("tests/test_doc_commands.py::test_make_targets_name_real_commands"),
    "make check": covered("tests/test_doc_commands.py::test_make_targets_name_real_commands"),
    "make stress": covered("tests/fuse/test_stress.py::test_fifty_concurrent_shells"),
    "fakefs clock MNT +1s": RUN,
    "chmod 0666 /dev/fuse": HOST,
    "fakefs selftest": CI,
    "unshare -Urm": WORD, "unshare -Ur": WORD,
    "fakefs sandbox": covered("tests/test_readme.py::test_the_sandbox_examples_run_as_written"),
    "fakefs dmesg MOUNTPOINT": RUN,
    "trace-cmd record": WORD,
    "trace-cmd record --nosplice -e sched_switch sleep 1": RUN,
    "python -m fakefs.timeline TRACE": RUN,
    "sort -g proc/allocinfo | tail | numfmt --to=iec": RUN,
    "readprofile -p MNT/proc/profile -m MNT/boot/System.map": RUN,
    "fakefs heatmap MNT": RUN,
    "fakefs mount --persona help": RUN,
    "fakefs selftest --table FILE [TEST…]": RUN,
    # selftests/README.md
    "unshare -m --propagation private": WORD,
    "fakefs mount -f -o fsname=tracefs": covered("tests/test_doc_commands.py::test_selftest_table_as_written"),
    "fakefs selftest --extra selftests/stackmap --extra ../shared/upstream": CI,
    "echo 0": WORD, "echo reset": WORD, "echo 0 >>": WORD,
    # docs/tracefs-6.12.md: the survey of the host's own tracefs (makes an
    # instance on the host kernel, seen machine-wide while it exists), and
    # the same commands on a mount
    "unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing && cd /sys/kernel/tracing && "
    "find . -maxdepth 1 -printf \"%m %y %p\\n\" && mkdir instances/fidcheck && (cd instances/fidcheck "
    "&& find . -maxdepth 2 -printf \"%m %y %p\\n\"); rmdir instances/fidcheck'": HOST,
    "unshare -m --propagation private sh -c 'mkdir -p /tmp/fidfake && fakefs mount "
    "/tmp/fidfake && cd /tmp/fidfake/sys/kernel/tracing && find . -maxdepth 1 -printf \"%m %y %p\\n\" "
    "&& mkdir instances/fidcheck && (cd instances/fidcheck && find . -maxdepth 2 -printf "
    "\"%m %y %p\\n\"); rmdir instances/fidcheck; cd / && umount /tmp/fidfake'": RUN,
    "trace-cmd record/extract/report": WORD, "trace-cmd stream": WORD,
    "echo 0 > options/print-parent": RUN,
    # docs/ftracetest-6.12.md
    "fakefs selftest --table docs/ftracetest-6.12.md all":
        covered("tests/test_doc_commands.py::test_selftest_table_as_written"),
    # docs/pictures.md
    "fakefs picture KIND MOUNTPOINT [-o FILE]": covered("tests/test_docs.py::"
                                                        "test_the_shell_blocks_of_a_doc_run_as_written"),
    "fakefs mount --clock virtual --seed 1 /tmp/k": RUN,
    "fakefs heatmap": WORD,
    "fakefs umount /tmp/k": RUN,
    # docs/lessons
    "readprofile": WORD, "fakefs clock": WORD, "trace-cmd": WORD, "python3": WORD, "sh": WORD,
    "numfmt": WORD, "mkdir": WORD, "rmdir": WORD, "sort -nr": WORD, "echo 123": WORD,
    "readprofile -i": WORD, "readprofile -b": WORD, "readprofile -M": WORD, "readprofile -r": WORD,
    "fakefs picture profile": WORD, "echo $$": WORD,
    "echo 0 > tracing_on": ("block", "docs/lessons/01-first-trace.md"),
    "cat trace_pipe": RUN,
    "echo $$ > set_ftrace_pid": CI,   # ftracetest ftrace/func-filter-pid.tc writes it
}


# Every ```sh block of DOCS (by page and its order there) -> the test that
# runs it as written (that test's file names the page) or CI.
SH_BLOCKS: dict[tuple[str, int], tuple[str, str] | str] = {
    ("README.md", 0): covered("tests/test_readme.py::"
                              "test_make_run_mounts_in_the_foreground_until_ctrl_c"),   # + make test
    ("README.md", 1): covered("tests/test_readme.py::test_the_readme_tour_runs_as_written"),
    ("docs/sandbox.md", 0): covered("tests/test_readme.py::"
                                    "test_the_sandbox_examples_run_as_written"),
    **{("docs/pictures.md", i): covered("tests/test_docs.py::"
                                        "test_the_shell_blocks_of_a_doc_run_as_written")
       for i in range(5)},
    **{("docs/lessons/README.md", i): covered("tests/test_docs.py::"
                                              "test_the_shell_blocks_of_a_doc_run_as_written")
       for i in range(2)},
}


def sh_blocks() -> dict[tuple[str, int], str]:
    found = {}
    for doc in DOCS:
        with open(os.path.join(REPO, doc)) as fh:
            for i, block in enumerate(re.findall(r"```sh\n(.*?)```", fh.read(), re.S)):
                found[(doc, i)] = block
    return found


def test_every_shell_block_is_run_by_a_test():
    found = sh_blocks()
    assert sorted(set(found) - set(SH_BLOCKS)) == [], "```sh blocks no test runs"
    assert sorted(set(SH_BLOCKS) - set(found)) == [], "SH_BLOCKS entries no document has"
    for (doc, _), how in SH_BLOCKS.items():
        path, name = how[1].split("::")
        with open(os.path.join(REPO, path)) as fh:
            text = fh.read()
        assert "def %s(" % name in text and (doc in text or doc == "README.md"), (doc, how)


def inline_commands() -> dict[str, list[str]]:
    """Inline code spans that start with a program, and the docs they are in."""
    found: dict[str, list[str]] = {}
    for doc in DOCS:
        with open(os.path.join(REPO, doc)) as fh:
            text = re.sub(r"```.*?```", "", fh.read(), flags=re.S)
        for span in re.findall(r"`([^`\n]+)`", text):
            first = span.split()[0]
            if first in PROGRAMS:
                found.setdefault(span.replace("\\|", "|"), []).append(doc)
    return found


def test_every_inline_command_is_accounted_for():
    found = inline_commands()
    assert sorted(set(found) - set(LEDGER)) == [], "inline commands with no LEDGER entry"
    assert sorted(set(LEDGER) - set(found)) == [], "LEDGER entries no document has"


def recipe(makefile: str, target: str) -> list[str]:
    """The recipe lines of ``target`` (its tab-indented lines, continuations joined)."""
    m = re.search(r"^%s:.*\n((?:\t.*\n)*)" % re.escape(target), makefile, re.M)
    assert m, "no target %s in the Makefile" % target
    return [ln[1:] for ln in m.group(1).replace("\\\n", " ").splitlines()]


def test_what_the_ledger_points_at_exists():
    with open(os.path.join(REPO, "Makefile")) as fh:
        makefile = fh.read()
    with open(os.path.join(REPO, ".ci/run")) as fh:
        assert "\nmake test\n" in fh.read()
    test_recipe = recipe(makefile, "test")
    for cmd, how in LEDGER.items():
        if how == CI and cmd.startswith("make ") and cmd != "make test":
            # `make test` has the target as a prerequisite, or runs what it runs
            target = cmd.split()[1]
            own = [ln.lstrip("@").strip() for ln in recipe(makefile, target)]
            assert re.search(r"^test: .*\b%s\b" % target, makefile, re.M) or (
                own and all(ln in "\n".join(test_recipe) for ln in own)), cmd
        elif how == CI:
            assert "$(FAKEFS) selftest --extra selftests/stackmap" in makefile, cmd
        elif isinstance(how, tuple) and how[0] == "test":
            path, name = how[1].split("::")
            with open(os.path.join(REPO, path)) as fh:
                assert "def %s(" % name in fh.read(), how
        elif isinstance(how, tuple) and how[0] == "block":
            with open(os.path.join(REPO, how[1])) as fh:
                text = fh.read()
            lines = "".join(re.findall(r"```sh\n(.*?)```", text, re.S)).splitlines()
            lines += [ln[2:] for block in re.findall(r"```console\n(.*?)```", text, re.S)
                      for ln in block.splitlines() if ln.startswith("$ ")]
            assert cmd in lines, (cmd, how)


def test_make_targets_name_real_commands():
    """`make bench`, `make check` and `make ftracetest-table` run what exists
    (dry run: the first runs minutes of benchmarks, the last rewrites a
    tracked doc)."""
    for target, want in (("bench", "-m fakefs.bench"), ("check", '-m "not mount"'),
                         ("ftracetest-table", "selftest --table docs/ftracetest-6.12.md all")):
        out = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert want in out.stdout, (target, out.stdout)
    import importlib
    importlib.import_module("fakefs.bench")     # the module the target runs imports


def sh(cmd: str, cwd: str, env: dict | None = None, timeout: int = 120) -> str:
    out = subprocess.run(["sh", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                         env=env, timeout=timeout)
    assert out.returncode == 0, (cmd, out.stdout[-1500:], out.stderr[-1500:])
    return out.stdout


def tool_env() -> dict:
    """`fakefs` and `python` as the README's set-up leaves them on PATH."""
    venv_bin = os.path.join(REPO, ".venv", "bin")
    bindir = venv_bin if os.path.exists(os.path.join(venv_bin, "fakefs")) else os.path.dirname(
        sys.executable)
    return dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))


def fill(cmd: str, **values: str) -> str:
    for key, value in values.items():
        cmd = re.sub(r"\b%s\b" % key, value, cmd)
    return cmd


@requires_fuse
def test_readme_inline_commands_run_as_written(tmp_path):
    if not shutil.which("fakefs", path=tool_env()["PATH"]):
        pytest.skip("fakefs is not installed on PATH (make install)")
    env = tool_env()
    personas = sh("fakefs mount --persona help", REPO, env)
    assert "6.12" in personas and "2.6.30-eqware" in personas
    with mounted(cmdline="profile=2", extra_args=["--clock", "virtual"]) as mnt:
        t = os.path.join(mnt, "sys/kernel/tracing")
        with open(os.path.join(t, "events/sched/enable"), "w") as fh:
            fh.write("1")
        before = sh(fill("fakefs clock MNT", MNT=mnt), REPO, env)
        sh(fill("fakefs clock MNT +1s", MNT=mnt), REPO, env)
        after = sh(fill("fakefs clock MNT", MNT=mnt), REPO, env)
        assert before != after
        dmesg = sh(fill("fakefs dmesg MOUNTPOINT", MOUNTPOINT=mnt), REPO, env)
        assert "Linux version" in dmesg
        trace = str(tmp_path / "trace.txt")
        sh("cat trace > %s" % trace, t, env)     # (not copyfile: sendfile reads nothing)
        assert "sched_switch" in open(trace).read()
        sh(fill("python -m fakefs.timeline TRACE", TRACE=trace), REPO, env)
        top = sh("sort -g proc/allocinfo | tail | numfmt --to=iec", mnt, env).splitlines()
        assert len(top) == 10 and all(re.match(r"\s*[\d.]+[KMG]?\s+\d+ ", ln) for ln in top), top
        prof = sh(fill("readprofile -p MNT/proc/profile -m MNT/boot/System.map", MNT=mnt),
                  REPO, env)                        # (util-linux: always there)
        assert re.search(r"^\s*\d+ total", prof, re.M), prof[-500:]
        heat = sh(fill("fakefs heatmap MNT", MNT=mnt), REPO, env)
        assert "%" in heat
        # docs/tracefs-6.12.md: the function tracer's parent goes
        sh("echo function > current_tracer", t, env)
        sh(fill("fakefs clock MNT +100ms", MNT=mnt), REPO, env)
        assert " <-" in sh("grep -v '^#' trace | head -20", t, env)
        sh("echo 0 > options/print-parent", t, env)
        lines = sh("grep -v '^#' trace | head -20", t, env)
        assert lines and " <-" not in lines
        # lesson 01: follow a live trace (it blocks: read what is there, stop it)
        p = subprocess.Popen(["sh", "-c", "cat trace_pipe"], cwd=t, stdout=subprocess.PIPE,
                             text=True)
        try:
            first = p.stdout.readline()
        finally:
            p.kill()
            p.wait()
        assert re.search(r"\[00[01]\] .* \d+\.\d{6}: ", first), first


@requires_fuse
def test_the_pictures_prose_mount_as_written():
    """docs/pictures.md: `fakefs mount --clock virtual --seed 1 /tmp/k`, then
    `fakefs umount /tmp/k` ("When done")."""
    env = tool_env()
    with fresh_mountpoint("fakefs-k-") as mnt:
        os.makedirs(mnt)            # the block before it made /tmp/k
        sh("fakefs mount --clock virtual --seed 1 /tmp/k".replace("/tmp/k", mnt), REPO, env)
        assert is_mounted(mnt)
        chart = sh("fakefs picture allocinfo %s" % mnt, REPO, env)
        assert "<svg" in chart[:300] and chart.rstrip().endswith("</svg>")
        sh("fakefs umount /tmp/k".replace("/tmp/k", mnt), REPO, env)
        assert not is_mounted(mnt)


@requires_fuse
def test_selftest_table_as_written(tmp_path):
    """`fakefs selftest --table FILE [TEST…]` (what `make ftracetest-table`
    runs over all tests, through `fakefs mount -f -o fsname=tracefs`)."""
    env = tool_env()
    table = str(tmp_path / "table.md")
    out = sh(fill("fakefs selftest --table FILE 00basic/basic1.tc", FILE=table), REPO, env,
             timeout=300)
    assert "1 passed, 0 failed" in out
    text = open(table).read()
    assert "(`fakefs selftest --table docs/ftracetest-6.12.md all`)" in text
    assert "| 1 | 00basic/basic1.tc | PASS |" in text


@requires_fuse
def test_tracefs_survey_on_a_mount_as_written():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root: unshare -m")
    cmd = next(c for c, how in LEDGER.items() if how == RUN and "fidfake" in c)
    with fresh_mountpoint("fakefs-fid-") as mnt:
        out = sh(cmd.replace("/tmp/fidfake", mnt), REPO, tool_env())
        assert not is_mounted(mnt)
    top, inst = re.split(r"^\d+ d \.\n", out, flags=re.M)[1:]    # the top level, then the instance
    assert "640 f ./stack_map\n" in top and "440 f ./stack_map_stat\n" in top
    assert "750 d ./instances\n" in top
    assert "750 d ./per_cpu/cpu1\n" in inst and "stack_map" not in inst


def test_trace_cmd_nosplice_in_the_sandbox_as_written(tmp_path):
    from fakefs.cli import namespace, sandbox
    problem = sandbox.host_problem(namespace.use_userns())
    if problem is not None:
        pytest.skip("fakefs sandbox cannot run here: %s" % problem)
    if not shutil.which("trace-cmd"):
        pytest.skip("trace-cmd is not installed (make install brings it)")
    no_line = sandbox.tracefs_line_problem(namespace.use_userns())
    if no_line is not None:
        pytest.skip("fakefs sandbox: %s" % no_line)
    cmd = next(c for c, how in LEDGER.items() if how == RUN and c.startswith("trace-cmd record"))
    env = dict(namespace.child_env(), PATH=tool_env()["PATH"], PYTHONPATH=tool_env()["PYTHONPATH"])
    sh("fakefs sandbox -q -- sh -c '%s >/dev/null 2>&1 && trace-cmd report > report.txt'" % cmd,
       str(tmp_path), env, timeout=180)
    report = (tmp_path / "report.txt").read_text()
    assert len(re.findall(r"sched_switch:", report)) > 10
