"""Graphene's offline part: a preferred schedule per DAG, distilled into priScores (Grandl et al.,
OSDI'16, "Graphene: Packing and Dependency-aware Scheduling for Data-Parallel Clusters"; spec §3.2).

The paper's pseudocode, by its names (its section numbers and digits are lost in ``graphene.txt``):

- **BuildSchedule(G, m)**: for each ``{T, S, P, C}`` of **CandidateTroublesomeTasks(G)**, place T first
  into an empty resource-time space of m machines ("trouble goes first"), then the rest by
  **TrySubsetOrders({SCP, SPC, CSP, PSC})**; keep the most compact space; **OrderTasks** sorts the tasks
  by start time (:func:`pri_scores`: priScore = 1 - rank/n).
- **CandidateTroublesomeTasks(G)**: LongScore(v) = v.duration / max duration; FragScore(v) =
  TWork(stage(v)) / ExecTime(stage(v)); for l, f in a threshold grid: T = {LongScore >= l or FragScore
  <= f}, T = **Closure(T)** (plus every task on a path between two of T), skip duplicates; P = ancestors
  of T, C = descendants of T, S = the rest.
- **PlaceTasks(V, space, G)** = the more compact of **PlaceTasksF** (forward: of the ready tasks the
  longest first, at the earliest time >= its parents' last end with room) and **PlaceTasksB** (backward:
  latest end <= its children's first start). P only backward, C only forward (dead-end freedom).

Granularity [P "reason over stages", "more compact representations"]: a stage's tasks are identical
(one estimate, one demand) and edges are stage barriers, so every set above is a union of stages and all
tasks of a stage become ready together. Placing a ready stage's tasks one after another is what the
task-level loop does with ties broken by stage, and each task goes to the machine with the earliest
feasible start (forward; ties to the lowest machine; backward: the latest feasible end); as many copies
as fit there at that start go in one block, which is the same placement (that machine stays the
earliest). So the stage-level space is exactly the task-level one under these tie-breaks, not an
approximation.

Speed [D]: branch and bound over the candidates and orders: a partial space already longer than the
best complete schedule found is abandoned (:class:`Beaten`). This never changes the result: placing
more tasks never shortens a space, and ties go to the earlier candidate. The paper's own speed-ups
(parallel search, cuts, scaling the DAG down) are not used.

Reconstructions [R] and decisions [D] relied on (spec §3.2, §3.7):

- [R] TWork(V) = max_r sum_{v in V} v.duration * v.demand_r / C_r with C the virtual space's summed
  capacity (the job's share); ExecTime(stage) = makespan of the stage alone placed forward.
- [D] thresholds l, f on the grid {delta, 2 delta, ..., 1}, delta = 0.1, plus l > 1 (no task counts as
  long) and f = 0 (none as hard to pack), so either score alone can choose T; the grid is made
  discriminative by de-duplicating T; candidates with |T| > ``prune`` (0.5) of the tasks are skipped;
  if every one is, the schedule is PlaceTasks of all tasks (T empty, S = V).
- [D] "longest runtime first" ties: lower stage index first forward, higher first backward.
- [D] readiness inside one PlaceTasks call counts only parents (forward) / children (backward) in the
  set being placed; an unplaced parent outside it belongs to P, which the order places later backward
  (e.g. a C task whose other parent is in P in SCP). Forward release without placed parents: the space's
  first start (0 when empty); backward deadline without placed children: the space's last end (0 when
  empty). Times may go negative; makespan = last end - first start, and priScores use ranks only.
- [D] "most compact" = smallest makespan, ties to higher utilization (the same for the same tasks), then
  the earlier candidate / order (SPC, SCP, CSP, PSC; forward before backward).
- [D] virtual space: m = max(1, round(share * nodes)) machines, share 1/4, with the cluster's capacities
  taken evenly along the node list (:func:`virtual_machines`).
- [D] bypass (spec §3.7): <= 2 stages or < 10 tasks, or a stage that fits no virtual machine: CP order
  (stages by longest critical path, then index), priScore = 1 - rank/n over that order.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..common.resources import EPS, Resources

Vec = tuple[float, float, float, float]
NO_USE: Vec = (0.0, 0.0, 0.0, 0.0)
ORDERS = ("SPC", "SCP", "CSP", "PSC")
DIRECTIONS = ("best", "forward", "backward")
DELTA = 0.1
PRUNE = 0.5
BYPASS_STAGES = 2
BYPASS_TASKS = 10


@dataclass(frozen=True, slots=True)
class DagStage:
    """What the offline part sees of a stage: its task count, estimated duration, demand, parents."""

    tasks: int
    duration: float
    demand: Resources
    parents: tuple[int, ...] = ()


class Dag:
    """A stage DAG (parents before children) with children, ancestor/descendant bitmasks and cp."""

    def __init__(self, stages: Sequence[DagStage]) -> None:
        n = len(stages)
        self.stages = list(stages)
        self.parents = [tuple(sorted(set(s.parents))) for s in stages]
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, ps in enumerate(self.parents):
            for p in ps:
                if not 0 <= p < i:
                    raise ValueError(f"stage {i}: parent {p} must be an earlier stage")
                self.children[p].append(i)
        self.anc = [0] * n
        for i, ps in enumerate(self.parents):
            for p in ps:
                self.anc[i] |= self.anc[p] | 1 << p
        self.desc = [0] * n
        self.cp = [0.0] * n
        for i in reversed(range(n)):
            for c in self.children[i]:
                self.desc[i] |= self.desc[c] | 1 << c
            self.cp[i] = stages[i].duration + max((self.cp[c] for c in self.children[i]), default=0.0)
        self.tasks = sum(s.tasks for s in stages)
        self.full = (1 << n) - 1

    def count(self, mask: int) -> int:
        """Tasks in the stages of ``mask``."""
        return sum(s.tasks for i, s in enumerate(self.stages) if mask >> i & 1)


def members(mask: int) -> list[int]:
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


class Parts(NamedTuple):
    """One choice of troublesome stages T and the rest: S (unordered to T), P (ancestors), C (descendants)."""

    T: int
    S: int
    P: int
    C: int


Dims = tuple[tuple[int, float, float], ...]
Block = tuple[int, int, float, float, int]
"""``(stage, machine, start, end, count)``: ``count`` tasks of a stage on a machine over [start, end)."""


class Space:
    """The resource-time space: per machine a piecewise-constant usage profile. ``times[i]`` are the
    breakpoints (sentinels -inf first and +inf last), ``uses[i][k]`` the usage on [times[i][k],
    times[i][k + 1]); the first and last segments stay empty."""

    __slots__ = ("blocks", "caps", "first", "hi", "last", "lo", "times", "uses", "work")

    def __init__(self, caps: Sequence[Resources]) -> None:
        self.caps: list[Vec] = [(c[0], c[1], c[2], c[3]) for c in caps]
        self.times: list[list[float]] = [[-math.inf, math.inf] for _ in caps]
        self.uses: list[list[Vec]] = [[NO_USE, NO_USE] for _ in caps]
        self.blocks: list[Block] = []
        self.first: dict[int, float] = {}  # stage -> first start of its tasks
        self.last: dict[int, float] = {}  # stage -> last end
        self.lo = math.inf
        self.hi = -math.inf
        self.work = 0.0  # task-seconds x summed demand shares of the machine

    def clone(self) -> Space:
        new = Space.__new__(Space)
        new.caps = self.caps
        new.times = [t[:] for t in self.times]
        new.uses = [u[:] for u in self.uses]
        new.blocks = self.blocks[:]
        new.first, new.last = dict(self.first), dict(self.last)
        new.lo, new.hi, new.work = self.lo, self.hi, self.work
        return new

    @property
    def makespan(self) -> float:
        return self.hi - self.lo if self.blocks else 0.0

    def compactness(self) -> tuple[float, float]:
        """Smaller is more compact: (makespan, -utilization)."""
        span = self.makespan
        return span, -(self.work / (span * len(self.caps)) if span > 0 else 0.0)

    def earliest(self, i: int, t: float, d: float, lim: Vec) -> float:
        """The earliest start >= ``t`` on machine ``i`` with usage <= ``lim`` over [start, start + d)."""
        times, uses = self.times[i], self.uses[i]
        l0, l1, l2, l3 = lim
        j = bisect_right(times, t) - 1
        tau = t
        while True:
            end = tau + d
            k = j
            while times[k] < end:
                u = uses[k]
                if u[0] > l0 or u[1] > l1 or u[2] > l2 or u[3] > l3:
                    break
                k += 1
            else:
                return tau
            tau, j = times[k + 1], k + 1  # the last finite segment is empty, so it fits

    def latest(self, i: int, t: float, d: float, lim: Vec) -> float:
        """The latest end <= ``t`` on machine ``i`` with usage <= ``lim`` over [end - d, end)."""
        times, uses = self.times[i], self.uses[i]
        l0, l1, l2, l3 = lim
        j = bisect_left(times, t) - 1
        end = t
        while True:
            start = end - d
            k = j
            while times[k + 1] > start:  # stops at k = -1: times[0] is -inf
                u = uses[k]
                if u[0] > l0 or u[1] > l1 or u[2] > l2 or u[3] > l3:
                    break
                k -= 1
            else:
                return end
            end, j = times[k], k - 1  # the first segment (from -inf) is empty, so it fits: k > 0

    def copies(self, i: int, start: float, end: float, dims: Dims, most: int) -> int:
        """How many tasks fit together on machine ``i`` over [start, end), at most ``most``; ``dims`` are
        ``(resource, capacity + EPS, demand)`` of the resources the task demands."""
        times, uses = self.times[i], self.uses[i]
        j = bisect_right(times, start) - 1
        best = most
        while times[j] < end:
            u = uses[j]
            for r, c, x in dims:
                k = int((c - u[r]) / x)
                if k < best:
                    best = k
            j += 1
        return max(1, best)

    def add(
        self, stage: int, i: int, start: float, end: float, demand: Vec, count: int, share: float
    ) -> None:
        """Book ``count`` tasks of ``demand`` (``share``: its summed shares of the machine) on machine
        ``i`` over [start, end)."""
        times, uses = self.times[i], self.uses[i]
        a = bisect_left(times, start)
        if times[a] != start:
            times.insert(a, start)
            uses.insert(a, uses[a - 1])
        b = bisect_left(times, end, a)
        if times[b] != end:
            times.insert(b, end)
            uses.insert(b, uses[b - 1])
        d0, d1, d2, d3 = demand[0] * count, demand[1] * count, demand[2] * count, demand[3] * count
        for k in range(a, b):
            u = uses[k]
            uses[k] = (u[0] + d0, u[1] + d1, u[2] + d2, u[3] + d3)
        self.blocks.append((stage, i, start, end, count))
        first, last = self.first, self.last
        if stage not in first or start < first[stage]:
            first[stage] = start
        if stage not in last or end > last[stage]:
            last[stage] = end
        if start < self.lo:
            self.lo = start
        if end > self.hi:
            self.hi = end
        self.work += count * (end - start) * share


def fit(d: Vec, c: Vec) -> tuple[Vec, Dims, float]:
    """For demand ``d`` on capacity ``c``: the usage limit (room for d), ``(resource, capacity + EPS,
    demand)`` of the demanded resources, and the summed shares d/c."""
    lim = (c[0] + EPS - d[0], c[1] + EPS - d[1], c[2] + EPS - d[2], c[3] + EPS - d[3])
    dims = tuple((r, c[r] + EPS, d[r]) for r in range(4) if d[r] > 0)
    return lim, dims, sum(x / y for x, y in zip(d, c, strict=True) if y > 0)


def virtual_machines(capacities: Sequence[Resources], share: float) -> list[Resources]:
    """m = max(1, round(share * N)) machines, capacities taken evenly along the cluster's node list [D]."""
    n = len(capacities)
    m = max(1, round(share * n))
    return [capacities[i * n // m] for i in range(m)]


@dataclass(slots=True)
class Schedule:
    """The offline result: per stage the priScores of its tasks, best first, and how it was made."""

    pri: list[list[float]]
    kind: str  # "graphene", "plain" (no candidate T survived pruning) or "bypass" (CP order)
    makespan: float = 0.0
    candidates: int = 0
    parts: Parts | None = None
    space: Space | None = field(default=None, repr=False)


class Beaten(Exception):
    """A partial space already longer than a complete schedule found (makespans only grow)."""


class Planner:
    """BuildSchedule over one DAG and one virtual space (``caps``), with its placement primitives.

    ``bound``: while :meth:`build` searches, the makespan of the best complete schedule so far; a
    placement that makes a space longer raises :class:`Beaten` (branch and bound: exact, since
    placing more tasks never shortens a space and ties go to the earlier candidate)."""

    def __init__(self, dag: Dag, caps: Sequence[Resources]) -> None:
        self.dag = dag
        self.bound = math.inf
        self.caps = list(caps)
        self.empty = Space(self.caps)
        self.demand: list[Vec] = [(s.demand[0], s.demand[1], s.demand[2], s.demand[3]) for s in dag.stages]
        # Per stage, of every machine its demand fits: the usage limit, the fit dims, the summed shares.
        self.fits: list[dict[int, tuple[Vec, Dims, float]]] = [
            {i: fit(d, c) for i, c in enumerate(self.caps) if Resources(*d).fits_in(c)} for d in self.demand
        ]

    # --- PlaceTasksF / PlaceTasksB ------------------------------------------------------------------
    def forward(self, mask: int, space: Space) -> Space:
        """PlaceTasksF: ``mask``'s stages on a clone of ``space``, each after its placed parents."""
        if not mask:
            return space
        space = space.clone()
        dag, stages = self.dag, self.dag.stages
        waiting = {i: sum(1 for p in dag.parents[i] if mask >> p & 1) for i in members(mask)}
        ready = [(-stages[i].duration, i) for i, w in waiting.items() if w == 0]
        heapq.heapify(ready)
        while ready:
            _, i = heapq.heappop(ready)
            ends = [space.last[p] for p in dag.parents[i] if p in space.last]
            release = max(ends) if ends else (space.lo if space.blocks else 0.0)
            self._forward_stage(space, i, release)
            for c in dag.children[i]:
                if c in waiting:
                    waiting[c] -= 1
                    if waiting[c] == 0:
                        heapq.heappush(ready, (-stages[c].duration, c))
        return space

    def backward(self, mask: int, space: Space) -> Space:
        """PlaceTasksB: ``mask``'s stages on a clone of ``space``, each before its placed children."""
        if not mask:
            return space
        space = space.clone()
        dag, stages = self.dag, self.dag.stages
        waiting = {i: sum(1 for c in dag.children[i] if mask >> c & 1) for i in members(mask)}
        ready = [(-stages[i].duration, -i) for i, w in waiting.items() if w == 0]
        heapq.heapify(ready)
        while ready:
            _, neg = heapq.heappop(ready)
            i = -neg
            starts = [space.first[c] for c in dag.children[i] if c in space.first]
            deadline = min(starts) if starts else (space.hi if space.blocks else 0.0)
            self._backward_stage(space, i, deadline)
            for p in dag.parents[i]:
                if p in waiting:
                    waiting[p] -= 1
                    if waiting[p] == 0:
                        heapq.heappush(ready, (-stages[p].duration, -p))
        return space

    def _forward_stage(self, space: Space, i: int, release: float) -> None:
        d, demand, left = self.dag.stages[i].duration, self.demand[i], self.dag.stages[i].tasks
        fits = self.fits[i]
        heap = [(space.earliest(m, release, d, lim), m) for m, (lim, _, _) in fits.items()]
        heapq.heapify(heap)
        while left:
            tau, m = heapq.heappop(heap)
            lim, dims, share = fits[m]
            n = space.copies(m, tau, tau + d, dims, left)
            space.add(i, m, tau, tau + d, demand, n, share)
            if space.hi - space.lo > self.bound:
                raise Beaten
            left -= n
            if left:  # nothing fits on m before tau, and only m changed
                heapq.heappush(heap, (space.earliest(m, tau, d, lim), m))

    def _backward_stage(self, space: Space, i: int, deadline: float) -> None:
        d, demand, left = self.dag.stages[i].duration, self.demand[i], self.dag.stages[i].tasks
        fits = self.fits[i]
        heap = [(-space.latest(m, deadline, d, lim), m) for m, (lim, _, _) in fits.items()]
        heapq.heapify(heap)
        while left:
            neg, m = heapq.heappop(heap)
            end = -neg
            lim, dims, share = fits[m]
            n = space.copies(m, end - d, end, dims, left)
            space.add(i, m, end - d, end, demand, n, share)
            if space.hi - space.lo > self.bound:
                raise Beaten
            left -= n
            if left:  # nothing fits on m after end, and only m changed
                heapq.heappush(heap, (-space.latest(m, end, d, lim), m))

    def place_tasks(self, mask: int, space: Space, direction: str = "best") -> Space:
        """PlaceTasks: the more compact of forward and backward (or the one ``direction`` names)."""
        if direction == "forward":
            return self.forward(mask, space)
        if direction == "backward":
            return self.backward(mask, space)
        return self.most_compact([lambda: self.forward(mask, space), lambda: self.backward(mask, space)])

    def most_compact(self, options: Sequence[Callable[[], Space]], complete: bool = False) -> Space:
        """The most compact of the spaces ``options`` build (ties: the first), skipping those beaten by
        the bound; ``complete``: they hold the whole DAG, so each tightens the bound."""
        best: Space | None = None
        for option in options:
            try:
                space = option()
            except Beaten:
                continue
            if best is None or space.compactness() < best.compactness():
                best = space
            if complete:
                self.bound = min(self.bound, space.makespan)
        if best is None:
            raise Beaten
        return best

    # --- TrySubsetOrders ---------------------------------------------------------------------------
    def order(self, parts: Parts, order: str, direction: str = "best", base: Space | None = None) -> Space:
        """One subset order after T (placed by ``place_tasks`` unless ``base`` holds it already);
        ``direction`` applies to every PlaceTasks call (T, and S in SPC/SCP)."""
        T, S, P, C = parts
        space = base if base is not None else self.place_tasks(T, self.empty, direction)
        if order == "SPC":
            return self.forward(C, self.backward(P, self.place_tasks(S, space, direction)))
        if order == "SCP":
            return self.backward(P, self.forward(C, self.place_tasks(S, space, direction)))
        if order == "CSP":
            return self.backward(P, self.backward(S, self.forward(C, space)))
        if order == "PSC":
            return self.forward(C, self.forward(S, self.backward(P, space)))
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")

    def try_subset_orders(self, parts: Parts, base: Space, search: bool = False) -> Space:
        """The most compact of the four dead-end-free orders (PlaceTasks(S) shared by SPC and SCP);
        ``search``: within :meth:`build`, each complete schedule tightens the bound."""
        _, S, P, C = parts
        try:
            placed: list[Space] = [self.place_tasks(S, base)]
        except Beaten:
            placed = []  # SPC and SCP are beaten too
        spc_scp: list[Callable[[], Space]] = [
            lambda: self.forward(C, self.backward(P, placed[0])),
            lambda: self.backward(P, self.forward(C, placed[0])),
        ]
        return self.most_compact(
            [
                *(spc_scp if placed else []),
                lambda: self.backward(P, self.backward(S, self.forward(C, base))),
                lambda: self.forward(C, self.forward(S, self.backward(P, base))),
            ],
            complete=search,
        )

    # --- CandidateTroublesomeTasks -----------------------------------------------------------------
    def scores(self) -> tuple[list[float], list[float]]:
        """LongScore and FragScore per stage."""
        stages = self.dag.stages
        longest = max(s.duration for s in stages)
        long = [s.duration / longest if longest > 0 else 1.0 for s in stages]
        total = [sum(c[r] for c in self.caps) for r in range(4)]
        frag = []
        for i, s in enumerate(stages):
            twork = max(s.tasks * s.duration * s.demand[r] / total[r] for r in range(4) if total[r] > 0)
            exec_time = self.forward(1 << i, self.empty).makespan
            frag.append(twork / exec_time if exec_time > 0 else 1.0)
        return long, frag

    def candidates(self, delta: float = DELTA, prune: float = PRUNE) -> list[Parts]:
        """CandidateTroublesomeTasks: de-duplicated closures T, pruned above ``prune`` of the tasks."""
        dag = self.dag
        long, frag = self.scores()
        grid = [k * delta for k in range(1, math.floor(1 / delta + 1e-9) + 1)]
        # [D] one extra value each way: no task long enough (l > 1), none fragmented enough (f = 0).
        by_long = [sum(1 << i for i, x in enumerate(long) if x >= level - 1e-12) for level in grid] + [0]
        by_frag = [0] + [sum(1 << i for i, x in enumerate(frag) if x <= level + 1e-12) for level in grid]
        seen: set[int] = set()
        out = []
        for lm in by_long:
            for fm in by_frag:
                t = closure(dag, lm | fm)
                if not t or t in seen:
                    continue
                seen.add(t)
                if dag.count(t) > prune * dag.tasks:
                    continue
                out.append(split(dag, t))
        return out

    # --- BuildSchedule -----------------------------------------------------------------------------
    def build(self, delta: float = DELTA, prune: float = PRUNE) -> Schedule:
        cands = self.candidates(delta, prune)
        best: tuple[Space, Parts] | None = None
        try:
            for parts in cands:
                try:
                    space = self.try_subset_orders(parts, self.place_tasks(parts.T, self.empty), True)
                except Beaten:
                    continue
                if best is None or space.compactness() < best[0].compactness():
                    best = space, parts
        finally:
            self.bound = math.inf
        if best is None:  # every T pruned [D]: PlaceTasks of the whole DAG
            space, kind = self.place_tasks(self.dag.full, self.empty), "plain"
            parts = Parts(0, self.dag.full, 0, 0)
        else:
            (space, parts), kind = best, "graphene"
        return Schedule(pri_scores(self.dag, space), kind, space.makespan, len(cands), parts, space)


def closure(dag: Dag, mask: int) -> int:
    """Closure(T): T plus every stage on a path between two stages of T."""
    anc = desc = 0
    for i in members(mask):
        anc |= dag.anc[i]
        desc |= dag.desc[i]
    return mask | (anc & desc)


def split(dag: Dag, t: int) -> Parts:
    anc = desc = 0
    for i in members(t):
        anc |= dag.anc[i]
        desc |= dag.desc[i]
    p, c = anc & ~t, desc & ~t
    return Parts(t, dag.full & ~(t | p | c), p, c)


def pri_scores(dag: Dag, space: Space) -> list[list[float]]:
    """OrderTasks: rank the tasks by start time (ties by stage, then machine); priScore = 1 - rank/n.
    Per stage, its tasks' priScores from the best (earliest) down."""
    out: list[list[float]] = [[] for _ in dag.stages]
    n, rank = dag.tasks, 0
    for stage, _, _, _, count in sorted(space.blocks, key=lambda b: (b[2], b[0], b[1])):
        for _ in range(count):
            out[stage].append(1.0 - rank / n)
            rank += 1
    return out


def cp_scores(dag: Dag) -> list[list[float]]:
    """The bypass: priScores of the CP order (longest critical path first, ties by stage index)."""
    out: list[list[float]] = [[] for _ in dag.stages]
    n, rank = dag.tasks, 0
    for i in sorted(range(len(dag.stages)), key=lambda i: (-dag.cp[i], i)):
        for _ in range(dag.stages[i].tasks):
            out[i].append(1.0 - rank / n)
            rank += 1
    return out


def bypassed(dag: Dag, caps: Sequence[Resources]) -> bool:
    """Simple DAGs (<= 2 stages or < 10 tasks) and DAGs with a stage no virtual machine fits skip the
    offline search [P "Fourth": simple jobs bypass; D thresholds]."""
    if len(dag.stages) <= BYPASS_STAGES or dag.tasks < BYPASS_TASKS:
        return True
    return any(not any(s.demand.fits_in(c) for c in caps) for s in dag.stages)


def build_schedule(
    stages: Sequence[DagStage], caps: Sequence[Resources], *, delta: float = DELTA, prune: float = PRUNE
) -> Schedule:
    """BuildSchedule(G, m) on the virtual machines ``caps``, or the CP order for a bypassed DAG."""
    dag = Dag(stages)
    if bypassed(dag, caps):
        return Schedule(cp_scores(dag), "bypass")
    return Planner(dag, caps).build(delta, prune)


__all__ = [
    "DIRECTIONS",
    "ORDERS",
    "Beaten",
    "Block",
    "Dag",
    "DagStage",
    "Parts",
    "Planner",
    "Schedule",
    "Space",
    "build_schedule",
    "bypassed",
    "closure",
    "cp_scores",
    "pri_scores",
    "split",
    "virtual_machines",
]
