"""A central scheduler that never places a job's second task: its job never finishes (``invariants``)."""

from __future__ import annotations

from aviary.policy import Context, Core, Effect, JobDone, PlaceTask, Policy, Send, SubmitJob, TaskFinished


class DropsATask(Core):
    role = "central"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx.name)
        self.nodes = list(ctx.nodes)
        self.jobs: dict[int, tuple[str, int]] = {}  # job -> (frontend, tasks not finished)
        self.turn = 0

    def on_message(self, now: float, sender: str, msg: object) -> list[Effect]:
        if isinstance(msg, SubmitJob):
            self.jobs[msg.job_id] = (sender, len(msg.durations))
            out: list[Effect] = []
            for i, duration in enumerate(msg.durations):
                if i == 1:
                    continue  # the bug
                self.turn += 1
                node = self.nodes[self.turn % len(self.nodes)]
                out.append(Send(node, PlaceTask(msg.job_id, i, duration, msg.estimate)))
            return out
        if isinstance(msg, TaskFinished) and msg.job_id in self.jobs:
            frontend, left = self.jobs[msg.job_id]
            if left == 1:
                del self.jobs[msg.job_id]
                return [Send(frontend, JobDone(msg.job_id, 0.0))]
            self.jobs[msg.job_id] = (frontend, left - 1)
            return []
        return self.unexpected(msg)


POLICY = Policy("drops-a-task", "round robin that forgets each job's second task", central=DropsATask)
