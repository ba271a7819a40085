"""A central scheduler that comes back (issue 26): a restarted process rebuilds its state without losing
work, after YARN's work-preserving ResourceManager restart (the NodeManagers keep their containers and
report them when they re-register; the applications are re-read from the store).

:class:`Recovering` wraps the fresh core of a restarted central scheduler and holds it back until its
state is rebuilt:

1. The frontend, hearing the process register again (``Register.recovering``), sends :class:`Recover`:
   the jobs routed to it that have not finished (the frontend's own record) with their ages, and the
   live nodes; then each of those jobs' ``SubmitJob`` again.
2. The core asks every one of those nodes what it holds of its work (``GetHolding``); each answers
   (``Holding``: its placed tasks queued, running and finished, :mod:`aviary.worker.holdings`). A node
   declared dead meanwhile is not waited for.
3. With every job and every answer in, the core rebuilds: each job admitted as submitted ``age`` seconds
   ago, its tasks finished counted (a stage whose tasks all finished releases its children), its tasks
   queued or running on a node booked there again, the rest runnable (:meth:`restore_job` of the core,
   :meth:`CentralState.restore <aviary.central.state.CentralState.restore>`). Then it starts (its timers)
   and schedules, and the messages that came meanwhile are handled in their order: a ``TaskFinished``
   the rebuilt state already counted is ignored as unknown, so no task counts twice, and a job submitted
   after ``Recover`` (not one of its jobs) is admitted then.

What is re-run: nothing that a node reported. Lost for good: the dead incarnation's task log and cycle
log (the utilization and solver figures of ``summary.json`` cover what the new one placed), its counters
since the frontend's last ``Counters`` report, and for the central's own plans (Carbyne's reverse
packing, Graphene's offline schedules, TetriSched's plan) what they had planned: they plan again.
"""

from __future__ import annotations

from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Send
from ..common.messages import GetHolding, Holding, PeerDown, Recover, SubmitJob
from .state import Held


class Recovering(Core):
    """``core``, a central scheduler's fresh core after a restart, held back until it is rebuilt."""

    role = "central"
    recovering = True

    def __init__(self, core: Core) -> None:
        super().__init__(core.name)
        self.core = core
        self.counters = core.counters
        self.plan: Recover | None = None
        self.rebuilding: frozenset[int] = frozenset()  # the plan's jobs; a new job's SubmitJob is held
        self.submits: dict[int, tuple[str, SubmitJob]] = {}
        self.holdings: dict[str, Holding] = {}
        self.waiting: set[str] = set()
        self.held: list[tuple[str, Any]] = []  # other inputs, in order, for after the rebuild
        self.began = 0.0  # when it started
        self.told = 0.0  # when Recover came

    @property
    def offloop(self) -> frozenset[Any]:  # type: ignore[override]
        return self.core.offloop

    def task_log(self) -> list[Any]:
        return self.core.task_log()

    def cycle_log(self) -> list[Any]:
        return self.core.cycle_log()

    def gauges(self) -> dict[str, float]:
        return self.core.gauges()

    def start(self, now: float) -> list[Effect]:
        self.began = now
        return []

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        return self.core.on_timer(now, key)

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        if not self.recovering:
            return self.core.on_message(now, sender, msg)
        kind = type(msg)
        if kind is Recover:
            if self.plan is not None:
                self.counters["duplicate_recover"] += 1
                return []
            if len(msg.ages) != len(msg.jobs):  # not what a frontend sends (central_back): dropped
                self.counters["bad_recover"] += 1
                return []
            self.plan = msg
            self.rebuilding = frozenset(msg.jobs)
            self.told = now
            self.waiting = set(msg.nodes) - self.holdings.keys()
            return [*(Send(n, GetHolding()) for n in msg.nodes), *self._rebuilt(now)]
        if kind is Holding:
            self.holdings[sender] = msg
            self.waiting.discard(sender)
            return self._rebuilt(now)
        if kind is SubmitJob and msg.job_id in self.rebuilding and msg.job_id not in self.submits:
            self.submits[msg.job_id] = (sender, msg)
            return self._rebuilt(now)
        if kind is PeerDown:
            self.waiting.discard(msg.name)
        self.held.append((sender, msg))
        return self._rebuilt(now)

    def _rebuilt(self, now: float) -> list[Effect]:
        """Once every job and every node's answer is in: rebuild, start, and handle what was held."""
        plan = self.plan
        if plan is None or self.waiting or any(j not in self.submits for j in plan.jobs):
            return []
        held: dict[int, dict[int, Held]] = {}
        for node, holding in self.holdings.items():
            for job_id, index in holding.queued:
                held.setdefault(job_id, {})[index] = ("queued", node, 0.0)
            for job_id, index, ago in holding.running:
                held.setdefault(job_id, {})[index] = ("running", node, ago)
            for job_id, index, ago in holding.finished:
                held.setdefault(job_id, {})[index] = ("finished", node, ago)
        core = self.core
        effects: list[Effect] = []
        for job_id, age in zip(plan.jobs, plan.ages, strict=True):
            sender, msg = self.submits[job_id]
            effects += core.restore_job(now, sender, msg, age, held.get(job_id, {}))  # type: ignore[attr-defined]
        self.recovering = False
        self.counters["recovered"] += 1
        self.counters["recovery_wait_ms"] += round((now - self.began) * 1000)  # from its start
        self.counters["rebuild_ms"] += round((now - self.told) * 1000)  # from Recover: the nodes' answers
        effects += core.start(now)
        effects += core.restored(now)  # type: ignore[attr-defined]
        for sender, msg in self.held:
            # a rebuilt job's copy sent before the death and queued meanwhile; a new job's is admitted
            if type(msg) is SubmitJob and msg.job_id in self.rebuilding:
                self.counters["recovered_duplicate_submit"] += 1
                continue
            effects += core.on_message(now, sender, msg)
        self.held = []
        return effects


__all__ = ["Recovering"]
