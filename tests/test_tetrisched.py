"""TetriSched as a central policy (spec §1): equivalence sets and partitions, templates and values,
launching start-now gangs, running jobs' occupancy, the NH/NG/NP variants, and simulated runs."""

from __future__ import annotations

import random

import pytest

from aviary.central.packing import PackingCore
from aviary.central.strl import Max, NCk
from aviary.central.tetrisched import ALL, TetriSched
from aviary.common.effects import Send
from aviary.common.frontend import submit_message
from aviary.common.gshet import gshet_attributes, gshet_jobs
from aviary.common.messages import PlaceTask, SubmitJob, TaskFinished
from aviary.common.model import JobSpec
from aviary.common.resources import Resources


def cluster(racks=3, per_rack=2, gpu_racks=1, cores=1):
    """``racks`` x ``per_rack`` nodes of ``cores`` slots; the first ``gpu_racks`` racks have GPUs."""
    return [
        (f"n{r}{i}", Resources(cores=cores, mem=8), {"rack": f"r{r}", "gpu": r < gpu_racks})
        for r in range(racks)
        for i in range(per_rack)
    ]


def core_with(policy, nodes=None):
    return PackingCore("central", nodes or cluster(), policy)


def job(job_id, k, d, *, slo="be", deadline=None, preference="", slowdown=1.5, durations=None):
    return SubmitJob(job_id, durations or [d] * k, d, [], deadline, slo, True, preference, slowdown)


def placed(effects):
    sends = [e for e in effects if isinstance(e, Send) and isinstance(e.msg, PlaceTask)]
    return sorted((e.to, e.msg.job_id, e.msg.task_index) for e in sends)


def cycle(core, now):
    return placed(core.on_timer(now, "cycle"))


# --- equivalence sets and dynamic partitioning ------------------------------------------------------


def test_partitions_are_the_coarsest_that_keep_every_set_a_union_of_parts():
    policy = TetriSched()
    core_with(policy)
    parts, members = policy.partition([ALL, "attr:gpu"])
    assert sorted(sorted(n.name for n in m) for m in members.values()) == [
        ["n00", "n01"],
        ["n10", "n11", "n20", "n21"],
    ]
    assert len(parts[ALL]) == 2 and len(parts["attr:gpu"]) == 1
    sets = [ALL, "attr:gpu", "rack:r0", "rack:r1", "rack:r2"]
    parts, members = policy.partition(sets)
    assert sorted(sorted(n.name for n in m) for m in members.values()) == [
        ["n00", "n01"],
        ["n10", "n11"],
        ["n20", "n21"],
    ]
    for s in sets:  # every set is exactly the union of its parts
        union = sorted(n.name for x in parts[s] for n in members[x])
        assert union == sorted(n.name for n in policy.state.nodes if policy.members(s, n))
    assert parts["attr:gpu"] == parts["rack:r0"]


def test_slots_count_cores_or_whole_nodes():
    nodes = [("big", Resources(cores=4, mem=16), {}), ("small", Resources(cores=2, mem=8), {})]
    cores, whole = TetriSched(), TetriSched(slot="node")
    core_with(cores, nodes), core_with(whole, nodes)
    assert cores.set_slots(ALL) == 6 and whole.set_slots(ALL) == 2
    big = cores.state.nodes[0]
    assert cores.slots(Resources(cores=2.5, mem=1), big) == 2
    assert whole.slots(Resources(cores=3, mem=16), big) == 0


# --- templates, values, culling ------------------------------------------------------------------


def test_templates_of_the_three_job_types():
    policy = TetriSched()
    core = core_with(policy)
    core.on_message(0.0, "fe", job(1, 2, 10.0))
    core.on_message(0.0, "fe", job(2, 2, 10.0, preference="gpu"))
    core.on_message(0.0, "fe", job(3, 2, 10.0, preference="rack"))
    options = {g.job.job_id: [(o.set, o.duration) for o in g.options] for g in policy.gangs(0.0)}
    assert options[1] == [(ALL, 10.0)]
    assert options[2] == [("attr:gpu", 10.0), (ALL, 15.0)]
    assert options[3] == [("rack:r0", 10.0), ("rack:r1", 10.0), ("rack:r2", 10.0), (ALL, 15.0)]
    nh = TetriSched(nh=True)
    core = core_with(nh)
    core.on_message(0.0, "fe", job(2, 2, 10.0, preference="gpu"))
    core.on_message(0.0, "fe", job(1, 2, 10.0))
    assert {g.job.job_id: [(o.set, o.duration) for o in g.options] for g in nh.gangs(0.0)} == {
        1: [(ALL, 10.0)],
        2: [(ALL, 15.0)],  # conservatively slowed down
    }


def test_values_slo_constant_until_the_deadline_best_effort_decaying():
    policy = TetriSched(cycle=4.0, plan_ahead=16.0)
    core = core_with(policy)
    core.on_message(0.0, "fe", job(1, 1, 8.0, slo="accepted", deadline=19.0))
    core.on_message(0.0, "fe", job(2, 1, 8.0, slo="noreserve", deadline=19.0))
    core.on_message(0.0, "fe", job(3, 1, 8.0))
    gangs = {g.job.job_id: g for g in policy.gangs(0.0)}
    exprs = {j: policy.expression(g, 0.0, 8.0) for j, g in gangs.items()}
    starts = {j: [leaf.start for leaf in e.children] for j, e in exprs.items()}
    # Start quanta 0..3 (plan-ahead 16 s / 4 s); SLO options completing after 19 s are culled.
    assert starts[1] == starts[2] == [0, 1, 2] and starts[3] == [0, 1, 2, 3]
    assert {leaf.value for leaf in exprs[1].children} == {1000.0}
    assert {leaf.value for leaf in exprs[2].children} == {25.0}
    be = [leaf.value for leaf in exprs[3].children]
    assert be == sorted(be, reverse=True) and 0 < be[-1] < be[0] <= 1.0
    # v = C (1 - c / (W + d_max + q)) with c = s + d: 1 - 8/28 at s = 0.
    assert be[0] == pytest.approx(1 - 8 / 28)
    assert all(leaf.dur == 2 for leaf in exprs[3].children)  # 8 s = 2 quanta of 4 s


def test_an_slo_job_whose_deadline_cannot_be_met_gets_no_start_options():
    drop = TetriSched(late_slo="drop")
    core = core_with(drop)
    core.on_message(0.0, "fe", job(1, 2, 30.0, slo="accepted", deadline=20.0))
    (gang,) = drop.gangs(0.0)
    assert drop.leaves(gang, 0.0, 30.0) == []
    assert drop.expression(gang, 0.0, 30.0) is None
    assert cycle(core, 4.0) == []
    # Default: it is planned as best effort from then on (it still runs, a missed SLO).
    demote = TetriSched()
    core = core_with(demote)
    core.on_message(0.0, "fe", job(1, 2, 30.0, slo="accepted", deadline=20.0))
    assert len(cycle(core, 4.0)) == 2
    assert core.counters["tetrisched_slo_demoted"] == 1


# --- planning and launching ----------------------------------------------------------------------


def test_a_gpu_job_goes_to_gpu_nodes_when_they_are_free():
    core = core_with(TetriSched())
    core.on_message(0.0, "fe", job(1, 2, 20.0, preference="gpu", slo="accepted", deadline=100.0))
    assert [n for n, _, _ in cycle(core, 4.0)] == ["n00", "n01"]


def occupy_gpu_rack(core, until):
    """A job already running on both GPU nodes, estimated to end at ``until``."""
    core.on_message(0.0, "fe", job(99, 2, until, preference="gpu"))
    assert [n for n, _, _ in cycle(core, 0.0)] == ["n00", "n01"]


def test_a_gpu_job_runs_elsewhere_slowed_down_only_if_that_is_worth_more():
    # GPU nodes busy until 8 s. Best effort, 20 s on GPUs: slowdown 1.5 ends at 30 s now versus
    # 28 s on GPUs at 8 s: it waits. Slowdown 1.2 ends at 24 s now: it goes now, on other nodes.
    for slowdown, now in ((1.5, False), (1.2, True)):
        policy = TetriSched(cycle=4.0)
        core = core_with(policy)
        occupy_gpu_rack(core, 8.0)
        core.on_message(0.5, "fe", job(1, 2, 20.0, preference="gpu", slowdown=slowdown))
        got = cycle(core, 4.0)
        if now:
            assert [n for n, _, _ in got] and all(not n.startswith("n0") for n, _, _ in got)
            assert policy.planned_end[1, 0] == pytest.approx(4.0 + 24.0)  # the slowed estimate
        else:
            assert got == []
            assert [t[2:4] for t in policy.previous] == [("pref", "attr:gpu")]


def test_only_gangs_planned_to_start_now_are_launched():
    policy = TetriSched()
    core = core_with(policy, cluster(racks=1, per_rack=2, gpu_racks=0))
    core.on_message(0.0, "fe", job(1, 2, 20.0))
    assert len(cycle(core, 0.0)) == 2
    core.on_message(1.0, "fe", job(2, 2, 8.0))
    assert cycle(core, 4.0) == []  # planned at 20 s: not launched
    (tag,) = policy.previous
    assert tag[0] == 2 and tag[4] == pytest.approx(5.0)  # 20 s: absolute quantum 5
    # The gang starts whole: both of its tasks at once, when the running job's nodes free.
    for i in range(2):
        core.on_message(19.0, core.state.placed[1, i][0].name, TaskFinished(1, i))
    assert sorted(t for _, _, t in cycle(core, 20.0)) == [0, 1]


def test_a_running_job_blocks_its_nodes_until_its_estimated_end():
    policy = TetriSched(cycle=4.0)
    core = core_with(policy, cluster(racks=1, per_rack=3, gpu_racks=0))
    core.on_message(0.0, "fe", job(1, 2, 10.0))
    cycle(core, 0.0)
    _, members = policy.partition([ALL])
    # Ends at 10 s: held in quanta 0..2 (0-4, 4-8, 8-12), free from quantum 3.
    assert policy.availability(0.0, members, 5)[(ALL,)] == [1, 1, 1, 3, 3]
    # Seen again at 12 s it has run past its estimate: one more quantum, re-evaluated each cycle.
    assert policy.availability(12.0, members, 3)[(ALL,)] == [1, 3, 3]
    assert policy.availability(16.0, members, 3)[(ALL,)] == [1, 3, 3]


def test_an_enormous_estimate_plans_over_the_start_quanta_only():
    """No quantum past the last start can bind (availability never falls), so a 1e300 s estimate (a bad
    frame once asked for a list of 1e300 quanta) plans like any long job: it starts now, and a second
    gang that cannot fit beside it is not launched."""
    policy = TetriSched(cycle=4.0)
    core = core_with(policy, cluster(racks=1, per_rack=2, gpu_racks=0))
    core.on_message(0.0, "fe", job(1, 1, 1e300))
    assert len(cycle(core, 0.0)) == 1
    core.on_message(1.0, "fe", job(2, 2, 1e300))
    assert cycle(core, 4.0) == []


def test_the_plan_never_exceeds_free_slots_and_gangs_fit_whole():
    rng = random.Random(5)
    policy = TetriSched()
    core = core_with(policy, cluster(racks=4, per_rack=3, gpu_racks=1, cores=2))
    for j in range(30):
        pref = rng.choice(["", "gpu", "rack"])
        core.on_message(0.0, "fe", job(j, rng.randint(1, 6), rng.uniform(4, 30), preference=pref))
    now, launched = 0.0, 0
    for _ in range(6):
        got = placed(core.on_timer(now, "cycle"))
        launched += len(got)
        for _, j, _ in got:
            assert sum(1 for n, jj, _ in got if jj == j) == core.state.jobs[j].tasks  # whole gangs
        for node in core.state.nodes:
            assert node.free.cores >= -1e-9 and node.running <= 2
        now += 4.0
    # and it does place: every one of the 12 nodes' 2 cores taken at least once (an empty plan would pass
    # the checks above)
    assert launched >= 24


def test_np_never_plans_a_future_start():
    policy = TetriSched(np=True)
    core = core_with(policy, cluster(racks=1, per_rack=2, gpu_racks=0))
    core.on_message(0.0, "fe", job(1, 2, 20.0))
    cycle(core, 0.0)
    core.on_message(1.0, "fe", job(2, 2, 8.0))
    assert policy.starts == 1
    (gang,) = policy.gangs(4.0)
    assert {leaf.start for leaf in policy.leaves(gang, 4.0, 8.0)} == {0}
    assert cycle(core, 4.0) == [] and policy.previous == {}


def test_ng_plans_one_gang_at_a_time_by_priority_queues():
    # One node free for one quantum's worth; NG takes the accepted SLO job first even though it
    # arrived last, and solves once per gang.
    policy = TetriSched(ng=True)
    core = core_with(policy, cluster(racks=1, per_rack=1, gpu_racks=0))
    core.on_message(0.0, "fe", job(1, 1, 4.0))
    core.on_message(0.0, "fe", job(2, 1, 4.0, slo="noreserve", deadline=100.0))
    core.on_message(0.0, "fe", job(3, 1, 4.0, slo="accepted", deadline=100.0))
    assert [g.job.job_id for g in sorted(policy.gangs(0.0), key=policy.priority)] == [3, 2, 1]
    assert cycle(core, 0.0) == [("n00", 3, 0)]
    assert policy.records[-1].solves == 3
    assert sorted(tag[0] for tag in policy.previous) == [1, 2, 3]  # the others planned later


def test_global_scheduling_beats_greedy_on_the_worked_example_shape():
    # §5.1 scaled to 3 one-slot nodes and 4 s quanta: A (2 nodes, 4 s, due at 4 s), B (1 node, 8 s,
    # due at 16 s), C (3 nodes, 4 s, due at 8 s). Only global planning meets all three deadlines.
    def run(**kw):
        policy = TetriSched(cycle=4.0, plan_ahead=12.0, gap=0.0, **kw)
        core = core_with(policy, cluster(racks=1, per_rack=3, gpu_racks=0))
        core.on_message(0.0, "fe", job(1, 2, 4.0, slo="accepted", deadline=4.0))
        core.on_message(0.0, "fe", job(2, 1, 8.0, slo="accepted", deadline=16.0))
        core.on_message(0.0, "fe", job(3, 3, 4.0, slo="accepted", deadline=8.0))
        first = cycle(core, 0.0)
        return sorted({j for _, j, _ in first}), policy

    launched, policy = run()
    assert launched == [1]
    assert sorted((tag[0], tag[4]) for tag in policy.previous) == [(1, 0.0), (2, 2.0), (3, 1.0)]
    assert policy.records[-1].objective == pytest.approx(3000.0)
    greedy, _ = run(ng=True)
    assert greedy == [1, 2]  # greedy in arrival order: job 3 can no longer meet its deadline


def test_a_warm_start_is_offered_and_accepted_on_the_next_cycle():
    policy = TetriSched()
    core = core_with(policy, cluster(racks=2, per_rack=2, gpu_racks=1))
    core.on_message(0.0, "fe", job(1, 4, 40.0))
    cycle(core, 0.0)
    for j in range(2, 8):
        core.on_message(0.5, "fe", job(j, 2, 8.0, preference="gpu", slo="accepted", deadline=200.0))
    cycle(core, 4.0)
    cycle(core, 8.0)
    record = policy.records[-1]
    assert record.warm == 1 and record.warm_accepted == 1
    assert core.counters["tetrisched_warm_accepted"] >= 1


def test_bad_parameters_are_one_line_errors():
    for kw in ({"slot": "gpu"}, {"late_slo": "x"}, {"warm_start": "yes"}, {"cycle": 0.0}):
        with pytest.raises(ValueError, match="tetrisched"):
            TetriSched(**kw)


# --- the simulator ------------------------------------------------------------------------------


def tiny_workload(n=14, seed=1, nodes=6):
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(n):
        if rng.random() < 0.7:
            k, d = rng.randint(1, 3), rng.uniform(4.0, 16.0)
            pref = rng.choice(["gpu", "rack"])
            slo = rng.choice(["accepted", "noreserve"])
            jobs.append(
                JobSpec(i, t, [d] * k, d, False, deadline=d * 2.5, slo=slo, gang=True, preference=pref)
            )
            jobs[-1].slowdown = 1.5
        else:
            k, d = rng.randint(1, 2), rng.uniform(2.0, 10.0)
            jobs.append(JobSpec(i, t, [d] * k, d, False, slo="be", gang=True))
        t += rng.expovariate(1.0) * k * d / nodes
    return jobs


def simulate(policy, jobs, nodes):
    from aviary.common.frontend import FrontendCore, round_robin
    from aviary.launch.drivers.sim import Simulator
    from aviary.worker.resource_node import ResourceNodeCore

    central = PackingCore("central", nodes, policy)
    starts: dict[int, list[float]] = {}
    inner = central.on_timer

    def recorded(now, key):
        out = inner(now, key)
        for e in out:
            if isinstance(e, Send) and isinstance(e.msg, PlaceTask):
                starts.setdefault(e.msg.job_id, []).append(now)
        return out

    central.on_timer = recorded
    workers = [ResourceNodeCore(n, cap) for n, cap, _ in nodes]
    fe = FrontendCore("fe", jobs, round_robin(["central"]))
    Simulator([central, *workers, fe]).run(frontend=fe)
    return central, fe, starts


@pytest.mark.parametrize(
    "kw",
    [{}, {"nh": True}, {"ng": True}, {"np": True}, {"warm_start": "off"}],
    ids=["full", "NH", "NG", "NP", "cold"],
)
def test_a_simulated_run_finishes_every_job_with_whole_gangs(kw):
    nodes = cluster(racks=3, per_rack=2, gpu_racks=1)
    jobs = tiny_workload()
    central, fe, starts = simulate(TetriSched(cycle=1.0, plan_ahead=8.0, **kw), jobs, nodes)
    assert fe.done
    assert all(t.finish is not None for t in fe.times.values())
    for j in jobs:  # every task of a gang launched in the same cycle
        assert len(starts[j.job_id]) == j.tasks and len(set(starts[j.job_id])) == 1
    assert central.counters["tasks_failed"] == 0


def test_the_leaf_tags_name_job_stage_option_set_and_absolute_start_quantum():
    policy = TetriSched(cycle=2.0, plan_ahead=4.0)
    core = core_with(policy)
    core.on_message(0.0, "fe", job(5, 1, 3.0, preference="gpu"))
    (gang,) = policy.gangs(10.0)
    expr = policy.expression(gang, 10.0, 4.5)
    assert isinstance(expr, Max)
    tags = [leaf.tag for leaf in expr.children if isinstance(leaf, NCk)]
    assert tags == [
        (5, 0, "pref", "attr:gpu", 5.0),  # absolute start in quanta: 10 s / 2 s
        (5, 0, "pref", "attr:gpu", 6.0),
        (5, 0, "any", ALL, 5.0),
        (5, 0, "any", ALL, 6.0),
    ]


def test_a_simulated_run_is_reproducible():
    nodes = cluster(racks=3, per_rack=2, gpu_racks=1)
    runs = [simulate(TetriSched(cycle=1.0, plan_ahead=8.0), tiny_workload(seed=3), nodes) for _ in range(2)]
    (_, fe1, starts1), (_, fe2, starts2) = runs
    assert starts1 == starts2
    assert {j: t.finish for j, t in fe1.times.items()} == {j: t.finish for j, t in fe2.times.items()}


def test_best_effort_decay_from_arrival_and_solver_limits():
    policy = TetriSched(cycle=4.0, plan_ahead=16.0, be_decay_from="arrival", time_limit=5.0, max_nodes=0)
    core = core_with(policy)
    core.on_message(0.0, "fe", job(1, 1, 8.0))
    (gang,) = policy.gangs(12.0)
    first = policy.leaves(gang, 12.0, 8.0)[0]
    assert first.value == pytest.approx(1 - (12 + 8) / 28)  # waited 12 s already
    assert policy.settings.max_nodes is None and policy.settings.time_limit == 5.0
    assert len(cycle(core, 12.0)) == 1


def test_a_preference_without_slowdown_is_planned_as_unconstrained():
    policy = TetriSched()
    core = core_with(policy)
    core.on_message(0.0, "fe", job(1, 2, 10.0, preference="gpu", slowdown=1.0))
    (gang,) = policy.gangs(0.0)
    assert [(o.set, o.duration) for o in gang.options] == [(ALL, 10.0)]


def gshet_core(policy, nodes=30, pending=14, seed=0):
    """GS_HET-like jobs all waiting at time 0 on one-slot nodes in racks of 10 (a quarter GPU)."""
    specs = [(f"n{i}", Resources(1, 4, 1, 1), a) for i, a in enumerate(gshet_attributes(nodes))]
    core = PackingCore("central", specs, policy, seed=seed)
    for j in gshet_jobs(seed, pending, load=None, nodes=nodes):
        assert core.state.submit(0.0, "fe", submit_message(j)) is None
    return core


def test_lp_rounding_plans_within_the_gap_of_the_optimum_without_branch_and_bound():
    rounded, exact = TetriSched(), TetriSched(gap=0.0, max_nodes=0, lp_rounds=0)
    cores = gshet_core(rounded), gshet_core(exact)
    for core in cores:
        core.on_timer(0.0, "cycle")
    assert rounded.records[-1].status == ["Rounded LP (within gap)"]
    assert cores[0].counters["tetrisched_lp_rounded"] == 1
    assert exact.records[-1].status == ["Optimal"] and cores[1].counters["tetrisched_lp_rounded"] == 0
    optimum = exact.records[-1].objective
    assert optimum / 1.1 - 1e-6 <= rounded.records[-1].objective <= optimum + 1e-6


def test_lp_guided_passes_run_only_while_the_best_plan_is_short_of_the_gap():
    # 10 jobs on 20 nodes: the class-order greedy plans are short of the gap, LP-guided ones reach it;
    # with no LP passes the same cycle goes to branch and bound.
    for rounds in (35, 0):
        policy = TetriSched(lp_rounds=rounds)
        passes: list[bool] = []
        greedy = policy.greedy

        def counted(jobs, supply, w=None, passes=passes, greedy=greedy):
            passes.append(w is not None)
            return greedy(jobs, supply, w)

        policy.greedy = counted
        gshet_core(policy, nodes=20, pending=10, seed=3).on_timer(0.0, "cycle")
        status = policy.records[-1].status
        if rounds:
            assert status == ["Rounded LP (within gap)"]
            assert passes[:3] == [False] * 3 and 1 <= sum(passes) < rounds
        else:
            assert status != ["Rounded LP (within gap)"] and passes == [False] * 3


def test_a_tetrisched_replay_prints_no_highs_banner(tmp_path):
    """HiGHS prints its banner from C++ at a process's first Highs(); the launcher makes that one with
    standard output pointed elsewhere (a fresh process: the banner is once per process)."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "aviary.launch.cli", "replay", "--runtime", "sim", "--policy",
           "tetrisched", "--workload", "gshet", "--jobs", "8", "--nodes", "10", "--quiet",
           "--out", str(tmp_path / "r")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "tetrisched (sim, 10 nodes" in done.stdout  # the summary is there
    assert "HiGHS" not in done.stdout + done.stderr
