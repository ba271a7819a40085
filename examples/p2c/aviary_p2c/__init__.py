"""Power of d choices: a distributed scheduler that is none of Aviary's built-in nine, as a plug-in.

Each task of a job goes to the least loaded of ``choices`` nodes drawn at random (Mitzenmacher, "The
Power of Two Choices in Randomized Load Balancing", IEEE TPDS 2001; Sparrow's per-task sampling asks
the nodes, this one does not). A scheduler's load of a node is what it knows without asking: the tasks
it placed there that have not finished. With one scheduler that is the exact queue length (JSQ(d));
with several, each sees its own share only, the stale-information regime Sparrow's paper argues about.
Tasks are bound early: ``PlaceTask`` queues the task itself on the node (Aviary's built-in node monitor,
FIFO). ``choices = 1`` is uniform random placement, the control.

It imports nothing of Aviary but the public module :mod:`aviary.policy`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from aviary.policy import (
    Context,
    Core,
    Effect,
    JobDone,
    Param,
    PeerDown,
    PeerUp,
    PlaceTask,
    Policy,
    Send,
    SubmitJob,
    TaskFinished,
)

CHOICES = Param("choices", 2, "p2c: nodes drawn per task, the least loaded gets it (1: random)", low=1)


@dataclass
class _Job:
    frontend: str
    durations: list[float]
    estimate: float
    left: int


class PowerOfChoices(Core):
    """The distributed scheduler: one per scheduler process of the testbed."""

    role = "scheduler"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx.name)
        self.nodes = list(ctx.nodes)
        self.d = min(int(ctx.params["choices"]), len(self.nodes))
        self.rng = random.Random(f"{ctx.seed}/{ctx.name}")
        self.load = dict.fromkeys(self.nodes, 0)  # tasks placed on each node and not finished
        self.jobs: dict[int, _Job] = {}
        self.where: dict[tuple[int, int], str] = {}  # task -> the node running it
        self.dead: set[str] = set()

    def choose(self) -> str:
        live = [n for n in self.nodes if n not in self.dead] or self.nodes
        drawn = self.rng.sample(live, min(self.d, len(live)))
        return min(drawn, key=self.load.__getitem__)  # ties: the first drawn

    def place(self, job_id: int, index: int) -> Effect:
        job = self.jobs[job_id]
        node = self.choose()
        self.load[node] += 1
        self.where[(job_id, index)] = node
        self.counters["tasks_placed"] += 1
        return Send(node, PlaceTask(job_id, index, job.durations[index], job.estimate))

    def on_message(self, now: float, sender: str, msg: object) -> list[Effect]:
        if isinstance(msg, SubmitJob):
            refused = self.refuse_submit(sender, msg, self.jobs)  # a duplicate, or a job without tasks
            if refused is not None:
                return refused
            self.jobs[msg.job_id] = _Job(sender, list(msg.durations), msg.estimate, len(msg.durations))
            return [self.place(msg.job_id, i) for i in range(len(msg.durations))]
        if isinstance(msg, TaskFinished):
            task = (msg.job_id, msg.task_index)
            if self.where.get(task) != sender:  # not a task of ours that this node runs
                return self.unexpected(msg)
            del self.where[task]
            self.load[sender] -= 1
            job = self.jobs[msg.job_id]
            job.left -= 1
            if job.left:
                return []
            del self.jobs[msg.job_id]
            return [Send(job.frontend, JobDone(msg.job_id, 0.0))]  # bound at once: no wait to a start
        if isinstance(msg, PeerDown):  # a node died: its tasks run again elsewhere
            if msg.name not in self.load:
                return []  # another scheduler, or the central: nothing of ours ran there
            self.dead.add(msg.name)
            self.load[msg.name] = 0
            lost = [task for task, node in self.where.items() if node == msg.name]
            for task in lost:
                del self.where[task]
            self.counters["tasks_replaced"] += len(lost)
            return [self.place(job_id, index) for job_id, index in lost]
        if isinstance(msg, PeerUp):
            self.dead.discard(msg.name)
            return []
        return self.unexpected(msg)


POLICY = Policy(
    "p2c",
    "power of d choices: each task to the least loaded of d random nodes, by the scheduler's own count",
    scheduler=PowerOfChoices,
    params=(CHOICES,),
    family="Power of d choices",
)
