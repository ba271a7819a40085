"""Hawk's distributed scheduler (thesis §2.3.5): short jobs by Sparrow batch sampling over the whole
cluster.

"Distributed schedulers schedule tasks on the entire cluster. The first scheduling step is achieved as
in Sparrow. To schedule a job with t tasks, a distributed scheduler sends probes to 2t servers." Long
jobs normally go to the central LWL scheduler (the frontend routes them there by their estimate,
:func:`aviary.launch.policies.hybrid.hybrid_router`); a long job that reaches a distributed scheduler (the
"Hawk without centralized scheduling" ablation of §2.4.4) is probed the same way but only over the
general partition, since long tasks never use the short partition (§2.3.4), with its probes marked
``long`` so that nodes know what they hold (stealing takes short probes queued behind long entries).

Leftover probes are cancelled once a job's last task is handed out (Sparrow's "otherwise, a cancel is
sent"), or, with ``cancel=False``, left in the queues as in the authors' simulator, where idle nodes
may steal them (:func:`~aviary.distributed.sparrow.leftover_probes`).

Counters: ``probes`` (short probes sent), ``probes_long``, ``jobs``, ``jobs_long``, the leftover
counters of :data:`~aviary.distributed.sparrow.LEFTOVER_COUNTERS`, and ``probes_rescheduled`` always 0
(Table 3.2's column: Hawk's re-scheduled probes are the nodes' ``steals``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..common.effects import Effect
from ..common.messages import Probe, SubmitJob
from ..common.model import GOOGLE_CUTOFF
from .sparrow import JobState, SparrowCore, add_probes, probe_sends, sample_nodes

__all__ = ["HawkSchedulerCore"]


class HawkSchedulerCore(SparrowCore):
    """Sparrow over ``nodes`` for short jobs; over ``general`` with long probes for long ones."""

    def __init__(
        self,
        name: str,
        nodes: Sequence[str],
        general: Sequence[str],
        *,
        probe_ratio: float = 2.0,
        cancel: bool = True,
        cutoff: float = GOOGLE_CUTOFF,
        seed: int = 0,
    ) -> None:
        super().__init__(name, list(nodes), probe_ratio=probe_ratio, cancel=cancel, seed=seed)
        self.general = list(general) or self.nodes
        self.known_general = frozenset(self.general)
        self.cutoff = cutoff
        self.counters["probes_rescheduled"] = 0  # Table 3.2's column; Hawk's re-scheduled probes are steals

    def node_down(self, now: float, node: str) -> list[Effect]:
        if node in self.general and self.general is not self.nodes:
            self.general = [n for n in self.general if n != node]
        return super().node_down(now, node)

    def node_up(self, node: str) -> list[Effect]:
        if node in self.known_general and node not in self.general and self.general is not self.nodes:
            self.general.append(node)
        return super().node_up(node)

    def reprobe(self, job_id: int, job: JobState, k: int) -> list[Effect]:
        if job.estimate < self.cutoff or not self.general:
            return self.probe(job_id, job, k)
        picks = sample_nodes(self.rng, self.general, k)
        add_probes(job.probed, picks)
        self.counters["probes_long"] += k
        remaining = job.unassigned
        return probe_sends(picks, lambda c: Probe(job_id, job.estimate, remaining, c, long=True))

    def _submit(self, now: float, frontend: str, msg: SubmitJob) -> list[Effect]:
        if (refused := self.refuse_submit(frontend, msg, self.jobs)) is not None:
            return refused
        job = JobState(frontend, msg.durations, msg.estimate, now)
        self.jobs[msg.job_id] = job
        k = math.ceil(self.probe_ratio * len(msg.durations))
        if msg.estimate < self.cutoff:
            self.counters["jobs"] += 1
            return self.probe(msg.job_id, job, k)
        self.counters["jobs_long"] += 1
        picks = sample_nodes(self.rng, self.general, k)
        add_probes(job.probed, picks)
        self.counters["probes_long"] += k
        remaining = job.unassigned
        return probe_sends(picks, lambda c: Probe(msg.job_id, job.estimate, remaining, c, long=True))
