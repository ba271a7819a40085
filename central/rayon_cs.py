"""Rayon/CapacityScheduler ("Rayon/CS"), the baseline of TetriSched's evaluation (EuroSys'16 §2.1, §6.1,
§6.2.2, §7.1, §7.2; spec §1.11). [P] the paper's words, [R] reconstructed, [D] our decision.

What the paper says CS does:

- [P §6.1] "we enable container preemption in CapacityScheduler, so that the scheduler can preempt
  running tasks to enforce Rayon capacity guarantees for reserved jobs. This gives a significant boost
  in terms of its ability to meet its capacity guarantees, particularly when the cluster is heavily
  loaded."
- [P §6.2.2] "An SLO job is *accepted* iff its reservation requested was accepted by the Rayon
  reservation system—used for both Rayon/CS and Rayon/TetriSched stacks." (The workload's ``slo``
  field says which jobs Rayon accepted, :mod:`aviary.common.gshet`.)
- [P §7.1] under-estimates result "in reservations terminating before jobs complete, resulting in
  transfer of accepted SLO jobs into the best-effort queue in Rayon/CS. Jobs in the best-effort queue
  then consist of a mixture of incomplete accepted SLO jobs, SLO jobs without reservations, and
  best-effort jobs"; over-estimates: "the deadline information for any SLO jobs in the best-effort queue
  is lost [...] As over-estimate-based reservations are released early, temporarily available capacity
  causes more best-effort jobs to be started. But, these jobs often don't complete before the next SLO
  job with a reservation arises, triggering preemption that consumes time and resources."
- [P §7.2] "over-estimation favors Rayon/CS, as the job is started earlier in its reservation
  interval, increasing the odds of timely completion."
- [P §8] "Rayon treats space as a scalar capacity (or multi-dimensional capacity)".

What this module does:

- **Reservations** ([R] spec §1.11 step 1): when the policy first sees an accepted SLO gang of k tasks
  and estimate d, it books the *latest* start s in [arrival, deadline - d] (quanta of ``quantum`` s)
  at which k more slots fit ([R] Rayon's greedy agent reserves as late as possible). With ``hetero``
  (default) a GPU or MPI job (a preference with slowdown > 1) is first booked for d on its preferred
  partition (the GPU-labelled nodes, or one rack: the latest start over the racks) as well as on the
  whole-cluster plan; if no such start exists it is booked for **d x slowdown** on the whole cluster,
  the estimate where the preference is not met, so it can still be accepted at a longer reservation
  [D, issue 24]; failing both, for d on the whole cluster (what Rayon admitted, spec §1.11). Counters
  ``rayon_reserved_preferred`` / ``_slowed`` / ``_plain``. Without ``hetero`` every reservation is d on
  the scalar plan (the user's request for the preferred placement, spec §1.11). No start fits:
  ``rayon_not_reserved``, and the job is served as an SLO job without reservation. The paper asks to
  "make YARN CS as informed and comparable to TetriSched as possible" (§6.1): hence the partitions.
- **No start before the reservation** [D from P §7.2]: "started earlier in its reservation interval"
  reads as a job started at the beginning of its interval, which the booking of an over-estimated
  runtime places earlier; Rayon gives a reservation queue its capacity only over the reservation's
  interval [R]. So an accepted job waits for its reservation start, then gets its k containers.
- **Execution** (CS, [P §6.1], spec §1.11 step 2): a gang whose reservation has begun is placed before
  anything else. Placement is heterogeneity-aware with ``hetero`` [D, issue 24: YARN node labels and
  rack locality]: a GPU job on GPU-labelled nodes, an MPI gang inside one rack (the booked rack first,
  then the rack with most free slots), when free slots allow; else its preferred nodes after
  preempting best-effort containers there; else any free slots; else any slots after preemption. A
  reserved gang that finds too few slots even so waits for the next cycle (``rayon_reserved_waiting``).
- **Preemption** ([P §6.1], [R] spec §1.11): kill and requeue, work lost
  (:meth:`aviary.central.state.CentralState.preempt`; ``tasks_preempted``, ``preempted_lost_ms``).
  Preemptable: the running tasks of every job that holds no reservation in force (best effort, SLO
  without reservation, and accepted jobs whose reservation has ended: "its tasks keep running but become
  preemptable", spec §1.11). Victims are taken from the most recently arrived job first, its most
  recently started task first ([R] YARN's ProportionalCapacityPreemptionPolicy takes containers from the
  youngest applications first). A killed task rejoins the FIFO queue at its job's place (its arrival).
- **Best-effort queue** ([P §7.1], spec §1.11 step 2): everything else (best effort, SLO without
  reservation, accepted jobs whose reservation ended before they could start: their deadline forgotten)
  waits in one FIFO queue; its head starts when k slots are free (YARN hoarding: containers go to the
  head as they free, and it starts when it holds k; nothing overtakes it). It is placed as above without
  preemption: rack-local or on GPU nodes when free slots allow, else anywhere.
- Controls: ``preempt=False``, no preemption (a reserved gang waits for free slots); ``hetero=False``,
  heterogeneity-blind booking and placement (the stand-in before issue 24); ``book="slowed"``, a GPU/MPI
  job's reservation tried first for d x slowdown anywhere, then on its partition; ``early=True``, an
  accepted job waits in the FIFO queue before its reservation too (started early, it is preemptable
  until its reservation begins).

Slots as in :mod:`aviary.central.tetrisched` (``slot="core"``: whole free cores; ``"node"``: free nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..common.choices import BOOKINGS
from ..common.reservations import CapacityPlan
from ..common.resources import EPS, Resources
from .packing import Placement, PlacementPolicy
from .state import JobState, NodeState, StageState
from .tetrisched import SLOTS, slot_count

Booking = tuple[str, float, str | None]
"""A reservation to try: its counter, its duration, its partition (None: the whole cluster)."""

Victim = tuple[JobState, int, NodeState, StageState]
"""A preemptable task: its job, task index, node and stage."""


@dataclass(slots=True)
class Reservation:
    start: float
    end: float
    k: int
    part: str | None = None  # the preferred partition it was booked on ("attr:gpu", "rack:r1"); None: any


class RayonCS(PlacementPolicy):
    """The baseline (module docstring): ``cycle`` seconds between matches, ``quantum`` of the capacity
    plans (seconds), ``slot`` "core" or "node", ``hetero`` heterogeneity-aware booking and placement,
    ``preempt`` container preemption for reservations, ``book`` which reservation a GPU/MPI job tries
    first, ``early`` (a control) an accepted job also waits in the FIFO queue before its reservation."""

    def __init__(
        self,
        *,
        cycle: float = 1.0,
        quantum: float = 1.0,
        slot: str = "core",
        hetero: bool = True,
        preempt: bool = True,
        book: str = "preferred",
        early: bool = False,
    ) -> None:
        super().__init__()
        if slot not in SLOTS or not cycle > 0 or not quantum > 0:
            raise ValueError(f"rayon_cs: slot must be core or node, cycle and quantum > 0: {slot}, {cycle}")
        self.cycle = cycle
        self.quantum = quantum
        self.slot = slot
        self.hetero = hetero
        self.preempt = preempt
        if book not in BOOKINGS:
            raise ValueError(f"rayon_cs: book must be one of {', '.join(BOOKINGS)}, got {book!r}")
        self.book = book
        self.early = early
        self.booking: CapacityPlan | None = None  # the whole cluster's plan (made on first use)
        self.part_plans: dict[str, CapacityPlan] = {}
        self.parts: dict[str, list[NodeState]] = {}  # "attr:<name>" and "rack:<r>" node sets
        self.reservations: dict[int, Reservation] = {}
        self.seen: set[int] = set()

    def slots(self, free: Resources, node: NodeState) -> int:
        return slot_count(free, node.capacity, self.slot)

    # --- partitions and bookings ----------------------------------------------------------------------
    def part(self, name: str) -> list[NodeState]:
        """The nodes of a preferred partition: ``rack:<r>`` or ``attr:<attribute>`` (truthy)."""
        nodes = self.parts.get(name)
        if nodes is None:
            kind, _, value = name.partition(":")
            if kind == "rack":
                nodes = [n for n in self.state.nodes if str(n.attributes.get("rack")) == value]
            else:
                nodes = [n for n in self.state.nodes if n.attributes.get(value)]
            self.parts[name] = nodes
        return nodes

    def preferred(self, job: JobState) -> list[str]:
        """The partitions that meet the job's preference (none without one, or with slowdown 1)."""
        if not self.hetero or job.preference is None or job.slowdown <= 1.0:
            return []
        if job.preference == "rack":
            racks = dict.fromkeys(
                str(n.attributes["rack"]) for n in self.state.nodes if "rack" in n.attributes
            )
            return [f"rack:{r}" for r in racks]
        return [f"attr:{job.preference}"] if self.part(f"attr:{job.preference}") else []

    def plan_of(self, name: str) -> CapacityPlan:
        plan = self.part_plans.get(name)
        if plan is None:
            plan = self.part_plans[name] = CapacityPlan(
                sum(self.slots(n.capacity, n) for n in self.part(name)), self.quantum
            )
        return plan

    def latest(
        self, lo: float, hi: float, duration: float, k: int, plans: list[CapacityPlan]
    ) -> tuple[int, int] | None:
        """The latest quantum start s in [lo, hi - duration] where k slots fit every plan for the
        duration's quanta: (s, quanta), or None (the rule of :meth:`CapacityPlan.book_latest`)."""
        q = self.quantum
        first = math.ceil(lo / q - EPS)
        last = math.floor((hi - duration) / q + EPS)
        length = max(1, math.ceil(duration / q - EPS))
        for s in range(last, first - 1, -1):
            if all(p.reserved.get(t, 0) + k <= p.capacity for p in plans for t in range(s, s + length)):
                return s, length
        return None

    def admit(self, job: JobState, stage: StageState) -> None:
        """Book the job's reservation (module docstring), if it is an accepted SLO job."""
        self.seen.add(job.job_id)
        if job.slo != "accepted" or job.deadline is None:
            return
        if self.booking is None:
            self.booking = CapacityPlan(
                sum(self.slots(n.capacity, n) for n in self.state.nodes), self.quantum
            )
        k, d = stage.unplaced, stage.estimate
        lo, hi = job.arrival, job.arrival + job.deadline
        booking = self.booking
        # Steps tried in order; in a step, the latest start over its alternatives (counter, duration,
        # partition or None: the whole cluster).
        plain: list[Booking] = [("rayon_reserved_plain", d, None)]
        steps = [plain]
        preferred = self.preferred(job)
        if preferred:
            slowed: list[Booking] = [("rayon_reserved_slowed", d * job.slowdown, None)]
            on_part: list[Booking] = [("rayon_reserved_preferred", d, name) for name in preferred]
            steps = [on_part, slowed, plain] if self.book == "preferred" else [slowed, on_part, plain]
        best: tuple[int, int, str, str | None] | None = None
        for step in steps:
            for counter, duration, part in step:
                plans = [booking] if part is None else [booking, self.plan_of(part)]
                found = self.latest(lo, hi, duration, k, plans)
                if found is not None and (best is None or found[0] > best[0]):
                    best = (found[0], found[1], counter, part)
            if best is not None:
                break
        if best is None:
            self.state.core.counters["rayon_not_reserved"] += 1
            return
        s, length, counter, part = best
        self.state.core.counters[counter] += 1
        for plan in [booking] if part is None else [booking, self.plan_of(part)]:
            for t in range(s, s + length):
                plan.reserved[t] = plan.reserved.get(t, 0) + k
        q = self.quantum
        self.reservations[job.job_id] = Reservation(s * q, (s + length) * q, k, part)

    # --- the cycle ---------------------------------------------------------------------------------------
    def plan(self, now: float) -> list[Placement]:
        # Pending gangs: stages not started, and the tasks of a started one to place again (a dead
        # node's, or preempted ones).
        gangs = [
            (job, s) for job in self.state.active.values() for s in job.runnable if not s.placed or s.retry
        ]
        for job, stage in gangs:
            if job.job_id not in self.seen:
                self.admit(job, stage)
        free = {n.name: n.free for n in self.state.nodes}
        out: list[Placement] = []
        reserved, queue = [], []
        for job, stage in gangs:
            r = self.reservations.get(job.job_id)
            if r is not None and r.start <= now + EPS < r.end:
                reserved.append((r.start, job.arrival, job.job_id, job, stage))
            elif r is None or now + EPS >= r.end or self.early:
                queue.append((job.arrival, job.job_id, job, stage))
            # else: a reservation still to come; the job waits for it
        for *_, job, stage in sorted(reserved, key=lambda e: e[:3]):
            if not self.launch(now, job, stage, free, out, self.preempt):
                self.state.core.counters["rayon_reserved_waiting"] += 1
        for *_, job, stage in sorted(queue, key=lambda e: e[:2]):
            if self.free_slots(free) < stage.unplaced or not self.launch(now, job, stage, free, out, False):
                break  # FIFO: nothing overtakes the head
        return out

    def free_slots(self, free: dict[str, Resources]) -> int:
        return sum(self.slots(free[n.name], n) for n in self.state.nodes)

    def protected(self, job: JobState, now: float) -> bool:
        """A job whose reservation is in force: its containers are not preemptable."""
        r = self.reservations.get(job.job_id)
        return r is not None and r.start <= now + EPS < r.end

    def victims(self, now: float, nodes: list[NodeState]) -> list[Victim]:
        """The preemptable running tasks on ``nodes``, in the order they are taken (module docstring)."""
        names = {n.name for n in nodes}
        found = []
        for (job_id, index), (node, stage, start) in self.state.placed.items():
            if node.name in names:
                job = self.state.jobs[job_id]
                if not self.protected(job, now):
                    found.append((-job.arrival, -job_id, -start, -index, job, node, stage))
        found.sort(key=lambda e: e[:4])
        return [(job, -neg_index, node, stage) for _, _, _, neg_index, job, node, stage in found]

    def candidates(self, job: JobState, free: dict[str, Resources]) -> list[list[NodeState]]:
        """The node sets that meet the job's preference, best first (the booked rack, then by free
        slots)."""
        parts = self.preferred(job)
        if job.preference == "rack":
            r = self.reservations.get(job.job_id)
            booked = r.part if r is not None else None
            parts.sort(
                key=lambda p: (p != booked, -sum(self.slots(free[n.name], n) for n in self.part(p)), p)
            )
        return [self.part(p) for p in parts]

    def gather(
        self,
        now: float,
        nodes: list[NodeState],
        stage: StageState,
        free: dict[str, Resources],
        kill: bool,
    ) -> tuple[list[NodeState], list[Victim]] | None:
        """``stage.unplaced`` slots on ``nodes``: random free ones, or (``kill``) every free one plus
        those preemption frees; the slots and the victims, or None."""
        k, demand = stage.unplaced, stage.demand
        room = {n.name: free[n.name] for n in nodes}
        slots: list[NodeState] = []

        def take(node: NodeState) -> None:
            r = room[node.name]
            while self.slots(r, node) and demand.fits_in(r):
                after = r.minus(demand)
                slots.append(node)
                if after == r:  # a demand that takes no room (none, or below rounding): room for the gang
                    slots.extend([node] * (k - 1))
                    break
                r = after
            room[node.name] = r

        for node in nodes:
            take(node)
        if len(slots) >= k:
            return self.rng.sample(slots, k), []
        if not kill:
            return None
        chosen: list[Victim] = []
        gained: set[str] = set()  # nodes where the kills so far made a slot
        for victim in self.victims(now, nodes):
            _, _, node, vstage = victim
            room[node.name] = room[node.name].plus(vstage.demand)
            chosen.append(victim)
            had = len(slots)
            take(node)
            if len(slots) > had:
                gained.add(node.name)
            if len(slots) >= k:  # kill only on the nodes that gave a slot: the others would free nothing
                return slots[:k], [v for v in chosen if v[2].name in gained]
        return None

    def launch(
        self,
        now: float,
        job: JobState,
        stage: StageState,
        free: dict[str, Resources],
        out: list[Placement],
        kill: bool,
    ) -> bool:
        """Place the whole gang (module docstring's order of node sets), or nothing."""
        preferred = self.candidates(job, free)
        everything = self.state.nodes
        attempts = [(nodes, False) for nodes in preferred]
        if kill:
            attempts += [(nodes, True) for nodes in preferred]
        attempts.append((everything, False))
        if kill:
            attempts.append((everything, True))
        counters = self.state.core.counters
        for nodes, preempting in attempts:
            got = self.gather(now, nodes, stage, free, preempting)
            if got is None:
                continue
            slots, victims = got
            for vjob, index, node, vstage in victims:
                if self.state.preempt(now, vjob.job_id, index):
                    free[node.name] = free[node.name].plus(vstage.demand)
            for node in slots:
                free[node.name] = free[node.name].minus(stage.demand)
                out.append((job, stage, node))
            if preferred:
                met = nodes is not everything
                counters["rayon_placed_preferred" if met else "rayon_placed_anywhere"] += 1
            return True
        return False

    def on_finished(self, job: JobState) -> None:
        if job.finished == job.tasks:
            self.reservations.pop(job.job_id, None)
            self.seen.discard(job.job_id)


__all__ = ["RayonCS", "Reservation"]
