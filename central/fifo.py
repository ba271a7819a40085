"""Central FIFO: the centralized baseline (no preemption, no estimates).

One central queue of tasks in arrival order; a task is placed (``PlaceTask``) on a node only when
that node has a free slot, as known from the central scheduler's own bookkeeping of what it placed
and what finished. This is the FIFO baseline of the Kairos evaluation (thesis §4.5). Jobs are booked
in the shared central state (:mod:`aviary.central.state`); a DAG job's stages join the queue's end
when their parents finish. A dead node's tasks (``PeerDown``) go to the front of the queue, in
their jobs' arrival order (the shared state's ``node_down``).

``queue`` (the policy's ``fifo_queue``, default 0: the thesis' baseline) lets the scheduler place that
many tasks per node beyond its slots; they wait in the node's own FIFO queue and start there without a
round trip when a slot frees. Kairos' dispatcher does the same with its Q (thesis §4.3.3), and Dask
distributed's default ``worker-saturation`` of 1.1 keeps one such task per one-thread worker, so
``aviary bench`` compares the two runtimes with ``queue = 1``.

``am_tasks`` (the ``yarn-fifo`` policy, the Kairos testbed's baseline; default off): every job has an
application master that holds a slot from the moment the job is first served until its last task ends,
as a YARN job's ApplicationMaster container does (thesis §4.4: "each job has an ApplicationManager that
runs on a worker node"; the testbed's containers were all <5120 MB, 1 vCore>, §4.5.2). The master is the
first thing a job gets (YARN launches it before the job asks for any task) and is bookkeeping only: no
task is launched for it, it only keeps the slot from the job's tasks and everyone else's
(``am_slots``, a gauge; ``am_placed``, a counter). A reconstruction: the AM's own CPU use, its start-up
and the YARN FIFO configuration of the testbed (``yarn-site-nopreemption.xml`` sets no resources) are
not known.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Send
from ..common.messages import PeerDown, PeerUp, PlaceTask, SubmitJob, TaskFinished
from .state import CentralState, Held, JobState, slot_nodes


class CentralFifoCore(Core):
    """Jobs and their tasks are booked in the shared :class:`~aviary.central.state.CentralState`;
    this core keeps only the FIFO order of jobs and the free slots."""

    role = "central"

    def __init__(self, name: str, node_slots: dict[str, int], queue: int = 0, am_tasks: bool = False) -> None:
        super().__init__(name)
        if not node_slots:
            raise ValueError(f"central scheduler {name}: no nodes")
        self.state = CentralState(slot_nodes(node_slots), self, record=False)
        # What each node may hold: its slots and the queue beyond them.
        self.node_slots = {n: s + queue for n, s in node_slots.items()}
        # One entry per free place, nodes interleaved so consecutive tasks spread over nodes.
        levels = range(max(self.node_slots.values()))
        self.free: deque[str] = deque(n for level in levels for n, s in self.node_slots.items() if s > level)
        self.queue: deque[JobState] = deque()  # jobs with runnable tasks not yet placed, in order
        self.queued: set[int] = set()
        self.am_tasks = am_tasks
        self.am: dict[int, str] = {}  # job -> the node whose slot its application master holds

    @property
    def jobs(self) -> dict[int, JobState]:
        return self.state.jobs

    def gauges(self) -> dict[str, float]:
        """Jobs waiting for a free slot, and tasks running."""
        gauges = {"jobs_pending": float(len(self.queue)), "tasks_running": float(len(self.state.placed))}
        if self.am_tasks:
            gauges["am_slots"] = float(len(self.am))
        return gauges

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        if type(msg) is TaskFinished:
            return self._finished(now, sender, msg)
        if type(msg) is SubmitJob:
            refused = self.state.submit(now, sender, msg)
            return refused if refused is not None else self._dispatch(now)
        if type(msg) is PeerDown:  # its tasks go back to the queue; its slots are no longer free
            lost = {job.job_id: job for job, _, _ in self.state.node_down(now, msg.name)}
            if lost:
                self.state.fresh.clear()
                first = sorted(lost.values(), key=lambda j: (j.arrival, j.job_id))
                self.queue = deque([*first, *(j for j in self.queue if j.job_id not in lost)])
                self.queued |= lost.keys()
            self.free = deque(n for n in self.free if n != msg.name)
            self.am = {j: n for j, n in self.am.items() if n != msg.name}  # its masters went with it
            return self._dispatch(now)
        if type(msg) is PeerUp:
            if self.state.node_up(msg.name) is not None:
                self.free.extend([msg.name] * self.node_slots[msg.name])
            return self._dispatch(now)
        return self.unexpected(msg)

    def restore_job(
        self, now: float, sender: str, msg: SubmitJob, age: float, held: dict[int, Held]
    ) -> list[Effect]:
        """A job of the dead incarnation (:mod:`aviary.central.recovery`): its placed tasks hold slots."""
        _, booked, out = self.state.restore(now, sender, msg, age, held)
        for _, node, _ in booked:
            self.free.remove(node.name)
        return out

    def restored(self, now: float) -> list[Effect]:
        return self._dispatch(now)

    def _dispatch(self, now: float) -> list[Effect]:
        effects: list[Effect] = []
        state, by_name = self.state, self.state.by_name
        for job in state.fresh.values():  # new jobs and released stages
            if job.job_id not in self.queued:
                self.queued.add(job.job_id)
                self.queue.append(job)
        state.fresh.clear()
        while self.queue and self.free:
            job = self.queue[0]
            if self.am_tasks and job.job_id not in self.am:  # its master first, in a slot of its own
                self.am[job.job_id] = self.free.popleft()
                self.counters["am_placed"] += 1
                continue
            stage = job.runnable[0]
            node = by_name[self.free.popleft()]
            index = state.assign(now, job, stage, node)
            if not job.runnable:
                self.queue.popleft()
                self.queued.discard(job.job_id)
            effects.append(Send(node.name, PlaceTask(job.job_id, index, job.durations[index], job.estimate)))
        return effects

    def _finished(self, now: float, node: str, msg: TaskFinished) -> list[Effect]:
        placed = self.state.placed.get((msg.job_id, msg.task_index))
        if placed is None or placed[0].name != node:
            self.counters["unknown_task_finished" if placed is None else "late_results_ignored"] += 1
            return []
        self.free.append(node)
        done = self.state.finish(now, node, msg)
        if self.am_tasks and msg.job_id not in self.state.jobs:  # its last task: the master ends
            am = self.am.pop(msg.job_id, None)
            if am is not None:
                self.free.append(am)
        return self._dispatch(now) + done
