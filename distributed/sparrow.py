"""Sparrow: batch sampling with late binding (thesis §2.3.5; Ousterhout et al., SOSP'13).

"To schedule a job with t tasks, a distributed scheduler sends probes to 2t servers. When a probe
comes to the head of a server's queue, the server requests a task from the scheduler. If the
scheduler has not given out the t tasks to other servers, it responds to the server with a task.
Otherwise, a cancel is sent." Here the probe ratio d is a parameter (default 2, the value the
Sparrow authors found best). Once the last task is handed out, every node still holding
reservations of the job gets one ``CancelProbes`` so they leave its queue ("otherwise, a cancel is
sent"); a late ``GetTask`` is answered ``NoTask``. When the job's last task finishes, the frontend that
submitted it gets ``JobDone``.

Leftover probes: with ``cancel=False`` no ``CancelProbes`` is sent, as in the Hawk/Eagle authors'
simulator: the leftover reservations stay queued until they reach a free slot (and get ``NoTask``) or
are stolen (Hawk, §2.3.6), which is why Table 3.2's stealing counts roughly triple without cancel.
Counters, both modes: ``probes_leftover`` (reservations still out when the job's last task was handed
out), ``probes_leftover_cancelled`` (of those, the ones a ``CancelProbes`` went out for) and
``probes_leftover_kept`` (left in the queues); which one is non-zero says which mode a run used.

Failures (issue 14): on ``PeerDown`` of a node the scheduler stops probing it, puts the tasks it had
handed to it back (``tasks_rerun``; ``rerun_lost_ms``: milliseconds of their run time lost) and sends
new probes for them and for the reservations the node held (``probes_lost``); a later ``TaskFinished``
from a node other than the one now running the task is a late result (``late_results_ignored``). A
``GetTask`` the node sent before its death that arrives after ``PeerDown`` gets no task but a
``NoTask`` (``get_task_from_dead``): handed to a dead node, a task would never finish (it stalled a job
on a packed testbed, 1 run in 3), and a node declared dead while it lives on behind a partition (from
the frontend only) would otherwise hold the slot it reserved for the answer for ever (16 of 200 jobs
lost). Its reservations were probed again at its death, those this scheduler knew of; one it did not
(Hawk's idle nodes steal reservations from others) is probed again when such a ``GetTask`` shows it
(``probes_lost``, ``stolen_probes_lost``), or its job would wait for it for ever (5 of 100 Hawk jobs
were lost when a third of 10 nodes lost the frontend for 10 s). ``PeerUp`` makes the node a probe target
again.

Probes for the same node are batched into one message (``Probe.count``); this happens only when
d*t exceeds the number of nodes, where probes must repeat nodes.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..common.core import Core
from ..common.draws import sample
from ..common.effects import Effect, Multicast, Send
from ..common.messages import (
    AssignTask,
    CancelProbes,
    GetTask,
    NoTask,
    PeerDown,
    PeerUp,
    Probe,
    SubmitJob,
    TaskFinished,
)

# The kinds on_message tells apart, as constants (a Final name is a C static where this module is
# compiled, speedups.py; an imported name is looked up in the module's dict at every use).
_K_GetTask: Final[type] = GetTask
_K_TaskFinished: Final[type] = TaskFinished
_K_SubmitJob: Final[type] = SubmitJob
_K_PeerDown: Final[type] = PeerDown
_K_PeerUp: Final[type] = PeerUp


@dataclass(slots=True)
class JobState:
    """A job this scheduler is serving."""

    frontend: str
    durations: list[float]
    estimate: float
    arrival: float
    next_task: int = 0
    finished: int = 0
    first_start: float | None = None
    probed: Counter[str] = field(default_factory=Counter)  # node -> reservations not yet used
    placed: dict[int, tuple[str, float]] = field(default_factory=dict)  # running task -> (node, since)
    retry: list[int] = field(default_factory=list)  # tasks to hand out again (their node died)
    replaced: Counter[str] = field(default_factory=Counter)  # dead node -> its reservations probed again

    @property
    def unassigned(self) -> int:
        return len(self.durations) - self.next_task + len(self.retry)


LEFTOVER_COUNTERS = ("probes", "probes_leftover", "probes_leftover_cancelled", "probes_leftover_kept")
"""Scheduler counters of every probing policy, written even when 0 (thesis Table 3.2)."""


def leftover_probes(counters: Counter[str], job_id: int, probed: Counter[str], cancel: bool) -> list[Effect]:
    """The job's last task is handed out: its reservations still out (``probed``) are leftover probes.
    With ``cancel`` every node holding some gets one ``CancelProbes`` (Sparrow, thesis §2.3.5); else
    they stay queued (the authors' simulator). Counts them either way and forgets them."""
    left = sum(n for n in probed.values() if n > 0)
    counters["probes_leftover"] += left
    if cancel:
        counters["probes_leftover_cancelled"] += left
        targets = [n for n, c in probed.items() if c > 0]
        effects: list[Effect] = [Multicast(targets, CancelProbes(job_id))] if targets else []
    else:
        counters["probes_leftover_kept"] += left
        effects = []
    probed.clear()
    return effects


def probe_sends(picks: dict[str, int], make: Callable[[int], Any]) -> list[Effect]:
    """A ``Send`` of ``make(count)`` to every node of ``picks``; nodes with the same count share one
    message object (messages are never changed once sent; the simulator delivers consecutive sends of
    one object as one multicast)."""
    made: dict[int, Any] = {}
    effects: list[Effect] = []
    for node, count in picks.items():
        msg = made.get(count)
        if msg is None:
            msg = made[count] = make(count)
        effects.append(Send(node, msg))
    return effects


def sample_nodes(rng: random.Random, nodes: list[str], k: int) -> dict[str, int]:
    """k probe targets (node -> probes): distinct random nodes while k <= len(nodes), else every node
    k // n times and k % n random ones once more."""
    n = len(nodes)
    if k <= n:
        return dict.fromkeys(sample(rng, nodes, k), 1)
    rounds, rest = divmod(k, n)
    picks = dict.fromkeys(nodes, rounds)
    for node in sample(rng, nodes, rest):
        picks[node] += 1
    return picks


def add_probes(probed: dict[str, int], picks: dict[str, int]) -> None:
    """``probed`` gains ``picks``, node by node (what ``Counter.update`` does, but compiled: a Counter's
    own methods are interpreted code, called at every probe and re-placement)."""
    for node, count in picks.items():
        probed[node] = probed.get(node, 0) + count


class ProbedJob(Protocol):
    """What the failure handling needs of a probing scheduler's job (Sparrow's, Hawk's, Eagle's)."""

    probed: Counter[str]
    placed: dict[int, tuple[str, float]]
    retry: list[int]
    next_task: int
    first_start: float | None

    @property
    def unassigned(self) -> int: ...


def hand_out(job: ProbedJob, node: str, now: float) -> int:
    """The job's next task for ``node`` (one a dead node ran first), booked as running there."""
    if job.retry:
        index = job.retry.pop(0)
    else:
        index = job.next_task
        job.next_task += 1
    job.placed[index] = (node, now)
    if job.first_start is None:
        job.first_start = now
    return index


def reissue(counters: Counter[str], job: ProbedJob, node: str, now: float, ratio: float) -> int:
    """``node`` died: the job's tasks it ran go back to be handed out again (in hand-out order) and its
    reservations there are lost; counts them (``tasks_rerun``, ``rerun_lost_ms``, ``probes_lost``) and
    returns how many probes to send again (the lost reservations, and ``ratio`` per lost task)."""
    lost = [i for i, (n, _) in job.placed.items() if n == node]
    for i in lost:
        counters["rerun_lost_ms"] += round((now - job.placed.pop(i)[1]) * 1000)
    counters["tasks_rerun"] += len(lost)
    job.retry.extend(lost)
    held = job.probed.pop(node, 0)
    counters["probes_lost"] += held
    return held + math.ceil(ratio * len(lost)) if job.unassigned else 0


def finished_where_placed(
    counters: Counter[str], placed: dict[int, tuple[str, float]], sender: str, index: int
) -> bool:
    """Whether a ``TaskFinished`` of task ``index`` from ``sender`` counts: only from the node running it
    (else a late result from a node declared dead, counted ``late_results_ignored``)."""
    where = placed.get(index)
    if where is None or where[0] != sender:
        counters["late_results_ignored"] += 1
        return False
    del placed[index]
    return True


class SparrowCore(Core):
    """A distributed scheduler doing batch sampling over ``nodes``."""

    role = "scheduler"

    def __init__(
        self, name: str, nodes: list[str], *, probe_ratio: float = 2.0, cancel: bool = True, seed: int = 0
    ) -> None:
        super().__init__(name)
        if not nodes:
            raise ValueError(f"scheduler {name}: no nodes to probe")
        if probe_ratio < 1:
            raise ValueError(f"scheduler {name}: probe ratio must be at least 1, got {probe_ratio}")
        self.nodes = list(nodes)
        self.known_nodes = frozenset(nodes)
        self.down: set[str] = set()  # nodes declared dead (PeerDown), until they rejoin
        self.probe_ratio = probe_ratio
        self.cancel = cancel
        self.rng = random.Random(f"{seed}/{name}")
        self.jobs: dict[int, JobState] = {}
        self.counters.update(dict.fromkeys(LEFTOVER_COUNTERS, 0))

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is _K_GetTask:
            return self._get_task(now, sender, msg.job_id)
        if kind is _K_TaskFinished:
            return self._task_finished(now, sender, msg)
        if kind is _K_SubmitJob:
            return self._submit(now, sender, msg)
        if kind is _K_PeerDown:
            return self.node_down(now, msg.name)
        if kind is _K_PeerUp:
            return self.node_up(msg.name)
        return self.unexpected(msg)

    def _submit(self, now: float, frontend: str, msg: SubmitJob) -> list[Effect]:
        if (refused := self.refuse_submit(frontend, msg, self.jobs)) is not None:
            return refused
        job = JobState(frontend, msg.durations, msg.estimate, now)
        self.jobs[msg.job_id] = job
        self.counters["jobs"] += 1
        return self.probe(msg.job_id, job, math.ceil(self.probe_ratio * len(msg.durations)))

    def probe(self, job_id: int, job: JobState, k: int) -> list[Effect]:
        """Send k probes for the job to random nodes."""
        picks = sample_nodes(self.rng, self.nodes, k)
        add_probes(job.probed, picks)
        self.counters["probes"] += k
        remaining = job.unassigned
        return probe_sends(picks, lambda n: Probe(job_id, job.estimate, remaining, n))

    def _get_task(self, now: float, node: str, job_id: int) -> list[Effect]:
        job = self.jobs.get(job_id)
        if node in self.down:  # sent before its death, arrived after it was declared: no task for it
            self.counters["get_task_from_dead"] += 1
            lost = [] if job is None else self.unknown_reservation_lost(job_id, job, node)
            return [Send(node, NoTask(job_id)), *lost]  # alive behind a partition, it frees its slot
        if job is not None and job.probed[node] > 0:
            job.probed[node] -= 1
        if job is None or not job.unassigned:
            return [Send(node, NoTask(job_id))]
        index = hand_out(job, node, now)
        effects: list[Effect] = [Send(node, AssignTask(job_id, index, job.durations[index], job.estimate))]
        if not job.unassigned:
            effects.extend(leftover_probes(self.counters, job_id, job.probed, self.cancel))
        return effects

    def _task_finished(self, now: float, sender: str, msg: TaskFinished) -> list[Effect]:
        job = self.jobs.get(msg.job_id)
        if job is None:
            self.counters["unknown_task_finished"] += 1
            return []
        if not finished_where_placed(self.counters, job.placed, sender, msg.task_index):
            return []
        return self.task_finished(self.jobs, msg)

    # --- failures ----------------------------------------------------------------------------------
    def node_down(self, now: float, node: str) -> list[Effect]:
        """A node died: no more probes to it; its tasks and reservations are issued again."""
        if node not in self.nodes:
            return []
        self.nodes.remove(node)
        self.down.add(node)
        effects: list[Effect] = []
        for job_id, job in self.jobs.items():
            if held := job.probed.get(node, 0):
                job.replaced[node] += held  # (reissue probes them again)
            k = reissue(self.counters, job, node, now, self.probe_ratio)
            if k and self.nodes:
                effects += self.reprobe(job_id, job, k)
        return effects

    def reprobe(self, job_id: int, job: JobState, k: int) -> list[Effect]:
        """Probes for a job that lost tasks or reservations with a dead node."""
        return self.probe(job_id, job, k)

    def unknown_reservation_lost(self, job_id: int, job: JobState, node: str) -> list[Effect]:
        """A dead node asked for a task of the job: one of the reservations it held, all lost with it.
        Those this scheduler knew of were probed again at its death; one it did not know of (stolen
        from another node, Hawk §2.3.6) is probed again now, or the job would wait for it for ever."""
        if job.replaced[node] > 0:
            job.replaced[node] -= 1
            return []
        if not job.unassigned or not self.nodes:
            return []
        self.counters["probes_lost"] += 1
        self.counters["stolen_probes_lost"] += 1
        return self.reprobe(job_id, job, 1)

    def node_up(self, node: str) -> list[Effect]:
        if node in self.known_nodes and node not in self.nodes:
            self.nodes.append(node)
            self.down.discard(node)
            for job in self.jobs.values():  # its reservations ask as a live node's from now on
                job.replaced.pop(node, None)
        return []
