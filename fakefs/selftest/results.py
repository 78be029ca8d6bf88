"""ftracetest's console output: the result of each case, the summary, the report."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

#: ftracetest's result words, in the order of its summary lines.
RESULTS = ("PASS", "FAIL", "UNRESOLVED", "UNTESTED", "UNSUPPORTED", "XFAIL", "UNDEFINED")
_SUMMARY_KEYS = {
    "passed": "PASS",
    "failed": "FAIL",
    "unresolved": "UNRESOLVED",
    "untested": "UNTESTED",
    "unsupported": "UNSUPPORTED",
    "xfailed": "XFAIL",
    "undefined(test bug)": "UNDEFINED",
}
_SUMMARY_RE = re.compile(r"^# of ([a-z()\s]+?):\s+(\d+)\s*$")
_CASE_START_RE = re.compile(r"^\[(\d+)\]")
_RESULT_RE = re.compile(r"\t\[(%s)\]\s*$" % "|".join(RESULTS))
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[mK]")


@dataclass
class Summary:
    counts: dict[str, int] = field(default_factory=lambda: {r: 0 for r in RESULTS})
    results: dict[int, str] = field(default_factory=dict)   # caseno -> result
    names: dict[int, str] = field(default_factory=dict)     # caseno -> description
    complete: bool = False          # ftracetest printed its summary

    @property
    def passed(self) -> int:
        return self.counts["PASS"]

    @property
    def failed(self) -> int:
        return self.counts["FAIL"] + self.counts["UNDEFINED"]

    @property
    def skipped(self) -> int:
        return self.counts["UNRESOLVED"] + self.counts["UNTESTED"] + self.counts["UNSUPPORTED"]

    @property
    def xfailed(self) -> int:
        return self.counts["XFAIL"]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def final_line(self) -> str:
        s = "%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped)
        if self.xfailed:
            s += ", %d xfailed" % self.xfailed
        return s


def parse_output(text: str) -> Summary:
    """Parse ftracetest's console output (result lines and summary)."""
    summ = Summary()
    per_case: dict[str, int] = {r: 0 for r in RESULTS}
    current = None
    for raw in text.splitlines():
        line = _ANSI_RE.sub("", raw)
        m = _CASE_START_RE.match(line)
        if m:
            current = int(m.group(1))
            rest = line[m.end():]
            summ.names[current] = _RESULT_RE.sub("", rest).strip()
        m = _RESULT_RE.search(line)
        if m and current is not None and current not in summ.results:
            summ.results[current] = m.group(1)
            per_case[m.group(1)] += 1
            continue
        m = _SUMMARY_RE.match(line)
        if m and m.group(1) in _SUMMARY_KEYS:
            summ.counts[_SUMMARY_KEYS[m.group(1)]] = int(m.group(2))
            if m.group(1).startswith("undefined"):
                summ.complete = True
    if not summ.complete:
        summ.counts = per_case
    return summ


def merge_shards(cases: list[tuple[int, str, bool]], parts: list) -> tuple:
    """(the summary, the status, the table's reasons) of a run in shards
    (``--jobs``), numbered as one run of all the tests numbers its cases
    (``cases``); ``parts``: per ftracetest run (a shard runs each part of
    the tests it takes by one), (its own cases, its summary, its status,
    its reasons)."""
    number = {(rel, inst): no for no, rel, inst in cases}
    summ = Summary()
    summ.complete = all(p[1].complete for p in parts)
    reasons: dict[int, str] = {}
    unknown = len(cases)            # (a case no shard expected: numbered after all, apart)
    for own, part, _st, why in parts:
        mine = {no: number[(rel, inst)] for no, rel, inst in own}
        for no in sorted(set(part.results) | set(part.names)):
            if no not in mine:
                unknown += 1
                mine[no] = unknown
        for no, r in part.results.items():
            summ.results[mine[no]] = r
        for no, name in part.names.items():
            summ.names[mine[no]] = name
        for no, text in why.items():
            if no in mine:
                reasons[mine[no]] = text
        for r in RESULTS:
            summ.counts[r] += part.counts[r]
    sts = [p[2] for p in parts]
    status = {"ftracetest_rc": next((st["ftracetest_rc"] for st in sts if st.get("ftracetest_rc")),
                                    sts[0].get("ftracetest_rc"))}
    errors = [st["error"] for st in sts if st.get("error")]
    if errors:
        status["error"] = errors[0]
    if any(st.get("timed_out") for st in sts):
        status["timed_out"] = True
    return summ, status, reasons


def shards_text(summ: Summary) -> str:
    """The cases of a run in shards in one run's order, with its summary,
    as ftracetest prints them."""
    out = ["=== Ftrace unit tests (in shards) ==="]
    for no in sorted(summ.names):
        r = summ.results.get(no)
        out.append("[%d] %s%s" % (no, summ.names[no], "\t[%s]" % r if r else ""))
    out.append("")
    out.append("")
    for key, r in _SUMMARY_KEYS.items():
        out.append("# of %s:  %d" % (key, summ.counts[r]))
    return "\n".join(out) + "\n"


def report(summ: Summary, cases: list[tuple[int, str, bool]], status: dict, inner_rc: int) -> int:
    """Print the per-test problems and the final line; return the exit status."""
    by_no = {no: (rel, inst) for no, rel, inst in cases}
    bad = [(no, r) for no, r in sorted(summ.results.items()) if r in ("FAIL", "UNDEFINED")]
    if bad:
        print("\nfailed tests:")
        for no, r in bad:
            rel, inst = by_no.get(no, ("?", False))
            print("  [%d] %s%s  %s" % (no, rel, " (instance)" if inst else "", r))
    error = status.get("error")
    if error:
        print("selftest: error: %s" % error, file=sys.stderr)
    if status.get("timed_out"):
        print("selftest: ftracetest timed out and was killed", file=sys.stderr)
    if not summ.complete and not error:
        print("selftest: ftracetest did not print its summary (exit %s)"
              % status.get("ftracetest_rc", inner_rc), file=sys.stderr)
    print(summ.final_line(), flush=True)
    if error and not summ.results:
        return 2
    if summ.failed or summ.total == 0 or not summ.complete or status.get("timed_out"):
        return 1
    if (status.get("ftracetest_rc") or 0) != 0:
        return 1   # e.g. --fail-unsupported
    return 0
