"""The bundled Google sample (``traces/google_10k.tr``) as the experiments measure it."""

from __future__ import annotations

import functools
from pathlib import Path

TRACE = Path(__file__).resolve().parent / "traces" / "google_10k.tr"


@functools.cache
def busy_part(start: float) -> tuple[float, float]:
    """Task-seconds of the jobs submitted from ``start`` (seconds after the first submission) and the
    time from ``start`` until the last submission."""
    from aviary.common.trace import read_trace

    trace = read_trace(TRACE)
    first = trace[0].submit
    busy = [j for j in trace if j.submit - first >= start]
    return sum(j.task_seconds for j in busy), busy[-1].submit - first - start


def busy_load(nodes: int, start: float = 60_000.0) -> float:
    """Offered load of the busy part of the sample on ``nodes`` single-slot nodes: task-seconds of the
    jobs submitted from ``start`` (the first 60,000 s hold 32 of the 10,000 jobs) over node-seconds
    until the last submission."""
    work, span = busy_part(start)
    return work / (nodes * span)
