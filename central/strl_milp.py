"""STRL -> MILP, as TetriSched's Algorithm 1 (Tumanov et al., EuroSys'16 §5; spec §1.3, §1.8), solved
with HiGHS (``highspy``).

:func:`compile_strl` is Algorithm 1's ``gen`` run from ``genAndSolve``'s root indicator: every expression
gets the binary indicator ``I`` its parent hands it, and returns its objective term:

=============  ===========================================  ========================================
expression     variables and constraints (Alg. 1 lines)     objective returned
=============  ===========================================  ========================================
nCk(X,k,s,d,v) integer P_x per partition x of X (l.4);      v * I (l.10)
               P_x in used(x, t) for t in [s, s+d) (l.5-7);
               demand: sum_x P_x = k * I (l.9)
LnCk           the same, demand sum_x P_x <= k * I (l.16)   v * sum_x P_x / k (l.17)
sum(e1..en)    binary I_i per child; sum_i I_i <= n * I     sum_i gen(e_i, I_i)
max(e1..en)    binary I_i per child; sum_i I_i <= I (l.26)  sum_i gen(e_i, I_i)
min(e1..en)    continuous V; V <= gen(e_i, I) per child     V
scale(e, s)    --                                           s * gen(e, I)
barrier(e, v)  v * I <= gen(e, I)                           v * I
=============  ===========================================  ========================================

then adds the supply constraints ``sum(used(x, t)) <= avail(x, t)`` and maximizes (l.40-46).

Two exact size reductions: a partition variable's upper bound is ``min(k, avail)`` over its quanta
(the erdos implementation bounds it by ``min(k, capacity)``), and a variable that could take nothing is
not created. Supply rows are written only at the quanta where a leaf on that partition starts or where
``avail`` drops: between two such quanta the set of running leaves only shrinks and ``avail`` does not
fall, so the other rows are implied. With availability that only grows (running jobs end), these are the
start quanta of the plan-ahead window, as in Algorithm 1's ``for t := now to now + plan-ahead``.

Solver settings (spec §1.8): one thread, a fixed random seed, relative gap 10 % ("within 10% of the
optimal", §3.2.2), a deterministic cap on branch-and-bound nodes, an optional wall-clock limit (a
safety net for real runs: it makes a run irreproducible), output off. The warm start (§3.2.2, §7.3) is
a full MIP start vector built from last cycle's chosen leaves (:meth:`Model.start_vector`) and handed
to HiGHS with ``setSolution``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .strl import Barrier, Expr, Max, Min, NCk, Scale, Sum

if TYPE_CHECKING:
    import highspy

# highspy and numpy are imported where a model is solved: importing them costs every aviary command
# (probe-based policies and --help included) ~0.1 s of CPU and starts OpenBLAS's threads.
INF = math.inf  # highspy.kHighsInf
Linear = dict[int, float]


@dataclass(frozen=True, slots=True)
class Supply:
    """What the leaves draw from: the partitions of each equivalence set (``parts``) and ``avail[x][t]``,
    the resources of partition ``x`` available at quantum ``t`` (past the list's end: its last value)."""

    parts: Mapping[str, Sequence[Hashable]]
    avail: Mapping[Hashable, Sequence[int]]

    def at(self, x: Hashable, t: int) -> int:
        a = self.avail[x]
        return a[t] if t < len(a) else a[-1]

    def least(self, x: Hashable, start: int, end: int) -> int:
        """The smallest availability of ``x`` over quanta ``[start, end)``."""
        a = self.avail[x]
        window = a[start:end]
        low = min(window) if len(window) else a[-1]
        return low if end <= len(a) else min(low, a[-1])


@dataclass(frozen=True, slots=True)
class SolverSettings:
    """HiGHS options (spec §1.8): ``gap`` relative MIP gap; ``max_nodes`` branch-and-bound node cap
    (deterministic; ``None``: none); ``time_limit`` wall-clock seconds (``None``: none; not
    reproducible); ``seed`` and ``threads`` for bit-reproducible solves; ``presolve`` [D] off by default:
    HiGHS 1.16 leaves the presolve objective offset out of a MIP start's value in the reduced space, so
    with presolve on a start within the gap does not stop the solve (measured: 10.8 s instead of 0.5 s
    for 50 gangs on 100 nodes), and these models gain little from presolve."""

    gap: float = 0.10
    max_nodes: int | None = 500
    time_limit: float | None = None
    seed: int = 0
    threads: int = 1
    presolve: bool = False


@dataclass(slots=True)
class LeafVars:
    leaf: NCk
    indicator: int
    parts: list[tuple[Hashable, int]]  # (partition, column of P_x)
    group: int  # which child of a root sum the leaf is under (0 without a root sum)


@dataclass(slots=True)
class Choice:
    """A leaf the solution gives resources: how many from which partition."""

    leaf: NCk
    grants: dict[Hashable, int]

    @property
    def total(self) -> int:
        return sum(self.grants.values())


@dataclass(slots=True)
class Solution:
    """A solved model: ``status`` (HiGHS model status name), ``objective``, the ``chosen`` leaves; the
    solver's own counters; ``start`` whether a MIP start was handed over and ``start_objective`` its value;
    ``start_accepted``: HiGHS assessed the start as feasible, so it is its first incumbent (its log:
    "Assessing feasibility of MIP solution ...: feasible")."""

    status: str
    objective: float
    chosen: list[Choice]
    values: list[float]
    gap: float = 0.0
    nodes: int = 0
    seconds: float = 0.0
    start: bool = False
    start_objective: float | None = None
    start_accepted: bool = False


@dataclass(frozen=True, slots=True)
class Relaxation:
    """The LP relaxation's optimum: ``bound`` (no integer solution is worth more), column ``values``,
    HiGHS ``seconds``."""

    bound: float
    values: list[float]
    seconds: float


@dataclass(slots=True)
class Model:
    """The MILP of one STRL expression (columns, rows, the objective) and the bookkeeping to read a
    solution back (leaves' variables) or to write a start (indicators and MIN variables by expression)."""

    supply: Supply
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    row_lower: list[float] = field(default_factory=list)
    row_upper: list[float] = field(default_factory=list)
    row_index: list[list[int]] = field(default_factory=list)
    row_value: list[list[float]] = field(default_factory=list)
    objective: Linear = field(default_factory=dict)
    leaves: list[LeafVars] = field(default_factory=list)
    indicators: list[tuple[Expr, int]] = field(default_factory=list)  # expression -> the I it was given
    mins: list[tuple[int, list[Linear]]] = field(default_factory=list)  # (V, children's terms), post-order
    used: dict[Hashable, list[tuple[int, int, int]]] = field(default_factory=lambda: defaultdict(list))
    root: int = -1

    @property
    def num_cols(self) -> int:
        return len(self.lower)

    @property
    def num_rows(self) -> int:
        return len(self.row_lower)

    @property
    def num_nz(self) -> int:
        return sum(len(r) for r in self.row_index)

    # --- building ----------------------------------------------------------------------------------
    def col(self, lower: float, upper: float, integer: bool) -> int:
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        return len(self.lower) - 1

    def binary(self) -> int:
        return self.col(0.0, 1.0, True)

    def row(self, terms: Linear, lower: float, upper: float) -> None:
        self.row_index.append(list(terms))
        self.row_value.append(list(terms.values()))
        self.row_lower.append(lower)
        self.row_upper.append(upper)

    def gen(self, expr: Expr, ind: int, group: int) -> Linear:
        """Algorithm 1's ``gen(expr, I)``: add ``expr``'s variables and constraints, return its objective."""
        self.indicators.append((expr, ind))
        if isinstance(expr, NCk):
            return self._leaf(expr, ind, group)
        if isinstance(expr, Sum | Max):
            terms: Linear = {}
            limit: Linear = {}
            for i, child in enumerate(expr.children):
                indicator = self.binary()
                limit[indicator] = 1.0
                top = i if group < 0 else group
                add_into(terms, self.gen(child, indicator, top))
            if limit:  # sum: sum_i I_i <= n I (l.21); max: sum_i I_i <= I (l.26)
                limit[ind] = -float(len(limit) if isinstance(expr, Sum) else 1)
                self.row(limit, -INF, 0.0)
            return terms
        if isinstance(expr, Min):
            v = self.col(-INF, INF, False)
            subs = [self.gen(child, ind, group) for child in expr.children]
            for term in subs:  # V <= f_i (l.31)
                self.row(add_into({v: 1.0}, scaled(term, -1.0)), -INF, 0.0)
            self.mins.append((v, subs))
            return {v: 1.0}
        if isinstance(expr, Scale):
            return scaled(self.gen(expr.child, ind, group), expr.factor)
        assert isinstance(expr, Barrier)
        below = self.gen(expr.child, ind, group)  # v I <= f (l.37)
        self.row(add_into({ind: expr.threshold}, scaled(below, -1.0)), -INF, 0.0)
        return {ind: expr.threshold}

    def _leaf(self, leaf: NCk, ind: int, group: int) -> Linear:
        parts = []
        for x in self.supply.parts.get(leaf.set, ()):
            ub = min(leaf.k, self.supply.least(x, leaf.start, leaf.end))
            if ub <= 0:
                continue
            p = self.col(0.0, float(ub), True)
            parts.append((x, p))
            self.used[x].append((p, leaf.start, leaf.end))
        self.leaves.append(LeafVars(leaf, ind, parts, max(group, 0)))
        demand: Linear = {p: 1.0 for _, p in parts}
        demand[ind] = demand.get(ind, 0.0) - leaf.k
        if leaf.linear:  # sum_x P_x <= k I (l.16); v sum_x P_x / k (l.17)
            self.row(demand, -INF, 0.0)
            return {p: leaf.value / leaf.k for _, p in parts}
        self.row(demand, 0.0, 0.0)  # sum_x P_x = k I (l.9)
        return {ind: leaf.value}

    def add_supply(self) -> None:
        """``genAndSolve``'s supply constraints (l.40-44), at the quanta that can bind (module docstring)."""
        for x, cols in self.used.items():
            points = {start for _, start, _ in cols}
            horizon = max(end for _, _, end in cols)
            a = self.supply.avail[x]
            points |= {t for t in range(1, min(len(a), horizon)) if a[t] < a[t - 1]}
            for t in sorted(points):
                terms = {p: 1.0 for p, start, end in cols if start <= t < end}
                self.row(terms, -INF, float(self.supply.at(x, t)))

    # --- warm start ----------------------------------------------------------------------------------
    def start_vector(
        self, previous: Mapping[Any, Mapping[Hashable, int]]
    ) -> tuple[list[float], float] | None:
        """A full MIP start from last cycle's choices (spec §1.8 [D]): ``previous`` maps a leaf's tag to
        its grants per partition. Groups (a root sum's children: jobs) are taken in order while their
        leaves still fit the supply; the leaves' indicators and P_x are set, every indicator on the path
        to the root is 1, each MIN's V is its least child. ``None`` if the vector breaks a row (then
        solve cold) or nothing of ``previous`` is left."""
        by_group: dict[int, list[tuple[LeafVars, Mapping[Hashable, int]]]] = defaultdict(list)
        for lv in self.leaves:
            grants = previous.get(lv.leaf.tag) if lv.leaf.tag is not None else None
            if grants:
                by_group[lv.group].append((lv, grants))
        load: dict[tuple[Hashable, int], int] = defaultdict(int)
        x = [0.0] * self.num_cols
        taken: set[int] = set()
        for group in sorted(by_group):
            extra = self._fits(by_group[group], load)
            if extra is None:
                continue
            for key, n in extra.items():
                load[key] += n
            for lv, grants in by_group[group]:
                cols = dict(lv.parts)
                for part, n in grants.items():
                    x[cols[part]] = float(n)
                taken.add(id(lv.leaf))
        if not taken:
            return None
        self._indicators(x, taken)
        for v, subs in self.mins:
            x[v] = min((evaluate(sub, x) for sub in subs), default=0.0)
        if not self.satisfied(x):
            return None
        return x, evaluate(self.objective, x)

    def _fits(
        self, group: list[tuple[LeafVars, Mapping[Hashable, int]]], load: Mapping[tuple[Hashable, int], int]
    ) -> dict[tuple[Hashable, int], int] | None:
        """The extra load of a group's leaves per (partition, quantum), or ``None`` if it does not fit."""
        extra: dict[tuple[Hashable, int], int] = defaultdict(int)
        for lv, grants in group:
            cols = dict(lv.parts)
            total = sum(grants.values())
            if any(part not in cols for part in grants) or total > lv.leaf.k:
                return None
            if not lv.leaf.linear and total != lv.leaf.k:
                return None
            for part, n in grants.items():  # past the supply's end no quantum binds (plan's horizon)
                for t in range(lv.leaf.start, min(lv.leaf.end, len(self.supply.avail[part]))):
                    extra[part, t] += n
        for (part, t), n in extra.items():
            if load.get((part, t), 0) + n > self.supply.at(part, t):
                return None
        return extra

    def _indicators(self, x: list[float], taken: set[int]) -> None:
        """Set to 1 every indicator handed to an expression that has a taken leaf below it (and the root)."""
        held: dict[int, bool] = {}

        def walk(expr: Expr) -> bool:
            if isinstance(expr, NCk):
                h = id(expr) in taken
            elif isinstance(expr, Scale | Barrier):
                h = walk(expr.child)
            else:
                h = False
                for c in expr.children:
                    h = walk(c) or h
            held[id(expr)] = h
            return h

        if self.indicators:
            walk(self.indicators[0][0])
        for expr, ind in self.indicators:
            if held.get(id(expr)):
                x[ind] = 1.0
        x[self.root] = 1.0

    def satisfied(self, x: Sequence[float], tol: float = 1e-6) -> bool:
        """Every bound and row holds at ``x``."""
        for j, v in enumerate(x):
            if v < self.lower[j] - tol or v > self.upper[j] + tol:
                return False
        for idx, val, lo, hi in zip(
            self.row_index, self.row_value, self.row_lower, self.row_upper, strict=True
        ):
            a = sum(x[j] * c for j, c in zip(idx, val, strict=True))
            if a < lo - tol or a > hi + tol:
                return False
        return True

    # --- solving -------------------------------------------------------------------------------------
    def highs(self, settings: SolverSettings, relax: bool = False) -> highspy.Highs:
        """A HiGHS instance holding the model (``relax``: its LP relaxation, no integrality)."""
        import highspy
        import numpy as np

        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", settings.threads)
        h.setOptionValue("random_seed", settings.seed)
        h.setOptionValue("mip_rel_gap", settings.gap)
        h.setOptionValue("presolve", "on" if settings.presolve else "off")
        if settings.max_nodes is not None:
            h.setOptionValue("mip_max_nodes", settings.max_nodes)
        if settings.time_limit is not None:
            h.setOptionValue("time_limit", settings.time_limit)
        lp = highspy.HighsLp()
        lp.num_col_ = self.num_cols
        lp.num_row_ = self.num_rows
        cost = np.zeros(self.num_cols)
        for j, c in self.objective.items():
            cost[j] = c
        lp.col_cost_ = cost
        lp.col_lower_ = np.array(self.lower, dtype=np.float64)
        lp.col_upper_ = np.array(self.upper, dtype=np.float64)
        lp.row_lower_ = np.array(self.row_lower, dtype=np.float64)
        lp.row_upper_ = np.array(self.row_upper, dtype=np.float64)
        starts = np.zeros(self.num_rows + 1, dtype=np.int32)
        np.cumsum([len(r) for r in self.row_index], out=starts[1:])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = starts
        lp.a_matrix_.index_ = np.fromiter((j for r in self.row_index for j in r), np.int32, int(starts[-1]))
        lp.a_matrix_.value_ = np.fromiter((v for r in self.row_value for v in r), np.float64, int(starts[-1]))
        if not relax:
            kinds = highspy.HighsVarType
            lp.integrality_ = [kinds.kInteger if i else kinds.kContinuous for i in self.integer]
        lp.sense_ = highspy.ObjSense.kMaximize
        h.passModel(lp)
        return h

    def solve(
        self, settings: SolverSettings = SolverSettings(), start: Sequence[float] | None = None
    ) -> Solution:
        """Solve with HiGHS; ``start``: a full MIP start vector (:meth:`start_vector`)."""
        if not self.leaves:
            return Solution("Empty", 0.0, [], [0.0] * self.num_cols)
        import highspy

        h = self.highs(settings)
        log: list[str] = []
        start_objective = None
        if start is not None:
            sol = highspy.HighsSolution()
            sol.col_value = list(start)
            h.setSolution(sol)
            start_objective = evaluate(self.objective, start)
            # HiGHS says whether it took the start only in its log: keep the log, off the console.
            h.setOptionValue("output_flag", True)
            h.setOptionValue("log_to_console", False)
            h.cbLogging.subscribe(lambda e: log.append(e.message) if "MIP solution" in e.message else None)
        h.run()
        info = h.getInfo()
        status = h.modelStatusToString(h.getModelStatus())
        if info.primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible.value:
            values = [0.0] * self.num_cols
            objective = 0.0
        else:
            values = list(h.getSolution().col_value)
            objective = h.getInfo().objective_function_value
        return Solution(
            status,
            objective,
            self.extract(values),
            values,
            gap=info.mip_gap,
            nodes=info.mip_node_count,
            seconds=h.getRunTime(),
            start=start is not None,
            start_objective=start_objective,
            start_accepted=any(m.rstrip().endswith(": feasible") for m in log),
        )

    def relax(self, settings: SolverSettings = SolverSettings()) -> Relaxation | None:
        """Solve the LP relaxation (``None`` if HiGHS finds no optimum), with presolve: the start-offset
        trouble of :class:`SolverSettings` is a MIP one, and presolve makes these LPs about 5x faster
        (measured: 0.25 s instead of 1.27 s for 50 gangs on 100 nodes)."""
        import highspy

        h = self.highs(settings, relax=True)
        h.setOptionValue("presolve", "on")
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return Relaxation(
            h.getInfo().objective_function_value, list(h.getSolution().col_value), h.getRunTime()
        )

    def leaf_weights(self, relaxation: Relaxation) -> dict[int, float]:
        """Each leaf's share in the LP optimum, by ``id`` of the leaf: its indicator's value (a linear
        leaf: its granted fraction ``sum_x P_x / k``)."""
        x = relaxation.values
        out = {}
        for lv in self.leaves:
            grant = sum(x[p] for _, p in lv.parts) / lv.leaf.k
            out[id(lv.leaf)] = grant if lv.leaf.linear else x[lv.indicator]
        return out

    def rounded(self, start: Sequence[float], relaxation: Relaxation, gap: float) -> Solution | None:
        """``start`` as the solution, without branch and bound, if its value is within the relative
        ``gap`` of the LP bound (the gap as HiGHS measures it, over the incumbent's value): the bound
        holds for every integer solution, so ``start`` then meets the solver's stopping rule."""
        objective = evaluate(self.objective, start)
        within = (relaxation.bound - objective) / max(1.0, abs(objective))
        if within > gap + 1e-9:
            return None
        return Solution(
            "Rounded LP (within gap)",
            objective,
            self.extract(start),
            list(start),
            gap=max(0.0, within),
            seconds=relaxation.seconds,
            start=True,
            start_objective=objective,
            start_accepted=True,
        )

    def extract(self, values: Sequence[float]) -> list[Choice]:
        """The leaves given resources, with their grants per partition (rounded integers)."""
        out = []
        for lv in self.leaves:
            grants = {x: round(values[p]) for x, p in lv.parts if round(values[p]) > 0}
            chosen = sum(grants.values()) > 0 if lv.leaf.linear else values[lv.indicator] > 0.5
            if chosen and grants:
                out.append(Choice(lv.leaf, grants))
        return out


def add_into(acc: Linear, terms: Linear) -> Linear:
    for j, c in terms.items():
        acc[j] = acc.get(j, 0.0) + c
    return acc


def scaled(terms: Linear, factor: float) -> Linear:
    return {j: c * factor for j, c in terms.items()}


def evaluate(terms: Linear, x: Sequence[float]) -> float:
    return sum(c * x[j] for j, c in terms.items())


def compile_strl(expr: Expr, supply: Supply) -> Model:
    """Algorithm 1's ``genAndSolve`` up to the solve: the root indicator, ``gen``, the supply rows."""
    model = Model(supply)
    model.root = model.binary()
    model.objective = model.gen(expr, model.root, -1 if isinstance(expr, Sum) else 0)
    model.add_supply()
    return model


def solve_strl(
    expr: Expr,
    supply: Supply,
    settings: SolverSettings = SolverSettings(),
    previous: Mapping[Any, Mapping[Hashable, int]] | None = None,
) -> Solution:
    """Compile and solve; ``previous``: last plan's grants by leaf tag, used as a warm start if it fits."""
    model = compile_strl(expr, supply)
    warm = model.start_vector(previous) if previous else None
    return model.solve(settings, warm[0] if warm else None)


__all__ = [
    "Choice",
    "Model",
    "Relaxation",
    "Solution",
    "SolverSettings",
    "Supply",
    "compile_strl",
    "evaluate",
    "solve_strl",
]
