"""The central bookkeeping every multi-resource central policy shares (DESIGN §9, spec §0.5 step 1).

One :class:`CentralState` holds the jobs and their stages, which tasks are runnable by DAG readiness,
and each node's free resource vector as the central scheduler knows it (reserved on placement, released
on ``TaskFinished``); it makes the ``PlaceTask`` and ``JobDone`` messages. A policy only chooses: which
runnable stage of which job goes to which node (:mod:`aviary.central.packing`). Dask keeps its
transitions in one ``SchedulerState`` apart from the comms in the same way.

A stage's tasks become runnable when every task of every parent stage finished (a barrier, as the
TPC-H and Alibaba DAGs are stage-level).

What a policy counts (``account``, ``overbook``): a stage's ``demand`` is what the central bookkeeping
reserves and the policy sees; ``full`` is the task's real demand vector, sent to the node (whose
contention model runs it) and logged. YARN's schedulers account cores and memory only (the papers'
baselines): with ``account=("cores", "mem")`` the other dimensions of ``demand`` are 0, so disk and
network are over-allocated on the nodes. ``overbook`` > 1 lets the bookkeeping fill a node's disk and
network up to that factor of their capacity (Graphene's overbooking of fungible resources): the fit
check sees the overbooked room, shares and scores the real capacity.

Stage properties the baselines order by are computed once at
admission: ``depth`` (BFS level: 0 for a root, else 1 + the deepest parent) and ``cp`` (critical path:
the stage's estimate plus the longest ``cp`` among its children, i.e. the estimated time from the
stage's start to the job's end if nothing waits, spec §5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Send
from ..common.messages import JobDone, KillTask, PlaceTask, SubmitJob, TaskFinished
from ..common.model import JobSpec, Stage, flat_ok, placement_slowdown, stage_offsets
from ..common.resources import ONE_CORE, ZERO, Resources, vector_sum


@dataclass(slots=True, eq=False)
class StageState:
    job_id: int
    index: int
    tasks: int
    estimate: float
    demand: Resources  # what the bookkeeping reserves (the accounted dimensions of ``full``)
    parents: tuple[int, ...]
    offset: int  # global index of the stage's first task
    full: Resources = ZERO  # the tasks' real demand (what the node runs them with)
    children: list[int] = field(default_factory=list)
    depth: int = 0
    cp: float = 0.0
    waiting: int = 0  # parent stages not finished
    placed: int = 0
    finished: int = 0
    retry: list[int] = field(default_factory=list)  # tasks to place again (their node died)

    @property
    def unplaced(self) -> int:
        return self.tasks - self.placed


@dataclass(slots=True, eq=False)
class JobState:
    job_id: int
    frontend: str
    arrival: float
    durations: list[float]
    estimate: float
    stages: list[StageState]
    deadline: float | None = None
    slo: str | None = None
    gang: bool = False
    preference: str | None = None
    slowdown: float = 1.0
    first_start: float | None = None
    finished: int = 0  # tasks
    running: int = 0  # tasks placed and not finished
    usage: Resources = ZERO  # summed demand of its running tasks
    runnable: list[StageState] = field(default_factory=list)  # ready stages with unplaced tasks

    @property
    def tasks(self) -> int:
        return len(self.durations)

    def remaining_cp(self) -> float:
        """The longest critical path among stages with unfinished tasks (SJF's key)."""
        return max((s.cp for s in self.stages if s.finished < s.tasks), default=0.0)


@dataclass(slots=True, eq=False)
class NodeState:
    name: str
    index: int
    capacity: Resources
    attributes: dict[str, Any]
    free: Resources
    running: int = 0  # tasks placed here and not finished
    dead: bool = False  # declared dead (PeerDown): no room until it rejoins


NodeSpec = tuple[str, Resources, dict[str, Any]]
"""A node as the central layer sees it: name, capacity, attributes."""

Held = tuple[str, str, float]
"""A task of a job being recovered as a node reports it: ``queued``, ``running`` or ``finished``, the
node, seconds since it started (:meth:`CentralState.restore`)."""


ALL_RESOURCES = (True, True, True, True)
ACCOUNTS = {"all": ALL_RESOURCES, "cores,mem": (True, True, False, False)}
"""What a central scheduler may count of a demand (``--account``): all four dimensions, or YARN's two."""


def slot_nodes(node_slots: dict[str, int]) -> list[NodeSpec]:
    """Slot-based nodes (the probe-era central cores): ``slots`` one-core slots each, no attributes."""
    return [(n, Resources(cores=float(s)), {}) for n, s in node_slots.items()]


class BadJob(ValueError):
    """A SubmitJob whose stages do not describe its tasks as a DAG."""


def job_state(now: float, sender: str, msg: SubmitJob) -> JobState:
    """The bookkeeping of a submitted job; raises :class:`BadJob` when its stages do not describe its
    tasks as a DAG (:meth:`JobSpec.check`, the workloads' own check)."""
    flat = not msg.stages and flat_ok(len(msg.durations), msg.estimate, msg.slo or None, msg.slowdown)
    job = JobState(
        msg.job_id,
        sender,
        now,
        msg.durations,
        msg.estimate,
        _flat_stage(msg) if flat else _dag_stages(msg),
        deadline=msg.deadline,
        slo=msg.slo or None,
        gang=msg.gang,
        preference=msg.preference or None,
        slowdown=msg.slowdown,
    )
    job.runnable = [s for s in job.stages if s.waiting == 0]
    return job


def _flat_stage(msg: SubmitJob) -> list[StageState]:
    """A flat job's one stage of one-core tasks, as :func:`_dag_stages` makes it from :meth:`JobSpec.dag`
    (without the general path's objects: a central scheduler admits a one-task job in half the time)."""
    return [
        StageState(
            msg.job_id, 0, len(msg.durations), msg.estimate, ONE_CORE, (), 0, ONE_CORE, cp=msg.estimate
        )
    ]


def _dag_stages(msg: SubmitJob) -> list[StageState]:
    """The stages of any job, with their parents, children, depth and critical path; raises
    :class:`BadJob` when they do not describe its tasks as a DAG."""
    spec = JobSpec(
        msg.job_id, 0.0, msg.durations, msg.estimate, False, slo=msg.slo or None, slowdown=msg.slowdown
    )
    try:
        spec.stages = [Stage(int(t), float(e), Resources.of(d), tuple(p)) for t, e, d, p in msg.stages]
        spec.check()
    except (TypeError, ValueError) as exc:
        raise BadJob(str(exc)) from None
    stages = [
        StageState(msg.job_id, i, s.tasks, s.estimate, s.demand, s.parents, offset, s.demand)
        for i, (s, offset) in enumerate(zip(spec.dag(), stage_offsets(spec.dag()), strict=True))
    ]
    for s in stages:
        s.waiting = len(set(s.parents))
        for p in set(s.parents):
            stages[p].children.append(s.index)
        s.depth = max((stages[p].depth + 1 for p in s.parents), default=0)
    for s in reversed(stages):
        s.cp = s.estimate + max((stages[c].cp for c in s.children), default=0.0)
    return stages


class CentralState:
    """Jobs, runnable stages and per-node free vectors; see the module docstring.

    ``active`` holds the jobs with runnable tasks, in arrival order. ``fresh`` collects the jobs that
    gained runnable tasks since the caller last cleared it (new jobs, stages released by a barrier).
    With ``record``, ``log`` keeps ``(job_id, task_index, start, end, demand)`` of every finished task
    on this scheduler's clock (the input of the utilization and fairness metrics).
    """

    def __init__(
        self,
        nodes: list[NodeSpec],
        core: Core,
        *,
        record: bool = True,
        account: str = "all",
        overbook: float = 1.0,
    ) -> None:
        if not nodes:
            raise ValueError(f"central scheduler {core.name}: no nodes")
        if account not in ACCOUNTS:
            raise ValueError(f"account must be one of {', '.join(ACCOUNTS)}, got {account!r}")
        if not overbook >= 1.0:
            raise ValueError(f"overbook must be >= 1, got {overbook!r}")
        self.mask = ACCOUNTS[account]
        self.overbook = overbook
        # What a node may be filled to: its capacity, disk and network times ``overbook``. Shares, scores
        # and the offline schedules keep the real capacity; only the fit check sees the overbooked room.
        self.limits = [Resources(c[0], c[1], c[2] * overbook, c[3] * overbook) for _, c, _ in nodes]
        self.nodes = [
            NodeState(n, i, cap, dict(attrs), self.limits[i]) for i, (n, cap, attrs) in enumerate(nodes)
        ]
        self.by_name = {n.name: n for n in self.nodes}
        self.capacity_total = vector_sum(n.capacity for n in self.nodes)
        self.capacities = list(dict.fromkeys(self.limits))  # the distinct room a task must fit
        self.core = core  # for its counters and its refuse_submit
        self.jobs: dict[int, JobState] = {}
        self.active: dict[int, JobState] = {}
        self.fresh: dict[int, JobState] = {}
        self.placed: dict[tuple[int, int], tuple[NodeState, StageState, float]] = {}
        self.record = record
        self.log: list[tuple[int, int, float, float, Resources, float | None]] = []
        self.work: dict[tuple[int, int], float] = {}  # the duration sent with each placed task
        # (task, node) -> answers due from that node to KillTasks of that task (a task may be preempted,
        # placed again and preempted again before the first answer arrives)
        self.killed: dict[tuple[tuple[int, int], str], int] = {}
        self.outbox: list[Effect] = []  # KillTask sends made while planning, sent before the placements

    # --- inputs ------------------------------------------------------------------------------------
    def submit(
        self, now: float, sender: str, msg: SubmitJob, *, counter: str = "jobs"
    ) -> list[Effect] | None:
        """Admit a job (``None``; ``counter`` counts it), or the answer to a submission that leaves
        nothing to schedule."""
        counters = self.core.counters
        if (refused := self.core.refuse_submit(sender, msg, self.jobs)) is not None:
            return refused
        try:
            job = job_state(now, sender, msg)
        except BadJob:
            counters["bad_job"] += 1
            return []
        if self.mask != ALL_RESOURCES:
            m = self.mask
            for s in job.stages:
                d = s.full
                s.demand = Resources(*(x if keep else 0.0 for x, keep in zip(d, m, strict=True)))
        if any(not any(s.demand.fits_in(c) for c in self.capacities) for s in job.stages):
            # It could never run: count it (summary counters) and leave it unfinished at the frontend.
            counters["job_too_big"] += 1
            return []
        self.jobs[job.job_id] = job
        counters[counter] += 1
        if job.runnable:
            self.active[job.job_id] = job
            self.fresh[job.job_id] = job
        return None

    def finish(self, now: float, node_name: str, msg: TaskFinished) -> list[Effect]:
        """A task ended: release its resources, advance its stage and job (``JobDone`` at the end)."""
        key = (msg.job_id, msg.task_index)
        due = self.killed.get((key, node_name), 0)
        if due:  # the answer to a KillTask: the task was requeued then (a node answers in order)
            if due == 1:
                del self.killed[key, node_name]
            else:
                self.killed[key, node_name] = due - 1
            self.core.counters["preempted_results_ignored"] += 1
            return []
        entry = self.placed.pop(key, None)
        if entry is None:
            self.core.counters["unknown_task_finished"] += 1
            return []
        node, stage, start = entry
        if node.name != node_name:  # not the node running it: a late or forged result
            self.placed[key] = entry
            self.core.counters["late_results_ignored"] += 1
            return []
        job = self.jobs[msg.job_id]
        node.free = node.free.plus(stage.demand)
        node.running -= 1
        job.usage = job.usage.minus(stage.demand)
        job.running -= 1
        if self.record:
            self.log.append((job.job_id, msg.task_index, start, now, stage.full, self.work.pop(key, None)))
        stage.finished += 1
        if stage.finished == stage.tasks:
            released = False
            for c in stage.children:
                child = job.stages[c]
                child.waiting -= 1
                if child.waiting == 0:
                    job.runnable.append(child)
                    released = True
            if released:
                self.active[job.job_id] = job
                self.fresh[job.job_id] = job
        return self.core.task_finished(self.jobs, msg)

    # --- placing -----------------------------------------------------------------------------------
    def assign(
        self, now: float, job: JobState, stage: StageState, node: NodeState, *, started: bool = True
    ) -> int:
        """Book ``stage``'s next task on ``node`` (its demand reserved there) and return the task's
        index. ``started``: the job's first start is now (else the policy calls :meth:`started` when
        the node says the task started)."""
        index = stage.retry.pop(0) if stage.retry else stage.offset + stage.placed
        stage.placed += 1
        if stage.placed == stage.tasks:
            job.runnable.remove(stage)
            if not job.runnable:
                self.active.pop(job.job_id, None)
        node.free = node.free.minus(stage.demand)
        node.running += 1
        job.usage = job.usage.plus(stage.demand)
        job.running += 1
        if started:
            self.started(now, job)
        self.placed[job.job_id, index] = (node, stage, now)
        return index

    def started(self, now: float, job: JobState) -> None:
        if job.first_start is None:
            job.first_start = now

    def duration(
        self, job: JobState, index: int, node: NodeState, gang: list[NodeState] | None = None
    ) -> float:
        """The task's real duration on ``node``: longer when the job's placement preference is unmet by
        the node, or by the nodes of its whole ``gang`` (an MPI job spread over racks runs slower)."""
        duration = job.durations[index]
        if job.preference is not None:
            nodes = gang if gang else [node]
            duration *= placement_slowdown(job.preference, job.slowdown, [n.attributes for n in nodes])
        return duration

    def place(
        self,
        now: float,
        job: JobState,
        stage: StageState,
        node: NodeState,
        gang: list[NodeState] | None = None,
    ) -> Send:
        """:meth:`assign` the stage's next task to ``node`` and hand it over (``PlaceTask``); ``gang``:
        the nodes of all the tasks the job starts together."""
        index = self.assign(now, job, stage, node)
        self.core.counters["tasks_placed"] += 1
        duration = self.duration(job, index, node, gang)
        if self.record:
            self.work[job.job_id, index] = duration
        return Send(node.name, PlaceTask(job.job_id, index, duration, stage.estimate, list(stage.full)))

    # --- failures (issue 14) -------------------------------------------------------------------------
    def node_down(self, now: float, name: str) -> list[tuple[JobState, StageState, int]]:
        """A node died: it has no room until :meth:`node_up`, and the tasks placed on it are runnable
        again (``tasks_rerun``; ``rerun_lost_ms``: milliseconds of run time lost); they are returned,
        in placement order, and their jobs are in ``active`` and ``fresh``. A late ``TaskFinished`` from
        the dead node is ignored (``unknown_task_finished``, or ``late_results_ignored`` once the task
        runs elsewhere)."""
        node = self.by_name.get(name)
        if node is None or node.dead:
            return []
        node.dead = True
        node.free = ZERO
        counters = self.core.counters
        lost = [(key, entry) for key, entry in self.placed.items() if entry[0] is node]
        out = []
        for (job_id, index), (_, stage, start) in lost:
            job = self._requeue(job_id, index, stage)
            counters["tasks_rerun"] += 1
            counters["rerun_lost_ms"] += round((now - start) * 1000)
            out.append((job, stage, index))
        node.running = 0
        for key in [k for k in self.killed if k[1] == name]:  # their answers will not come
            del self.killed[key]
        return out

    def _requeue(self, job_id: int, index: int, stage: StageState) -> JobState:
        """Make a placed task runnable again (its job in ``active`` and ``fresh``); the node's room is
        the caller's business."""
        del self.placed[job_id, index]
        self.work.pop((job_id, index), None)
        job = self.jobs[job_id]
        job.usage = job.usage.minus(stage.demand)
        job.running -= 1
        stage.placed -= 1
        stage.retry.append(index)
        if stage not in job.runnable:
            job.runnable.append(stage)
        self.active[job_id] = job
        self.fresh[job_id] = job
        return job

    # --- preemption (issue 24) -----------------------------------------------------------------------
    def preempt(self, now: float, job_id: int, index: int) -> bool:
        """Kill a placed task and requeue it, its work lost (``tasks_preempted``, ``preempted_lost_ms``):
        its room on the node is free at once, the task is runnable again as after :meth:`node_down`, and
        a ``KillTask`` to its node goes to :attr:`outbox` (the core sends it before the placements of the
        same event, so the node frees the room before a task placed into it arrives). The node's one
        answer (``TaskFinished``, ok or not) is ignored (``preempted_results_ignored``): the task is not
        counted twice. False if the task is not placed."""
        entry = self.placed.get((job_id, index))
        if entry is None:
            return False
        node, stage, start = entry
        self._requeue(job_id, index, stage)
        node.free = node.free.plus(stage.demand)
        node.running -= 1
        due = ((job_id, index), node.name)
        self.killed[due] = self.killed.get(due, 0) + 1
        counters = self.core.counters
        counters["tasks_preempted"] += 1
        counters["preempted_lost_ms"] += round((now - start) * 1000)
        self.outbox.append(Send(node.name, KillTask(job_id, index)))
        return True

    def take_outbox(self) -> list[Effect]:
        out, self.outbox = self.outbox, []
        return out

    def node_up(self, name: str) -> NodeState | None:
        """A dead node rejoins, empty; returns it (None if it was not dead)."""
        node = self.by_name.get(name)
        if node is None or not node.dead:
            return None
        node.dead = False
        node.free = self.limits[node.index]
        return node

    # --- a restart's recovery (issue 26) ------------------------------------------------------------
    def restore(
        self, now: float, sender: str, msg: SubmitJob, age: float, held: dict[int, Held]
    ) -> tuple[JobState | None, list[tuple[int, NodeState, StageState]], list[Effect]]:
        """Admit a job a dead incarnation of this scheduler had (submitted ``age`` seconds ago), as the
        nodes report its tasks: ``held`` maps a task index to ``(state, node, seconds since it
        started)``, state ``"queued"``, ``"running"`` or ``"finished"``. Placed tasks hold their room on
        their node again; finished ones count (their stages' barriers released); the others are
        runnable. Returns the job (None when it was refused or is already done), the tasks it booked on
        nodes again (index, node, stage: what each core's own bookkeeping adds) and what the submission
        answered (``JobDone`` when every task had finished). A task on a node not in the cluster, or one
        the job does not have, is ignored (``recovered_unknown_task``). A task no node reports, in a stage
        that a reported task's stage depends on, finished before that one was placed (on a node that died
        since): it counts as finished (``recovered_tasks_inferred_finished``), not run again."""
        refused = self.submit(now - age, sender, msg, counter="jobs_recovered")
        job = self.jobs.get(msg.job_id)
        if refused is not None or job is None:
            return None, [], refused or []
        counters = self.core.counters
        booked: list[tuple[int, NodeState, StageState]] = []
        started = []
        placed: dict[int, int] = {}  # stage -> its tasks placed or finished
        # A stage with a task on some node was released: its ancestors had all finished, those on a node
        # that died since included (no node reports them: they are not run again).
        done: set[int] = set()
        for stage in reversed(job.stages):  # children before their parents
            if stage.index in done or any(
                held.get(i) for i in range(stage.offset, stage.offset + stage.tasks)
            ):
                done.update(stage.parents)
        for stage in job.stages:
            for index in range(stage.offset, stage.offset + stage.tasks):
                entry = held.get(index)
                node = None if entry is None else self.by_name.get(entry[1])
                if entry is None or node is None or node.dead:
                    counters["recovered_unknown_task"] += entry is not None
                    if stage.index in done:
                        placed[stage.index] = placed.get(stage.index, 0) + 1
                        stage.finished += 1
                        job.finished += 1
                        counters["recovered_tasks_inferred_finished"] += 1
                    else:
                        stage.retry.append(index)
                    continue
                status, _, ago = entry
                placed[stage.index] = placed.get(stage.index, 0) + 1
                if status != "queued":
                    started.append(now - ago)
                if status == "finished":
                    stage.finished += 1
                    job.finished += 1
                    counters["recovered_tasks_finished"] += 1
                    continue
                node.free = node.free.minus(stage.demand)
                node.running += 1
                job.usage = job.usage.plus(stage.demand)
                job.running += 1
                self.placed[job.job_id, index] = (node, stage, now - ago)
                booked.append((index, node, stage))
                counters["recovered_tasks_placed"] += 1
        if started:
            job.first_start = min(started)
        for stage in job.stages:
            stage.placed = placed.get(stage.index, 0)
            stage.waiting = sum(job.stages[p].finished < job.stages[p].tasks for p in set(stage.parents))
        job.runnable = [s for s in job.stages if s.waiting == 0 and s.placed < s.tasks]
        self.active.pop(job.job_id, None)
        self.fresh.pop(job.job_id, None)
        if job.runnable:
            self.active[job.job_id] = job
            self.fresh[job.job_id] = job
        if job.finished == job.tasks:  # every task ended while the scheduler was away
            del self.jobs[job.job_id]
            first = job.arrival if job.first_start is None else job.first_start
            return None, [], [Send(job.frontend, JobDone(job.job_id, first - job.arrival))]
        return job, booked, []

    def dominant_share(self, job: JobState) -> float:
        return job.usage.dominant_share(self.capacity_total)


__all__ = [
    "BadJob",
    "CentralState",
    "Held",
    "JobState",
    "NodeSpec",
    "NodeState",
    "StageState",
    "job_state",
    "slot_nodes",
]
