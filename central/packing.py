"""The central scheduler core of the multi-resource policies, and the hooks a policy fills in.

:class:`PackingCore` owns a :class:`~aviary.central.state.CentralState` and asks its
:class:`PlacementPolicy` only one question, :meth:`PlacementPolicy.pick`: which runnable stage of which
job should get the next task on this node, if any fits? (Kubernetes' Filter/Score plug-ins and
Sparrow's ``TaskPlacer`` keep policies small the same way.) Policies that plan on a periodic cycle
(TetriSched) set :attr:`PlacementPolicy.cycle` and implement :meth:`PlacementPolicy.plan` instead.

When to match (work conservation at the cost of one event's changes, not of the whole cluster):
after each ``TaskFinished`` the node that reported it is filled from every job with runnable tasks;
then, if jobs gained runnable tasks (a submission, or a stage released by its parents' barrier), every
node is offered to those jobs, in node order. Nothing else can have changed: before the event no
runnable task fitted anywhere the policy would place it, and nodes only lost room since.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, SetTimer
from ..common.messages import SubmitJob, TaskFinished
from ..common.resources import Resources
from .state import CentralState, JobState, NodeState, StageState

CYCLE = "cycle"

Placement = tuple[JobState, StageState, NodeState]


def bfs_order(job: JobState) -> list[StageState]:
    """Tez's default: the lowest DAG level first, ties by stage number (spec §5)."""
    return sorted(job.runnable, key=lambda s: (s.depth, s.index))


def cp_order(job: JobState) -> list[StageState]:
    """The longest critical path to the job's end first, ties by stage number (spec §5)."""
    return sorted(job.runnable, key=lambda s: (-s.cp, s.index))


INTRA_ORDERS: dict[str, Callable[[JobState], list[StageState]]] = {"bfs": bfs_order, "cp": cp_order}


class PlacementPolicy:
    """A central policy: a few named hooks over the shared state (bound by :meth:`bind`)."""

    cycle: float | None = None
    """Seconds between :meth:`plan` calls; ``None``: match on events with :meth:`pick`."""

    def __init__(self, intra: str = "bfs") -> None:
        if intra not in INTRA_ORDERS:
            raise ValueError(f"intra-job order must be one of {', '.join(INTRA_ORDERS)}, got {intra!r}")
        self.intra = intra
        self.stage_order = INTRA_ORDERS[intra]
        self.state: CentralState
        self.rng = random.Random(0)

    def bind(self, state: CentralState, rng: random.Random) -> None:
        self.state = state
        self.rng = rng

    def pick(self, node: NodeState, jobs: list[JobState]) -> tuple[JobState, StageState] | None:
        """The (job, stage) of ``jobs`` whose next task goes on ``node`` now, or ``None``."""
        raise NotImplementedError

    def plan(self, now: float) -> list[Placement]:
        """Periodic policies: the placements to make now."""
        return []


class OrderedPolicy(PlacementPolicy):
    """Jobs in the order of :meth:`job_key` (smallest first), the job's first runnable stage in the
    intra-job order whose demand fits the node (first fit): the baselines of spec §5."""

    def job_key(self, job: JobState) -> Any:
        raise NotImplementedError

    def pick(self, node: NodeState, jobs: list[JobState]) -> tuple[JobState, StageState] | None:
        free = node.free
        for job in sorted(jobs, key=self.job_key):
            for stage in self.stage_order(job):
                if stage.demand.fits_in(free):
                    return job, stage
        return None


class PackingCore(Core):
    """The central scheduler of a multi-resource policy (module docstring)."""

    role = "central"

    def __init__(
        self,
        name: str,
        nodes: list[tuple[str, Resources, dict[str, Any]]],
        policy: PlacementPolicy,
        *,
        seed: int = 0,
    ) -> None:
        super().__init__(name)
        self.state = CentralState(nodes, self)
        self.policy = policy
        policy.bind(self.state, random.Random(seed))

    def task_log(self) -> list[list[Any]]:
        return [[j, i, start, end, list(demand)] for j, i, start, end, demand in self.state.log]

    def start(self, now: float) -> list[Effect]:
        return [SetTimer(CYCLE, self.policy.cycle)] if self.policy.cycle is not None else []

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is TaskFinished:
            node = self.state.by_name.get(sender)
            done = self.state.finish(now, sender, msg)
            return self._match(now, [] if node is None else [node]) + done
        if kind is SubmitJob:
            refused = self.state.submit(now, sender, msg)
            return refused if refused is not None else self._match(now, [])
        return self.unexpected(msg)

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        if key != CYCLE or self.policy.cycle is None:
            return []
        self.state.fresh.clear()
        effects: list[Effect] = [self.state.place(now, j, s, n) for j, s, n in self.policy.plan(now)]
        effects.append(SetTimer(CYCLE, self.policy.cycle))
        return effects

    def _match(self, now: float, dirty: Iterable[NodeState]) -> list[Effect]:
        state = self.state
        if self.policy.cycle is not None:
            return []
        effects: list[Effect] = []
        for node in dirty:
            self._fill(now, node, list(state.active.values()), effects)
        if state.fresh:  # placing never releases a stage, so one pass empties it
            fresh = list(state.fresh.values())
            state.fresh.clear()
            for node in state.nodes:
                self._fill(now, node, fresh, effects)
        return effects

    def _fill(self, now: float, node: NodeState, jobs: list[JobState], out: list[Effect]) -> None:
        """Place tasks of ``jobs`` on ``node`` while the policy picks one."""
        pick = self.policy.pick
        while candidates := [j for j in jobs if j.runnable]:
            chosen = pick(node, candidates)
            if chosen is None:
                return
            job, stage = chosen
            out.append(self.state.place(now, job, stage, node))
