"""Carbyne: altruistic scheduling of multi-resource DAG jobs (Grandl, Chowdhury, Akella, Ananthanarayanan,
OSDI'16; ``carbyne.txt`` §3.3 and Pseudocode 1; spec §2).

Pseudocode 1, run on every scheduling event (job arrival, job completion, task completion, §3.3.1):

1. **Inter-job** (lines 8-15): DRF shares A_k of the cluster R, by progressive filling
   (:func:`water_fill`; the closed form of [46] with each job's demand capped by what it can use).
   Lines 11-13 are lost in the supplied text; the spec's reconstruction [R]: ``L_DRF = R - sum_k A_k``.
2. **Intra-job** (lines 16-25), per job with probability ``altruism`` (§3.4.2, default 1): pack the job's
   remaining DAG into A_k with Tetris' alignment rule to get T_k (line 17, :func:`fluid_pack`); reverse
   the DAG (line 18) and pack it into A_k from T_k back to now (line 19), the job's running tasks pinned
   at the *end* of the reversed horizon (the start of the mirrored forward one, where they run); the
   tasks that must start now are those whose start in the mirrored schedule,
   ``Actual(t) = T_k - Rev(t) - Dur(t)``, is within one ``granule`` of now (lines 20-21,
   :func:`latest_starts`). The printed line 20 reads ``Rev(t) + T_k - Dur(t)``, which only agrees for
   sinks; the mirror is the spec's fix (§2.3 step 3).
   A job that is not altruistic this event is greedy, as under DRF: it takes the room DRF would give it
   (the job with the lowest dominant share that has a fitting task, its first stage in the intra-job
   order, BFS as Tez: :meth:`Carbyne.greedy_pick`). "In an adversarial environment, one can avoid
   altruism altogether by setting P(Altruism) = 0, which reduces CARBYNE to DRF" (§3.4.2): at
   ``altruism=0`` every placement is DRF's (:class:`~aviary.central.drf.Drf` counting the same four
   resources, ``drf --account all``), in the same order.
3. **Leftover** (lines 26-31): whatever the must-start and greedy tasks leave free (= L_DRF + sum_k L_k,
   since the shares add up to R) goes to the jobs in shortest-remaining-work order (SRTF, footnote 5:
   Tetris' remaining work), each job's best-aligned task first (``leftover="srtf-first"``, §3.3.4), or to
   Tetris' packing with its SRTF term (``"pack-first"``, the YARN prototype's order, §4.2).

The must-start tasks are placed before anything else, the most urgent (smallest Actual) first and, among
equally urgent ones, the best Tetris alignment with the node (§4.2 (3): the AM's priority hints); then
a greedy job's task if DRF's choice for the node is a greedy job (an altruistic job that DRF would
serve donates that room: it goes to the leftover). Counters (``summary.json``): ``carbyne_plans`` and
``carbyne_plan_fallbacks`` (plans whose reverse packing still ended after T_k),
``carbyne_leftover_placements``.

Decisions [D] (spec §2.8), each a deviation the paper leaves open:

- A job's DRF demand direction is the count-weighted mean demand of its runnable and running tasks; its
  cap (the most it can use) is their total. The cap is the paper's: the RM computes "among the runnable
  jobs ... periodically their DRF allocation and propagates the corresponding resource allocation ... to
  every AM" (§4.2 (3)), "the total resource allocation of a job as computed at RM, according to the
  fairness policy enforced in the cluster and the current runnable jobs" (§4.2 (1)); the RM knows a job
  only by its running containers and its Asks, which hold its runnable tasks (Asks_DEFAULT and
  Asks_ALTRUISTIC, §4.2 (1)-(2)), so the allocation it computes cannot exceed what those ask for. T_k
  still plans the whole remaining DAG in that allocation ("Given A_k, calculate T_k", line 17): a stage
  released later raises the cap then (the job is re-planned on its new share).
- The packing model of T_k is one fluid pool A_k (no machines): event-driven list scheduling, the
  runnable stage best aligned with the free room (⟨demand, A_k - used⟩ normalized by R) starting as many
  tasks as fit, then the next (by stage rather than re-scoring after every task: :func:`fluid_pack`).
  Running tasks occupy the pool until their estimated end; a task larger than the pool (the share is
  the job's *mean* task direction scaled, so a stage heavy in another resource may not fit it) runs
  alone in it, as DRF gives a job below its share its next task. The reverse packing holds each running
  task's demand during the last ``remaining estimate`` of the horizon (lines 18-21, §3.3.3: "packing
  tasks in time as close to T_k as possible"), so its mirror plus the running tasks is a feasible
  forward plan in A_k; it holds their resources, not their precedence (a stage behind a running one is
  not runnable, and only runnable stages keep latest starts). Greedy list scheduling is not symmetric:
  when the reverse schedule is still longer than T_k, the job follows its forward schedule instead (the
  tasks it starts at time 0), so no plan ever finishes after T_k. Holding the running tasks for the
  whole horizon instead (before issue 24) made 56 % of TPC-H plans and 60 % of TPC-DS-like plans fall
  back; pinned at the end, 12 % and 5 % (the same plans' inputs, ``docs/carbyne.md``).
- "Actual(t) == 0" is ``Actual(t) <= granule`` (default 1 s of trace time).
- A_k covers the job's running tasks too; a job running more than its share starts nothing in step 2
  and competes in the leftover.
- Shares are recomputed on job arrival and completion and at most every ``period`` seconds otherwise (the
  YARN RM "computes periodically their DRF allocation", §4.2). A job's plan is kept as absolute latest
  start times and re-made when a stage of it is released or its share moved by more than
  :attr:`Carbyne.tolerance`; between, a task must start once its latest start is within the granule
  (the plan does not go stale as time passes: it is a schedule). Re-planning after every task
  completion instead gave the same JCTs within run-to-run noise on TPC-H (mean JCT 71.4 vs 72.5 s,
  100 jobs, 100 nodes, load 1.0) at 15x the simulator time.
- P(altruism) is drawn per job per recomputation from the core's seeded RNG.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ..common.choices import LEFTOVER_ORDERS
from ..common.resources import EPS, ZERO, Resources
from .packing import first_fitting, room
from .state import JobState, NodeState, StageState
from .tetris import Tetris

INF = float("inf")


def water_fill(directions: Sequence[Resources], caps: Sequence[float]) -> list[float]:
    """DRF by progressive filling (spec §2.3 step 1): the dominant share of each job, when every job's
    demand grows along its ``direction`` (a per-task demand as a share of the cluster) at the same rate of
    dominant share, a job stopping at its ``cap`` or when a resource it needs runs out (R = all ones).

    The active jobs share one level; each round raises it to the next event (the lowest cap among them,
    or a resource running out), so the cost is a sort plus a few passes."""
    n = len(directions)
    share = [0.0] * n
    unit = [d.times(1.0 / m) if (m := max(d)) > 0 else ZERO for d in directions]
    active = {k for k in range(n) if caps[k] > 0 and max(directions[k]) > 0}
    order = sorted(active, key=lambda k: caps[k])
    rate = [math.fsum(unit[k][r] for k in active) for r in range(4)]
    left = [1.0, 1.0, 1.0, 1.0]
    level = 0.0
    at = 0
    while active:
        while order[at] not in active:
            at += 1
        step = min(caps[order[at]] - level, *(left[r] / rate[r] for r in range(4) if rate[r] > EPS))
        step = max(step, 0.0)
        level += step
        left = [x - step * y for x, y in zip(left, rate, strict=True)]
        done = set()
        while at < len(order) and caps[order[at]] <= level + EPS:
            done.add(order[at])
            at += 1
        for r in range(4):
            if left[r] <= EPS and rate[r] > EPS:
                done.update(k for k in active if unit[k][r] > 0)
        for k in done & active:
            share[k] = min(level, caps[k])
            active.discard(k)
            rate = [x - y for x, y in zip(rate, unit[k], strict=True)]
        at = min(at, len(order) - 1) if active else at
    return share


@dataclass(slots=True, eq=False)
class PackItem:
    """Tasks of one stage to list-schedule: ``count`` unstarted ones, ``pinned`` running ones (end times)."""

    key: int
    count: int
    duration: float
    demand: Resources
    preds: tuple[int, ...]
    pinned: list[float] = field(default_factory=list)


def fluid_pack(
    items: Sequence[PackItem],
    capacity: Resources,
    norm: Resources,
    reserved: Sequence[tuple[float, Resources]] = (),
) -> tuple[float, dict[int, list[float]]]:
    """List-schedule ``items`` in one pool of ``capacity`` (Tetris' rule by stage: at each event, the
    stage whose task is best aligned with the free room, ``⟨demand, free⟩`` as shares of ``norm``, ties to
    the lower key, starts as many tasks as fit, then the next best); a stage's tasks start once every task
    of its ``preds`` finished. Returns the makespan (``inf`` when a task can never fit) and each item's
    start times. [D] By stage rather than one task at a time (re-scoring after each task): on TPC-DS-like
    DAGs of thousands of tasks the per-task rule made a plan cost ~80 ms.

    ``reserved``: ``(from, demand)`` pairs, each holding ``demand`` of the pool from time ``from`` on (the
    reverse packing's running tasks, pinned at the end of its horizon). The reserved amount only grows
    with time, so a task started at ``now`` fits when it fits beside what is reserved at its end: the
    free room of a stage is ``capacity - used - reserved(now + duration)``."""
    n = len(items)
    at = {it.key: i for i, it in enumerate(items)}
    succ: list[list[int]] = [[] for _ in items]
    waiting = [0] * n
    for i, it in enumerate(items):
        preds = {at[p] for p in it.preds if p in at}
        waiting[i] = len(preds)
        for p in preds:
            succ[p].append(i)
    # The four resources unrolled; one that ``norm`` lacks counts zero everywhere (demand, share, room),
    # which fits, scores and sums exactly as leaving it out.
    live = [norm[r] > 0 for r in range(4)]
    c0, c1, c2, c3 = (capacity[r] if live[r] else 0.0 for r in range(4))
    k0, k1, k2, k3 = (1.0 / norm[r] if live[r] else 0.0 for r in range(4))
    dem = [tuple(it.demand[r] if live[r] else 0.0 for r in range(4)) for it in items]
    share = [tuple(it.demand[r] / norm[r] if live[r] else 0.0 for r in range(4)) for it in items]
    duration = [it.duration for it in items]
    left = [it.count for it in items]
    unfinished = [it.count + len(it.pinned) for it in items]
    events: list[tuple[float, int, int]] = []  # (end, item, tasks)
    u0 = u1 = u2 = u3 = 0.0
    for i, it in enumerate(items):
        d0, d1, d2, d3 = dem[i]
        for end in it.pinned:
            events.append((end, i, 1))
            u0, u1, u2, u3 = u0 + d0, u1 + d1, u2 + d2, u3 + d3
    heapq.heapify(events)
    froms: list[float] = []
    held: list[tuple[float, float, float, float]] = [(0.0, 0.0, 0.0, 0.0)]  # sums of the first j
    for start, demand in sorted(reserved, key=lambda r: r[0]):
        froms.append(start)
        h0, h1, h2, h3 = held[-1]
        e0, e1, e2, e3 = (demand[r] if live[r] else 0.0 for r in range(4))
        held.append((h0 + e0, h1 + e1, h2 + e2, h3 + e3))
    ready = [i for i in range(n) if waiting[i] == 0 and left[i] > 0]
    starts: list[list[float]] = [[] for _ in items]
    now = makespan = 0.0
    push, pop = heapq.heappush, heapq.heappop
    while True:
        while ready:
            b0, b1, b2, b3 = c0 - u0 + EPS, c1 - u1 + EPS, c2 - u2 + EPS, c3 - u3 + EPS
            b = -1
            if len(ready) == 1 and not froms:  # the common case, without the loop
                b = ready[0]
                d0, d1, d2, d3 = dem[b]
                if not (d0 <= b0 and d1 <= b1 and d2 <= b2 and d3 <= b3) and events:
                    break
                f0, f1, f2, f3 = b0, b1, b2, b3
            else:
                # One pass: each ready stage's room at its end and its score, the best that fits and,
                # should none fit, the best of all.
                best = best_any = -INF
                any_b = -1
                fit_room = any_room = (b0, b1, b2, b3)
                for i in ready:
                    if froms:
                        h0, h1, h2, h3 = held[bisect_left(froms, now + duration[i] - EPS)]
                        f0, f1, f2, f3 = b0 - h0, b1 - h1, b2 - h2, b3 - h3
                    else:
                        f0, f1, f2, f3 = b0, b1, b2, b3
                    a0, a1, a2, a3 = share[i]
                    score = a0 * (f0 * k0) + a1 * (f1 * k1) + a2 * (f2 * k2) + a3 * (f3 * k3)
                    d0, d1, d2, d3 = dem[i]
                    if d0 <= f0 and d1 <= f1 and d2 <= f2 and d3 <= f3:
                        if score > best or (score == best and i < b):
                            best, b, fit_room = score, i, (f0, f1, f2, f3)
                    elif b < 0 and (score > best_any or (score == best_any and i < any_b)):
                        best_any, any_b, any_room = score, i, (f0, f1, f2, f3)
                if b < 0:
                    if events:  # (tasks started at this event are in ``events`` already)
                        break
                    # Nothing runs and nothing fits: a task larger than the pool runs alone in it (the
                    # best aligned of them).
                    b, fit_room = any_b, any_room
                f0, f1, f2, f3 = fit_room
            d0, d1, d2, d3 = dem[b]
            k = left[b]
            if d0 > 0:
                k = min(k, math.floor(f0 / d0))
            if d1 > 0:
                k = min(k, math.floor(f1 / d1))
            if d2 > 0:
                k = min(k, math.floor(f2 / d2))
            if d3 > 0:
                k = min(k, math.floor(f3 / d3))
            k = max(k, 1)
            u0, u1, u2, u3 = u0 + k * d0, u1 + k * d1, u2 + k * d2, u3 + k * d3
            starts[b].extend([now] * k)
            push(events, (now + duration[b], b, k))  # a stage starts once per event: one entry
            left[b] -= k
            if left[b] == 0:
                ready.remove(b)
        if not events:
            out = {it.key: s for it, s in zip(items, starts, strict=True)}
            return (INF if any(left) else makespan), out
        now = events[0][0]
        while events and events[0][0] <= now:
            _, i, k = pop(events)
            d0, d1, d2, d3 = dem[i]
            u0, u1, u2, u3 = u0 - k * d0, u1 - k * d1, u2 - k * d2, u3 - k * d3
            unfinished[i] -= k
            if unfinished[i] == 0:
                for s in succ[i]:
                    waiting[s] -= 1
                    if waiting[s] == 0 and left[s] > 0:
                        ready.append(s)
        makespan = now


def latest_starts(
    items: Sequence[PackItem], share: Resources, norm: Resources
) -> tuple[float, dict[int, list[float]], bool]:
    """Lines 17-21: T_k, the forward packing of the job's remaining stages ``items`` in ``share`` (running
    tasks pinned from now until their estimated end, line 17); per item the sorted latest starts of its
    unstarted tasks (from now) that keep T_k; and whether the plan fell back to the forward starts.

    The latest starts are the mirror ``T_k - Rev(t) - Dur(t)`` (line 20, the spec's fix) of the reversed
    DAG (line 18) packed into ``share`` from T_k back to now (line 19, "packing tasks in time as close to
    T_k as possible", §3.3.3), where a running task holds its demand during the *last* ``remaining
    estimate`` of the reversed horizon: the start of the mirrored forward schedule, where it runs. The
    mirror of that packing plus the running tasks is a feasible plan in ``share`` that ends by T_k. Greedy
    list scheduling is not symmetric: when the reverse packing still ends after T_k, the job follows its
    forward plan (the starts of T_k's own packing), so no plan ever ends after T_k (a fallback).

    [D] The reverse packing holds the running tasks' resources but not their precedence: a task of a
    stage whose parent is still running is not runnable, and its latest start is only kept for runnable
    stages (a stage is planned again when it is released)."""
    t_k, forward = fluid_pack(items, share, norm)
    reverse = [PackItem(it.key, it.count, it.duration, it.demand, ()) for it in items if it.count]
    children: dict[int, list[int]] = {it.key: [] for it in reverse}
    for it in items:
        for p in it.preds:
            if p in children and it.count:
                children[p].append(it.key)
    for it in reverse:
        it.preds = tuple(children[it.key])
    held = [(t_k - end, it.demand) for it in items for end in it.pinned]
    t_rev, backward = fluid_pack(reverse, share, norm, held)
    if t_rev > t_k + EPS:  # greedy packing is not symmetric: follow the forward plan
        return t_k, forward, True
    mirrored = {it.key: sorted(max(t_k - r - it.duration, 0.0) for r in backward[it.key]) for it in reverse}
    return t_k, mirrored, False


class Carbyne(Tetris):
    """Carbyne (module docstring). ``altruism``: P(altruism); ``granule``: the "now" of a must-start task
    (seconds); ``period``: seconds between share recomputations; ``leftover``: the leftover order.

    An altruistic job's plan is kept as each runnable stage's latest starts (absolute times, sorted:
    ``latest``) and how many of its tasks were placed since (``taken``): a task must start once its
    latest start is within ``granule`` of now. A greedy job (not altruistic this time) is checked live:
    its next task in the intra-job order must start while it fits in the job's share, or the job runs
    nothing (so a share smaller than any of its tasks does not starve it: DRF would give it a task)."""

    tolerance = 0.05
    """A share recomputation re-plans a job only when some resource of its share moved by more than this
    fraction (or a stage of it was released)."""

    def __init__(
        self,
        *,
        altruism: float = 1.0,
        granule: float = 1.0,
        period: float = 1.0,
        leftover: str = "srtf-first",
        intra: str = "bfs",
    ) -> None:
        super().__init__(intra=intra)
        if not 0 <= altruism <= 1:
            raise ValueError(f"altruism must be in [0, 1], got {altruism}")
        if not (granule >= 0 and period >= 0):
            raise ValueError(f"granule and period must be >= 0, got {granule} and {period}")
        if leftover not in LEFTOVER_ORDERS:
            raise ValueError(f"leftover must be one of {', '.join(LEFTOVER_ORDERS)}, got {leftover!r}")
        self.altruism = altruism
        self.granule = granule
        self.period = period
        self.leftover = leftover
        self.alloc: dict[int, Resources] = {}  # A_k per job
        self.latest: dict[StageState, list[float]] = {}
        self.taken: dict[StageState, int] = {}
        self.greedy: set[int] = set()
        self.stale: set[int] = set()  # jobs to re-plan
        self.shares_at = -INF  # when shares were last computed (-inf: due at the next pick)

    # --- events -------------------------------------------------------------------------------------
    def on_runnable(self, job: JobState) -> None:
        if job.job_id in self.alloc:
            self.stale.add(job.job_id)
        else:
            self.shares_at = -INF

    def on_placed(self, job: JobState, stage: StageState) -> None:
        if stage in self.taken:
            self.taken[stage] += 1

    def on_finished(self, job: JobState) -> None:
        super().on_finished(job)
        if job.finished == job.tasks:
            self.alloc.pop(job.job_id, None)
            self.forget(job)
            self.shares_at = -INF

    def forget(self, job: JobState) -> None:
        for stage in job.stages:
            self.latest.pop(stage, None)
            self.taken.pop(stage, None)
        self.greedy.discard(job.job_id)

    # --- Pseudocode 1 ------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring shares and plans up to date with the events since the last pick."""
        if self.now >= self.shares_at + self.period:
            old = self.alloc
            self.inter_job()
            self.stale.update(
                j for j, a in self.alloc.items() if j not in old or moved(old[j], a, self.tolerance)
            )
            self.shares_at = self.now
        jobs = self.state.jobs
        for job_id in sorted(self.stale):
            job = jobs.get(job_id)
            if job is not None:
                self.intra_job(job)
        self.stale.clear()

    def inter_job(self) -> None:
        """Lines 8-15: DRF shares of every unfinished job (A_k in absolute units)."""
        total = self.state.capacity_total
        jobs = list(self.state.jobs.values())
        directions, caps = [], []
        for job in jobs:
            want = job.usage
            count = job.running
            for s in job.runnable:
                want = want.plus(s.demand.times(s.unplaced))
                count += s.unplaced
            directions.append(want.over(total).times(1.0 / count) if count else ZERO)
            caps.append(want.dominant_share(total))
        shares = water_fill(directions, caps)
        self.alloc = {}
        for job, d, x in zip(jobs, directions, shares, strict=True):
            m = max(d)
            unit = d.times(x / m) if m > 0 else ZERO
            self.alloc[job.job_id] = Resources(*(u * c for u, c in zip(unit, total, strict=True)))

    def intra_job(self, job: JobState) -> None:
        """Lines 16-25: the job's plan, altruistic with probability ``altruism``, else greedy."""
        self.forget(job)
        if not job.runnable:
            return
        if self.rng.random() >= self.altruism:
            self.greedy.add(job.job_id)
            return
        for stage, actual in self.must_start(job).items():
            self.latest[stage] = [self.now + a for a in actual]
            self.taken[stage] = 0

    def must_start(self, job: JobState) -> dict[StageState, list[float]]:
        """Per runnable stage of ``job``, the latest starts (from now, sorted) that keep its T_k in its
        share (:func:`latest_starts`)."""
        state, now = self.state, self.now
        running: dict[int, list[float]] = {}
        for stage in job.stages:
            if stage.placed > stage.finished:
                ends = running[stage.index] = []
                for index in range(stage.offset, stage.offset + stage.placed):
                    entry = state.placed.get((job.job_id, index))
                    if entry is not None:
                        ends.append(max(entry[2] + stage.estimate - now, 0.0))
        items = [
            PackItem(s.index, s.unplaced, s.estimate, s.demand, s.parents, running.get(s.index, []))
            for s in job.stages
            if s.finished < s.tasks
        ]
        share = self.alloc.get(job.job_id, ZERO)
        _, latest, fallback = latest_starts(items, share, state.capacity_total)
        counters = state.core.counters
        counters["carbyne_plans"] += 1
        if fallback:
            counters["carbyne_plan_fallbacks"] += 1
        return {stage: latest[stage.index] for stage in job.runnable}

    # --- placing -------------------------------------------------------------------------------------
    def pick(self, node: NodeState, jobs: Collection[JobState]) -> tuple[JobState, StageState] | None:
        self.refresh()
        chosen = self.urgent(node, jobs)
        if chosen is None and self.greedy:
            chosen = self.greedy_pick(node, jobs)
        if chosen is not None:
            return chosen
        chosen = self.leftover_pick(node, jobs)
        if chosen is not None:
            self.state.core.counters["carbyne_leftover_placements"] += 1
        return chosen

    def leftover_pick(
        self, node: NodeState, jobs: Collection[JobState]
    ) -> tuple[JobState, StageState] | None:
        """Lines 26-31: SRTF first (each job's best-aligned task), or Tetris' packing (``pack-first``)."""
        if self.leftover == "pack-first":
            return super().pick(node, jobs)
        r0, r1, r2, r3 = room(node.free)
        best: tuple[float, int] | None = None
        chosen = None
        for job in jobs:  # the first job in SRTF order with a fitting stage (no sort of them all)
            for s in job.runnable:
                d = s.demand
                if d[0] <= r0 and d[1] <= r1 and d[2] <= r2 and d[3] <= r3:
                    key = (self.remaining(job), job.job_id)
                    if best is None or key < best:
                        best, chosen = key, job
                    break
        if chosen is None:
            return None
        r = node.free.over(node.capacity)
        scored = [
            (self.shares(s, node.capacity).dot(r), chosen, s)
            for s in chosen.runnable
            if (d := s.demand)[0] <= r0 and d[1] <= r1 and d[2] <= r2 and d[3] <= r3
        ]
        return self.first_best(scored)

    def urgent(self, node: NodeState, jobs: Collection[JobState]) -> tuple[JobState, StageState] | None:
        """The must-start task of an altruistic job that fits ``node`` with the earliest latest start; ties
        to the best alignment with the node, then the earlier job and stage."""
        offered = {j.job_id: j for j in jobs}
        r0, r1, r2, r3 = room(node.free)
        r = node.free.over(node.capacity)
        capacity = node.capacity
        due = self.now + self.granule
        best: tuple[float, float, int, int] | None = None
        chosen = None
        for stage, latest in self.latest.items():
            i = self.taken[stage]
            d = stage.demand
            if (
                i < len(latest)
                and latest[i] <= due
                and stage.job_id in offered
                and d[0] <= r0
                and d[1] <= r1
                and d[2] <= r2
                and d[3] <= r3
            ):
                key = (latest[i], -self.shares(stage, capacity).dot(r), stage.job_id, stage.index)
                if best is None or key < best:
                    best, chosen = key, stage
        if chosen is None:
            return None
        return offered[chosen.job_id], chosen

    def greedy_pick(self, node: NodeState, jobs: Collection[JobState]) -> tuple[JobState, StageState] | None:
        """A greedy (not altruistic) job's task, the way DRF schedules (§3.4.2: P(altruism) = 0 "reduces
        CARBYNE to DRF"): the inter-job scheduler's choice for ``node`` is the job of ``jobs`` with the
        lowest dominant share of its running tasks (progressive filling, ties to the earlier job) that
        has a runnable stage fitting the node, and its first such stage in the intra-job order (first
        fit, as :class:`~aviary.central.drf.Drf`). A greedy job takes what DRF gives it; when DRF's
        choice is an altruistic job, that job starts only its must-start tasks (:meth:`urgent`) and
        donates the rest: the room goes to the leftover (``None`` here)."""
        total = self.state.capacity_total
        r0, r1, r2, r3 = room(node.free)
        best: tuple[float, int] | None = None
        chosen = None
        for job in jobs:
            key = (job.usage.dominant_share(total), job.job_id)
            if best is not None and key >= best:
                continue
            for stage in job.runnable:
                d = stage.demand
                if d[0] <= r0 and d[1] <= r1 and d[2] <= r2 and d[3] <= r3:
                    best, chosen = key, job
                    break
        if chosen is None or chosen.job_id not in self.greedy:
            return None
        first = first_fitting(chosen, (r0, r1, r2, r3), self.stage_key)
        assert first is not None
        return chosen, first


def moved(old: Resources, new: Resources, tolerance: float) -> bool:
    """Some resource changed by more than ``tolerance`` of the larger of its two amounts."""
    return any(abs(a - b) > tolerance * max(a, b) for a, b in zip(old, new, strict=True))
