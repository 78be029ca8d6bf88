"""What a hist trigger costs per hit (``python -m fakefs.bench hist``).

In-process like engine.py (manual clock, 2 CPUs, seed 3, the daemon's
collector policy): ``SPAN_NS`` of the machine with ``sched_switch``
enabled, without a trigger (the baseline of the same run), with a
single-event hist trigger on it, and with the wakeup-latency pair
(``sched_waking`` keeps a timestamp, ``sched_switch`` reads it and
generates a synthetic event with ``onmatch``).  The cost per hit is the
CPU time over the baseline divided by the hits the histograms counted.
The same for the function tracer's hits: an fprobe on a function the
machine calls often (its entries are hits of the function tracer's ops),
without and with a hist trigger on its event.
"""

from __future__ import annotations

import re
import statistics

from .engine import T, traced_span

ROUNDS = 3
BASE = (("events/sched/sched_switch/enable", "1"), ("events/sched/sched_waking/enable", "1"))
CONFIGS = (
    ("hist keys=prev_pid,next_pid on sched_switch",
     (("events/sched/sched_switch/trigger", "hist:keys=prev_pid,next_pid"),),
     ("events/sched/sched_switch/hist",)),
    ("wakeup latency: sched_waking -> sched_switch -> synthetic event with its own hist",
     (("synthetic_events", "wakeup_latency u64 lat; pid_t pid"),
      ("events/sched/sched_waking/trigger", "hist:keys=pid:ts0=common_timestamp.usecs"),
      ("events/sched/sched_switch/trigger",
       "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:"
       "onmatch(sched.sched_waking).wakeup_latency($lat,next_pid)"),
      ("events/synthetic/wakeup_latency/trigger", "hist:keys=lat.log2")),
     ("events/sched/sched_waking/hist", "events/sched/sched_switch/hist")),
)


# an fprobe on a hot function of the walk (~2,000 calls per simulated second)
FPROBE = (("dynamic_events", "f:fp __handle_mm_fault"), ("events/fprobes/fp/enable", "1"))
FPROBE_HIST = (("fprobe fp on __handle_mm_fault: hist keys=common_pid on its hits",
                (("events/fprobes/fp/trigger", "hist:keys=common_pid"),),
                ("events/fprobes/fp/hist",)),)


def run(settings, hist_files=(), base=BASE) -> tuple[float, int]:
    """(CPU seconds for ``SPAN_NS``, hits counted by ``hist_files``)."""
    from ..sim.files import read_file
    k, took = traced_span(base + tuple(settings))
    hits = 0
    for path in hist_files:
        text = read_file(k, T + path).decode()
        hits += sum(int(n) for n in re.findall(r"Hits: (\d+)", text))
    return took, hits

def bench_hist() -> list[tuple[str, float, str]]:
    rows = []
    for base_label, base_settings, configs in (
            ("sched_switch + sched_waking enabled, no trigger (baseline)", BASE, CONFIGS),
            ("fprobe fp on __handle_mm_fault enabled, no trigger (baseline)", FPROBE,
             FPROBE_HIST)):
        base = statistics.median(run((), base=base_settings)[0] for _ in range(ROUNDS))
        rows.append((base_label, base, "CPU s / sim s"))
        for label, settings, files in configs:
            got = [run(settings, files, base_settings) for _ in range(ROUNDS)]
            took = statistics.median(t for t, _h in got)
            hits = statistics.median(h for _t, h in got)
            rows += [("%s" % label, took, "CPU s / sim s"),
                     ("  per hit over the baseline", (took - base) / max(hits, 1) * 1e6, "us"),
                     ("  hits per simulated second", hits, "")]
    return rows
