"""Graphene's online component (Grandl et al., OSDI'16; spec §3.3): match runnable tasks to a machine
by packing, the preferred schedule's order and remaining work, with deficit counters bounding
unfairness. The offline part is :mod:`aviary.central.graphene_schedule`.

When a machine has free resources R (:class:`~aviary.central.packing.PackingCore` asks :meth:`pick`
until nothing fits), the candidates are the runnable stages of the offered jobs whose demand fits R on
every resource, and each scores

    perfScore_t = pScore_t * priScore_t - eta * srpt_j

- **pScore** [P "packing score ... dot product between the task demand vector and the machine's
  available resource vector"; D both normalized by the machine's capacity, as Tetris]. No remote
  penalty: Aviary has no input locality (rp = 1, spec §3.7).
- **priScore** [P "ranking tasks in increasing order of their start time ... dividing the rank by the
  number of tasks"; D 1 - rank/n so the first task scores 1]: from the job's preferred schedule, built
  once when the policy first hears of the job (``on_runnable``). [D] A stage's priScore is the best
  (highest) one among its tasks not yet placed: tasks of a stage are identical, so the next one placed
  takes the earliest slot of the preferred schedule left.
- **srpt** [P "sum over the remaining tasks to schedule in j, the product of their duration and
  resource demands"; D as Tetris: unplaced estimated task-seconds x summed demand shares of the mean
  machine].
- **eta** [P "automatically updated based on the average srpt and pScore"; D eta = m_eta x mean(pScore x
  priScore) / mean(srpt), over the candidates (srpt: over their distinct jobs)].
- **Deficit counters** [P]: when a task t of group g is placed, deficit_g += factor_t (fairShare_g - 1)
  and every other group g' gets deficit_g' += factor_t fairShare_g'. [D] groups = jobs; the groups
  counted are the jobs with runnable tasks at that moment plus the placed one, fairShare = 1 / their
  number; factor_t = the task's dominant share of the cluster's capacity (DRF-style), so C = 1.0; a
  job's counter is kept while it waits for a barrier and forgotten when it finishes.
- **Selection** [P]: g_unfair = the job with runnable tasks and the largest deficit (ties: the earlier
  job); if its deficit >= kappa C and it has a candidate on this machine, pick only among its
  candidates, else among all. Ties of perfScore: the earlier job, then BFS order.

Knobs: ``kappa`` (0.1; ``math.inf`` turns the fairness bound off), ``m_eta`` (1.0; 0 drops the srpt
term), ``share`` (0.25: the job's expected share of the cluster, the virtual space's size),
``offline`` (False: every priScore 1, i.e. online packing + srpt + deficits only, the ablation without
preferred schedules), ``rebase`` (False; True [D]: a task's priScore counts only the job's unplaced tasks
ranked before it, 1 - ahead/n, so every job's next preferred task scores 1 and a job's progress does not
lower its scores against newer jobs'), ``delta`` and ``prune`` of the troublesome-task search.

What it counts: all four resources, with disk and network overbooked up to ``--overbook`` times a node's
capacity (default 1.25 [D]; the central layer's ``overbook``): Graphene "runs more tasks by reducing
fragmentation and by overbooking resources such as network and disk that do not lose goodput when
demand exceeds capacity (unlike say memory)" and "Occasionally, G allocates over [the digits are lost]
of the network and disk" (``graphene.txt`` §7.2). The overbooked tasks run stretched on the node
(fluid contention, ``worker/resource_node.py``), as the paper's simulator delays "the completion of
tasks further by a proportional amount" (§7.4). ``--overbook 1`` is the control without it.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Collection

from ..common.resources import Resources
from .graphene_schedule import DELTA, PRUNE, DagStage, Schedule, build_schedule, virtual_machines
from .packing import DemandShares, PlacementPolicy, RemainingWork, room
from .state import JobState, NodeState, StageState

CLUSTER = 1.0
"""C, the cluster capacity in the units of a DRF-style factor (a share of the whole cluster)."""


class Graphene(PlacementPolicy):
    """Per job caches (all forgotten when the job finishes): ``schedules`` (offline priScores; for
    ``rebase`` their ranks in ``ranks`` and the current scores in ``rebase_cache``), ``weights`` (each
    stage's summed demand shares of the mean machine) and ``work`` (srpt with the number of tasks
    placed when it was computed); the deficit counters; ``shares`` per node capacity.

    Deficits in O(log jobs) per placement: every counted job gains factor x fairShare, so the common
    part accumulates in ``level`` and a counted job's deficit is ``base[j] + level``; ``held`` keeps
    the deficits of jobs waiting without runnable tasks; ``heap`` holds ``(-base, job)`` (stale
    entries skipped when met), so the most unfair job is at its top. Jobs enter the count on
    ``on_runnable`` and leave when a placement takes their last runnable task."""

    def __init__(
        self,
        *,
        kappa: float = 0.1,
        m_eta: float = 1.0,
        share: float = 0.25,
        offline: bool = True,
        rebase: bool = False,
        delta: float = DELTA,
        prune: float = PRUNE,
    ) -> None:
        super().__init__("bfs")
        if not kappa >= 0:
            raise ValueError(f"kappa must be >= 0, got {kappa}")
        if not m_eta >= 0:
            raise ValueError(f"m_eta must be >= 0, got {m_eta}")
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share}")
        if not 0 < delta <= 1:
            raise ValueError(f"delta must be in (0, 1], got {delta}")
        if not 0 < prune <= 1:
            raise ValueError(f"prune must be in (0, 1], got {prune}")
        self.kappa, self.m_eta, self.share, self.offline, self.rebase = kappa, m_eta, share, offline, rebase
        self.delta, self.prune = delta, prune
        self.schedules: dict[int, Schedule] = {}
        self.ranks: dict[int, list[list[int]]] = {}
        self.rebase_cache: dict[int, tuple[int, dict[int, float]]] = {}
        self.work = RemainingWork()
        self.level = 0.0
        self.base: dict[int, float] = {}
        self.held: dict[int, float] = {}
        self.heap: list[tuple[float, int]] = []
        self.shares = DemandShares()
        self._machines: list[Resources] | None = None

    # --- offline part ------------------------------------------------------------------------------
    def machines(self) -> list[Resources]:
        """The virtual space: the job's expected share of the cluster's nodes."""
        if self._machines is None:
            caps = [n.capacity for n in self.state.nodes]
            self._machines = virtual_machines(caps, self.share)
        return self._machines

    def schedule(self, job: JobState) -> Schedule:
        """The job's preferred schedule, built on first use."""
        sched = self.schedules.get(job.job_id)
        if sched is None:
            stages = [DagStage(s.tasks, s.estimate, s.demand, s.parents) for s in job.stages]
            sched = build_schedule(stages, self.machines(), delta=self.delta, prune=self.prune)
            sched.space = None  # only its priScores are needed online
            self.schedules[job.job_id] = sched
        return sched

    def pri(self, job: JobState, stage: StageState) -> float:
        """priScore of the stage's next task: the best among its tasks not yet placed; ``rebase``: 1 -
        (the job's unplaced tasks ranked before it) / n."""
        if not self.offline:
            return 1.0
        if self.rebase:
            return self.rebased(job, stage)
        scores = self.schedule(job).pri[stage.index]
        return scores[min(stage.placed, len(scores) - 1)]

    def rebased(self, job: JobState, stage: StageState) -> float:
        """``rebase``'s priScore, cached per stage until the job places another task."""
        placed = job.running + job.finished
        cached = self.rebase_cache.get(job.job_id)
        if cached is None or cached[0] != placed:
            cached = self.rebase_cache[job.job_id] = placed, {}
        value = cached[1].get(stage.index)
        if value is None:
            ranks = self.ranks.get(job.job_id)
            if ranks is None:
                n = job.tasks
                ranks = [[round((1.0 - p) * n) for p in ps] for ps in self.schedule(job).pri]
                self.ranks[job.job_id] = ranks
            mine = ranks[stage.index]
            r = mine[min(stage.placed, len(mine) - 1)]
            ahead = sum(
                max(0, bisect_left(rs, r) - s.placed) for s, rs in zip(job.stages, ranks, strict=True)
            )
            value = cached[1][stage.index] = 1.0 - ahead / job.tasks
        return value

    # --- notifications -----------------------------------------------------------------------------
    def on_runnable(self, job: JobState) -> None:
        self.enter(job.job_id)
        if self.offline:
            self.schedule(job)

    def on_placed(self, job: JobState, stage: StageState) -> None:
        """Deficit counters: the placed job's changes by factor (fairShare - 1), every other counted
        job's by factor fairShare."""
        j = job.job_id
        self.enter(j)
        factor = stage.demand.dominant_share(self.state.capacity_total)
        self.level += factor / len(self.base)
        base = self.base[j] = self.base[j] - factor
        if job.runnable:
            self.push(j, base)
        else:  # its last runnable task: it leaves the count, its deficit kept
            del self.base[j]
            self.held[j] = base + self.level

    def enter(self, j: int) -> None:
        """Count job ``j`` among the groups (its deficit resumes where it was held, else 0)."""
        if j not in self.base:
            self.base[j] = base = self.held.pop(j, 0.0) - self.level
            self.push(j, base)

    def push(self, j: int, base: float) -> None:
        heapq.heappush(self.heap, (-base, j))
        if len(self.heap) > 4 * len(self.base) + 64:  # drop the stale entries
            self.heap = [(-b, g) for g, b in self.base.items()]
            heapq.heapify(self.heap)

    def deficit(self, j: int) -> float:
        base = self.base.get(j)
        return base + self.level if base is not None else self.held.get(j, 0.0)

    def on_finished(self, job: JobState) -> None:
        if job.finished == job.tasks:  # done: forget it
            self.schedules.pop(job.job_id, None)
            self.ranks.pop(job.job_id, None)
            self.rebase_cache.pop(job.job_id, None)
            self.work.forget(job.job_id)
            self.base.pop(job.job_id, None)
            self.held.pop(job.job_id, None)
            self.shares.forget(job)

    # --- online part -------------------------------------------------------------------------------
    def srpt(self, job: JobState) -> float:
        """Unplaced estimated task-seconds weighted by the tasks' summed normalized demands."""
        return self.work(self.state, job)

    def unfair(self) -> int | None:
        """The counted job with the largest deficit (ties: the earlier job), if it reaches kappa C."""
        heap, base = self.heap, self.base
        while heap and base.get(heap[0][1]) != -heap[0][0]:
            heapq.heappop(heap)  # stale
        if not heap or -heap[0][0] + self.level < self.kappa * CLUSTER:
            return None
        return heap[0][1]

    def pick(self, node: NodeState, jobs: Collection[JobState]) -> tuple[JobState, StageState] | None:
        r0, r1, r2, r3 = room(node.free)
        fitting = [
            (job, stage)
            for job in jobs
            for stage in job.runnable
            if (d := stage.demand)[0] <= r0 and d[1] <= r1 and d[2] <= r2 and d[3] <= r3
        ]
        if not fitting:
            return None
        g = self.unfair()
        if g is not None:
            theirs = [(job, stage) for job, stage in fitting if job.job_id == g]
            fitting = theirs or fitting
        if len(fitting) == 1:
            return fitting[0]
        return self.best(node, fitting)

    def best(
        self, node: NodeState, fitting: list[tuple[JobState, StageState]]
    ) -> tuple[JobState, StageState]:
        """The max perfScore; ties to the earlier job, then BFS order."""
        capacity = node.capacity
        r = node.free.over(capacity)
        packed = [self.shares(stage, capacity).dot(r) * self.pri(job, stage) for job, stage in fitting]
        work = {job.job_id: self.srpt(job) for job, _ in fitting} if self.m_eta > 0 else {}
        mean_p = math.fsum(work.values()) / len(work) if work else 0.0
        eta = self.m_eta * (math.fsum(packed) / len(packed)) / mean_p if mean_p > 0 else 0.0
        scored = [
            (a - eta * work[job.job_id] if eta else a, job, stage)
            for a, (job, stage) in zip(packed, fitting, strict=True)
        ]
        top = max(s for s, _, _ in scored)
        _, job, stage = min(((j.job_id, self.stage_key(s)), j, s) for score, j, s in scored if score == top)
        return job, stage


__all__ = ["CLUSTER", "Graphene"]
