"""A Rayon/CapacityScheduler-like baseline for TetriSched's evaluation (EuroSys'16 §6.1, §6.2.2, §7.1;
spec §1.11 [D]): reservations for accepted SLO jobs on a scalar capacity plan, one FIFO best-effort
queue for everything else, heterogeneity-blind placement.

- **Admission** ([D] spec §1.11 step 1): when the policy first sees an accepted SLO gang of k tasks and
  estimated duration d, it books the *latest* start s in [arrival, deadline - d] (on quanta of
  ``quantum`` seconds) at which k more slots fit the reserved capacity over [s, s + d) ([R] Rayon's
  greedy agent reserves as late as possible). No such start: the job is an SLO job without reservation.
  The workload's ``slo`` field says which jobs Rayon accepted; this booking gives them their interval.
- **Execution** (CS, [D] spec §1.11 step 2): a gang whose reservation has begun starts as soon as k slots
  are free anywhere (any nodes: Rayon "treats space as a scalar capacity", §8), before the queue is
  served. Everything else (best effort, SLO without reservation, and accepted jobs whose reservation
  ended before they could start: "transfer ... into the best-effort queue", §7.1, their deadline
  forgotten) waits in one FIFO queue; its head starts when k slots are free beyond those that
  reservations not yet started will hold during its estimated run, and nothing overtakes it (YARN's
  hoarding gang).
- **No preemption** [D]: the paper's CS preempts best-effort containers to honour reservations (§6.1);
  the central layer has no kill-and-requeue of placed tasks. Instead a queued job is not started if it
  would be preempted, by its estimate: if it would still hold slots a reservation needs. This uses the
  job's runtime estimate, which CS does not have; an under-estimated job still delays a reservation
  (no preemption to take its slots back). Record this deviation with any result.

Slots as in :mod:`aviary.central.tetrisched` (``slot="core"``: whole free cores; ``"node"``: free nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..common.reservations import CapacityPlan
from ..common.resources import EPS, Resources
from .packing import Placement, PlacementPolicy
from .state import JobState, NodeState, StageState
from .tetrisched import SLOTS, slot_count


@dataclass(slots=True)
class Reservation:
    start: float
    end: float
    k: int


class RayonCS(PlacementPolicy):
    """The baseline (module docstring): ``cycle`` seconds between matches, ``quantum`` of the capacity
    plan (seconds), ``slot`` "core" or "node"."""

    def __init__(self, *, cycle: float = 1.0, quantum: float = 1.0, slot: str = "core") -> None:
        super().__init__()
        if slot not in SLOTS or not cycle > 0 or not quantum > 0:
            raise ValueError(f"rayon_cs: slot must be core or node, cycle and quantum > 0: {slot}, {cycle}")
        self.cycle = cycle
        self.quantum = quantum
        self.slot = slot
        self.booking: CapacityPlan | None = None  # the reservations' capacity plan (made on first use)
        self.reservations: dict[int, Reservation] = {}
        self.seen: set[int] = set()

    def slots(self, free: Resources, node: NodeState) -> int:
        return slot_count(free, node.capacity, self.slot)

    def admit(self, job: JobState, stage: StageState) -> None:
        """Book the latest start that fits the scalar capacity plan, if any."""
        self.seen.add(job.job_id)
        if job.slo != "accepted" or job.deadline is None:
            return
        if self.booking is None:
            self.booking = CapacityPlan(
                sum(self.slots(n.capacity, n) for n in self.state.nodes), self.quantum
            )
        k = stage.unplaced
        booked = self.booking.book_latest(job.arrival, job.arrival + job.deadline, stage.estimate, k)
        if booked is None:
            self.state.core.counters["rayon_not_reserved"] += 1
        else:
            self.reservations[job.job_id] = Reservation(booked[0], booked[1], k)

    def plan(self, now: float) -> list[Placement]:
        # Pending gangs: stages not started, and what a dead node ran of a started one (its retry).
        gangs = [
            (job, s) for job in self.state.active.values() for s in job.runnable if not s.placed or s.retry
        ]
        for job, stage in gangs:
            if job.job_id not in self.seen:
                self.admit(job, stage)
        free = {n.name: n.free for n in self.state.nodes}
        out: list[Placement] = []
        reserved, queue, waiting = [], [], []
        for job, stage in gangs:
            r = self.reservations.get(job.job_id)
            if r is not None and r.start <= now + EPS < r.end:
                reserved.append((r.start, job.arrival, job, stage))
            elif r is None or now + EPS >= r.end:
                queue.append((job.arrival, job.job_id, job, stage))
            else:
                waiting.append(r)  # a reservation still to come
        for *_, job, stage in sorted(reserved, key=lambda e: e[:2]):
            if not self.launch(job, stage, free, out):
                waiting.append(self.reservations[job.job_id])
        for *_, job, stage in sorted(queue, key=lambda e: e[:2]):
            blocked = self.withheld(waiting, now, stage.estimate)
            if self.free_slots(free) - blocked < stage.unplaced or not self.launch(job, stage, free, out):
                break  # FIFO: nothing overtakes the head
        return out

    def withheld(self, waiting: list[Reservation], now: float, duration: float) -> int:
        """The most slots that reservations not yet started hold at any time in ``[now, now + duration)``:
        what the queue may not take for a job of that estimated duration (the stand-in for CS preempting
        best-effort containers when a reservation needs them, [D])."""
        end = now + max(duration, self.quantum)
        points = [now] + [r.start for r in waiting if now < r.start < end]
        return max((sum(r.k for r in waiting if r.start <= t + EPS < r.end) for t in points), default=0)

    def free_slots(self, free: dict[str, Resources]) -> int:
        return sum(self.slots(free[n.name], n) for n in self.state.nodes)

    def launch(
        self, job: JobState, stage: StageState, free: dict[str, Resources], out: list[Placement]
    ) -> bool:
        """All of the gang's tasks on random free slots anywhere, or nothing."""
        slots: list[NodeState] = []
        for node in self.state.nodes:
            room, n = free[node.name], 0
            while n < stage.unplaced and self.slots(room, node) and stage.demand.fits_in(room):
                room = room.minus(stage.demand)
                n += 1
            slots += [node] * n
        if len(slots) < stage.unplaced:
            return False
        for node in self.rng.sample(slots, stage.unplaced):
            free[node.name] = free[node.name].minus(stage.demand)
            out.append((job, stage, node))
        return True

    def on_finished(self, job: JobState) -> None:
        if job.finished == job.tasks:
            self.reservations.pop(job.job_id, None)
            self.seen.discard(job.job_id)


__all__ = ["RayonCS", "Reservation"]
