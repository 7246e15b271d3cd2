"""Benchmarks: each prints ratios measured side by side in one run, with the load they ran under."""

import os


def load_average() -> str:
    """The machine's load now, to print beside each ratio: measured while other work loads the cores
    beyond their count, a ratio is a bound, not a cost (a benchmark's own workers count too: read the
    line printed before it starts)."""
    one, five, fifteen = os.getloadavg()
    cores = len(os.sched_getaffinity(0))
    loaded = ", loaded beyond the cores" if one > cores else ""
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {cores} cores{loaded}"
