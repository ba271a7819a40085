"""A distributed scheduler that stamps its decisions with the wall clock: a core that reads a clock is not
reproducible and runs apart from the simulator's time (``purity``)."""

from __future__ import annotations

import random
import time

from aviary.policy import Context, Core, Effect, JobDone, PlaceTask, Policy, Send, SubmitJob, TaskFinished


class ReadsTheClock(Core):
    role = "scheduler"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx.name)
        self.nodes = list(ctx.nodes)
        self.rng = random.Random(ctx.seed)
        self.jobs: dict[int, tuple[str, int]] = {}
        self.stamps: dict[int, float] = {}

    def on_message(self, now: float, sender: str, msg: object) -> list[Effect]:
        if isinstance(msg, SubmitJob):
            self.stamps[msg.job_id] = time.time()  # the bug: the core's clock is ``now``
            self.jobs[msg.job_id] = (sender, len(msg.durations))
            return [
                Send(self.rng.choice(self.nodes), PlaceTask(msg.job_id, i, d, msg.estimate))
                for i, d in enumerate(msg.durations)
            ]
        if isinstance(msg, TaskFinished) and msg.job_id in self.jobs:
            frontend, left = self.jobs[msg.job_id]
            if left == 1:
                del self.jobs[msg.job_id]
                return [Send(frontend, JobDone(msg.job_id, 0.0))]
            self.jobs[msg.job_id] = (frontend, left - 1)
            return []
        return self.unexpected(msg)


POLICY = Policy("reads-the-clock", "random placement, stamped with time.time()", scheduler=ReadsTheClock)
