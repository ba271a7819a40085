"""Carbyne's core without sockets: DRF water-filling, the fluid packer, the paper's Figure 2, the plan's
bound, and altruism off = DRF shares + SRTF leftover."""

from __future__ import annotations

import heapq
import itertools
import math
import random

import pytest
from test_packing import check_barriers, placements, random_dag_jobs, simulate, submit

from aviary.central.carbyne import Carbyne, PackItem, fluid_pack, latest_starts, water_fill
from aviary.central.drf import Drf
from aviary.central.packing import PackingCore
from aviary.common.messages import PlaceTask, TaskFinished
from aviary.common.resources import Resources

# --- DRF -----------------------------------------------------------------------------------------------


def test_water_fill_on_the_drf_paper_example():
    # Ghodsi et al. §4: 9 CPUs, 18 GB; A's tasks <1 CPU, 4 GB>, B's <3 CPU, 1 GB>: dominant shares 2/3.
    total = Resources(9, 18)
    a, b = Resources(1, 4).over(total), Resources(3, 1).over(total)
    assert water_fill([a, b], [10.0, 10.0]) == pytest.approx([2 / 3, 2 / 3])


def test_water_fill_stops_a_capped_job_and_gives_the_rest_to_the_others():
    one = Resources(0.1)
    # Three jobs on one resource: one can use 0.1 at most; the other two split the remaining 0.9.
    assert water_fill([one, one, one], [0.1, 5.0, 5.0]) == pytest.approx([0.1, 0.45, 0.45])
    # A job that wants nothing gets nothing, and the shares never exceed the resource.
    shares = water_fill([one, Resources(0.0), Resources(0.2, 0.3)], [1.0, 0.0, 1.0])
    assert shares[1] == 0.0
    assert shares[0] + shares[2] * (0.2 / 0.3) <= 1 + 1e-9


# --- the fluid packer ----------------------------------------------------------------------------------


def test_fluid_pack_respects_dependencies_and_the_pool():
    # A diamond in a pool of 1.0: s0 (2 x 0.5, 1 s) -> s1 (1 x 1.0, 2 s), s2 (2 x 0.5, 1 s) -> s3 (0.1, 1 s)
    items = [
        PackItem(0, 2, 1.0, Resources(0.5), ()),
        PackItem(1, 1, 2.0, Resources(1.0), (0,)),
        PackItem(2, 2, 1.0, Resources(0.5), (0,)),
        PackItem(3, 1, 1.0, Resources(0.1), (1, 2)),
    ]
    makespan, starts = fluid_pack(items, Resources(1.0), Resources(1.0))
    # At 1 s s1 (alignment 1.0) goes before s2 (0.5) and fills the pool until 3 s; s2 runs 3-4; s3 4-5.
    assert starts == {0: [0.0, 0.0], 1: [1.0], 2: [3.0, 3.0], 3: [4.0]}
    assert makespan == 5.0


def test_fluid_pack_counts_pinned_running_tasks_and_runs_a_too_big_task_alone():
    items = [PackItem(0, 1, 1.0, Resources(2.0), (), pinned=[0.5]), PackItem(1, 1, 1.0, Resources(0.5), (0,))]
    makespan, starts = fluid_pack(items, Resources(1.0), Resources(1.0))
    assert starts == {0: [0.5], 1: [1.5]}  # waits for the pinned task, then runs alone though too big
    assert makespan == 2.5


def check_schedule(items, begin, capacity, ordered=None):
    """Every task (of ``ordered``, default all) starts after all tasks of its preds ended, and the pool
    is never over-used."""
    by_key = {it.key: it for it in items}
    ends = {k: max((t + by_key[k].duration for t in ts), default=0.0) for k, ts in begin.items()}
    for it in items if ordered is None else ordered:
        for t in begin[it.key]:
            assert all(t >= ends[p] - 1e-9 for p in it.preds if p in begin)
    edges = sorted({x for k, ts in begin.items() for t in ts for x in (t, t + by_key[k].duration)})
    # Between consecutive edges (float noise of a mirrored start against an end is no overlap).
    points = [(a + b) / 2 for a, b in itertools.pairwise(edges) if b - a > 1e-7]
    for t in points:
        load = Resources()
        for k, ts in begin.items():
            for s in ts:
                if s <= t < s + by_key[k].duration:
                    load = load.plus(by_key[k].demand)
        assert load.fits_in(capacity.plus(Resources(1e-6, 1e-6))), (t, load)


@pytest.mark.parametrize("seed", range(40))
def test_the_altruistic_plan_is_feasible_and_never_finishes_after_t_k(seed):
    """Theorem 3.1's premise, on random DAGs with running tasks: the running tasks until their estimated
    end plus every unstarted task at its latest start is a schedule that respects the DAG and the share
    and still ends by T_k (the forward packing's makespan)."""
    rng = random.Random(seed)
    items = []
    for i in range(rng.randint(1, 7)):
        parents = tuple(sorted(rng.sample(range(i), k=min(i, rng.randint(0, 2)))))
        demand = Resources(rng.uniform(0.05, 0.6), rng.uniform(0.05, 0.6))
        pinned = [rng.uniform(0.1, 2.0) for _ in range(rng.randint(0, 2))] if not parents else []
        items.append(
            PackItem(i, rng.randint(1, 6), rng.choice([0.5, 1.0, 1.5, 3.0]), demand, parents, pinned)
        )
    share = Resources(rng.uniform(0.6, 1.5), rng.uniform(0.6, 1.5))
    running_total = Resources()
    for it in items:
        running_total = running_total.plus(it.demand.times(len(it.pinned)))
    share = Resources(*(max(x, y) for x, y in zip(share, running_total, strict=True)))  # they fit in it
    t_k, latest, _ = latest_starts(items, share, Resources(1.0, 1.0))
    assert math.isfinite(t_k)
    # The running tasks as tasks of their own (no preds: they run from now), beside the plan.
    running = [PackItem(100 + it.key, 0, e, it.demand, ()) for it in items for e in it.pinned]
    begin = dict(latest) | {r.key: [0.0] for r in running}
    # A child of a stage with running tasks waits for them too (their precedence is not planned: [D]).
    plain = [it for it in items if not any(items[p].pinned for p in it.preds)]
    check_schedule(items + running, begin, share, ordered=plain)
    ends = [t + it.duration for it in items for t in latest[it.key]]
    assert max(ends, default=0.0) <= t_k + 1e-9
    assert all(len(latest[it.key]) == it.count for it in items)


def test_running_tasks_are_pinned_at_the_end_of_the_reverse_horizon():
    """Lines 18-21: in the reversed schedule a running task holds its demand during the last ``remaining
    estimate`` of the horizon (the start of the mirrored forward one), not for the whole horizon.

    Share 2 cores; one running 1-core task ends in 1 s; two runnable 1-core tasks of 3 s. Forward: one
    starts now, the other at 1 s: T_k = 4. Reversed, both fit in the 2 cores until T_k - 1 = 3 s, where
    the running task's core is held: Rev = 0 for both, so both may wait until 4 - 0 - 3 = 1 s. Holding
    the running task's core for the whole horizon packs them one after the other (6 s > T_k): a plan
    that falls back to the forward starts (0 and 1 s) and donates nothing now."""
    items = [PackItem(0, 0, 1.0, Resources(1), (), pinned=[1.0]), PackItem(1, 2, 3.0, Resources(1), ())]
    t_k, latest, fallback = latest_starts(items, Resources(2), Resources(1))
    assert t_k == 4.0 and not fallback
    assert latest[1] == [1.0, 1.0]
    # Through the policy: the plan is counted, and does not fall back.
    policy = Carbyne(granule=0.5)
    core = PackingCore("c", [("n", Resources(4), {})], policy)
    core.state.submit(0.0, "fe", submit(1, [(1, 2.0, (1,), ()), (2, 3.0, (1,), ())]))
    job = core.state.jobs[1]
    core.state.assign(0.0, job, job.stages[0], core.state.nodes[0])
    policy.now = 1.0  # the running task has 1 s left
    policy.alloc[1] = Resources(2)
    assert policy.must_start(job) == {job.stages[1]: [1.0, 1.0]}
    assert core.counters["carbyne_plans"] == 1 and core.counters["carbyne_plan_fallbacks"] == 0


def test_a_reverse_plan_longer_than_t_k_falls_back_and_is_counted():
    # Greedy list scheduling is not symmetric: on random DAGs some reversed packings end after T_k; those
    # plans are the forward packing's own starts (so no plan ends after T_k) and are flagged.
    rng = random.Random(7)
    fallbacks = 0
    for _ in range(200):
        items = []
        for i in range(rng.randint(2, 5)):
            parents = tuple(sorted(rng.sample(range(i), k=min(i, rng.randint(0, 1)))))
            demand = Resources(rng.uniform(0.1, 0.7), rng.uniform(0.1, 0.7))
            items.append(PackItem(i, rng.randint(1, 3), rng.choice([0.5, 1.0, 2.5]), demand, parents))
        _, latest, fallback = latest_starts(items, Resources(1, 1), Resources(1, 1))
        if fallback:
            fallbacks += 1
            _, forward = fluid_pack(items, Resources(1, 1), Resources(1, 1))
            assert latest == forward
    assert 0 < fallbacks < 200


# --- Figure 2 ------------------------------------------------------------------------------------------

# The paper's Figure 2 (its legend is an image; reconstructed from the text of §2.2 and §3.3.3, which it
# reproduces exactly): one bottleneck resource of 1 unit; J1 = S0 (2 tasks x 0.04, 1 time unit), S1
# (3 x 0.21, 1) and the barrier S2 (1 x 0.21, 0.1) after both; J2 = one stage of 2 tasks x 0.29, 1 unit.
FIG2_J1 = [(2, 1.0, (0.04,), ()), (3, 1.0, (0.21,), ()), (1, 0.1, (0.21,), (0, 1))]
FIG2_J2 = [(2, 1.0, (0.29,), ())]


def drive(policy, jobs):
    """Admit ``jobs`` together at 0 (as in the figure), then run placements to the end; finish times."""
    core = PackingCore("c", [("n", Resources(1.0), {})], policy)
    for job_id, stages in jobs:
        assert core.state.submit(0.0, "fe", submit(job_id, stages)) is None
    events: list[tuple[float, int, int]] = []

    def run(now, effects):
        for e in effects:
            if isinstance(getattr(e, "msg", None), PlaceTask):
                heapq.heappush(events, (now + e.msg.duration, e.msg.job_id, e.msg.task_index))

    run(0.0, core._match(0.0, []))
    done: dict[int, float] = {}
    while events:
        t, j, i = heapq.heappop(events)
        done[j] = t
        run(t, core.on_message(t, "n", TaskFinished(j, i, True)))
    return core, done


def test_figure_2_shares_donations_and_completion_times():
    policy = Carbyne(granule=0.0)
    core = PackingCore("c", [("n", Resources(1.0), {})], policy)
    for job_id, stages in ((1, FIG2_J1), (2, FIG2_J2)):
        core.state.submit(0.0, "fe", submit(job_id, stages))
    policy.refresh()
    assert policy.alloc[1].cores == pytest.approx(0.5) and policy.alloc[2].cores == pytest.approx(0.5)
    jobs = core.state.jobs
    must = {(s.job_id, s.index): sum(1 for t in latest if t <= 0) for s, latest in policy.latest.items()}
    # "CARBYNE can postpone both tasks from S0 and one task from S1 ... donating 0.29 units (0.08 for S0's
    # tasks and 0.21 for S1's task). Similarly, job J2 donates 0.21 units" (§3.3.3): J1 must start only
    # one S1 task of the two its share holds, J2 one of its tasks.
    assert must == {(1, 0): 0, (1, 1): 1, (2, 0): 1}
    donated = sum(
        policy.alloc[j].cores
        - sum(jobs[j].stages[i].demand.cores * n for (jj, i), n in must.items() if jj == j)
        for j in (1, 2)
    )
    assert donated == pytest.approx(0.5)
    # Fig. 2b: each job in its share alone (fairness across jobs, packing within) -> 2.1 and 2.0, avg 2.05.
    t1, _ = fluid_pack(
        [PackItem(i, t, e, Resources(*d), p) for i, (t, e, d, p) in enumerate(FIG2_J1)],
        Resources(0.5),
        Resources(1),
    )
    t2, _ = fluid_pack([PackItem(0, 2, 1.0, Resources(0.29), ())], Resources(0.5), Resources(1))
    assert (t1 + t2) / 2 == pytest.approx(2.05)
    # Fig. 2c: with altruism J2 ends at 1 and J1 still at its T_1 = 2.1: average 1.55.
    _, done = drive(Carbyne(granule=0.0), [(1, FIG2_J1), (2, FIG2_J2)])
    assert done[1] == pytest.approx(t1) and done[2] == pytest.approx(1.0)
    assert (done[1] + done[2]) / 2 == pytest.approx(1.55)


# --- altruism off = DRF ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_altruism_off_places_exactly_as_drf(seed):
    """§3.4.2: "setting P(Altruism) = 0 ... reduces CARBYNE to DRF": the same placements, in the same
    order, at the same times, as the DRF baseline counting the same four resources; nothing goes through
    the leftover."""
    jobs = random_dag_jobs(seed, 30, gap=0.3)
    nodes = [(f"n{i}", Resources(16, 64, 1, 1), {}) for i in range(3)]
    central = PackingCore("central", nodes, Carbyne(altruism=0.0))
    ours = simulate(central, jobs, nodes)
    reference = simulate(PackingCore("central", nodes, Drf()), jobs, nodes)
    assert ours == reference
    assert len(ours) == sum(j.tasks for j in jobs)
    assert central.counters["carbyne_leftover_placements"] == 0


def test_a_dag_workload_runs_to_completion_under_every_setting():
    jobs = random_dag_jobs(5, 40)
    nodes = [(f"n{i}", Resources(16, 64, 1, 1), {}) for i in range(4)]
    for policy in (Carbyne(), Carbyne(altruism=0.5), Carbyne(leftover="pack-first", period=0.0)):
        central = PackingCore("central", nodes, policy)
        simulate(central, jobs, nodes)
        check_barriers(central, jobs)


def test_altruism_holds_back_tasks_off_the_critical_path():
    # One job, one node of 4 cores: a long chain s0 (1 x 1 core, 10 s) -> s2, beside a short wide stage
    # s1 (4 x 1 core, 1 s) -> s2. T_k = 10.x; s1's tasks can wait until 9 s, so only s0 must start now;
    # a greedy job (altruism 0) starts everything that fits.
    stages = [(1, 10.0, (1,), ()), (4, 1.0, (1,), ()), (1, 1.0, (1,), (0, 1))]
    for altruism, expected in ((1.0, {0: 1, 1: 0}), (0.0, None)):
        policy = Carbyne(altruism=altruism, granule=0.5)
        core = PackingCore("c", [("n", Resources(4), {})], policy)
        core.state.submit(0.0, "fe", submit(1, stages))
        policy.refresh()
        if expected is None:
            assert policy.greedy == {1}
        else:
            due = {s.index: sum(1 for t in latest if t <= 0.5) for s, latest in policy.latest.items()}
            assert due == expected
        # Alone, the job still gets the whole node (leftover): work conservation.
        placed = placements(core._match(0.0, []))
        assert len(placed) == 4


def test_bad_knobs_are_refused():
    for kwargs in ({"altruism": 1.5}, {"granule": -1}, {"leftover": "fifo"}):
        with pytest.raises(ValueError):
            Carbyne(**kwargs)


def test_must_start_tasks_go_first_most_urgent_then_best_aligned_then_the_leftover():
    policy = Carbyne(granule=0.0)
    core = PackingCore("c", [("n", Resources(1.0), {})], policy)
    for job_id, stages in ((1, FIG2_J1), (2, FIG2_J2)):
        core.state.submit(0.0, "fe", submit(job_id, stages))
    policy.refresh()
    node, jobs = core.state.nodes[0], list(core.state.jobs.values())
    order = []
    while (chosen := policy.urgent(node, jobs)) is not None:
        job, stage = chosen
        order.append((job.job_id, stage.index))
        core.state.assign(0.0, job, stage, node)
        policy.on_placed(job, stage)
    # Both due at 0: J2's task (0.29 of the node) is better aligned than J1's S1 task (0.21); one each.
    assert order == [(2, 0), (1, 1)]


def test_the_leftover_goes_srtf_first_or_to_tetris_packing():
    # Job 1: one 5-core task of 2 s (remaining work 10 core-s); job 2: one 1-core task of 5 s (5 core-s).
    picks = {}
    for order in ("srtf-first", "pack-first"):
        policy = Carbyne(leftover=order)
        core = PackingCore("c", [("n", Resources(10, 10), {})], policy)
        core.state.submit(0.0, "fe", submit(1, [(1, 2.0, (5, 1), ())]))
        core.state.submit(0.0, "fe", submit(2, [(1, 5.0, (1, 1), ())]))
        policy.refresh()
        policy.latest.clear()  # nothing must start: only the leftover phase decides
        policy.greedy.clear()
        job, _ = policy.pick(core.state.nodes[0], list(core.state.jobs.values()))
        picks[order] = job.job_id
    # SRTF: the job with less remaining work; Tetris: the better-aligned task outweighs the SRTF term.
    assert picks == {"srtf-first": 2, "pack-first": 1}


def test_a_plan_counts_the_running_tasks_until_their_estimated_end():
    # s0 (one 1-core task of 10 s) started at 0; at 5 s its job's share is 2 cores. s1 (two 1-core tasks
    # of 1 s, runnable) and s2 (after both) remain: T_k = 5 (s0) + 1 (s2) = 6; the reverse plan in the
    # 1 spare core puts s2 last and s1's tasks 1 and 2 s before it: latest starts 3 and 4 s from now.
    policy = Carbyne()
    core = PackingCore("c", [("n", Resources(4), {})], policy)
    core.state.submit(0.0, "fe", submit(1, [(1, 10.0, (1,), ()), (2, 1.0, (1,), ()), (1, 1.0, (1,), (0, 1))]))
    job = core.state.jobs[1]
    core.state.assign(0.0, job, job.stages[0], core.state.nodes[0])
    policy.now = 5.0
    policy.alloc[1] = Resources(2)
    assert policy.must_start(job) == {job.stages[1]: [3.0, 4.0]}


def test_shares_are_recomputed_when_a_job_arrives_or_ends():
    policy = Carbyne()
    core = PackingCore("central", [("n", Resources(4), {})], policy)
    core.on_message(0.0, "fe", submit(1, [(1, 1.0, (1,), ())]))
    assert policy.alloc[1].cores == pytest.approx(1)  # alone, capped by what it can use
    core.on_message(0.0, "fe", submit(2, [(8, 1.0, (1,), ())]))
    # Job 1 can use one core (its cap); water-filling gives job 2 the other three.
    assert policy.alloc[1].cores == pytest.approx(1) and policy.alloc[2].cores == pytest.approx(3)
    core.on_message(0.5, "n", TaskFinished(1, 0, True))  # job 1 ends: job 2 gets the cluster
    assert set(policy.alloc) == {2} and policy.alloc[2].cores == pytest.approx(4)
