"""The frontend core: submits a replay's jobs at their arrival times and times their completion.

Completion time is measured here, on the frontend's own clock (DESIGN §3): submit and finish are
both read from it, so no two hosts' clocks need to agree. A job's first task start is the submit
time plus the delay its scheduler measured on its own clock.

On the real runtime the frontend first says ``Hello`` to every process it must wait for (again every
``hello_interval`` until each has answered ``Register``); the replay starts when all have answered,
or, with ``hold``, when the driver calls :meth:`FrontendCore.begin`.
At the end (:meth:`collect`) it asks every process for its ``Stats`` with ``GetStats`` or ``Shutdown``.

A ``JobDone`` counts only from the scheduler the job was submitted to: one for a job this frontend did
not submit (``unknown_job_done``) or from another sender (``job_done_from_stranger``) is counted, logged
once, and dropped.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .core import Core
from .effects import Effect, Send, SetTimer
from .messages import GetStats, Hello, JobDone, Register, Shutdown, Stats, SubmitJob
from .model import JobSpec

SUBMIT = "submit"
HELLO = "hello"

log = logging.getLogger("aviary.frontend")


@dataclass(slots=True)
class JobTimes:
    submit: float | None = None
    first_start: float | None = None
    finish: float | None = None


def submit_message(job: JobSpec) -> SubmitJob:
    """The ``SubmitJob`` of a job; the DAG and multi-resource fields only when the job has them, so a
    flat job's frame is what it always was."""
    if not (job.stages or job.deadline is not None or job.slo or job.gang or job.preference):
        return SubmitJob(job.job_id, job.durations, job.estimate)
    stages = [[s.tasks, s.estimate, list(s.demand), list(s.parents)] for s in job.stages]
    return SubmitJob(
        job.job_id,
        job.durations,
        job.estimate,
        stages,
        job.deadline,
        job.slo or "",
        job.gang,
        job.preference or "",
        job.slowdown,
    )


Router = Callable[[JobSpec, int], str]
"""Chooses the scheduler for the n-th submitted job."""


def round_robin(schedulers: list[str]) -> Router:
    def route(job: JobSpec, n: int) -> str:
        return schedulers[n % len(schedulers)]

    return route


class FrontendCore(Core):
    role = "frontend"

    def __init__(
        self,
        name: str,
        jobs: list[JobSpec],
        route: Router,
        *,
        wait_for: list[str] = (),  # type: ignore[assignment]
        hello_interval: float = 0.5,
        hold: bool = False,
    ) -> None:
        super().__init__(name)
        self.jobs = sorted(jobs, key=lambda j: (j.submit, j.job_id))
        self.by_id = {j.job_id: j for j in self.jobs}
        self.times = {j.job_id: JobTimes() for j in self.jobs}
        self.routed: dict[int, str] = {}
        """The scheduler each submitted job went to: the only one whose ``JobDone`` counts."""
        self.route = route
        self.waiting = set(wait_for)
        self.registered: dict[str, Register] = {}
        self.hello_interval = hello_interval
        self.hold = hold  # once ready, wait for begin() instead of starting the replay at once
        self.t0: float | None = None
        self.next = 0
        self.finished = 0
        self.last_progress = 0.0
        self.stats: dict[str, Stats] = {}

    # --- phases ------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return not self.waiting

    @property
    def done(self) -> bool:
        return self.finished == len(self.jobs)

    @property
    def submitted(self) -> int:
        return self.next

    def start(self, now: float) -> list[Effect]:
        if self.waiting:
            return self._hello()
        return [] if self.hold else self.begin(now)

    def _hello(self) -> list[Effect]:
        return [*(Send(p, Hello()) for p in sorted(self.waiting)), SetTimer(HELLO, self.hello_interval)]

    def begin(self, now: float) -> list[Effect]:
        """Start the replay clock and the submissions."""
        self.t0 = now
        self.last_progress = now
        if not self.jobs:
            return []
        return [SetTimer(SUBMIT, self.jobs[0].submit)]

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        if key == HELLO:
            return self._hello() if self.waiting else []
        if key == SUBMIT:
            return self._submit_due(now)
        return []

    def _submit_due(self, now: float) -> list[Effect]:
        assert self.t0 is not None
        clock = now - self.t0
        effects: list[Effect] = []
        jobs = self.jobs
        while self.next < len(jobs) and jobs[self.next].submit <= clock + 1e-9:
            job = jobs[self.next]
            self.times[job.job_id].submit = clock
            to = self.routed[job.job_id] = self.route(job, self.next)
            effects.append(Send(to, submit_message(job)))
            self.next += 1
        if self.next < len(jobs):
            effects.append(SetTimer(SUBMIT, jobs[self.next].submit - clock))
        return effects

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is JobDone:
            return self._job_done(now, sender, msg)
        if kind is Register:
            self.registered[sender] = msg
            if sender in self.waiting:
                self.waiting.discard(sender)
                if not self.waiting and not self.hold:
                    return self.begin(now)
            return []
        if kind is Stats:
            self.stats[sender] = msg
            return []
        return self.unexpected(msg)

    def _job_done(self, now: float, sender: str, msg: JobDone) -> list[Effect]:
        times = self.times.get(msg.job_id)
        if times is None or times.submit is None or self.t0 is None:
            return self._refuse(
                "unknown_job_done", f"a JobDone from {sender!r} for job {msg.job_id}, not submitted"
            )
        if (to := self.routed.get(msg.job_id)) != sender:
            text = f"a JobDone from {sender!r} for job {msg.job_id}, submitted to {to!r}"
            return self._refuse("job_done_from_stranger", text)
        if times.finish is not None:
            self.counters["duplicate_job_done"] += 1
            return []
        times.finish = now - self.t0
        times.first_start = times.submit + msg.first_start_delay
        self.finished += 1
        self.last_progress = now
        return []

    def _refuse(self, counter: str, text: str) -> list[Effect]:
        self.counters[counter] += 1
        if self.counters[counter] == 1:
            log.warning("%s: dropped %s (further ones are only counted)", self.name, text)
        return []

    # --- the end -----------------------------------------------------------------------------------
    def collect(self, processes: list[str], *, shutdown: bool) -> list[Effect]:
        """Ask every process for its Stats (and to exit, with ``shutdown``)."""
        msg = Shutdown() if shutdown else GetStats()
        return [Send(p, msg) for p in processes]

    def unfinished(self) -> list[int]:
        return [j.job_id for j in self.jobs if self.times[j.job_id].finish is None]

    def message_totals(self) -> tuple[Counter[str], Counter[str]]:
        """Sent messages by kind and counters, summed over the processes that sent Stats."""
        messages: Counter[str] = Counter()
        counters: Counter[str] = Counter()
        for stats in self.stats.values():
            messages.update(stats.messages)
            counters.update(stats.counters)
        return messages, counters
