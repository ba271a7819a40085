"""Central FIFO: the centralized baseline (no preemption, no estimates).

One central queue of tasks in arrival order; a task is placed (``PlaceTask``) on a node only when
that node has a free slot, as known from the central scheduler's own bookkeeping of what it placed
and what finished. This is the FIFO baseline of the Kairos evaluation (thesis §4.5) and the skeleton
of the central scheduler that later policies (LWL, Kairos, TetriSched, ...) fill.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Send
from ..common.messages import PlaceTask, SubmitJob, TaskFinished


@dataclass(slots=True)
class CentralJob:
    frontend: str
    durations: list[float]
    estimate: float
    arrival: float
    finished: int = 0
    first_start: float | None = None


class CentralFifoCore(Core):
    role = "central"

    def __init__(self, name: str, node_slots: dict[str, int]) -> None:
        super().__init__(name)
        if not node_slots:
            raise ValueError(f"central scheduler {name}: no nodes")
        # One entry per free slot, nodes interleaved so consecutive tasks spread over nodes.
        most = max(node_slots.values())
        self.free: deque[str] = deque(n for level in range(most) for n, s in node_slots.items() if s > level)
        self.queue: deque[tuple[int, int]] = deque()
        self.jobs: dict[int, CentralJob] = {}

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        if type(msg) is TaskFinished:
            return self._finished(now, sender, msg)
        if type(msg) is SubmitJob:
            if (refused := self.refuse_submit(sender, msg, self.jobs)) is not None:
                return refused
            self.jobs[msg.job_id] = CentralJob(sender, msg.durations, msg.estimate, now)
            self.queue.extend((msg.job_id, i) for i in range(len(msg.durations)))
            self.counters["jobs"] += 1
            return self._dispatch(now)
        return self.unexpected(msg)

    def _dispatch(self, now: float) -> list[Effect]:
        effects: list[Effect] = []
        while self.queue and self.free:
            job_id, index = self.queue.popleft()
            job = self.jobs[job_id]
            if job.first_start is None:
                job.first_start = now
            node = self.free.popleft()
            effects.append(Send(node, PlaceTask(job_id, index, job.durations[index], job.estimate)))
        return effects

    def _finished(self, now: float, node: str, msg: TaskFinished) -> list[Effect]:
        job = self.jobs.get(msg.job_id)
        if job is None:
            self.counters["unknown_task_finished"] += 1
            return []
        self.free.append(node)
        done = self.task_finished(self.jobs, msg)
        return self._dispatch(now) + done
