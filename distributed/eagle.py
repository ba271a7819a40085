"""Eagle's distributed scheduler (thesis ch. 3): probing with a minimum number of probes, SSS
re-placement of rejected probes, and the scheduler's side of sticky batch probing and node SRPT.

- **Probes** (§3.3.3): "for a job with t tasks, a distributed scheduler sends probes to max{K, 2t}
  worker nodes" (K = 20, §3.5), drawn uniformly at random among all nodes: "probes are scheduled at
  first by contacting nodes uniformly at random, even if the distributed scheduler already has a
  bitvector available".
- **SSS re-placement** (§3.3.3): a node holding long work rejects short probes (``ProbeRejected``, with
  its bitvector and timestamp). The scheduler keeps the freshest bitvector it has seen and re-sends the
  rejected probes to nodes drawn uniformly at random among those with no long work by that bitvector
  (the short partition and the general nodes whose bit is clear); "probes rejected during
  re-scheduling are assigned uniformly at random to nodes in the short partition" (the last round,
  which nodes never reject). Re-sent targets are drawn with replacement (as in the thesis' simulator).
- **SBP** (§3.4): a node keeps a probe after the task it brought and asks for another one, so the
  scheduler answers every ``GetTask`` with a task while the job has one, else ``NoTask``; once every
  task is handed out, every node holding the job's probes gets ``CancelProbes`` (Sparrow's cancel,
  §2.3.5), or, with ``cancel=False`` (the authors' simulator), the probes stay queued and each gets
  ``NoTask`` when served; the last remaining-task update (0 left) then goes out by the rule below.
- **Remaining-task updates** (§3.4.3): "upon assigning a new task to a node, the distributed scheduler
  updates the number of remaining tasks at all nodes where it has located probes" (``RemainingUpdate``;
  the node that got the task learns it from ``AssignTask.remaining``). With ``update_ratio`` e > 0 an
  update is sent only when the remaining count fell to (1 - e) x the count last sent, a bounded-error
  version that keeps the message count near-linear for jobs of thousands of tasks (the exact scheme
  sends t x max(K, 2t) updates for a job of t tasks; see ``docs/policies.md``). The rule is
  :func:`update_due`, which DLWL's scheduler uses too (§3.6.2 compares the two on equal terms).

Ablation switches: ``min_probes=0`` (no minimum), ``sss=False`` (nodes accept every probe, so nothing
is re-sent), ``updates=False`` (no remaining updates, for FIFO nodes without SRPT), ``sticky=False``
(probes are used up by the task they bring, as in Sparrow).

Failures (issue 14), as Sparrow's (:meth:`SparrowCore.node_down
<aviary.distributed.sparrow.SparrowCore.node_down>`): a dead node is never probed again (nor picked as
free of long work), its tasks are handed out again and the job gets new first-round probes for them and
for the reservations the node held; a ``TaskFinished`` counts only from the node running the task.

Counters (written even when 0, Table 3.2): ``probes`` (first-round probes), ``probes_rescheduled``
(re-sent after a rejection; also split into ``probes_to_free`` and ``probes_to_short``),
``remaining_updates``, the leftover counters of :data:`~aviary.distributed.sparrow.LEFTOVER_COUNTERS`;
and ``jobs``.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..common.core import Core
from ..common.draws import randbelow
from ..common.effects import Effect, Multicast, Send
from ..common.messages import (
    AssignTask,
    GetTask,
    NoTask,
    PeerDown,
    PeerUp,
    Probe,
    ProbeRejected,
    RemainingUpdate,
    SubmitJob,
    TaskFinished,
)
from ..common.model import GOOGLE_CUTOFF
from ..worker.hybrid import LAST_ATTEMPT
from .sparrow import (
    LEFTOVER_COUNTERS,
    add_probes,
    finished_where_placed,
    hand_out,
    leftover_probes,
    probe_sends,
    reissue,
    sample_nodes,
)

# The kinds on_message tells apart, as constants (a Final name is a C static where this module is
# compiled, speedups.py; an imported name is looked up in the module's dict at every use).
_K_GetTask: Final[type] = GetTask
_K_TaskFinished: Final[type] = TaskFinished
_K_ProbeRejected: Final[type] = ProbeRejected
_K_SubmitJob: Final[type] = SubmitJob
_K_PeerDown: Final[type] = PeerDown
_K_PeerUp: Final[type] = PeerUp

__all__ = ["EAGLE_COUNTERS", "EagleSchedulerCore", "update_due"]

EAGLE_COUNTERS = (
    *LEFTOVER_COUNTERS,
    "probes_rescheduled",
    "probes_to_free",
    "probes_to_short",
    "remaining_updates",
)


def update_due(left: int, told: int, ratio: float) -> bool:
    """Whether a remaining-task update goes out now that the job has ``left`` tasks, the nodes having
    last been told ``told``: at every change with ``ratio`` 0 (thesis §3.4.3), else once the count fell
    to (1 - ratio) x ``told`` (bounded error, docs/policies.md)."""
    return left <= told * (1.0 - ratio)


@dataclass(slots=True)
class EagleJob:
    frontend: str
    durations: list[float]
    estimate: float
    arrival: float
    long: bool = False
    next_task: int = 0
    finished: int = 0
    first_start: float | None = None
    told: int = 0  # remaining count last sent to the nodes
    probed: Counter[str] = field(default_factory=Counter)  # node -> probe reservations it holds
    placed: dict[int, tuple[str, float]] = field(default_factory=dict)  # running task -> (node, since)
    retry: list[int] = field(default_factory=list)  # tasks to hand out again (their node died)

    @property
    def unassigned(self) -> int:
        return len(self.durations) - self.next_task + len(self.retry)


def _free(bv: bytes, is_short: list[bool], i: int) -> bool:
    """Whether node ``i`` may take a re-placed probe: a short-partition node, or one without long work by
    the bitvector ``bv`` (bit i: byte i // 8, bit i % 8; read as bytes, not by shifting a 12,500-bit int)."""
    return not bv or is_short[i] or not bv[i >> 3] >> (i & 7) & 1


class EagleSchedulerCore(Core):
    """Eagle's distributed scheduler over ``nodes`` (``Cluster.nodes`` order: bitvector positions);
    ``short`` names the short-partition nodes."""

    role = "scheduler"

    def __init__(
        self,
        name: str,
        nodes: Sequence[str],
        short: Sequence[str] = (),
        *,
        probe_ratio: float = 2.0,
        min_probes: int = 20,
        sss: bool = True,
        sticky: bool = True,
        updates: bool = True,
        update_ratio: float = 0.0,
        cancel: bool = True,
        cutoff: float = GOOGLE_CUTOFF,
        seed: int = 0,
    ) -> None:
        super().__init__(name)
        if not nodes:
            raise ValueError(f"scheduler {name}: no nodes to probe")
        if probe_ratio < 1:
            raise ValueError(f"scheduler {name}: probe ratio must be at least 1, got {probe_ratio}")
        if not 0 <= update_ratio < 1:
            raise ValueError(f"scheduler {name}: update ratio must be in [0, 1), got {update_ratio}")
        self.nodes = list(nodes)
        short_set = set(short)
        self.is_short = [n in short_set for n in self.nodes]
        self.short = [n for n in self.nodes if n in short_set]
        self.general = [n for n in self.nodes if n not in short_set]
        self.probe_ratio = probe_ratio
        self.min_probes = max(0, int(min_probes))
        self.sss = sss
        self.sticky = sticky
        self.updates = updates
        self.update_ratio = update_ratio
        self.cancel = cancel
        self.cutoff = cutoff
        self.rng = random.Random(f"{seed}/{name}")
        self.counters.update(dict.fromkeys(EAGLE_COUNTERS, 0))
        # The freshest bitvector seen, as sent (bit i: byte i // 8, bit i % 8: node i holds long work).
        self.bitvector = b""
        self.stamp = -math.inf
        self.nbytes = (len(self.nodes) + 7) // 8
        self._bv_of: int | None = None  # with dead nodes: the bits that ``_bv`` holds as bytes
        self._bv = b""
        self.jobs: dict[int, EagleJob] = {}
        # Probe targets: the nodes not declared dead (the same lists until one is).
        self.live, self.live_short, self.live_general = self.nodes, self.short, self.general
        self.position = {n: i for i, n in enumerate(self.nodes)}
        self.dead_bits = 0  # bit i: node i is dead (never free of long work)

    # --- inputs --------------------------------------------------------------------------------------
    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is _K_GetTask:
            return self._get_task(now, sender, msg.job_id)
        if kind is _K_TaskFinished:
            return self._task_finished(sender, msg)
        if kind is _K_ProbeRejected:
            return self._rejected(sender, msg)
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
        t = len(msg.durations)
        long = msg.estimate >= self.cutoff
        job = EagleJob(frontend, msg.durations, msg.estimate, now, long=long, told=t)
        self.jobs[msg.job_id] = job
        if long:  # a long job sent here (no central scheduler): Sparrow over the general partition
            self.counters["jobs_long"] += 1
            k = math.ceil(self.probe_ratio * t)
            return self._probe_long(msg.job_id, job, k)
        self.counters["jobs"] += 1
        k = max(self.min_probes, math.ceil(self.probe_ratio * t))
        return self._probe_short(msg.job_id, job, k)

    def _probe_long(self, job_id: int, job: EagleJob, k: int) -> list[Effect]:
        picks = sample_nodes(self.rng, self.live_general or self.live, k)
        self.counters["probes_long"] += k
        add_probes(job.probed, picks)
        left = job.unassigned
        return probe_sends(picks, lambda c: Probe(job_id, job.estimate, left, c, long=True))

    def _probe_short(self, job_id: int, job: EagleJob, k: int) -> list[Effect]:
        picks = sample_nodes(self.rng, self.live, k)
        self.counters["probes"] += k
        add_probes(job.probed, picks)
        left = job.unassigned
        return probe_sends(picks, lambda c: Probe(job_id, job.estimate, left, c))

    # --- SSS -----------------------------------------------------------------------------------------
    def _rejected(self, node: str, msg: ProbeRejected) -> list[Effect]:
        if msg.stamp > self.stamp and msg.bitvector:
            self.bitvector, self.stamp = msg.bitvector, msg.stamp
        job = self.jobs.get(msg.job_id)
        if job is None:
            return []
        held = job.probed.get(node, 0)
        if held == 0:  # a node that holds none of the job's probes (a bad frame): nothing to re-send
            self.counters["rejections_unheld"] += 1
            return []
        count = max(1, min(msg.count, held))  # never more probes than the node held
        if held > count:
            job.probed[node] = held - count
        else:
            job.probed.pop(node, None)
        if job.unassigned == 0:  # nothing left to place
            return []
        if msg.attempt == 0:
            picks = self._free_by_bitvector(count)
            attempt = 1
        else:
            picks = None
            attempt = LAST_ATTEMPT
        if picks is None:
            attempt = LAST_ATTEMPT
            picks = self._random(self.live_short or self.live, count)
            self.counters["probes_to_short"] += count
        else:
            self.counters["probes_to_free"] += count
        self.counters["probes_rescheduled"] += count
        add_probes(job.probed, picks)
        left = job.unassigned
        return probe_sends(picks, lambda c: Probe(msg.job_id, job.estimate, left, c, attempt=attempt))

    def _random(self, pool: Sequence[str], k: int) -> dict[str, int]:
        rng = self.rng
        n = len(pool)
        if n == 0:  # as randrange would
            raise ValueError("empty range for randrange()")
        picks: dict[str, int] = {}
        for _ in range(k):
            target = pool[randbelow(rng, n)]  # randrange(n)'s draw
            picks[target] = picks.get(target, 0) + 1
        return picks

    def _free_by_bitvector(self, k: int) -> dict[str, int] | None:
        """k targets drawn uniformly with replacement among the nodes with no long work by the freshest
        bitvector (short-partition nodes always qualify); None when there is none."""
        nodes, is_short, rng = self.nodes, self.is_short, self.rng
        bv = self.bitvector  # read as sent: no conversion per fresher bitvector
        if self.dead_bits or 0 < len(bv) < self.nbytes:  # dead nodes count as busy; a short one is padded
            bits = int.from_bytes(bv, "little") | self.dead_bits
            if self._bv_of != bits:
                self._bv_of = bits
                size = (max(len(nodes), bits.bit_length()) + 7) // 8
                self._bv = bits.to_bytes(size, "little")
            bv = self._bv
        n = len(nodes)
        picks: dict[str, int] = {}  # node -> count (a plain dict: Counter's methods are interpreted)
        candidates: list[str] | None = None
        for _ in range(k):
            if candidates is None:
                for _try in range(32):  # rejection sampling: usually a few tries
                    i = randbelow(rng, n)  # randrange(n)'s draw
                    if _free(bv, is_short, i):
                        picks[nodes[i]] = picks.get(nodes[i], 0) + 1
                        break
                else:
                    candidates = [nodes[i] for i in range(n) if _free(bv, is_short, i)]
            if candidates is not None:
                if not candidates:
                    return None
                target = candidates[randbelow(rng, len(candidates))]
                picks[target] = picks.get(target, 0) + 1
        return picks

    # --- late binding, SBP ---------------------------------------------------------------------------
    def _get_task(self, now: float, node: str, job_id: int) -> list[Effect]:
        i = self.position.get(node) if self.dead_bits else None  # (no look-up while no node is dead)
        if i is not None and self.dead_bits >> i & 1:  # sent before its death, arrived after it was declared
            self.counters["get_task_from_dead"] += 1
            return [Send(node, NoTask(job_id))]  # alive behind a partition, it frees its slot
        job = self.jobs.get(job_id)
        if job is None or not job.unassigned:
            if job is not None:
                self._forget(job, node)
            return [Send(node, NoTask(job_id))]
        if not self.sticky:
            self._forget(job, node)
        index = hand_out(job, node, now)
        left = job.unassigned
        effects: list[Effect] = [
            Send(node, AssignTask(job_id, index, job.durations[index], job.estimate, left))
        ]
        if left == 0 and self.cancel:
            effects.extend(self._leftover(job_id, job))
        elif self.updates and update_due(left, job.told, self.update_ratio):
            job.told = left
            targets = list(job.probed)  # every node holding the job's probes but ``node``
            if node in job.probed:
                targets.remove(node)
            if targets:
                effects.append(Multicast(targets, RemainingUpdate(job_id, left)))
                self.counters["remaining_updates"] += len(targets)
        if left == 0 and not self.cancel:
            effects.extend(self._leftover(job_id, job))
        return effects

    def _leftover(self, job_id: int, job: EagleJob) -> list[Effect]:
        """Every task is handed out: the reservations still out are leftover probes (cancelled or kept)."""
        return leftover_probes(self.counters, job_id, job.probed, self.cancel)

    def _forget(self, job: EagleJob, node: str) -> None:
        """One reservation of ``node`` is used up (non-sticky) or dropped (NoTask)."""
        left = job.probed.get(node, 0)
        if left <= 1:
            job.probed.pop(node, None)
        else:
            job.probed[node] = left - 1

    def _task_finished(self, sender: str, msg: TaskFinished) -> list[Effect]:
        job = self.jobs.get(msg.job_id)
        if job is None:
            self.counters["unknown_task_finished"] += 1
            return []
        if not finished_where_placed(self.counters, job.placed, sender, msg.task_index):
            return []
        return self.task_finished(self.jobs, msg)

    # --- failures ------------------------------------------------------------------------------------
    def node_down(self, now: float, node: str) -> list[Effect]:
        """A node died: never probed again; its tasks and reservations are issued again (first round)."""
        i = self.position.get(node)
        if i is None or self.dead_bits >> i & 1:
            return []
        self.dead_bits |= 1 << i
        self._live_lists()
        effects: list[Effect] = []
        for job_id, job in self.jobs.items():
            k = reissue(self.counters, job, node, now, self.probe_ratio)
            if k and self.live:
                effects += self._probe_long(job_id, job, k) if job.long else self._probe_short(job_id, job, k)
        return effects

    def node_up(self, node: str) -> list[Effect]:
        i = self.position.get(node)
        if i is not None and self.dead_bits >> i & 1:
            self.dead_bits &= ~(1 << i)
            self._live_lists()
        return []

    def _live_lists(self) -> None:
        dead = self.dead_bits
        alive = [not dead >> i & 1 for i in range(len(self.nodes))]
        self.live = [n for n, ok in zip(self.nodes, alive, strict=True) if ok]
        self.live_short = [n for n in self.short if alive[self.position[n]]]
        self.live_general = [n for n in self.general if alive[self.position[n]]]
        short = set(self.short)
        self.is_short = [ok and n in short for n, ok in zip(self.nodes, alive, strict=True)]
