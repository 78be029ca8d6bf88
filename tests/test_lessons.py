"""The lessons in docs/lessons: their parser and matcher, and every lesson run
against a fresh mount with its seed and a virtual clock."""

from __future__ import annotations

import glob
import os

import pytest

from mountlib import REPO, requires_fuse

from fakefs import lessons

LESSONS = sorted(glob.glob(os.path.join(REPO, "docs", "lessons", "[0-9]*.md")))


def test_there_are_lessons():
    assert len(LESSONS) >= 4


@requires_fuse
@pytest.mark.parametrize("path", LESSONS, ids=[os.path.basename(p) for p in LESSONS])
def test_lesson(path):
    lesson = lessons.load(path)
    assert lesson.steps, path
    result = lessons.run_lesson(lesson)
    failures = result.failures()
    assert not failures, "\n\n".join(failures)


TEXT = """<!-- lesson: seed=5 cmdline="profile=2 quiet" persona=6.18 -->
# t

```sh
$ not a lesson command
```

```console
$ echo a
a
$ printf 'x\\ny\\n' \\
  | cat
x
...
$ true
```
"""


def test_parse():
    lesson = lessons.parse(TEXT)
    assert (lesson.seed, lesson.cmdline, lesson.persona) == (5, "profile=2 quiet", "6.18")
    assert [s.command for s in lesson.steps] == ["echo a", "printf 'x\\ny\\n' \\\n  | cat", "true"]
    assert [s.expected for s in lesson.steps] == [["a"], ["x", "..."], []]
    assert [s.line for s in lesson.steps] == [9, 11, 15]


def test_bad_lessons_are_refused():
    with pytest.raises(lessons.LessonError):
        lessons.parse("# no header\n")
    with pytest.raises(lessons.LessonError):
        lessons.parse("<!-- lesson: seed=1 colour=red -->\n")
    with pytest.raises(lessons.LessonError):
        lessons.parse("<!-- lesson: seed=1 -->\n```console\noutput first\n```\n")
    with pytest.raises(lessons.LessonError):
        lessons.parse("<!-- lesson: seed=1 -->\n```console\n$ true\n")


def test_matcher():
    m = lessons.matches
    assert m(["a", "b"], ["a", "b"])
    assert not m(["a", "b"], ["a", "c"])                # a wrong line fails
    assert not m(["a", "b "], ["a", "b"])               # byte for byte: spaces count
    assert not m(["a"], ["a", "b"])                     # and so do extra lines
    assert m(["..."], [])
    assert m(["a", "...", "z"], ["a", "b", "c", "z"])
    assert m(["a", "...", "z"], ["a", "z"])
    assert not m(["a", "...", "z"], ["a", "b", "y"])
    assert m(["...", "c", "...", "e"], ["a", "b", "c", "d", "e"])
    assert not m(["...", "d", "...", "c"], ["c", "d"])
    assert not m(["a", "...", "a"], ["a"])              # the head and tail do not overlap
    assert not m(["a*"], ["abc"])                        # no other wildcard


def test_update_keeps_the_shape_of_an_elided_output():
    assert lessons.reshape(["a", "...", "z"], ["1", "2", "3", "4"]) == ["1", "...", "4"]
    assert lessons.reshape(["a", "...", "z"], ["a", "q", "z"]) == ["a", "...", "z"]
    assert lessons.reshape(["old"], ["new", "lines"]) == ["new", "lines"]
    assert lessons.reshape(["h", "..."], ["1", "2", "3"]) == ["1", "..."]


def test_outputs_are_split_per_command():
    mark = "@@m-"
    out = "one\n\n@@m-0\n\n@@m-1\nno newline\n@@m-2\nx\n\ny\n\n@@m-3\n"
    assert lessons.split_outputs(out, mark, 5) == [["one"], [], ["no newline"], ["x", "", "y"], None]


def test_commands_run_in_one_shell_and_outputs_are_not_mixed_up(tmp_path):
    outs = lessons.run_commands(
        ["X=1; cd /", "echo $X; pwd", "printf 'a\\nb'", "echo err >&2; echo out",
         "fakefs --version >/dev/null && echo ok", "false", "echo last"], str(tmp_path))
    assert outs == [[], ["1", "/"], ["a", "b"], ["err", "out"], ["ok"], [], ["last"]]


def test_a_wrong_expected_line_fails_and_update_writes_the_truth(tmp_path):
    text = "<!-- lesson: seed=1 -->\n```console\n$ echo hi; echo there\nhi\nthem\n$ echo 2\n2\n```\n"
    lesson = lessons.parse(text, "x.md")
    outs = lessons.run_commands([s.command for s in lesson.steps], str(tmp_path))
    result = lessons.Result(lesson, outs, 0.0)
    failures = result.failures()
    assert len(failures) == 1 and "x.md:3:" in failures[0] and "+there" in failures[0]
    assert lessons.updated_text(result) == text.replace("them", "there")
    assert not lessons.Result(lessons.parse(lessons.updated_text(result)), outs, 0.0).failures()


def test_the_mount_path_is_shown_as_MNT_and_T(tmp_path):
    outs = lessons.run_commands(["echo $MNT $T/x"], str(tmp_path))
    assert outs == [["$MNT $T/x"]]


def shown_traces(lesson):
    """The trace lines each command of ``lesson`` is shown to print."""
    from fakefs.timeline import LINE_RE
    for step in lesson.steps:
        lines = [ln for ln in step.expected if LINE_RE.match(ln) or ln.lstrip().startswith("=>")]
        if lines:
            yield step, lines


@pytest.mark.parametrize("path", LESSONS, ids=[os.path.basename(p) for p in LESSONS])
def test_what_a_lesson_shows_a_real_machine_could_have_traced(path):
    """The timeline checker on every trace output a lesson shows (pieces
    of traces, some filtered: what each line must keep): per-CPU threads
    on their CPU, the idle task's preempt depth, markers' context, ..."""
    from fakefs.timeline import check
    for step, lines in shown_traces(lessons.load(path)):
        rep = check(lines, whole=False)
        assert rep.total == 0, "%s:%d\n%s" % (path, step.line, rep.text())


def test_the_checker_catches_what_lesson_2_once_showed():
    # (the output lesson 2 showed before per-CPU threads kept to their CPU)
    from fakefs.timeline import check
    once = ["          <idle>-0       [000] d..2.     0.050016: sched_switch: prev_comm=swapper/0 "
            "prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=176 "
            "next_prio=120"]
    assert dict(check(once).violations) == {"per-cpu": 1}
