"""A node monitor that asks for a task for every probe at once, free slot or not: it runs more tasks than
it has slots (``invariants``: a double-booked slot). Under the built-in Sparrow's schedulers."""

from __future__ import annotations

from aviary.policy import (
    AssignTask,
    Context,
    Core,
    Effect,
    GetTask,
    Launch,
    Policy,
    Probe,
    Send,
    TaskFinished,
    TaskId,
    builtin,
)


class DoubleBooks(Core):
    role = "node"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx.name)
        self.slots = ctx.slots
        self.running: dict[TaskId, str] = {}

    def on_message(self, now: float, sender: str, msg: object) -> list[Effect]:
        if isinstance(msg, Probe):
            return [Send(sender, GetTask(msg.job_id)) for _ in range(max(1, msg.count))]  # the bug
        if isinstance(msg, AssignTask):
            self.running[(msg.job_id, msg.task_index)] = sender
            return [Launch((msg.job_id, msg.task_index), msg.duration)]
        return []  # NoTask, CancelProbes...

    def on_task_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        scheduler = self.running.pop(task_id, None)
        return [] if scheduler is None else [Send(scheduler, TaskFinished(task_id[0], task_id[1], ok))]


SPARROW = builtin("sparrow")
POLICY = Policy(
    "double-books",
    "Sparrow's probes, each answered at once",
    scheduler=SPARROW.scheduler,
    node=DoubleBooks,
    params=SPARROW.params,
)
