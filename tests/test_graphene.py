"""Graphene (Grandl et al., OSDI'16): the offline schedule builder and the online policy, as cores
without sockets (spec §3)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_packing import check_barriers, pending, placements, random_dag_jobs, simulate, submit

from aviary.central.cs import SlotFair
from aviary.central.graphene import CLUSTER, Graphene
from aviary.central.graphene_schedule import (
    ORDERS,
    Dag,
    DagStage,
    Planner,
    Space,
    build_schedule,
    closure,
    cp_scores,
    split,
    virtual_machines,
)
from aviary.central.packing import PackingCore
from aviary.common.messages import TaskFinished
from aviary.common.model import JobSpec, Stage
from aviary.common.resources import Resources


def check_space(dag: Dag, space: Space) -> None:
    """Every task placed once; every stage starts at or after all its parents' ends; no machine ever
    holds more than its capacity (checked at every start, where usage can only rise)."""
    count = [0] * len(dag.stages)
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    for stage, _, start, end, n in space.blocks:
        count[stage] += n
        first[stage] = min(first.get(stage, start), start)
        last[stage] = max(last.get(stage, end), end)
        assert end - start == pytest.approx(dag.stages[stage].duration)
    assert count == [s.tasks for s in dag.stages]
    for i, parents in enumerate(dag.parents):
        for p in parents:
            assert first[i] >= last[p], (i, p)
    for m, cap in enumerate(space.caps):
        mine = [b for b in space.blocks if b[1] == m]
        for _, _, at, _, _ in mine:
            use = [0.0] * 4
            for stage, _, start, end, n in mine:
                if start <= at < end:
                    for r in range(4):
                        use[r] += n * dag.stages[stage].demand[r]
            assert all(use[r] <= cap[r] + 1e-9 for r in range(4)), (m, at, use, cap)


CAPACITIES = [Resources(1, 1), Resources(2, 1), Resources(1, 2, 1, 1)]


@st.composite
def dags(draw):
    n = draw(st.integers(1, 7))
    stages = []
    for i in range(n):
        parents = tuple(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else ()
        demand = Resources(
            draw(st.sampled_from([0.05, 0.2, 0.3, 0.5, 0.7, 1.0])),
            draw(st.sampled_from([0.1, 0.25, 0.4, 0.6, 1.0])),
        )
        duration = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.5, 10.0]))
        stages.append(DagStage(draw(st.integers(1, 5)), duration, demand, parents))
    caps = draw(st.lists(st.sampled_from(CAPACITIES), min_size=1, max_size=3))
    trouble = draw(st.integers(1, (1 << n) - 1))  # any non-empty set of stages, closed below
    return Dag(stages), caps, trouble


@settings(max_examples=150, deadline=None, derandomize=True)
@given(dags())
def test_every_subset_order_forward_and_backward_yields_a_valid_schedule(case):
    # Dead-end freedom: T placed first (any T, closed), then each of the four orders, with every
    # PlaceTasks call forced forward or backward: dependencies hold and no machine is over capacity.
    dag, caps, trouble = case
    planner = Planner(dag, caps)
    parts = split(dag, closure(dag, trouble))
    assert dag.full == parts.T | parts.S | parts.P | parts.C
    assert not (parts.T & parts.S or parts.T & parts.P or parts.T & parts.C or parts.P & parts.C)
    for order in ORDERS:
        for direction in ("forward", "backward"):
            check_space(dag, planner.order(parts, order, direction))
    for candidate in planner.candidates(prune=1.0):
        check_space(
            dag, planner.try_subset_orders(candidate, planner.place_tasks(candidate.T, planner.empty))
        )
    check_space(dag, planner.build(prune=1.0).space)


def test_seeded_random_tpch_like_dags_build_valid_schedules():
    rng = random.Random(7)
    for _ in range(20):
        stages = []
        for i in range(rng.randint(3, 12)):
            parents = tuple(rng.sample(range(i), k=min(i, rng.randint(0, 3))))
            demand = Resources(
                rng.uniform(0.1, 6), rng.uniform(0.1, 17), rng.uniform(0.01, 1), rng.uniform(0.01, 1)
            )
            stages.append(DagStage(rng.randint(1, 40), rng.uniform(0.1, 10), demand, parents))
        caps = virtual_machines([Resources(16, 64, 1, 1)] * 6 + [Resources(8, 48, 1, 2)] * 2, 0.5)
        schedule = build_schedule(stages, caps)
        assert schedule.kind in ("graphene", "plain", "bypass")
        if schedule.space is not None:
            check_space(Dag(stages), schedule.space)
        scores = sorted(p for ps in schedule.pri for p in ps)
        n = sum(s.tasks for s in stages)
        assert scores == pytest.approx(sorted(1 - r / n for r in range(n)))  # 1 - rank/n, each rank once


class Unbounded(Planner):
    """BuildSchedule without branch and bound: every candidate and order placed in full."""

    @property
    def bound(self):
        return math.inf

    @bound.setter
    def bound(self, value):
        pass


def test_branch_and_bound_finds_the_same_schedules_as_the_full_search():
    rng = random.Random(11)
    for _ in range(60):
        stages = []
        for i in range(rng.randint(3, 8)):
            parents = tuple(rng.sample(range(i), k=min(i, rng.randint(0, 2))))
            demand = Resources(rng.choice([0.2, 0.3, 0.5, 0.7]), rng.choice([0.2, 0.3, 0.5, 0.7]))
            stages.append(DagStage(rng.randint(1, 6), rng.choice([1.0, 2.0, 5.0, 10.0]), demand, parents))
        dag, caps = Dag(stages), [Resources(1, 1)] * rng.randint(1, 3)
        fast, full = Planner(dag, caps).build(), Unbounded(dag, caps).build()
        assert (fast.pri, fast.parts, fast.makespan) == (full.pri, full.parts, full.makespan)


# A long task off the critical path: stage 0 (one task of 100 s, half the machine) and a chain of four
# stages of three 30 s tasks (0.15 of the machine each), so the chain's critical path (120 s) is longer.
LONG_OFF_PATH = [
    DagStage(1, 100.0, Resources(0.5, 0.5), ()),
    DagStage(3, 30.0, Resources(0.15, 0.15), ()),
    DagStage(3, 30.0, Resources(0.15, 0.15), (1,)),
    DagStage(3, 30.0, Resources(0.15, 0.15), (2,)),
    DagStage(3, 30.0, Resources(0.15, 0.15), (3,)),
]


def test_troublesome_tasks_are_placed_first():
    schedule = build_schedule(LONG_OFF_PATH, [Resources(1, 1)])
    assert schedule.kind == "graphene" and schedule.parts is not None and schedule.space is not None
    assert schedule.parts.T == 1 << 0  # the long task is the troublesome set
    space = schedule.space
    assert space.first[0] == space.lo  # at time 0 of the schedule
    assert all(space.first[i] >= space.first[0] for i in range(1, 5))
    assert schedule.pri[0] == [1.0]  # first in the preferred order
    assert schedule.makespan == pytest.approx(120.0)  # the chain runs beside it
    # CP order would start the chain first; online, Graphene's first task on the machine is the long one.
    assert cp_scores(Dag(LONG_OFF_PATH))[0][0] < 1.0
    stages = [(s.tasks, s.duration, s.demand, s.parents) for s in LONG_OFF_PATH]
    core = PackingCore("c", [("n", Resources(1, 1), {})], Graphene(share=1.0))
    assert placements(pending(core, submit(1, stages)))[0] == ("n", 1, 0)
    cp = PackingCore("c", [("n", Resources(1, 1), {})], SlotFair("cp"))
    assert placements(pending(cp, submit(1, stages)))[0] == ("n", 1, 1)  # a chain task


def test_deficit_counters_keep_each_job_within_kappa_of_its_fair_share():
    # One node of 100 units, two jobs of 1-unit tasks (factor = 0.01 of the cluster each). Job 1 packs
    # better (pScore) and has less remaining work (srpt 60 against 75), so without the bound it would
    # take every slot. A task finishes per step and its slot is refilled: over 1,500 refills each job's
    # cumulative allocation stays within kappa C + one task's factor of its fair share (half the total).
    factor = 0.01

    def worst_gap(kappa: float) -> float:
        core = PackingCore("c", [("n", Resources(100, 100), {})], Graphene(kappa=kappa))
        alloc, worst = {1: 0.0, 2: 0.0}, 0.0

        def count(placed: list) -> list:
            nonlocal worst
            for _, job, _ in placed:
                alloc[job] += factor
                total = alloc[1] + alloc[2]
                worst = max(worst, *(abs(a - total / 2) for a in alloc.values()))
            return placed

        jobs = submit(1, [(3000, 1, (1, 1), ())]), submit(2, [(5000, 1, (1, 0.5), ())])
        running = count(placements(pending(core, *jobs)))
        for step in range(1500):
            _, job, index = running.pop(0)
            running += count(placements(core.on_message(float(step), "n", TaskFinished(job, index))))
        return worst

    kappa = 0.1
    assert worst_gap(kappa) <= kappa * CLUSTER + factor + 1e-9
    assert worst_gap(float("inf")) > 10 * (kappa * CLUSTER + factor)  # without the bound: job 1 takes all


# A hand example on one machine <1, 1>, found by a seeded search over small DAGs and checked by hand:
#   a: 2 tasks x 10 s <0.2, 0.5>      b: 2 tasks x 5 s <0.5, 0.5>
#   c: 3 tasks x  2 s <0.3, 0.2>  ->  d: 3 tasks x 5 s <0.7, 0.5>   (fat: one at a time, 15 s in all)
# CP (critical paths a 10, c 7, b 5, d 5), BFS, Tetris and Graphene without its offline part all start
# both a tasks at 0 (memory full until 10), so the d chain begins only at 12 and ends at 32. Graphene's
# offline part finds d hard to pack (FragScore 0.7, the lowest), places it first, c backward before it
# and a, b around it, so a and b run beside c and d: its preferred schedule takes 26 s, and online,
# following that order, the job ends at 25 s (work-conserving matching fills a hole the plan left).
HAND = [
    Stage(2, 10.0, Resources(0.2, 0.5), ()),
    Stage(2, 5.0, Resources(0.5, 0.5), ()),
    Stage(3, 2.0, Resources(0.3, 0.2), ()),
    Stage(3, 5.0, Resources(0.7, 0.5), (2,)),
]


def makespan(policy, stages: list[Stage]) -> float:
    durations = [s.estimate for s in stages for _ in range(s.tasks)]
    job = JobSpec(0, 0.0, durations, sum(durations) / len(durations), False, stages=stages)
    nodes = [("n0", Resources(1, 1), {})]
    central = PackingCore("central", nodes, policy)
    simulate(central, [job], nodes)
    return max(end for _, _, _, end, *_ in central.state.log)


def test_a_hand_example_where_graphene_beats_cp_and_bfs_order():
    stages = [DagStage(s.tasks, s.estimate, s.demand, s.parents) for s in HAND]
    schedule = build_schedule(stages, [Resources(1, 1)])
    assert schedule.kind == "graphene" and schedule.makespan == pytest.approx(26.0)
    assert schedule.parts is not None and schedule.parts.T == 1 << 3 and schedule.parts.P == 1 << 2
    assert makespan(Graphene(), HAND) == pytest.approx(25.0, abs=0.1)  # the simulator adds network delays
    assert makespan(SlotFair("cp"), HAND) == pytest.approx(32.0, abs=0.1)
    assert makespan(SlotFair(), HAND) == pytest.approx(32.0, abs=0.1)
    assert makespan(Graphene(offline=False), HAND) == pytest.approx(32.0, abs=0.1)  # the offline part wins


def test_a_dag_workload_runs_to_completion_on_the_simulator():
    jobs = random_dag_jobs(3, 40)
    variants = (
        Graphene(),
        Graphene(offline=False),
        Graphene(rebase=True),
        Graphene(kappa=0, m_eta=0, share=0.5),
    )
    for policy in variants:
        nodes = [(f"n{i}", Resources(16, 64, 1, 1), {}) for i in range(4)]
        central = PackingCore("central", nodes, policy)
        simulate(central, jobs, nodes)
        check_barriers(central, jobs)
        # Every per-job cache is forgotten once the job is done.
        assert not (
            policy.schedules
            or policy.ranks
            or policy.rebase_cache
            or policy.work.weights
            or policy.work.work
            or policy.base
            or policy.held
        )
        assert all(not shares for shares in policy.shares.by_capacity.values())


def test_priscore_of_a_stage_is_the_best_among_its_unplaced_tasks_and_uniform_without_offline():
    core = PackingCore("c", [("n", Resources(100, 100), {})], Graphene(share=1.0))
    stages = [(s.tasks, s.duration, s.demand, s.parents) for s in LONG_OFF_PATH]
    core.state.submit(0.0, "fe", submit(1, stages))
    policy, job = core.policy, core.state.jobs[1]
    chain = job.stages[1]
    scores = policy.schedule(job).pri[1]
    assert policy.pri(job, chain) == scores[0] == max(scores)
    core.state.place(0.0, job, chain, core.state.nodes[0])
    assert policy.pri(job, chain) == scores[1]
    assert Graphene(offline=False).pri(job, chain) == 1.0
    # rebase: only the job's unplaced tasks ranked earlier count. The long task (rank 0) is unplaced,
    # so the chain's second task (rank 2 of 13) has one task ahead of it; once placed, none.
    rebased = Graphene(share=1.0, rebase=True)
    rebased.bind(core.state, random.Random(0))
    assert scores[1] == pytest.approx(1 - 2 / 13)
    assert rebased.pri(job, chain) == pytest.approx(1 - 1 / 13)
    core.state.place(0.0, job, job.stages[0], core.state.nodes[0])
    assert rebased.pri(job, chain) == 1.0 and policy.pri(job, chain) == scores[1]


def test_simple_dags_bypass_the_offline_search_with_the_cp_order():
    few = [DagStage(2, 1.0, Resources(1, 1)), DagStage(3, 5.0, Resources(1, 1), (0,))]
    schedule = build_schedule(few, [Resources(4, 4)])
    assert schedule.kind == "bypass" and schedule.space is None
    # CP order: stage 0 (cp 6) before stage 1 (cp 5); priScore = 1 - rank/5.
    assert schedule.pri == [[1.0, 0.8], pytest.approx([0.6, 0.4, 0.2])]
    tiny = [DagStage(1, 1.0, Resources(1, 1), tuple(range(i))) for i in range(5)]  # 5 tasks < 10
    assert build_schedule(tiny, [Resources(4, 4)]).kind == "bypass"


def test_graphene_knobs_outside_their_range_are_refused():
    for knobs in ({"kappa": -1}, {"m_eta": -0.5}, {"share": 0}, {"share": 1.5}, {"delta": 0}, {"prune": 2}):
        with pytest.raises(ValueError, match=next(iter(knobs))):
            Graphene(**knobs)


class PlainDeficits(Graphene):
    """The deficit counters by their definition: every counted job's counter updated per placement."""

    def __init__(self, **knobs):
        super().__init__(**knobs)
        self.plain: dict[int, float] = {}

    def on_placed(self, job, stage):
        factor = stage.demand.dominant_share(self.state.capacity_total)
        groups = set(self.state.active) | {job.job_id}
        for g in groups:
            self.plain[g] = self.plain.get(g, 0.0) + factor / len(groups)
        self.plain[job.job_id] -= factor

    def unfair(self):
        if not self.state.active:
            return None
        top = max(self.state.active, key=lambda j: (self.plain.get(j, 0.0), -j))
        return top if self.plain.get(top, 0.0) >= self.kappa * CLUSTER else None


def test_the_fast_deficit_counters_place_exactly_as_their_definition():
    jobs = random_dag_jobs(5, 60, gap=0.2)
    for kappa in (0.0, 0.02):
        runs = []
        for policy in (Graphene(kappa=kappa), PlainDeficits(kappa=kappa)):
            nodes = [(f"n{i}", Resources(16, 64, 1, 1), {}) for i in range(4)]
            runs.append(simulate(PackingCore("central", nodes, policy), jobs, nodes))
        assert runs[0] == runs[1]
