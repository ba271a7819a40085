"""Tetris: multi-resource packing with a multi-resource SRTF term and a fairness knob
(Grandl et al., SIGCOMM'14; the poster ``tetris-poster.txt``; spec §4).

The poster's "(simplified) Scheduling procedure", for a machine with free resources R::

    while resources R are free:
        among the jobs furthest from fair share            (the fairness knob)
        score(j) = max over tasks t of j with demand(t) <= R of  A(t, R) + eps * T(j)
        pick j*, t* = argmax score(j);  R = R - demand(t*)

- **Alignment** A(t, R): the poster says "cosine similarity between task demand vector and machine
  resource vector"; the SIGCOMM paper [R] a dot product of the task's demand and the machine's free
  resources, both normalized by the machine's capacity. ``alignment="dot"`` (default, spec §4.2 [D]) or
  ``"cosine"``. Only tasks whose demand fits R on *every* resource are candidates (multi-resource fit),
  and the loop repeats on the same machine until nothing fits (:class:`~aviary.central.packing.PackingCore`).
- **SRTF term**: "favor jobs with small remaining duration and small resource consumption". [R] p(j) =
  the sum over j's tasks not yet placed of (estimated duration x the sum of the task's demands, each
  normalized by the mean machine's capacity); it enters with the sign that favours small jobs:
  score = A - eps * p(j). [R] eps = ``srtf_weight`` x (mean A) / (mean p) over the candidates of this
  pick, so both terms are commensurate; ``srtf_weight=0`` is pure packing.
- **Fairness knob**: named by what it does (spec §4.4), ``fair_fraction`` phi in (0, 1] is the share of
  the jobs considered: the ceil(phi x |J|) jobs furthest below their fair share (the lowest dominant
  shares under DRF's equal split). phi = 1 considers every job: the poster's f = 1 "most efficient"
  and Carbyne's "Tetris (f -> 0)" baseline; phi -> 0 considers one job only, the one furthest below its
  share: the poster's "f -> 0, close to perfect fairness" and Carbyne's Tetris_Fair "(f -> 1)".
  The poster and Carbyne use opposite letters; ``fair_fraction`` is the poster's f.

Ties (equal scores) go to the earlier job, then the intra-job order (BFS). Not modelled [R]: the
remote-read penalty (Aviary has no input locality), the barrier hint and starvation reservations.

What it counts: all four resources, never over-allocating any ("we seek to build a cluster scheduler
that *packs tasks* to machines based on their requirements of multiple resources", poster), where the
slot-based baselines it is compared with "allocate resources to tasks in units of slots, each slot
corresponding to some amount of memory or cores" (poster): their disk and network contention on the
nodes (``worker/resource_node.py``) is what packing avoids.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection

from ..common.resources import Resources
from .packing import DemandShares, PlacementPolicy, RemainingWork, room
from .state import JobState, NodeState, StageState

ALIGNMENTS = ("dot", "cosine")


def alignment(demand: Resources, free: Resources, capacity: Resources, kind: str = "dot") -> float:
    """A(t, R): the task's demand and the machine's free resources, both as shares of its capacity."""
    return aligned(demand.over(capacity), free.over(capacity), kind)


def aligned(d: Resources, r: Resources, kind: str = "dot") -> float:
    """:func:`alignment` of a demand ``d`` and free resources ``r`` already as shares of the capacity."""
    dot = d.dot(r)
    if kind == "dot":
        return dot
    norm = math.sqrt(d.dot(d) * r.dot(r))
    return dot / norm if norm > 0 else 0.0


class Tetris(PlacementPolicy):
    """Caches, all exact: each stage's demand as shares of a node capacity (``shares``) and of the mean
    machine (``weights``: per job, each stage's summed normalized demand), and p(j) per job (``work``)
    with the number of tasks placed when it was computed (``job.running + job.finished``)."""

    def __init__(
        self,
        *,
        fair_fraction: float = 1.0,
        srtf_weight: float = 1.0,
        alignment: str = "dot",
        intra: str = "bfs",
    ) -> None:
        super().__init__(intra)
        if not 0 < fair_fraction <= 1:
            raise ValueError(f"fair_fraction must be in (0, 1], got {fair_fraction}")
        if not srtf_weight >= 0:
            raise ValueError(f"srtf_weight must be >= 0, got {srtf_weight}")
        if alignment not in ALIGNMENTS:
            raise ValueError(f"alignment must be one of {', '.join(ALIGNMENTS)}, got {alignment!r}")
        self.fair_fraction = fair_fraction
        self.srtf_weight = srtf_weight
        self.alignment = alignment
        self.shares = DemandShares()
        self.work = RemainingWork()

    def remaining(self, job: JobState) -> float:
        """p(j): unplaced estimated task-seconds weighted by the tasks' summed normalized demands."""
        return self.work(self.state, job)

    def on_finished(self, job: JobState) -> None:
        if job.finished == job.tasks:  # done: forget its caches
            self.work.forget(job.job_id)
            self.shares.forget(job)

    def considered(self, jobs: Collection[JobState]) -> Collection[JobState]:
        """The fairness knob: of all jobs with runnable tasks, the ceil(phi |J|) furthest below their
        fair share (lowest dominant share, ties to the earlier job); those of ``jobs``."""
        if self.fair_fraction >= 1.0:
            return jobs
        state = self.state
        active = state.active.values()
        furthest = heapq.nsmallest(  # the keys are unique (job ids): the same jobs as sorting all
            math.ceil(self.fair_fraction * len(active)),
            active,
            key=lambda j: (state.dominant_share(j), j.job_id),
        )
        keep = {j.job_id for j in furthest}
        return [j for j in jobs if j.job_id in keep]

    def pick(self, node: NodeState, jobs: Collection[JobState]) -> tuple[JobState, StageState] | None:
        r0, r1, r2, r3 = room(node.free)
        fitting = [
            (job, stage)
            for job in self.considered(jobs)
            for stage in job.runnable
            if (d := stage.demand)[0] <= r0 and d[1] <= r1 and d[2] <= r2 and d[3] <= r3
        ]
        if not fitting:
            return None
        capacity, kind = node.capacity, self.alignment
        r = node.free.over(capacity)
        options: list[tuple[JobState, StageState, float]] = []
        for job, stage in fitting:
            share = self.shares(stage, capacity)
            options.append((job, stage, share.dot(r) if kind == "dot" else aligned(share, r, kind)))
        if self.srtf_weight == 0 or len(options) == 1:
            return self.first_best([(a, job, stage) for job, stage, a in options])
        work = {job.job_id: self.remaining(job) for job, _, _ in options}
        mean_a = math.fsum(o[2] for o in options) / len(options)
        mean_p = math.fsum(work.values()) / len(work)
        eps = self.srtf_weight * mean_a / mean_p if mean_p > 0 else 0.0
        return self.first_best([(a - eps * work[job.job_id], job, stage) for job, stage, a in options])

    def first_best(self, scored: list[tuple[float, JobState, StageState]]) -> tuple[JobState, StageState]:
        """The best score; of equal ones the earliest job, then the first stage in the intra-job order."""
        top = max(score for score, _, _ in scored)
        key = self.stage_key
        _, job, stage = min(((j.job_id, key(s)), j, s) for score, j, s in scored if score == top)
        return job, stage
