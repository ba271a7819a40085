"""TetriSched (Tumanov et al., EuroSys'16; spec §1) as a periodic :class:`PlacementPolicy`.

Every ``cycle`` seconds (:meth:`TetriSched.plan`, called by :class:`~aviary.central.packing.PackingCore`):

1. **Pending gangs.** Every runnable stage not yet placed is one gang of its unplaced tasks; each task
   takes one *slot* (spec §1.4, §1.13 [D]: the capacity unit is a slot; ``slot="core"``: a node offers
   as many slots as whole cores, so a cluster of one-slot nodes is the paper's one-container-per-node
   model; ``slot="node"``: a whole node per task, whatever its size). A node's free slots are
   counted from its free resource vector, so a task's demand must fit one slot.
2. **Time** (§3.2.1; spec §1.5). Quanta of ``quantum`` seconds from now; start options at quanta
   0 .. H-1, H = ``plan_ahead / quantum`` (at least 1; the NP variant: H = 1); an option of estimated
   duration d occupies ceil(d / quantum) quanta (rounded up: conservative).
3. **Availability** (spec §1.3 [D], §1.7). A running task holds its slot until its estimated end: its
   launch time plus the option's estimated duration. Past that (an under-estimate, §7.1: "adjusting
   runtime under-estimates upward when observed to be too low") it is expected to end one quantum
   later, re-evaluated every cycle.
4. **Equivalence sets and dynamic partitioning** (§4.2, §5, §7.3; spec §1.4 [D]). Sets named by the
   templates: ``all``; ``attr:<a>`` (nodes whose attribute ``a`` is true, e.g. the GPU nodes);
   ``rack:<r>`` (nodes whose ``rack`` attribute is r). Each cycle the nodes are grouped by the
   signature "which of this cycle's sets contain me": the coarsest partition that keeps every set a
   union of parts. A part's availability per quantum is the sum of its nodes' free slots.
5. **STRL per gang** (§4.3, §6.2.1; spec §1.10): options = (equivalence set, duration):
   unconstrained: (all, d); GPU (``preference="gpu"``, or any attribute): (attr:gpu, d) and
   (all, d x slowdown); MPI (``preference="rack"``): (rack:r, d) per rack and (all, d x slowdown).
   One nCk per option and start, all under one ``max`` (a flat max is the paper's nested max of §4.4
   without the inner indicators); every gang under one ``sum``.
6. **Value functions** (§6.2.2, Fig. 5; spec §1.6 [D]): of the option's completion c = s + d, best
   effort C x max(floor, 1 - (c - ref) / (W + d_max + q)) with ref = now (or the arrival), accepted
   SLO 1000 C and SLO without reservation 25 C up to the deadline; options completing after an SLO
   job's deadline are culled (§3.2.1). An SLO job left without any option can never meet its deadline:
   ``late_slo="be"`` (default) plans it as best effort from then on (so every job finishes and counts
   as a missed SLO), ``"drop"`` culls it for good as the paper culls zero-value jobs (§7.3; it never
   runs, so a replay would not end).
7. **Solve** (:mod:`aviary.central.strl_milp`), warm-started with last cycle's plan (§3.2.2).
8. **Launch** (§3.2.1): only gangs planned at quantum 0, all tasks at once, on free slots of the parts
   the solver chose (spec §1.7 [D]: any free slots of a part, picked with the core's seeded random
   generator); the rest are re-planned next cycle. No preemption (§7.2).

Variants (§6.3, Table 2; spec §1.9): ``nh`` (no heterogeneity: every option from ``all`` with the
duration conservatively multiplied by the slowdown of jobs with a preference), ``ng`` (no global
scheduling: one solve per gang, in three FIFO queues, accepted SLO, SLO without reservation, best
effort; each gang's space-time plan is taken out of the availability seen by the next), ``np`` (no
plan-ahead: start-now options only).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..common.choices import WARM_STARTS
from ..common.resources import EPS, Resources
from .packing import Placement, PlacementPolicy
from .state import JobState, NodeState, StageState
from .strl import Max, NCk, Sum
from .strl_milp import Choice, Model, Relaxation, SolverSettings, Supply, compile_strl

ALL = "all"
SLOTS = ("core", "node")
LATE_SLO = ("be", "drop")
BE_DECAY = ("now", "arrival")
LP_NOISE = 3.0  # [D] standard deviation, in ranks, of the noise on the LP orders' later passes
SLO_FACTORS = {"accepted": 1000.0, "noreserve": 25.0}
QUEUES = {"accepted": 0, "noreserve": 1}  # NG's priority queues; everything else is best effort (2)


@dataclass(frozen=True, slots=True)
class Option:
    """A placement option of a gang (before start times): where from and for how long (seconds)."""

    kind: str  # "pref" (preferred placement) or "any" (anywhere, slowed down)
    set: str
    duration: float


@dataclass(slots=True)
class Gang:
    """One pending runnable stage, planned as a gang of its unplaced tasks."""

    job: JobState
    stage: StageState
    options: list[Option]
    slo: str  # accepted | noreserve | be (after demotion)
    deadline: float | None  # absolute

    @property
    def key(self) -> tuple[int, int]:
        return self.job.job_id, self.stage.index

    @property
    def k(self) -> int:
        return self.stage.unplaced


@dataclass(slots=True)
class CycleRecord:
    """What one cycle did (for measurements; not used in decisions)."""

    now: float
    pending: int
    launched: int
    cols: int = 0
    rows: int = 0
    solves: int = 0
    seconds: float = 0.0  # HiGHS' own run time, summed
    objective: float = 0.0
    warm: int = 0  # solves given a MIP start
    warm_accepted: int = 0
    status: list[str] = field(default_factory=list)


def worth(plan: tuple[dict[Any, dict[Hashable, int]], float]) -> float:
    """A greedy plan's value (for ``max``)."""
    return plan[1]


def slot_count(free: Resources, capacity: Resources, slot: str) -> int:
    """Whole slots in ``free`` on a node of ``capacity`` (spec §1.13: the capacity unit is a slot): its
    whole free cores (``slot="core"``), or 1 when the node is all free (``"node"``)."""
    if slot == "core":
        return int(free[0] + EPS) if free[0] > 0 else 0
    return int(all(f >= c - EPS for f, c in zip(free, capacity, strict=True)))


class TetriSched(PlacementPolicy):
    """TetriSched's cycle planner (module docstring). Parameters (seconds of the replay clock):

    ``cycle`` seconds between plans (paper: 4 s); ``quantum`` the time quantum (default: ``cycle``);
    ``plan_ahead`` the window of start options (spec [D] 96 s); ``slot`` "core" or "node";
    ``be_value`` the best-effort constant C; ``be_floor`` the BE value's floor (as a share of C);
    ``be_decay_from`` "now" or "arrival"; ``accepted_factor``, ``noreserve_factor`` SLO values as
    multiples of C (paper: 1000, 25); ``late_slo`` "be" or "drop"; ``gap`` relative MIP gap (0.1);
    ``max_nodes`` branch-and-bound node cap (0: none); ``time_limit`` solver wall-clock limit
    (``None``: none; irreproducible); ``solver_seed``;
    ``warm_start`` "greedy" (last plan completed greedily), "previous" (last plan only) or "off";
    ``lp_rounds`` greedy passes guided by the LP relaxation (0: no LP relaxation), a start taken without
    branch and bound when within the gap (:meth:`solve`);
    ``presolve`` HiGHS presolve (off by default: see :class:`SolverSettings`);
    variants ``nh``, ``ng``, ``np``.
    """

    def __init__(
        self,
        *,
        cycle: float = 4.0,
        quantum: float | None = None,
        plan_ahead: float = 96.0,
        slot: str = "core",
        be_value: float = 1.0,
        be_floor: float = 0.01,
        be_decay_from: str = "now",
        accepted_factor: float = 1000.0,
        noreserve_factor: float = 25.0,
        late_slo: str = "be",
        gap: float = 0.10,
        max_nodes: int = 500,
        time_limit: float | None = None,
        solver_seed: int = 0,
        warm_start: str = "greedy",
        lp_rounds: int = 35,
        presolve: bool = False,
        nh: bool = False,
        ng: bool = False,
        np: bool = False,
    ) -> None:
        super().__init__()
        for name, got, allowed in (
            ("slot", slot, SLOTS),
            ("late_slo", late_slo, LATE_SLO),
            ("be_decay_from", be_decay_from, BE_DECAY),
            ("warm_start", warm_start, WARM_STARTS),
        ):
            if got not in allowed:
                raise ValueError(f"tetrisched: {name} must be one of {', '.join(allowed)}, got {got!r}")
        if not cycle > 0 or not (quantum is None or quantum > 0) or not plan_ahead >= 0 or lp_rounds < 0:
            raise ValueError(
                f"tetrisched: cycle and quantum must be > 0, plan_ahead and lp_rounds >= 0: {cycle}, "
                f"{quantum}, {plan_ahead}, {lp_rounds}"
            )
        self.cycle = cycle
        self.quantum = quantum if quantum is not None else cycle
        self.plan_ahead = 0.0 if np else plan_ahead
        self.slot = slot
        self.be_value = be_value
        self.be_floor = be_floor
        self.be_decay_from = be_decay_from
        self.slo_value = {"accepted": accepted_factor * be_value, "noreserve": noreserve_factor * be_value}
        self.late_slo = late_slo
        self.settings = SolverSettings(gap, max_nodes or None, time_limit, solver_seed, presolve=presolve)
        self.warm_start = warm_start
        self.lp_rounds = lp_rounds
        self.nh, self.ng, self.np = nh, ng, np
        self.planned_end: dict[tuple[int, int], float] = {}  # (job, stage) -> estimated end when launched
        self.previous: dict[Any, dict[Hashable, int]] = {}  # last plan: leaf tag -> grants
        self.demoted: set[int] = set()
        self.records: list[CycleRecord] = []
        self._racks: list[str] | None = None
        self._set_slots: dict[str, int] = {}

    def cycle_log(self) -> list[Any]:
        return [[r.now, r.pending, r.launched, r.cols, r.rows, r.solves, r.seconds] for r in self.records]

    def gauges(self) -> dict[str, float]:
        """The last cycle that solved a MILP: its HiGHS time (ms) and columns (a cycle under way, appended
        before its solve, is skipped)."""
        for r in reversed(self.records[-50:]):
            if r.solves:
                return {"solver_ms": r.seconds * 1000, "milp_columns": float(r.cols)}
        return {}

    # --- the cycle ---------------------------------------------------------------------------------
    @property
    def starts(self) -> int:
        """H: the number of start quanta (NP: 1, start now only)."""
        return max(1, int(self.plan_ahead / self.quantum + EPS))

    def plan(self, now: float) -> list[Placement]:
        gangs = self.gangs(now)
        record = CycleRecord(now, len(gangs), 0)
        self.records.append(record)
        if not gangs:
            self.previous = {}
            return []
        d_max = max(o.duration for g in gangs for o in g.options)
        built = {g.key: self.expression(g, now, d_max) for g in gangs}
        exprs = {key: e for key, e in built.items() if e is not None}
        sets = self.used_sets(exprs.values())
        parts, members = self.partition(sets)
        avail = self.availability(now, members, min(self.horizon(exprs.values()), self.starts))
        by_key = {g.key: g for g in gangs}
        chosen: list[Choice] = []
        supply = Supply(parts, avail)
        order = sorted(
            (g for g in gangs if g.key in exprs), key=self.priority if self.ng else self.seed_order
        )
        if self.ng:
            for g in order:
                chosen += self.solve([(g, exprs[g.key])], supply, record, take=True)
        elif order:
            chosen = self.solve([(g, exprs[g.key]) for g in order], supply, record)
        self.previous = {c.leaf.tag: c.grants for c in chosen}
        placements = self.launch(now, [c for c in chosen if c.leaf.start == 0], by_key, members)
        record.launched = len({(j.job_id, s.index) for j, s, _ in placements})
        return placements

    def gangs(self, now: float) -> list[Gang]:
        """The pending gangs in arrival order, with their options (template, spec §1.10)."""
        out = []
        for job in self.state.active.values():
            for stage in job.runnable:
                if stage.placed and not stage.retry:
                    continue  # running (a gang launches whole); what a dead node ran is a gang again
                deadline = None if job.deadline is None else job.arrival + job.deadline
                slo = job.slo if job.slo in SLO_FACTORS and job.job_id not in self.demoted else "be"
                out.append(Gang(job, stage, self.options(job, stage), slo, deadline))
        return out

    def options(self, job: JobState, stage: StageState) -> list[Option]:
        """(set, duration) choices: preferred placement at the estimate, anywhere slowed down (§4.3)."""
        d = stage.estimate
        pref, slow = job.preference, max(job.slowdown, 1.0)
        if pref is None or slow == 1.0:
            return [Option("any", ALL, d)]  # no preference, or nothing to gain from it
        if self.nh:
            return [Option("any", ALL, d * slow)]
        sets = [f"rack:{r}" for r in self.racks()] if pref == "rack" else [f"attr:{pref}"]
        prefs = [Option("pref", s, d) for s in sets]
        return [*prefs, Option("any", ALL, d * slow)]

    def racks(self) -> list[str]:
        if self._racks is None:
            racks = {str(n.attributes["rack"]) for n in self.state.nodes if "rack" in n.attributes}
            self._racks = sorted(racks)
        return self._racks

    def expression(self, g: Gang, now: float, d_max: float) -> Max | None:
        """``max`` over the gang's options and start quanta of ``nCk(set, k, s, ceil(d/q), v(s + d))``,
        options past an SLO deadline culled (§3.2.1); ``None`` if nothing is left."""
        leaves = self.leaves(g, now, d_max)
        if not leaves and g.slo != "be" and self.late_slo == "be":
            self.demoted.add(g.job.job_id)
            self.state.core.counters["tetrisched_slo_demoted"] += 1
            g.slo = "be"
            leaves = self.leaves(g, now, d_max)
        return Max(tuple(leaves)) if leaves else None

    def leaves(self, g: Gang, now: float, d_max: float) -> list[NCk]:
        """One nCk per option and start quantum with a positive value; options whose set never holds
        ``k`` slots are left out."""
        q = self.quantum
        leaves = []
        for o in g.options:
            if self.set_slots(o.set) < g.k:
                continue
            dur = max(1, math.ceil(o.duration / q - EPS))
            for i in range(self.starts):
                start = now + i * q
                v = self.value(g, start + o.duration, now, d_max)
                if v <= 0:
                    break  # later starts complete later still
                tag = (g.job.job_id, g.stage.index, o.kind, o.set, round(start / q, 3))  # absolute quantum
                leaves.append(NCk(o.set, g.k, i, dur, v, tag))
        return leaves

    def set_slots(self, name: str) -> int:
        """The slots of an equivalence set's nodes when all are free."""
        if name not in self._set_slots:
            nodes = (n for n in self.state.nodes if not n.dead and self.members(name, n))
            self._set_slots[name] = sum(self.slots(n.capacity, n) for n in nodes)
        return self._set_slots[name]

    def on_nodes_changed(self) -> None:
        self._set_slots.clear()  # a dead node's slots are no set's any more

    def value(self, g: Gang, completion: float, now: float, d_max: float) -> float:
        """v(c) of §6.2.2 / spec §1.6: SLO constant up to the deadline, else 0; BE linear decay."""
        if g.slo != "be":
            if g.deadline is not None and completion > g.deadline + EPS:
                return 0.0
            return self.slo_value[g.slo]
        ref = now if self.be_decay_from == "now" else g.job.arrival
        span = self.plan_ahead + d_max + self.quantum
        return self.be_value * max(self.be_floor, 1.0 - (completion - ref) / span)

    # --- sets, partitions, availability ------------------------------------------------------------
    def used_sets(self, exprs: Iterable[Max]) -> list[str]:
        names = {ALL}
        for e in exprs:
            names |= {leaf.set for leaf in e.children if isinstance(leaf, NCk)}
        return sorted(names)

    def members(self, name: str, node: NodeState) -> bool:
        if name == ALL:
            return True
        kind, _, what = name.partition(":")
        if kind == "rack":
            return "rack" in node.attributes and str(node.attributes["rack"]) == what
        return bool(node.attributes.get(what))

    def partition(self, sets: list[str]) -> tuple[dict[str, list[Hashable]], dict[Hashable, list[NodeState]]]:
        """Dynamic partitioning (spec §1.4 [D]): nodes grouped by the sets that contain them; returns the
        parts of each set and the nodes of each part (only nodes that can hold a slot)."""
        members: dict[Hashable, list[NodeState]] = defaultdict(list)
        for node in self.state.nodes:
            if node.dead or self.slots(node.capacity, node) == 0:
                continue
            signature = tuple(s for s in sets if self.members(s, node))
            members[signature].append(node)
        parts = {s: [sig for sig in members if s in sig] for s in sets}  # type: ignore[operator]
        return parts, dict(members)

    def slots(self, free: Resources, node: NodeState) -> int:
        return slot_count(free, node.capacity, self.slot)

    def horizon(self, exprs: Iterable[Max]) -> int:
        """The quanta the leaves cover. Availability is computed for the first ``starts`` of them only:
        it never falls (running tasks only release), and the leaves running at a later quantum all run
        at the last start quantum too, so no later quantum can bind (a 1e300 s estimate once asked for a
        list of 1e300 quanta)."""
        return max((leaf.end for e in exprs for leaf in e.children if isinstance(leaf, NCk)), default=1)

    def availability(
        self, now: float, members: dict[Hashable, list[NodeState]], horizon: int
    ) -> dict[Hashable, list[int]]:
        """avail(x, t) for t in [0, horizon): free slots of part x at quantum t, counting running tasks
        until their estimated end (an overdue task: one more quantum) (spec §1.3, §1.7 [D])."""
        q = self.quantum
        release: dict[str, list[tuple[int, Resources]]] = defaultdict(list)
        for (job_id, _), (node, stage, start) in self.state.placed.items():
            end = self.planned_end.get((job_id, stage.index), start + stage.estimate)
            if end <= now + EPS:
                end = now + q
            release[node.name].append((max(1, math.ceil((end - now) / q - EPS)), stage.demand))
        avail: dict[Hashable, list[int]] = {}
        for x, nodes in members.items():
            total = [0] * horizon
            for node in nodes:
                for t, n in enumerate(self.node_slots(node, release.get(node.name, []), horizon)):
                    total[t] += n
            avail[x] = total
        return avail

    def node_slots(self, node: NodeState, release: list[tuple[int, Resources]], horizon: int) -> list[int]:
        free = node.free
        out = []
        pending = sorted(release, key=lambda r: r[0])
        i = 0
        for t in range(horizon):
            while i < len(pending) and pending[i][0] <= t:
                free = free.plus(pending[i][1])
                i += 1
            out.append(self.slots(free, node))
        return out

    # --- solving -----------------------------------------------------------------------------------
    def priority(self, g: Gang) -> tuple[int, float, int, int]:
        """NG's three FIFO queues (§6.3): accepted SLO, SLO without reservation, best effort."""
        return QUEUES.get(g.slo, 2), g.job.arrival, g.job.job_id, g.stage.index

    def seed_order(self, g: Gang) -> tuple[int, float, float, int, int]:
        """The order in which the global warm start takes gangs [D]: by class as NG, then earliest
        deadline first, then arrival."""
        deadline = g.deadline if g.deadline is not None and g.slo != "be" else math.inf
        return QUEUES.get(g.slo, 2), deadline, g.job.arrival, g.job.job_id, g.stage.index

    def solve(
        self, jobs: list[tuple[Gang, Max]], supply: Supply, record: CycleRecord, take: bool = False
    ) -> list[Choice]:
        """Compile and solve the ``sum`` of the gangs' expressions, warm-started (:meth:`seed`); ``take``:
        subtract the chosen leaves from ``supply.avail`` (NG: the next gang sees what is left).

        With ``lp_rounds`` (and a greedy warm start) the LP relaxation is solved first: its optimum is
        an upper bound on every plan's value, and guides more greedy plans (:meth:`seed`); when the
        best start is within the gap of that bound it is the solution, as branch and bound would only
        confirm it (HiGHS stops at the same gap); else it is the MIP start."""
        model = compile_strl(Sum(tuple(e for _, e in jobs)), supply)
        start, sol = None, None
        if self.warm_start != "off":
            relaxation = (
                model.relax(self.settings) if self.lp_rounds and self.warm_start == "greedy" else None
            )
            warm = model.start_vector(self.seed(jobs, supply, model, relaxation))
            start = warm[0] if warm else None
            if start is not None and relaxation is not None:
                sol = model.rounded(start, relaxation, self.settings.gap)
                self.state.core.counters["tetrisched_lp_rounded"] += sol is not None
            if relaxation is not None and sol is None:
                record.seconds += relaxation.seconds
        if sol is None:
            sol = model.solve(self.settings, start)
        record.solves += 1
        record.cols += model.num_cols
        record.rows += model.num_rows
        record.seconds += sol.seconds
        record.objective += sol.objective
        record.status.append(sol.status)
        counters = self.state.core.counters
        counters["tetrisched_solves"] += 1
        if sol.start:
            record.warm += 1
            record.warm_accepted += sol.start_accepted
            counters["tetrisched_warm_starts"] += 1
            counters["tetrisched_warm_accepted"] += sol.start_accepted
        if take:
            for c in sol.chosen:
                for x, n in c.grants.items():
                    a = supply.avail[x]
                    for t in range(c.leaf.start, min(c.leaf.end, len(a))):
                        a[t] -= n  # type: ignore[index]
        return sol.chosen

    def seed(
        self, jobs: list[tuple[Gang, Max]], supply: Supply, model: Model, relaxation: Relaxation | None = None
    ) -> dict[Any, dict[Hashable, int]]:
        """The MIP start (§3.2.2 "cache solver results to serve as a feasible initial solution"; spec §1.8
        [D]): the most valuable of :meth:`greedy` over the gangs in a few orders, all by class first
        (accepted SLO, SLO without reservation, best effort), then least slack, earliest deadline,
        arrival. (With ``warm_start="previous"`` the order hardly matters: one pass.)

        With the LP ``relaxation``, LP rounding [D] until a plan is within the gap of its bound, at most
        ``lp_rounds`` passes: each gang takes its leaves by LP weight (:meth:`Model.leaf_weights`), the
        gangs in the orders of :meth:`lp_orders`, then in those orders with seeded noise on the ranks
        (a portfolio: a pass costs milliseconds, and no one order wins on every cycle measured)."""
        if self.warm_start != "greedy":
            return self.greedy(jobs, supply)[0]
        orders = (self.slack_order, self.seed_order, self.priority)
        best = max((self.greedy(sorted(jobs, key=lambda gx: o(gx[0])), supply) for o in orders), key=worth)
        if relaxation is None:
            return best[0]
        w = model.leaf_weights(relaxation)
        keys = self.lp_orders(w)
        rng = random.Random(self.settings.seed)
        for i in range(self.lp_rounds):
            if relaxation.bound - best[1] <= self.settings.gap * max(1.0, best[1]):
                break
            ranked = sorted(jobs, key=keys[i % len(keys)])
            if i >= len(keys):
                rank = {id(g): r + rng.gauss(0.0, LP_NOISE) for r, (g, _) in enumerate(ranked)}
                ranked.sort(key=lambda gx: rank[id(gx[0])])
            best = max(best, self.greedy(ranked, supply, w), key=worth)
        return best[0]

    def lp_orders(self, w: dict[int, float]) -> list[Callable[[tuple[Gang, Max]], Any]]:
        """Gang orders for LP rounding [D]: by the most valuable LP share of a leaf (weight x value); by
        the gang's whole LP value; by class, then the gang's LP mass, then least slack; the class orders
        of :meth:`seed`."""

        def mass(gx: tuple[Gang, Max], valued: bool) -> list[float]:
            leaves = [leaf for leaf in gx[1].children if isinstance(leaf, NCk)]
            return [w[id(leaf)] * (leaf.value if valued else 1.0) for leaf in leaves]

        return [
            lambda gx: -max(mass(gx, True)),
            lambda gx: -sum(mass(gx, True)),
            lambda gx: (QUEUES.get(gx[0].slo, 2), -round(sum(mass(gx, False)), 3), self.slack_order(gx[0])),
            lambda gx: self.slack_order(gx[0]),
            lambda gx: self.seed_order(gx[0]),
        ]

    def slack_order(self, g: Gang) -> tuple[int, float, float, int, int]:
        """By class, then least slack (deadline minus the shortest option's duration) first."""
        slack = math.inf
        if g.deadline is not None and g.slo != "be":
            slack = g.deadline - min(o.duration for o in g.options)
        return QUEUES.get(g.slo, 2), slack, g.job.arrival, g.job.job_id, g.stage.index

    def greedy(
        self, jobs: list[tuple[Gang, Max]], supply: Supply, weights: dict[int, float] | None = None
    ) -> tuple[dict[Any, dict[Hashable, int]], float]:
        """Gang by gang in the given order: last cycle's choice if it still fits, else (a completion
        [D], ``warm_start="greedy"``) the gang's most valuable, earliest option that fits, its slots
        taken from the least specialised parts first; with LP ``weights``, the gang's leaves by weight
        (then value, start), last cycle's choice not preferred. Feasible by construction; returns the
        plan (grants by leaf tag) and its value."""
        w = weights or {}

        def rank(leaf: NCk) -> tuple[float, float, int]:
            return -w.get(id(leaf), 0.0), -leaf.value, leaf.start

        left = {x: list(a) for x, a in supply.avail.items()}
        out: dict[Any, dict[Hashable, int]] = {}
        worth = 0.0
        for _, expr in jobs:
            options = [leaf for leaf in expr.children if isinstance(leaf, NCk)]
            previous = (
                []
                if weights
                else [(leaf, self.previous[leaf.tag]) for leaf in options if leaf.tag in self.previous]
            )
            for leaf, grants in previous:
                if self.fits(left, leaf, grants):
                    break
            else:
                if self.warm_start != "greedy":
                    continue
                for leaf in sorted(options, key=rank):
                    fill = self.fill(left, leaf, supply.parts.get(leaf.set, ()))
                    if fill is not None:
                        grants = fill
                        break
                else:
                    continue
            out[leaf.tag] = dict(grants)
            worth += leaf.value
            for x, n in grants.items():
                for t in range(leaf.start, min(leaf.end, len(left[x]))):
                    left[x][t] -= n
        return out, worth

    @staticmethod
    def fits(left: dict[Hashable, list[int]], leaf: NCk, grants: dict[Hashable, int]) -> bool:
        if sum(grants.values()) != leaf.k or any(x not in left for x in grants):
            return False
        return all(min(left[x][leaf.start : leaf.end], default=0) >= n for x, n in grants.items())

    @staticmethod
    def fill(
        left: dict[Hashable, list[int]], leaf: NCk, parts: Iterable[Hashable]
    ) -> dict[Hashable, int] | None:
        need, grants = leaf.k, {}
        for x in sorted(parts, key=lambda x: (len(x), str(x))):  # type: ignore[arg-type]
            room = min(left[x][leaf.start : leaf.end], default=0)
            if room > 0:
                grants[x] = min(room, need)
                need -= grants[x]
                if need == 0:
                    return grants
        return None

    # --- launching ---------------------------------------------------------------------------------
    def launch(
        self,
        now: float,
        chosen: list[Choice],
        gangs: dict[tuple[int, int], Gang],
        members: dict[Hashable, list[NodeState]],
    ) -> list[Placement]:
        """The placements of the gangs planned at quantum 0: every task of a gang at once, on free slots
        of the parts its grants name (spec §1.7 [D])."""
        free = {n.name: n.free for nodes in members.values() for n in nodes}
        out: list[Placement] = []
        for c in chosen:
            job_id, stage_index, kind, set_name, _ = c.leaf.tag
            g = gangs[job_id, stage_index]
            picked = self.pick_nodes(g, c, members, free)
            if picked is None:
                self.state.core.counters["tetrisched_launch_short"] += 1
                continue
            for node in picked:
                free[node.name] = free[node.name].minus(g.stage.demand)
                out.append((g.job, g.stage, node))
            duration = next(o.duration for o in g.options if o.kind == kind and o.set == set_name)
            self.planned_end[g.key] = now + duration
            self.state.core.counters["tetrisched_gangs_launched"] += 1
        return out

    def pick_nodes(
        self, g: Gang, c: Choice, members: dict[Hashable, list[NodeState]], free: dict[str, Resources]
    ) -> list[NodeState] | None:
        """``grants[x]`` task slots from the nodes of each part x, chosen at random among free slots."""
        picked: list[NodeState] = []
        for x, n in sorted(c.grants.items(), key=lambda kv: str(kv[0])):
            slots = []
            for node in members.get(x, []):
                room = free[node.name]
                fits = 0
                while (
                    fits < n
                    and g.stage.demand.times(fits + 1).fits_in(room)
                    and self.slots(room.minus(g.stage.demand.times(fits)), node)
                ):
                    fits += 1
                slots += [node] * fits
            if len(slots) < n:
                return None
            picked += self.rng.sample(slots, n)
        return picked

    # --- notifications -----------------------------------------------------------------------------
    def on_finished(self, job: JobState) -> None:
        if job.finished == job.tasks:
            for s in job.stages:
                self.planned_end.pop((job.job_id, s.index), None)
            self.demoted.discard(job.job_id)


__all__ = ["ALL", "CycleRecord", "Gang", "Option", "TetriSched"]
