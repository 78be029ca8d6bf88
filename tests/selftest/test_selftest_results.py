"""ftracetest's output and the final report (fakefs/selftest/results.py)."""

from __future__ import annotations

from fakefs.selftest import results

OUTPUT = """\
=== Ftrace unit tests ===
[1] Basic trace file check\t[PASS]
[2] ftrace - stackmap basic functionality\t[FAIL]
execute: /tmp/x/ftrace/test.d/upstream/stackmap-basic.tc
+ fail trace has no <stack_id> events
[3] Kprobe dynamic event\t[UNSUPPORTED]
[4] something unresolved\t[UNRESOLVED]
[5] expected failure\t[XFAIL]
[6] (instance)  Basic test for tracers\t[PASS]

# of passed:  2
# of failed:  1
# of unresolved:  1
# of untested:  0
# of unsupported:  1
# of xfailed:  1
# of undefined(test bug):  0
"""


def test_parse_output():
    s = results.parse_output(OUTPUT)
    assert s.complete
    assert (s.passed, s.failed, s.skipped, s.xfailed, s.total) == (2, 1, 2, 1, 6)
    assert s.results == {1: "PASS", 2: "FAIL", 3: "UNSUPPORTED", 4: "UNRESOLVED",
                         5: "XFAIL", 6: "PASS"}
    assert s.names[2] == "ftrace - stackmap basic functionality"
    assert s.final_line() == "2 passed, 1 failed, 2 skipped, 1 xfailed"


def test_parse_output_verbose_and_colors():
    text = ("[1] a test\n+ some output\n\x1b[32m\t[PASS]\x1b[0m\n"
            "[2] another\n\t[\x1b[31mFAIL\x1b[0m]\n"
            "# of passed:  1\n# of failed:  1\n# of undefined(test bug):  0\n")
    s = results.parse_output(text)
    assert s.results == {1: "PASS", 2: "FAIL"}
    assert s.final_line() == "1 passed, 1 failed, 0 skipped"


def test_parse_output_without_summary():
    s = results.parse_output("[1] a\t[PASS]\n[2] b\t[UNDEFINED]\n")
    assert not s.complete
    assert (s.passed, s.failed) == (1, 1)
    assert results.parse_output("").total == 0


def test_report_exit_status(capsys):
    cases = [(1, "00basic/basic1.tc", False), (2, "upstream/stackmap-basic.tc", False)]
    ok = results.parse_output("[1] a\t[PASS]\n[2] b\t[UNSUPPORTED]\n"
                         "# of passed:  1\n# of unsupported:  1\n# of undefined(test bug):  0\n")
    assert results.report(ok, cases, {"ftracetest_rc": 0}, 0) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "1 passed, 0 failed, 1 skipped"
    bad = results.parse_output(OUTPUT)
    assert results.report(bad, cases, {"ftracetest_rc": 1}, 0) == 1
    out = capsys.readouterr().out
    assert "upstream/stackmap-basic.tc" in out and out.strip().endswith("1 xfailed")
    none = results.parse_output("# of passed:  0\n# of undefined(test bug):  0\n")
    assert results.report(none, [], {"ftracetest_rc": 0}, 0) == 1       # zero tests ran
    assert results.report(results.parse_output("[1] a\t[PASS]\n"), cases, {}, 0) == 1  # no summary
    assert results.report(results.Summary(), cases, {"error": "mount failed"}, 2) == 2
    assert results.report(ok, cases, {"ftracetest_rc": 1}, 0) == 1      # e.g. --fail-unsupported
    assert results.report(ok, cases, {"ftracetest_rc": 0, "timed_out": True}, 0) == 1


def test_shards_are_numbered_as_one_run():
    """Two shards' cases (instance re-runs at each one's end) merge into
    one run's numbering, counts and status."""
    from fakefs.selftest.results import merge_shards, parse_output, shards_text
    cases = [(1, "a.tc", False), (2, "b.tc", False), (3, "c.tc", False),
             (4, "b.tc", True), (5, "c.tc", True)]
    one = [(1, "a.tc", False), (2, "c.tc", False), (3, "c.tc", True)]
    two = [(1, "b.tc", False), (2, "b.tc", True)]
    s1 = parse_output("[1] a\t[PASS]\n[2] c\t[FAIL]\n[3] (instance)  c\t[PASS]\n\n"
                      "# of passed:  2\n# of failed:  1\n# of undefined(test bug):  0\n")
    s2 = parse_output("[1] b\t[UNSUPPORTED]\n[2] (instance)  b\t[UNSUPPORTED]\n\n"
                      "# of unsupported:  2\n# of undefined(test bug):  0\n")
    summ, status, reasons = merge_shards(cases, [(one, s1, {"ftracetest_rc": 1}, {2: "why c"}),
                                                 (two, s2, {"ftracetest_rc": 0}, {})])
    assert summ.results == {1: "PASS", 3: "FAIL", 5: "PASS", 2: "UNSUPPORTED", 4: "UNSUPPORTED"}
    assert summ.names[5] == "(instance)  c" and summ.names[2] == "b"
    assert (summ.passed, summ.failed, summ.skipped, summ.complete) == (2, 1, 2, True)
    assert status == {"ftracetest_rc": 1} and reasons == {3: "why c"}
    again = parse_output(shards_text(summ))          # (printed as ftracetest prints)
    assert again.results == summ.results and again.counts == summ.counts and again.complete


def test_a_case_no_shard_expected_is_numbered_apart():
    """A case a shard printed beyond its expected ones (our count of its
    instance re-runs wrong) keeps its result under a number of its own
    after all, never over another shard's case."""
    from fakefs.selftest.results import merge_shards, parse_output
    cases = [(1, "a.tc", False), (2, "b.tc", False)]
    s1 = parse_output("[1] a\t[PASS]\n[2] (instance)  a\t[FAIL]\n")
    s2 = parse_output("[1] b\t[PASS]\n")
    summ, _status, _why = merge_shards(cases, [([(1, "a.tc", False)], s1, {}, {}),
                                               ([(1, "b.tc", False)], s2, {}, {})])
    assert summ.results == {1: "PASS", 2: "PASS", 3: "FAIL"}
    assert summ.failed == 1
