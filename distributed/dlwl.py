"""DLWL+SRPT, the baseline of thesis §3.6.2: a distributed version of Yaq's LWL placement with node SRPT.

"Queue reordering in DLWL+SRPT is implemented on top of a distributed version of an LWL-like
scheduler, in which the estimated queue waiting times are made available to the distributed schedulers
through periodic updates (heartbeats) ... To reduce the chance of conflicts by several distributed
schedulers picking the same workers with a low advertised load, we add a small random number (smaller
than the heartbeat interval) to each queue waiting time, as done in Apollo. We use the same relative
threshold as in Eagle to prevent starvation, and we also reserve the same small partition of the
datacenter for short jobs."

Every job goes to a distributed scheduler (there is no central one). Each task is placed early
(``QueueTask``) on the node with the least estimated waiting time as this scheduler sees it: the node's
last heartbeat (``QueueReport``, every ``heartbeat`` seconds when its queue changed), decayed by the
time since it was received (never below 0), plus a random offset in [0, heartbeat) drawn at each
heartbeat and fixed until the next one (Apollo's term: it spreads concurrent schedulers, and does not
decay with the report), plus the estimates this scheduler placed there since. Short jobs may use
every node, long jobs (estimate >= cutoff) only the general partition. Nodes reorder their queues by
SRPT over all entries (:class:`~aviary.worker.hybrid.HybridNodeCore` with ``stop_at_long=False``),
with Eagle's bypass threshold (§3.5); the job's remaining work
is its tasks not yet started, which nodes learn from ``QueueTask`` and from ``RemainingUpdate`` (sent
to the nodes still holding tasks of the job when a ``TaskStarted`` lowers the count), by Eagle's rule
(:func:`~aviary.distributed.eagle.update_due` with the same ``update_ratio``, §3.4.3), so that neither
side of the §3.6.2 comparison gets more exact remaining counts than the other.

Failures (issue 14): a dead node (``PeerDown``) gets no more tasks (its estimated wait is infinite until
``PeerUp``), and the tasks placed there, queued or running, are placed again on the live node with the
least estimated wait (``tasks_rerun``); a ``TaskStarted`` or ``TaskFinished`` from a node that no longer
holds the task is counted (``late_results_ignored``) and ignored.

Counters: ``jobs``, ``jobs_long``, and, written even when 0, ``tasks_placed``, ``remaining_updates``,
``reports``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..central.lwl import LwlIndex
from ..common.core import Core
from ..common.effects import Effect, Multicast, Send
from ..common.messages import (
    PeerDown,
    PeerUp,
    QueueReport,
    QueueTask,
    RemainingUpdate,
    SubmitJob,
    TaskFinished,
    TaskStarted,
)
from ..common.model import GOOGLE_CUTOFF
from .eagle import update_due

__all__ = ["DlwlSchedulerCore"]


@dataclass(slots=True)
class _Job:
    frontend: str
    durations: list[float]
    estimate: float
    arrival: float
    not_started: int
    told: int
    finished: int = 0
    first_start: float | None = None
    waiting: Counter[str] = field(default_factory=Counter)  # node -> tasks of the job not started there
    placed: dict[int, tuple[str, float | None]] = field(default_factory=dict)  # task -> (node, started at)


class DlwlSchedulerCore(Core):
    role = "scheduler"

    def __init__(
        self,
        name: str,
        nodes: Sequence[str],
        general: Sequence[str],
        short: Sequence[str] = (),
        *,
        heartbeat: float = 3.0,
        update_ratio: float = 0.0,
        cutoff: float = GOOGLE_CUTOFF,
        seed: int = 0,
    ) -> None:
        super().__init__(name)
        if not nodes:
            raise ValueError(f"scheduler {name}: no nodes")
        self.rng = random.Random(f"{seed}/{name}")
        if not 0 <= update_ratio < 1:
            raise ValueError(f"scheduler {name}: update ratio must be in [0, 1), got {update_ratio}")
        self.heartbeat = heartbeat
        self.update_ratio = update_ratio
        self.cutoff = cutoff
        self.all = list(nodes)
        self.general = list(general) or self.all
        # Two views of the same reports: every node (short jobs) and the general partition (long jobs).
        self.views = {False: self._view(self.all), True: self._view(self.general)}
        self.jobs: dict[int, _Job] = {}
        self.counters.update(dict.fromkeys(("tasks_placed", "remaining_updates", "reports"), 0))

    def _view(self, names: list[str]) -> tuple[list[str], dict[str, int], LwlIndex]:
        rank = list(range(len(names)))
        self.rng.shuffle(rank)
        return names, {n: i for i, n in enumerate(names)}, LwlIndex(len(names), rank)

    def estimate(self, node: str, now: float, *, long: bool = False) -> float:
        """The waiting time of ``node`` as this scheduler sees it now, in the view of short jobs (every
        node) or of long ones (the general partition)."""
        _, index, lwl = self.views[long]
        return lwl.wait(index[node], now)

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is QueueReport:
            return self._report(now, sender, msg.wait)
        if kind is TaskStarted:
            return self._started(now, sender, msg)
        if kind is TaskFinished:
            return self._finished(sender, msg)
        if kind is SubmitJob:
            return self._submit(now, sender, msg)
        if kind is PeerDown:
            return self._node_down(now, msg.name)
        if kind is PeerUp:
            for _, index, lwl in self.views.values():
                if (i := index.get(msg.name)) is not None:
                    lwl.enable(i, now)
            return []
        return self.unexpected(msg)

    def _report(self, now: float, node: str, wait: float) -> list[Effect]:
        """A heartbeat: the node's waiting time decays from now on; the random offset does not (it is
        held as queued work, which only the next report clears)."""
        self.counters["reports"] += 1
        offset = self.rng.uniform(0.0, self.heartbeat) if self.heartbeat > 0 else 0.0
        for _, index, lwl in self.views.values():
            i = index.get(node)
            if i is not None:
                lwl.report(i, max(0.0, wait), now)
                if offset:
                    lwl.add(i, offset, now)
        return []

    def _submit(self, now: float, frontend: str, msg: SubmitJob) -> list[Effect]:
        if (refused := self.refuse_submit(frontend, msg, self.jobs)) is not None:
            return refused
        t = len(msg.durations)
        long = msg.estimate >= self.cutoff
        job = _Job(frontend, msg.durations, msg.estimate, now, not_started=t, told=t)
        self.jobs[msg.job_id] = job
        self.counters["jobs_long" if long else "jobs"] += 1
        self.counters["tasks_placed"] += t
        return [self._place(now, msg.job_id, job, i, long) for i in range(t)]

    def _place(self, now: float, job_id: int, job: _Job, i: int, long: bool) -> Send:
        """Task i of the job on the node with the least estimated wait (in the job's view)."""
        names, _, lwl = self.views[long]
        _, other_index, other = self.views[not long]
        k = lwl.least(now)
        lwl.add(k, job.estimate, now)
        node = names[k]
        j = other_index.get(node)
        if j is not None:
            other.add(j, job.estimate, now)
        job.waiting[node] += 1
        job.placed[i] = (node, None)
        return Send(node, QueueTask(job_id, i, job.durations[i], job.estimate, job.not_started, long))

    def _node_down(self, now: float, node: str) -> list[Effect]:
        for _, index, lwl in self.views.values():
            if (i := index.get(node)) is not None:
                lwl.disable(i, now)
        effects: list[Effect] = []
        for job_id, job in self.jobs.items():
            lost = [(i, started) for i, (n, started) in job.placed.items() if n == node]
            if not lost:
                continue
            job.waiting.pop(node, None)
            self.counters["tasks_rerun"] += len(lost)
            for i, started in lost:
                if started is not None:
                    job.not_started += 1
                    self.counters["rerun_lost_ms"] += round((now - started) * 1000)
                effects.append(self._place(now, job_id, job, i, job.estimate >= self.cutoff))
        return effects

    def _started(self, now: float, node: str, msg: TaskStarted) -> list[Effect]:
        job = self.jobs.get(msg.job_id)
        if job is None:
            self.counters["unknown_task_started"] += 1
            return []
        if job.placed.get(msg.task_index, ("", now)) != (node, None):  # placed elsewhere, or twice
            self.counters["late_results_ignored"] += 1
            return []
        job.placed[msg.task_index] = (node, now)
        if job.first_start is None:
            job.first_start = now
        job.not_started -= 1
        left = job.waiting[node] - 1
        if left > 0:
            job.waiting[node] = left
        else:
            job.waiting.pop(node, None)
        if job.waiting and update_due(job.not_started, job.told, self.update_ratio):
            job.told = job.not_started
            self.counters["remaining_updates"] += len(job.waiting)
            return [Multicast(list(job.waiting), RemainingUpdate(msg.job_id, job.not_started))]
        return []

    def _finished(self, sender: str, msg: TaskFinished) -> list[Effect]:
        job = self.jobs.get(msg.job_id)
        if job is None:
            self.counters["unknown_task_finished"] += 1
            return []
        placed = job.placed.get(msg.task_index)
        if placed is None or placed[0] != sender:  # not placed, or from a node declared dead
            self.counters["late_results_ignored"] += 1
            return []
        del job.placed[msg.task_index]
        return self.task_finished(self.jobs, msg)
