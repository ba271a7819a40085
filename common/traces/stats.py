"""``aviary trace info``: a trace's figures in one streaming pass, in bounded memory (DESIGN §10).

Counts, sums, the span of submit times and the largest job are exact. The distribution of task
durations is a histogram of :data:`BINS_PER_DECADE` logarithmic bins per decade (plus one bin for 0), so
a quantile read from it is within :data:`RELATIVE_ERROR` (1.2 %) of the true one; tasks per job are
counted exactly (one counter per distinct size). Short and long follow the trace's reference cutoff,
applied to each job's own mean task duration field (DESIGN §4).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field

from ..model import GOOGLE_CUTOFF
from ..trace import TraceJob, iter_trace

__all__ = ["BINS_PER_DECADE", "RELATIVE_ERROR", "TraceStats", "trace_stats"]

BINS_PER_DECADE = 200
"""Histogram bins per decade of task duration: a bin's edges differ by 10**(1/200) = 1.16 %."""
RELATIVE_ERROR = 10 ** (1 / BINS_PER_DECADE) - 1
"""Largest relative error of a duration quantile (the width of one bin; the bin's geometric middle is
reported, so half of it in fact)."""


def _bin(d: float) -> int:
    return -(10**9) if d <= 0 else math.floor(math.log10(d) * BINS_PER_DECADE)


def _middle(b: int) -> float:
    return 0.0 if b == -(10**9) else 10 ** ((b + 0.5) / BINS_PER_DECADE)


@dataclass
class TraceStats:
    """A trace's figures (:func:`trace_stats`)."""

    cutoff: float = GOOGLE_CUTOFF
    jobs: int = 0
    tasks: int = 0
    long_jobs: int = 0
    long_tasks: int = 0
    task_seconds: float = 0.0
    long_task_seconds: float = 0.0
    first_submit: float = math.inf
    last_submit: float = -math.inf
    largest_job: int = 0
    with_demands: int = 0
    synthetic: bool = False
    durations: Counter[int] = field(default_factory=Counter)
    """Task durations: log bin -> tasks (short and long together)."""
    short_durations: Counter[int] = field(default_factory=Counter)
    sizes: Counter[int] = field(default_factory=Counter)
    """Tasks per job -> jobs."""
    long_sizes: Counter[int] = field(default_factory=Counter)

    def add(self, job: TraceJob) -> None:
        long = job.mean >= self.cutoff
        seconds = job.task_seconds
        self.jobs += 1
        self.tasks += job.tasks
        self.task_seconds += seconds
        self.first_submit = min(self.first_submit, job.submit)
        self.last_submit = max(self.last_submit, job.submit)
        self.largest_job = max(self.largest_job, job.tasks)
        self.with_demands += job.cpu is not None and job.mem is not None
        self.sizes[job.tasks] += 1
        bins = Counter(map(_bin, job.durations))
        self.durations.update(bins)
        if long:
            self.long_jobs += 1
            self.long_tasks += job.tasks
            self.long_task_seconds += seconds
            self.long_sizes[job.tasks] += 1
        else:
            self.short_durations.update(bins)

    @property
    def span(self) -> float:
        return max(0.0, self.last_submit - self.first_submit) if self.jobs else 0.0

    def offered_load(self, nodes: int, slots: int) -> float:
        """Task-seconds over the slot-seconds of ``nodes`` x ``slots`` during the span of submits: the
        share of slots the trace keeps busy at its own arrival times (inf for a span of 0)."""
        slot_seconds = nodes * slots * self.span
        return self.task_seconds / slot_seconds if slot_seconds > 0 else math.inf

    def duration_quantile(self, q: float, *, short_only: bool = False) -> float:
        """Task duration at quantile ``q`` (0..1), within :data:`RELATIVE_ERROR`; short-job tasks only
        with ``short_only``; nan if none."""
        return _quantile(self.short_durations if short_only else self.durations, q, _middle)

    def size_quantile(self, q: float) -> float:
        """Tasks per job at quantile ``q`` (exact)."""
        return _quantile(self.sizes, q, float)

    def long_durations(self) -> Counter[int]:
        return self.durations - self.short_durations


def _quantile(counts: Counter[int], q: float, value: object) -> float:
    total = sum(counts.values())
    if not total:
        return math.nan
    rank = q * (total - 1)
    seen = 0
    for key in sorted(counts):
        seen += counts[key]
        if seen > rank:
            return value(key)  # type: ignore[operator,no-any-return]
    return value(max(counts))  # type: ignore[operator,no-any-return]


def trace_stats(path: str | os.PathLike[str], cutoff: float = GOOGLE_CUTOFF) -> TraceStats:
    """One pass over a trace file (Hawk/Eagle or Aviary format). Raises ``TraceError`` on a bad line."""
    stats = TraceStats(cutoff=cutoff)
    with open(path, encoding="utf-8", errors="replace") as f:
        stats.synthetic = any(line.startswith("# SYNTHETIC") for line, _ in zip(f, range(5), strict=False))
    for job in iter_trace(path):
        stats.add(job)
    return stats
