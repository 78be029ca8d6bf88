"""The per-test table of `fakefs selftest --table`."""

from pathlib import Path

from fakefs.selftest.table import WHY_PATH, load_why, log_reasons, render


def test_reasons_from_logs_and_the_projects_explanations(tmp_path: Path):
    d = tmp_path / "logs" / "2026"
    d.mkdir(parents=True)
    (d / "3-a.tc-log.XyZ").write_text("execute: /x/a.tc\n+ checkreq\n"
                                      "Required feature interface snapshot doesn't exist.\n")
    (d / "4-b.tc-log.AbC").write_text("execute: /x/b.tc\n+ foo\nsomething broke here\n")
    reasons = log_reasons(tmp_path / "logs")
    assert reasons == {3: "Required feature interface snapshot doesn't exist.",
                       4: "something broke here"}
    cases = [(1, "00basic/basic1.tc", False), (2, "kprobe/x.tc", False),
             (3, "00basic/a.tc", False), (4, "00basic/b.tc", False), (5, "00basic/basic1.tc", True)]
    results = {1: "PASS", 2: "UNSUPPORTED", 3: "UNSUPPORTED", 4: "FAIL", 5: "PASS"}
    why = {"kprobe/": "no kprobes", "00basic/b.tc": "known"}
    text = render(results, cases, reasons, why, "T")
    assert "PASS 2 (1 at top level, 1 instance re-runs) of 5 results" in text
    assert "| 2 | kprobe/x.tc | UNSUPPORTED | no kprobes |" in text
    assert "| 3 | 00basic/a.tc | UNSUPPORTED | Required feature interface snapshot" in text
    assert "| 4 | 00basic/b.tc | FAIL | known |" in text
    assert "| 5 | 00basic/basic1.tc (instance) | PASS |  |" in text


def test_the_projects_explanations_load():
    why = load_why(WHY_PATH)
    assert why["selftest/bashisms.tc"].startswith("checkbashisms")
