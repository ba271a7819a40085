"""The central scheduler core of the multi-resource policies, and the hooks a policy fills in.

:class:`PackingCore` owns a :class:`~aviary.central.state.CentralState` and asks its
:class:`PlacementPolicy` only one question, :meth:`PlacementPolicy.pick`: which runnable stage of which
job should get the next task on this node, if any fits? (Kubernetes' Filter/Score plug-ins and
Sparrow's ``TaskPlacer`` keep policies small the same way.) Policies that plan on a periodic cycle
(TetriSched) set :attr:`PlacementPolicy.cycle` and implement :meth:`PlacementPolicy.plan` instead.

When to match (work conservation at the cost of one event's changes, not of the whole cluster):
after each ``TaskFinished`` the node that reported it is filled from every job with runnable tasks;
then, if jobs gained runnable tasks (a submission, or a stage released by its parents' barrier), every
node is offered to those jobs, in node order, until they have no runnable task left. Nothing else can
have changed: before the event no runnable task fitted anywhere the policy would place it, and nodes
only lost room since.

Speed without changing a decision: a node whose free room is below a :class:`Floor` (per resource, the
smallest demand of the candidates' runnable stages) fits none of them, so the policy is not asked; the
policy hears of every change of a job (:meth:`PlacementPolicy.on_runnable`, ``on_placed``,
``on_finished``) and may keep its order or scores up to date instead of recomputing them per pick.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, insort
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, SetTimer
from ..common.messages import PeerDown, PeerUp, SubmitJob, TaskFinished
from ..common.resources import EPS, Resources
from .state import CentralState, Held, JobState, NodeSpec, NodeState, StageState

CYCLE = "cycle"

Placement = tuple[JobState, StageState, NodeState]


def bfs_key(stage: StageState) -> tuple[int, int]:
    """Tez's default: the lowest DAG level first, ties by stage number (spec §5)."""
    return stage.depth, stage.index


def cp_key(stage: StageState) -> tuple[float, int]:
    """The longest critical path to the job's end first, ties by stage number (spec §5)."""
    return -stage.cp, stage.index


INTRA_KEYS: dict[str, Callable[[StageState], Any]] = {"bfs": bfs_key, "cp": cp_key}


def room(free: Resources) -> tuple[float, float, float, float]:
    """``free`` plus the slack of :meth:`Resources.fits_in`: ``d <= room`` on every resource is a fit."""
    return free[0] + EPS, free[1] + EPS, free[2] + EPS, free[3] + EPS


def first_fitting(
    job: JobState, free: tuple[float, float, float, float], stage_key: Callable[[StageState], Any]
) -> StageState | None:
    """The first of ``job``'s runnable stages in the intra-job order whose demand fits ``free`` (a
    :func:`room`), or None."""
    r0, r1, r2, r3 = free
    first = None
    for stage in job.runnable:
        d = stage.demand
        if (
            d[0] <= r0
            and d[1] <= r1
            and d[2] <= r2
            and d[3] <= r3
            and (first is None or stage_key(stage) < stage_key(first))
        ):
            first = stage
    return first


class Floor:
    """Per resource, a lower bound on the demands of the runnable stages of ``jobs`` (a live mapping):
    a node below it on some resource fits none of them. New stages are folded in (:meth:`add`); a stage
    leaving only loosens it (:meth:`loosen`), and a loose floor is recomputed when a node passes it."""

    def __init__(self, jobs: Mapping[int, JobState]) -> None:
        self.jobs = jobs
        self.low = self.exact()
        self.loose = False

    def exact(self) -> tuple[float, ...]:
        demands = [stage.demand for job in self.jobs.values() for stage in job.runnable]
        return tuple(map(min, zip(*demands, strict=True))) if demands else (float("inf"),) * 4

    def add(self, stages: Iterable[StageState]) -> None:
        demands = [stage.demand for stage in stages]
        if demands:
            self.low = tuple(map(min, zip(self.low, *demands, strict=True)))

    def loosen(self) -> None:
        self.loose = True

    def excludes(self, free: Resources) -> bool:
        """No runnable stage of ``jobs`` fits in ``free`` (a necessary condition for a fit fails)."""
        l0, l1, l2, l3 = self.low
        if l0 > free[0] + EPS or l1 > free[1] + EPS or l2 > free[2] + EPS or l3 > free[3] + EPS:
            return True
        if not self.loose:
            return False
        self.low, self.loose = self.exact(), False
        return self.excludes(free)

    def passing(self, nodes: Iterable[NodeState]) -> Iterator[NodeState]:
        """The nodes not excluded by the floor as it is now (lazily: a floor only rises while placing)."""
        l0, l1, l2, l3 = self.low
        for node in nodes:
            f = node.free
            if l0 <= f[0] + EPS and l1 <= f[1] + EPS and l2 <= f[2] + EPS and l3 <= f[3] + EPS:
                yield node


class RemainingWork:
    """Per job, its unplaced estimated task-seconds weighted by each task's summed demand normalized by the
    mean machine (Tetris' p(j), Graphene's srpt_j, Carbyne's SRTF order), cached until the job places
    another task; each stage's weight is computed once per job."""

    def __init__(self) -> None:
        self.weights: dict[int, list[float]] = {}
        self.work: dict[int, tuple[int, float]] = {}

    def __call__(self, state: CentralState, job: JobState) -> float:
        placed = job.running + job.finished
        cached = self.work.get(job.job_id)
        if cached is not None and cached[0] == placed:
            return cached[1]
        weights = self.weights.get(job.job_id)
        if weights is None:
            mean_machine = state.capacity_total.times(1.0 / len(state.nodes))
            weights = self.weights[job.job_id] = [s.demand.over(mean_machine).total() for s in job.stages]
        work = math.fsum(s.unplaced * s.estimate * w for s, w in zip(job.stages, weights, strict=True))
        self.work[job.job_id] = placed, work
        return work

    def forget(self, job_id: int) -> None:
        self.weights.pop(job_id, None)
        self.work.pop(job_id, None)


class DemandShares:
    """Each stage's demand as shares of a node capacity (the alignment scores' input), per distinct
    capacity, computed once per stage."""

    def __init__(self) -> None:
        self.by_capacity: dict[Resources, dict[StageState, Resources]] = {}

    def __call__(self, stage: StageState, capacity: Resources) -> Resources:
        shares = self.by_capacity.setdefault(capacity, {})
        share = shares.get(stage)
        if share is None:
            share = shares[stage] = stage.demand.over(capacity)
        return share

    def forget(self, job: JobState) -> None:
        for shares in self.by_capacity.values():
            for stage in job.stages:
                shares.pop(stage, None)


class PlacementPolicy:
    """A central policy: a few named hooks over the shared state (bound by :meth:`bind`)."""

    cycle: float | None = None
    """Seconds between :meth:`plan` calls; ``None``: match on events with :meth:`pick`."""
    now = 0.0
    """The time of the event being handled (set by :class:`PackingCore` before it asks)."""

    def __init__(self, intra: str = "bfs") -> None:
        if intra not in INTRA_KEYS:
            raise ValueError(f"intra-job order must be one of {', '.join(INTRA_KEYS)}, got {intra!r}")
        self.intra = intra
        self.stage_key = INTRA_KEYS[intra]
        self.state: CentralState
        self.rng = random.Random(0)

    def bind(self, state: CentralState, rng: random.Random) -> None:
        self.state = state
        self.rng = rng

    def pick(self, node: NodeState, jobs: Collection[JobState]) -> tuple[JobState, StageState] | None:
        """The (job, stage) of ``jobs`` (jobs with runnable tasks) whose next task goes on ``node`` now,
        or ``None``."""
        raise NotImplementedError

    def plan(self, now: float) -> list[Placement]:
        """Periodic policies: the placements to make now."""
        return []

    def cycle_log(self) -> list[Any]:
        """Periodic policies: what each cycle did (:meth:`aviary.common.core.Core.cycle_log`)."""
        return []

    def gauges(self) -> dict[str, float]:
        """The policy's own signals now, beside the core's pending work (:meth:`PackingCore.gauges`)."""
        return {}

    # Notifications from PackingCore (after the change), for policies that keep derived state.
    def on_runnable(self, job: JobState) -> None:
        """``job`` gained runnable stages (a submission, or a stage released by a barrier)."""

    def on_placed(self, job: JobState, stage: StageState) -> None:
        """A task of ``stage`` was placed (``job.usage``, ``job.running`` and ``stage.placed`` changed)."""

    def on_finished(self, job: JobState) -> None:
        """A task of ``job`` finished (its usage, running and finished counts changed)."""

    def on_nodes_changed(self) -> None:
        """A node died or rejoined (``NodeState.dead``); its tasks are runnable again."""


class OrderedPolicy(PlacementPolicy):
    """Jobs in the order of :meth:`job_key` (smallest first), the job's first runnable stage in the
    intra-job order whose demand fits the node (first fit): the baselines of spec §5.

    ``queue`` holds ``(job_key(job), job)`` of every job with runnable tasks, sorted; a job's key is
    recomputed only when the job changes (the notifications), so a pick walks the queue, no sort."""

    def bind(self, state: CentralState, rng: random.Random) -> None:
        super().bind(state, rng)
        self.queue: list[tuple[Any, JobState]] = []
        self.keys: dict[int, Any] = {}

    def job_key(self, job: JobState) -> Any:
        """A total order: unique per job (ends with the job id)."""
        raise NotImplementedError

    def requeue(self, job: JobState) -> None:
        """Move ``job`` to its current key's place in ``queue`` (or out of it, without runnable tasks)."""
        old = self.keys.pop(job.job_id, None)
        if old is not None:
            del self.queue[bisect_left(self.queue, (old,))]
        if job.runnable:
            key = self.keys[job.job_id] = self.job_key(job)
            insort(self.queue, (key, job))

    def on_runnable(self, job: JobState) -> None:
        self.requeue(job)

    def on_placed(self, job: JobState, stage: StageState) -> None:
        self.requeue(job)

    def on_finished(self, job: JobState) -> None:
        if job.job_id in self.keys:
            self.requeue(job)

    def ordered(self, jobs: Collection[JobState]) -> Iterable[tuple[Any, JobState]]:
        """``(key, job)`` of ``jobs`` in key order: the queue when ``jobs`` are all the jobs with runnable
        tasks (they always are a subset), else the few of them sorted."""
        active = self.state.active
        if len(self.queue) != len(active):  # changed behind the notifications (direct calls): rebuild
            self.queue.clear()
            self.keys.clear()
            for job in active.values():
                self.requeue(job)
        if len(jobs) == len(active):
            return self.queue
        keys = self.keys
        return sorted((keys[job.job_id], job) for job in jobs)

    def pick(self, node: NodeState, jobs: Collection[JobState]) -> tuple[JobState, StageState] | None:
        free = room(node.free)
        for _, job in self.ordered(jobs):
            first = first_fitting(job, free, self.stage_key)
            if first is not None:
                return job, first
        return None


class PackingCore(Core):
    """The central scheduler of a multi-resource policy (module docstring)."""

    role = "central"

    def __init__(
        self,
        name: str,
        nodes: list[NodeSpec],
        policy: PlacementPolicy,
        *,
        seed: int = 0,
        account: str = "all",
        overbook: float = 1.0,
    ) -> None:
        super().__init__(name)
        self.state = CentralState(nodes, self, account=account, overbook=overbook)
        self.policy = policy
        policy.bind(self.state, random.Random(seed))
        self.floor = Floor(self.state.active)
        self.offloop = frozenset({CYCLE}) if policy.cycle is not None else frozenset()

    def task_log(self) -> list[Any]:
        return self.state.log  # tuples; the demand a Resources (msgpack sends both as arrays)

    def cycle_log(self) -> list[Any]:
        return self.policy.cycle_log()

    def gauges(self) -> dict[str, float]:
        """Jobs with runnable tasks not placed, their runnable stages and tasks, tasks running, and the
        policy's own (:meth:`Policy.gauges`)."""
        runnable = [s for job in self.state.active.values() for s in job.runnable]
        return {
            "jobs_pending": float(sum(1 for job in self.state.active.values() if job.runnable)),
            "stages_pending": float(len(runnable)),
            "tasks_pending": float(sum(s.unplaced for s in runnable)),
            "tasks_running": float(len(self.state.placed)),
            **self.policy.gauges(),
        }

    def start(self, now: float) -> list[Effect]:
        return [SetTimer(CYCLE, self.policy.cycle)] if self.policy.cycle is not None else []

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        self.policy.now = now
        kind = type(msg)
        if kind is TaskFinished:
            placed = self.state.placed.get((msg.job_id, msg.task_index))
            node = None if placed is None else placed[0]  # the room frees where the task ran
            job = self.state.jobs.get(msg.job_id)
            done = self.state.finish(now, sender, msg)
            if job is not None:
                self.policy.on_finished(job)
            return self._match(now, [] if node is None else [node]) + done
        if kind is SubmitJob:
            refused = self.state.submit(now, sender, msg)
            return refused if refused is not None else self._match(now, [])
        if kind is PeerDown:  # its tasks are runnable again, placed by the policy like new ones
            self.state.node_down(now, msg.name)
            self.policy.on_nodes_changed()
            return self._match(now, [])
        if kind is PeerUp:
            node = self.state.node_up(msg.name)
            self.policy.on_nodes_changed()
            return self._match(now, [] if node is None else [node])
        return self.unexpected(msg)

    # --- a restart's recovery (:mod:`aviary.central.recovery`) ------------------------------------------
    def restore_job(
        self, now: float, sender: str, msg: SubmitJob, age: float, held: dict[int, Held]
    ) -> list[Effect]:
        """Admit a job of the dead incarnation with its tasks as the nodes hold them."""
        self.policy.now = now
        job, booked, out = self.state.restore(now, sender, msg, age, held)
        for _, _, stage in booked:
            assert job is not None  # a job with booked tasks is admitted
            self.policy.on_placed(job, stage)
        return out

    def restored(self, now: float) -> list[Effect]:
        """Every job rebuilt: schedule (a periodic policy at its next cycle)."""
        self.policy.now = now
        return self._match(now, self.state.nodes)

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        if key != CYCLE or self.policy.cycle is None:
            return []
        self.policy.now = now
        self.state.fresh.clear()
        placements = self.policy.plan(now)
        effects: list[Effect] = self.state.take_outbox()  # preemptions first (CentralState.preempt)
        gangs: dict[int, list[NodeState]] = {}  # a gang's tasks start in one plan: they share a slowdown
        for job, _, node in placements:
            if job.gang:
                gangs.setdefault(job.job_id, []).append(node)
        for job, stage, node in placements:
            effects.append(self.state.place(now, job, stage, node, gangs.get(job.job_id)))
            self.policy.on_placed(job, stage)
        effects.append(SetTimer(CYCLE, self.policy.cycle))
        return effects

    def _match(self, now: float, dirty: Iterable[NodeState]) -> list[Effect]:
        state = self.state
        if self.policy.cycle is not None:
            return []
        fresh = dict(state.fresh)  # placing never releases a stage, so one pass empties it
        state.fresh.clear()
        for job in fresh.values():
            self.policy.on_runnable(job)
            self.floor.add(job.runnable)
        effects: list[Effect] = []
        for node in dirty:
            self._fill(now, node, state.active, self.floor, effects)
        fresh = {j: job for j, job in fresh.items() if job.runnable}
        if fresh:
            floor = Floor(fresh)
            for node in floor.passing(state.nodes):
                self._fill(now, node, fresh, floor, effects)
                if not fresh:
                    break
        return effects

    def _fill(
        self, now: float, node: NodeState, jobs: dict[int, JobState], floor: Floor, out: list[Effect]
    ) -> None:
        """Place tasks of ``jobs`` (those with runnable tasks; emptied as they run out) on ``node`` while
        the policy picks one."""
        policy = self.policy
        while jobs and not floor.excludes(node.free):
            chosen = policy.pick(node, jobs.values())
            if chosen is None:
                return
            job, stage = chosen
            out.append(self.state.place(now, job, stage, node))
            policy.on_placed(job, stage)
            if stage.placed == stage.tasks:
                self.floor.loosen()
                floor.loosen()
                if not job.runnable:
                    jobs.pop(job.job_id, None)
