"""A node monitor that admits placed tasks by resource fit (the multi-resource central policies).

The node has a capacity vector (:mod:`aviary.common.resources`) instead of slots: a ``PlaceTask`` runs
at once when its demand fits what the running tasks leave free, so as many tasks run together as the
capacity allows. The central scheduler places a task only where its bookkeeping says it fits, so a
task that must wait here means the two views differ (a message overtaken, a second scheduler): it
waits in FIFO order, counted as ``waited_for_room``, and is never dropped. A task whose demand exceeds
the whole capacity could never run: it is refused at once with ``TaskFinished(ok=False)``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Launch, Send, TaskId
from ..common.messages import PlaceTask, TaskFinished
from ..common.resources import ONE_CORE, Resources


class ResourceNodeCore(Core):
    role = "node"

    def __init__(self, name: str, capacity: Resources) -> None:
        super().__init__(name)
        self.capacity = capacity
        self.free = capacity
        self.slots = max(1, int(capacity.cores))  # what Register reports
        self.waiting: deque[tuple[str, PlaceTask, Resources]] = deque()
        self.running: dict[TaskId, tuple[str, Resources]] = {}

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        if type(msg) is not PlaceTask:
            return self.unexpected(msg)
        try:
            demand = Resources.of(msg.demand) if msg.demand else ONE_CORE
        except ValueError:
            self.counters["bad_demand"] += 1
            return [Send(sender, TaskFinished(msg.job_id, msg.task_index, False))]
        if not demand.fits_in(self.capacity):
            self.counters["task_too_big"] += 1
            return [Send(sender, TaskFinished(msg.job_id, msg.task_index, False))]
        if self.waiting or not demand.fits_in(self.free):
            self.counters["waited_for_room"] += 1
            self.waiting.append((sender, msg, demand))
            return []
        return self._launch(sender, msg, demand)

    def on_task_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        entry = self.running.pop(task_id, None)
        if entry is None:
            self.counters["unknown_task_exit"] += 1
            return []
        scheduler, demand = entry
        self.free = self.free.plus(demand)
        self.counters["tasks_finished" if ok else "tasks_failed"] += 1
        effects: list[Effect] = [Send(scheduler, TaskFinished(task_id[0], task_id[1], ok))]
        while self.waiting and self.waiting[0][2].fits_in(self.free):
            sender, msg, need = self.waiting.popleft()
            effects += self._launch(sender, msg, need)
        return effects

    def _launch(self, sender: str, msg: PlaceTask, demand: Resources) -> list[Effect]:
        task_id = (msg.job_id, msg.task_index)
        if task_id in self.running:
            self.counters["duplicate_task"] += 1
            return []
        self.running[task_id] = (sender, demand)
        self.free = self.free.minus(demand)
        self.counters["tasks_launched"] += 1
        return [Launch(task_id, msg.duration)]
