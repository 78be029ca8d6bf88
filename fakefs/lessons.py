"""Lessons: Markdown walks through one interface, whose shell sessions are run and checked.

A lesson is a Markdown file (``docs/lessons/*.md``) whose first line declares
how its kernel boots::

    <!-- lesson: seed=1 cmdline="profile=2" persona=6.12-stackmap -->

Its shell sessions are fenced blocks marked ``console``: a line starting with
``$ `` is a command (a line ending in ``\\`` goes on onto the next one), the
lines after it, up to the next command or the end of the block, are what it
prints (stdout and stderr, in order).  ``...`` on a line of its own stands for
any number of lines; everything else is compared byte for byte.  Inside a
lesson ``$T`` is the tracing directory and ``$MNT`` the mount root; the mount's
real path in what a command prints is shown as ``$T`` / ``$MNT``.

:func:`run_lesson` mounts fakefs with a virtual clock (``fakefs mount --clock
virtual --seed S``), runs every command of the lesson in one ``sh`` (so
``cd``, variables and the kernel's state carry over; each through ``eval``, so
a shell error reads ``sh: 1: ...``), with ``fakefs`` a function that runs
``python -m fakefs``, in a fresh working directory, and unmounts.

``python -m fakefs.lessons [--update] LESSON.md...`` checks lessons, or with
``--update`` writes what the commands print into them (a ``...`` in an output
is kept: as many lines before and after it as the lesson showed).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from .fuse.mountpoint import unmount_and_wait

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ELLIPSIS = "..."
TRACING = "sys/kernel/tracing"
HEADER = re.compile(r"<!--\s*lesson:(.*?)-->")
FENCE = "```"
TIMEOUT = 120.0

PRELUDE = r"""exec 2>&1
fakefs() { "$FAKEFS_PYTHON" -m fakefs "$@"; }
"""


class LessonError(Exception):
    """A lesson file that cannot be parsed or run."""


@dataclasses.dataclass
class Step:
    command: str            # as typed after "$ " (continuation lines joined with "\n")
    expected: list[str]     # the lines shown after it
    line: int               # 1-based line of the command in the file


@dataclasses.dataclass
class Block:
    start: int              # index (0-based) of the first line inside the fence
    end: int                # index of the closing fence
    steps: list[Step]


@dataclasses.dataclass
class Lesson:
    path: str
    lines: list[str]
    seed: int = 1
    cmdline: str = ""
    persona: str | None = None
    opts: str | None = None
    blocks: list[Block] = dataclasses.field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        return [s for b in self.blocks for s in b.steps]


def parse_header(line: str) -> dict[str, str]:
    m = HEADER.search(line)
    if m is None:
        raise LessonError("the first line must be <!-- lesson: seed=N [cmdline=\"...\"] -->")
    out = {}
    for word in shlex.split(m.group(1)):
        key, eq, value = word.partition("=")
        if not eq or key not in ("seed", "cmdline", "persona", "opts"):
            raise LessonError(f"unknown lesson setting {word!r}")
        out[key] = value
    return out


def parse(text: str, path: str = "<lesson>") -> Lesson:
    lines = text.split("\n")
    settings = parse_header(lines[0] if lines else "")
    lesson = Lesson(path, lines, seed=int(settings.get("seed", "1")),
                    cmdline=settings.get("cmdline", ""), persona=settings.get("persona"),
                    opts=settings.get("opts"))
    i = 0
    while i < len(lines):
        if lines[i].strip() != FENCE + "console":
            i += 1
            continue
        start = j = i + 1
        steps: list[Step] = []
        while j < len(lines) and lines[j].strip() != FENCE:
            line = lines[j]
            if line.startswith("$ "):
                first, command = j, line[2:]
                while command.endswith("\\") and j + 1 < len(lines):
                    j += 1
                    command += "\n" + lines[j]
                steps.append(Step(command, [], first + 1))
            elif not steps:
                raise LessonError(f"{path}:{j + 1}: a console block must begin with '$ '")
            else:
                steps[-1].expected.append(line)
            j += 1
        if j == len(lines):
            raise LessonError(f"{path}:{i + 1}: console block not closed")
        lesson.blocks.append(Block(start, j, steps))
        i = j + 1
    return lesson


def load(path: str) -> Lesson:
    with open(path) as fh:
        return parse(fh.read(), path)


# ---------------------------------------------------------------- matching

def matches(expected: list[str], actual: list[str]) -> bool:
    """Line for line, ``...`` standing for any number of lines."""
    parts = [[]]
    for line in expected:
        if line == ELLIPSIS:
            parts.append([])
        else:
            parts[-1].append(line)
    if len(parts) == 1:
        return expected == actual
    head, middle, tail = parts[0], parts[1:-1], parts[-1]
    if len(actual) < len(head) + len(tail):
        return False
    if actual[:len(head)] != head or (tail and actual[-len(tail):] != tail):
        return False
    pos, stop = len(head), len(actual) - len(tail)
    for seg in middle:             # leftmost placement of each fixed run is never worse
        while pos + len(seg) <= stop and actual[pos:pos + len(seg)] != seg:
            pos += 1
        if pos + len(seg) > stop:
            return False
        pos += len(seg)
    return True


def reshape(expected: list[str], actual: list[str]) -> list[str]:
    """What ``--update`` writes: ``actual``, trimmed to the shape of
    ``expected`` (its lines before the first ``...`` and after the last)."""
    if ELLIPSIS not in expected or matches(expected, actual):
        return actual if ELLIPSIS not in expected else expected
    k = expected.index(ELLIPSIS)
    m = len(expected) - 1 - max(i for i, line in enumerate(expected) if line == ELLIPSIS)
    if len(actual) <= k + m:
        return actual
    return actual[:k] + [ELLIPSIS] + (actual[-m:] if m else [])


# ---------------------------------------------------------------- running

@contextlib.contextmanager
def mounted(lesson: Lesson, python: str = sys.executable):
    """A fresh fakefs mount with a virtual clock, booted as the lesson says."""
    mnt = tempfile.mkdtemp(prefix="fakefs-lesson-")
    log = mnt + ".log"
    cmd = [python, "-m", "fakefs", "mount", "--clock", "virtual", "--seed", str(lesson.seed),
           "--log", log]
    if lesson.cmdline:
        cmd += ["--cmdline", lesson.cmdline]
    if lesson.persona:
        cmd += ["--persona", lesson.persona]
    if lesson.opts:
        cmd += ["-o", lesson.opts]
    try:
        subprocess.run(cmd + [mnt], check=True, env=_env(python), timeout=60)
        yield mnt
    finally:
        unmount_and_wait(mnt)
        with contextlib.suppress(OSError):
            os.rmdir(mnt)
        with contextlib.suppress(OSError):
            os.unlink(log)


def _env(python: str, **extra) -> dict[str, str]:
    env = dict(os.environ, LC_ALL="C", TZ="UTC", FAKEFS_PYTHON=python,
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("LANG", None)
    env.update(extra)
    return env


def script(commands: list[str], mark: str) -> str:
    """One sh script: each command through eval, then a marker line."""
    out = [PRELUDE]
    for i, command in enumerate(commands):
        out.append(f"eval {shlex.quote(command)}\n")
        out.append(f"printf '\\n%s\\n' '{mark}{i}'\n")
    return "".join(out)


def split_outputs(stdout: str, mark: str, n: int) -> list[list[str] | None]:
    """Each command's lines (None: the shell never got past it)."""
    outputs: list[list[str] | None] = []
    rest = stdout
    for i in range(n):
        sep = f"\n{mark}{i}\n"
        chunk, found, rest = rest.partition(sep)
        if not found:
            outputs.append(None)
            outputs.extend([None] * (n - i - 1))
            break
        outputs.append(chunk.split("\n") if chunk else [])
        if outputs[-1] and outputs[-1][-1] == "":
            outputs[-1].pop()      # the newline that ends the last line
    return outputs


def run_commands(commands: list[str], mnt: str, python: str = sys.executable,
                 timeout: float = TIMEOUT) -> list[list[str] | None]:
    mark = f"@@fakefs-lesson-{uuid.uuid4().hex}-"
    mnt = os.path.realpath(mnt)
    tracing = os.path.join(mnt, TRACING)
    work = tempfile.mkdtemp(prefix="fakefs-lesson-cwd-")
    try:
        proc = subprocess.Popen(["sh", "-c", script(commands, mark), "sh"], cwd=work,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env=_env(python, MNT=mnt, T=tracing))
        try:
            raw, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raw, _ = proc.communicate()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = raw.decode("latin-1").replace(tracing, "$T").replace(mnt, "$MNT")
    return split_outputs(text, mark, len(commands))


@dataclasses.dataclass
class Result:
    lesson: Lesson
    outputs: list[list[str] | None]
    seconds: float

    def failures(self) -> list[str]:
        out = []
        for step, got in zip(self.lesson.steps, self.outputs):
            want = step.expected
            if got is None:
                out.append(f"{self.lesson.path}:{step.line}: $ {step.command}\n"
                           "  the shell did not get past this command (exited or timed out)")
                break
            if not matches(want, got):
                diff = "\n".join(difflib.unified_diff(want, got, "lesson", "actual", lineterm=""))
                out.append(f"{self.lesson.path}:{step.line}: $ {step.command}\n{diff}")
        return out


def run_lesson(lesson: Lesson, python: str = sys.executable) -> Result:
    t0 = time.monotonic()
    with mounted(lesson, python) as mnt:
        outputs = run_commands([s.command for s in lesson.steps], mnt, python)
    return Result(lesson, outputs, time.monotonic() - t0)


def updated_text(result: Result) -> str:
    """The lesson with each command's output written after it."""
    lines = list(result.lesson.lines)
    outputs = iter(result.outputs)
    new_bodies = []
    for block in result.lesson.blocks:
        body = []
        for step in block.steps:
            got = next(outputs)
            body.extend(("$ " + step.command).split("\n"))
            want = step.expected
            body.extend(want if got is None else reshape(want, got))
        new_bodies.append(body)
    for block, body in reversed(list(zip(result.lesson.blocks, new_bodies))):
        lines[block.start:block.end] = body
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fakefs.lessons",
                                description="run the lessons' commands and check what they print")
    p.add_argument("--update", action="store_true",
                   help="write what the commands print into the lessons instead")
    p.add_argument("lessons", nargs="+", metavar="LESSON.md")
    args = p.parse_args(argv)
    status = 0
    for path in args.lessons:
        try:
            lesson = load(path)
            result = run_lesson(lesson)
        except (LessonError, subprocess.SubprocessError, OSError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            status = 1
            continue
        if args.update:
            with open(path, "w") as fh:
                fh.write(updated_text(result))
            print(f"{path}: updated ({result.seconds:.1f} s)")
            continue
        failures = result.failures()
        for f in failures:
            print(f, file=sys.stderr)
        print(f"{path}: {'FAIL' if failures else 'ok'} "
              f"({len(lesson.steps)} commands, {result.seconds:.1f} s)")
        status |= bool(failures)
    return status


if __name__ == "__main__":
    sys.exit(main())
