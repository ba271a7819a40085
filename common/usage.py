"""Multi-resource usage metrics of a run (spec §0.3, §8): per-resource utilization and Jain's fairness.

Pure functions over a task log: one :class:`TaskRecord` per task run (job, start, end, demand), times in
seconds on the central scheduler's clock. Results do not depend on the order of the log (it is sorted
first), so identical logs give identical numbers.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from .resources import RESOURCES, ZERO, Resources

__all__ = [
    "DEFAULT_FAIRNESS_WINDOW",
    "TaskRecord",
    "fairness_over_windows",
    "jain_index",
    "utilization_by_resource",
]

DEFAULT_FAIRNESS_WINDOW = 60.0
"""Carbyne §5.1 scores fairness on 60-second windows."""


class TaskRecord(NamedTuple):
    """One task that ran: ``demand`` was held from ``start`` to ``end`` (seconds, central clock);
    ``work``: the seconds it would have run at full speed (its duration), when known. On a node that
    over-allocates (fluid contention) a task holds its demand longer than its work."""

    job_id: int
    start: float
    end: float
    demand: Resources
    work: float | None = None


def _checked(tasks: Iterable[TaskRecord]) -> list[TaskRecord]:
    out = list(tasks)  # in any order: both metrics are sums or sort their own events
    for t in out:
        if not (math.isfinite(t.start) and math.isfinite(t.end)) or t.end < t.start:
            raise ValueError(f"task of job {t.job_id}: bad interval [{t.start}, {t.end}]")
    return out


def utilization_by_resource(
    tasks: Iterable[TaskRecord], capacity_total: Resources, span: float, *, held: bool = False
) -> dict[str, float]:
    """Share of each resource used over ``span`` seconds: ``sum(demand_r * work) / (cap_r * span)``, a
    task's ``work`` its full-speed duration (``end - start`` when unknown), i.e. what the resource
    delivered; with ``held``, ``sum(demand_r * (end - start))``: what was allocated, which exceeds the
    capacity where nodes over-allocate.

    Keys are the names of :data:`~aviary.common.resources.RESOURCES`, in that order, without the ones
    whose total capacity is 0. Whole task durations count, as for the slot-based ``utilization``: a task
    outside the span still adds its full length. Raises ``ValueError`` if ``span`` is not > 0.
    """
    if not span > 0:
        raise ValueError(f"span must be > 0, got {span}")
    log = _checked(tasks)
    out: dict[str, float] = {}
    for i, name in enumerate(RESOURCES):
        cap = capacity_total[i]
        if cap > 0:
            used = math.fsum(
                t.demand[i] * (t.end - t.start if held or t.work is None else t.work) for t in log
            )
            out[name] = used / (cap * span)
    return out


def jain_index(xs: Iterable[float]) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``, in ``[1/n, 1]``; 1.0 when all are equal.

    Defined as 1.0 for no values and for all zeros (nobody gets less than anybody else). Raises
    ``ValueError`` on a negative or non-finite value.
    """
    vals = list(xs)
    for x in vals:
        if not (math.isfinite(x) and x >= 0):
            raise ValueError(f"Jain's index needs finite values >= 0, got {x!r}")
    n = len(vals)
    sq = math.fsum(x * x for x in vals)
    if n == 0 or sq == 0:
        return 1.0
    s = math.fsum(vals)
    return min(1.0, max(1.0 / n, s * s / (n * sq)))


def _edges(t0: float, t_end: float, window: float) -> list[float]:
    """Window boundaries from ``t0``: ``t0, t0+w, ..., t_end`` (the last window may be shorter)."""
    q = (t_end - t0) / window
    n = round(q) if abs(q - round(q)) < 1e-9 else math.ceil(q)
    n = max(n, 1)
    return [t0 + k * window for k in range(n)] + [t_end]


def fairness_over_windows(
    tasks: Iterable[TaskRecord],
    capacity_total: Resources,
    window: float = DEFAULT_FAIRNESS_WINDOW,
    active: Mapping[int, tuple[float, float]] | None = None,
) -> dict[str, float | int | None]:
    """Jain's index of the jobs' dominant shares per time window: ``windows``, ``mean``, ``min``, ``max``.

    Our reading of Carbyne §5.1: "we compute Jain's fairness index on 60 seconds time window intervals,
    and we plot the average, minimum, and maximum values across all intervals until the workload
    completes". The run is cut into windows of ``window`` seconds from the first task start to the end
    of the run (the last task end or the last end in ``active``, whichever is later); the last window
    may be shorter. In each window, every job active in it (its interval overlaps the window) gets

        x_j = (1 / window length) * integral over the window of max_r (sum of the demands_r of
              j's running tasks) / capacity_total_r,

    its time-averaged dominant share; the window's score is ``jain_index`` of these x_j. Windows with
    fewer than 2 active jobs are skipped. ``windows`` counts the scored windows; ``mean``, ``min`` and
    ``max`` are over them (None when none was scored).

    [D] The share of a job is its dominant share (DRF's measure, as Carbyne's fairness baseline is DRF);
    the paper does not say which share it feeds Jain's index with.
    [D] A job is active from ``active[job_id] = (arrival, finish)``; a job with tasks but missing from
    ``active``, or every job when ``active`` is None, from its first task start to its last task end. A
    waiting job (active, nothing running) counts with x_j = 0. An active job overlapping a window only in
    part is still averaged over the whole window length.

    Cost: O((tasks + windows * jobs) log): one sweep over the start/end events, each job's share
    integrated lazily between its own events.
    """
    if not window > 0:
        raise ValueError(f"window must be > 0, got {window}")
    log = _checked(tasks)
    empty: dict[str, float | int | None] = {"windows": 0, "mean": None, "min": None, "max": None}
    if not log:
        return empty
    intervals: dict[int, tuple[float, float]] = {}
    for t in log:
        a, f = intervals.get(t.job_id, (t.start, t.end))
        intervals[t.job_id] = (min(a, t.start), max(f, t.end))
    if active is not None:
        for job, (a, f) in active.items():
            if not (math.isfinite(a) and math.isfinite(f)) or f < a:
                raise ValueError(f"job {job}: bad active interval [{a}, {f}]")
            intervals[job] = (a, f)
    t0 = min(t.start for t in log)
    t_end = max(max(t.end for t in log), max(f for _, f in intervals.values()))
    if not t_end > t0:
        return empty
    edges = _edges(t0, t_end, window)
    nwin = len(edges) - 1
    lengths = [edges[k + 1] - edges[k] for k in range(nwin)]

    def win(t: float) -> int:
        return min(max(bisect_right(edges, t) - 1, 0), nwin - 1)

    # integral[k][job]: integral of the job's dominant share over window k.
    integral: list[dict[int, float]] = [{} for _ in range(nwin)]

    def accumulate(job: int, share: float, s: float, e: float) -> None:
        if share <= 0 or e <= s:
            return
        for k in range(win(s), win(e) + 1):
            dt = min(e, edges[k + 1]) - max(s, edges[k])
            if dt > 0:
                integral[k][job] = integral[k].get(job, 0.0) + share * dt

    # Starts before ends at equal times, so a job's running count never goes below zero.
    events = sorted(
        [(t.start, 0, t.job_id, t.demand) for t in log] + [(t.end, 1, t.job_id, t.demand) for t in log]
    )
    running: dict[int, int] = {}
    demand: dict[int, Resources] = {}
    share: dict[int, float] = {}
    since: dict[int, float] = {}
    for time, kind, job, dem in events:
        accumulate(job, share.get(job, 0.0), since.get(job, time), time)
        since[job] = time
        if kind == 0:
            running[job] = running.get(job, 0) + 1
            demand[job] = demand.get(job, ZERO).plus(dem)
        else:
            running[job] -= 1
            # Exact zero once nothing runs, whatever the float residue of the subtractions.
            demand[job] = demand[job].minus(dem) if running[job] else ZERO
        share[job] = demand[job].dominant_share(capacity_total)

    members: list[list[int]] = [[] for _ in range(nwin)]
    for job, (a, f) in sorted(intervals.items()):
        lo = max(bisect_right(edges, a) - 1, 0)
        hi = min(bisect_left(edges, f) - 1, nwin - 1)
        for k in range(lo, hi + 1):
            members[k].append(job)
    scores = [
        jain_index(integral[k].get(j, 0.0) / lengths[k] for j in members[k])
        for k in range(nwin)
        if len(members[k]) >= 2 and lengths[k] > 0
    ]
    if not scores:
        return empty
    return {
        "windows": len(scores),
        "mean": math.fsum(scores) / len(scores),
        "min": min(scores),
        "max": max(scores),
    }
