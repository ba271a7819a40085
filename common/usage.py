"""Multi-resource usage metrics of a run (spec §0.3, §8): per-resource utilization and Jain's fairness.

Pure functions over a task log: one :class:`TaskRecord` per task run (job, start, end, demand), times in
seconds on the central scheduler's clock. Results do not depend on the order of the log (it is sorted
first), so identical logs give identical numbers.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping
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


SERIES_WINDOWS = 100
"""Windows of a run's utilization over time (``summary.json``'s ``utilization_over_time``)."""


def utilization_over_time(
    tasks: Iterable[TaskRecord], capacity_total: Resources, span: float, windows: int = SERIES_WINDOWS
) -> dict[str, list[float]]:
    """Each resource's utilization in each of ``windows`` equal windows of ``[0, span]``: what the tasks
    delivered in the window over what the cluster could (a task delivers ``demand_r * work`` spread
    evenly over the time it held its demand, so the windows average to :func:`utilization_by_resource`
    when every task lies within the span). ``t``: each window's end. Keys as there, plus ``t``. O(tasks +
    windows): full windows by a difference array, the two partial ones at each end directly."""
    if not span > 0 or windows < 1:
        raise ValueError(f"span must be > 0 and windows >= 1, got {span} and {windows}")
    log = _checked(tasks)
    width = span / windows
    names = [(i, name) for i, name in enumerate(RESOURCES) if capacity_total[i] > 0]
    out: dict[str, list[float]] = {"t": [width * (k + 1) for k in range(windows)]}
    partials = {i: [0.0] * windows for i, _ in names}
    fulls = {i: [0.0] * (windows + 1) for i, _ in names}  # difference arrays: rate per window
    for t in log:  # one pass for every resource, each summed in the tasks' order as ever
        held = t.end - t.start
        if held <= 0 or t.start >= span or t.end <= 0:
            continue
        speed = (t.work if t.work is not None else held) / held
        start, end = max(t.start, 0.0), min(t.end, span)
        a, b = int(start // width), min(windows - 1, int(end // width))
        for i, _ in names:
            if t.demand[i] == 0:
                continue
            rate = t.demand[i] * speed
            partial = partials[i]
            if a == b:
                partial[a] += rate * (end - start)
                continue
            partial[a] += rate * ((a + 1) * width - start)
            partial[b] += rate * (end - b * width)
            full = fulls[i]
            full[a + 1] += rate
            full[b] -= rate
    for i, name in names:
        partial, full = partials[i], fulls[i]
        running, series = 0.0, []
        for k in range(windows):
            running += full[k]
            series.append((partial[k] + running * width) / (capacity_total[i] * width))
        out[name] = series
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


class _Edges:
    """Window boundaries from ``t0``: ``t0, t0+w, ..., t_end`` (the last window may be shorter), found
    without a list of them: a run of 1e9 s has 1.7e7 windows of 60 s, one of 1e308 s more than an index
    holds. ``edges[k]`` is boundary ``k``; :meth:`right` and :meth:`left` are ``bisect_right`` and
    ``bisect_left`` over them."""

    __slots__ = ("n", "t0", "t_end", "w")

    def __init__(self, t0: float, t_end: float, window: float) -> None:
        q = (t_end - t0) / window
        n = round(q) if abs(q - round(q)) < 1e-9 else math.ceil(q)
        self.n = max(n, 1)
        """The number of windows."""
        self.t0, self.t_end, self.w = t0, t_end, window

    def __getitem__(self, k: int) -> float:
        return self.t0 + k * self.w if k < self.n else self.t_end

    def right(self, t: float) -> int:
        """How many boundaries are ``<= t`` (``bisect_right``)."""
        return self._count(t, lambda x: x <= t)

    def left(self, t: float) -> int:
        """How many boundaries are ``< t`` (``bisect_left``)."""
        return self._count(t, lambda x: x < t)

    def _count(self, t: float, below: Callable[[float], bool]) -> int:
        """The first ``k`` in ``0..n+1`` whose boundary is not ``below`` (they are in order): from the
        arithmetic guess, galloping then halving, so a guess off by float rounding costs a step or two,
        and boundaries too close for floats to tell apart (a span of 1e308 s) no more than a search."""
        top = self.n + 1
        k = min(max(int((t - self.t0) / self.w), 0), top) if t > self.t0 else 0
        step = 1
        if k < top and below(self[k]):
            lo, probe = k + 1, k + 1
            while probe < top and below(self[probe]):
                lo, step = probe + 1, step * 2
                probe = k + step
            hi = min(probe, top)
        else:
            hi, probe = k, k - 1
            while probe >= 0 and not below(self[probe]):
                hi, step = probe, step * 2
                probe = k - step
            lo = max(probe + 1, 0)
        while lo < hi:
            mid = (lo + hi) // 2
            if below(self[mid]):
                lo = mid + 1
            else:
                hi = mid
        return lo


def _dominant_share(demand: Resources, capacity: Resources) -> float:
    """``demand.dominant_share(capacity)``, the same float (the first of the largest shares), as a loop
    the compiled build runs natively (a DAG replay's summary takes it at every task start and end)."""
    best = demand[0] / capacity[0] if capacity[0] > 0 else 0.0
    for i in range(1, len(capacity)):
        share = demand[i] / capacity[i] if capacity[i] > 0 else 0.0
        if share > best:
            best = share
    return best


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

    Cost: O((tasks + windows * jobs) log) at most, with ``windows`` counting only the windows where
    something changes (a run of windows where nothing does is scored once, for all of them): one sweep
    over the start/end events, each job's share integrated lazily between its own events. Memory and
    time do not grow with the run's span: a task of 1e8 s in 60-second windows costs as little as one
    of 60 s.
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
    edges = _Edges(t0, t_end, window)
    nwin = edges.n

    def win(t: float) -> int:
        return min(max(edges.right(t) - 1, 0), nwin - 1)

    # A window is special when a time where anything changes (a task starts or ends, a job arrives or
    # finishes) lies in it, edges included; between two special windows every job's share and whether it
    # is active stay the same, so such a run of plain windows is scored once and counted for each.
    special: set[int] = set()
    window_of: dict[float, int] = {}  # every event time's window, found once (a task's start and end recur)
    for b in {*(t.start for t in log), *(t.end for t in log), *(x for ab in intervals.values() for x in ab)}:
        window_of[b] = k = win(b)
        special.add(k)
        if k > 0 and b <= edges[k]:
            special.add(k - 1)
    specials = sorted(special)
    runs = [(p + 1, q - 1) for p, q in itertools.pairwise(specials) if q > p + 1]
    starts = [k1 for k1, _ in runs]
    # integral[k][job]: integral of the job's dominant share over special window k; run_share[r][job]:
    # the job's share through run r.
    integral: dict[int, dict[int, float]] = {k: {} for k in specials}
    run_share: list[dict[int, float]] = [{} for _ in runs]

    def accumulate(job: int, share: float, s: float, e: float) -> None:
        if share <= 0 or e <= s:
            return
        ks, ke = window_of[s], window_of[e]  # both are event times
        for i in range(bisect_left(specials, ks), bisect_right(specials, ke)):
            k = specials[i]
            dt = min(e, edges[k + 1]) - max(s, edges[k])
            if dt > 0:
                integral[k][job] = integral[k].get(job, 0.0) + share * dt
        for r in range(bisect_right(starts, ks), bisect_left(starts, ke)):  # runs strictly inside
            run_share[r][job] = share

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
        share[job] = _dominant_share(demand[job], capacity_total)

    members: dict[int, list[int]] = {k: [] for k in specials}
    run_members: list[list[int]] = [[] for _ in runs]
    for job, (a, f) in sorted(intervals.items()):
        lo = max(edges.right(a) - 1, 0)
        hi = min(edges.left(f) - 1, nwin - 1)
        for i in range(bisect_left(specials, lo), bisect_right(specials, hi)):
            members[specials[i]].append(job)
        for r in range(bisect_left(starts, lo), bisect_right(starts, hi)):
            run_members[r].append(job)
    scored: list[tuple[float, int]] = []  # (score, windows it stands for)
    for k in specials:
        length = edges[k + 1] - edges[k]
        if len(members[k]) >= 2 and length > 0:
            scored.append((jain_index(integral[k].get(j, 0.0) / length for j in members[k]), 1))
    for (k1, k2), shares, jobs in zip(runs, run_share, run_members, strict=True):
        if len(jobs) >= 2:
            scored.append((jain_index(shares.get(j, 0.0) for j in jobs), k2 - k1 + 1))
    scores = [x for x, _ in scored]
    if not scores:
        return empty
    windows = sum(n for _, n in scored)
    return {
        "windows": windows,
        "mean": math.fsum(x * n for x, n in scored) / windows,
        "min": min(scores),
        "max": max(scores),
    }
