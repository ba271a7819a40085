"""The shared central layer and the multi-resource baselines and Tetris, as cores without sockets."""

from __future__ import annotations

import math
import random

import pytest

from aviary.central.cs import SlotFair
from aviary.central.drf import Drf
from aviary.central.packing import OrderedPolicy, PackingCore, PlacementPolicy, bfs_key, cp_key
from aviary.central.sjf import ShortestJobFirst
from aviary.central.state import job_state
from aviary.central.tetris import Tetris, aligned, alignment
from aviary.common.effects import Launch, Send, SetTimer
from aviary.common.messages import JobDone, PlaceTask, SubmitJob, TaskFinished
from aviary.common.resources import Resources
from aviary.launch.drivers.sim import Simulator
from aviary.worker.resource_node import ResourceNodeCore


def submit(job_id, stages, durations=None):
    """A SubmitJob of ``stages`` = [(tasks, estimate, demand, parents)]; durations = the estimates."""
    if durations is None:
        durations = [float(est) for tasks, est, _, _ in stages for _ in range(tasks)]
    wire = [[t, float(e), list(Resources.of(d)), list(p)] for t, e, d, p in stages]
    return SubmitJob(job_id, durations, sum(durations) / len(durations), wire)


def placements(effects):
    return [(e.to, e.msg.job_id, e.msg.task_index) for e in effects if isinstance(e.msg, PlaceTask)]


def pending(core, *msgs):
    """Admit jobs without matching (as if they arrived together), then match once."""
    for m in msgs:
        assert core.state.submit(0.0, "fe", m) is None
    return core._match(0.0, [])


def test_drf_on_the_classic_example_of_the_drf_paper():
    # Ghodsi et al., NSDI'11 §4: 9 CPUs and 18 GB; A's tasks <1 CPU, 4 GB>, B's <3 CPU, 1 GB>:
    # progressive filling equalizes dominant shares at 2/3 with A running 3 tasks and B 2.
    core = PackingCore("c", [("n", Resources(9, 18), {})], Drf())
    effects = pending(core, submit(1, [(10, 1, (1, 4), ())]), submit(2, [(10, 1, (3, 1), ())]))
    placed = placements(effects)
    assert sum(1 for _, j, _ in placed if j == 1) == 3
    assert sum(1 for _, j, _ in placed if j == 2) == 2
    jobs = core.state.jobs
    assert core.state.dominant_share(jobs[1]) == pytest.approx(2 / 3)
    assert core.state.dominant_share(jobs[2]) == pytest.approx(2 / 3)


def test_slot_fair_gives_each_job_the_same_number_of_tasks():
    core = PackingCore("c", [("n", Resources(8, 64), {})], SlotFair())
    placed = placements(pending(core, submit(1, [(10, 1, (1, 1), ())]), submit(2, [(10, 1, (1, 8), ())])))
    assert [j for _, j, _ in placed].count(1) == [j for _, j, _ in placed].count(2) == 4


def test_placement_never_over_allocates_and_a_finish_refills_the_node():
    core = PackingCore("c", [("a", Resources(4, 8), {}), ("b", Resources(4, 8), {})], Drf())
    effects = core.on_message(0.0, "fe", submit(1, [(9, 1, (3, 2), ())]))
    placed = placements(effects)
    assert [n for n, _, _ in placed] == ["a", "b"]  # one 3-core task per 4-core node
    for n in core.state.nodes:
        assert all(x >= -1e-9 for x in n.free)
    again = core.on_message(1.0, "a", TaskFinished(1, placed[0][2]))
    assert placements(again) == [("a", 1, 2)]


def test_a_stage_is_released_only_after_every_task_of_every_parent():
    # 0 -> 2 <- 1: stage 2 waits for both parents' tasks.
    core = PackingCore("c", [("n", Resources(16, 64), {})], Drf())
    stages = [(2, 1, (1, 1), ()), (1, 1, (1, 1), ()), (3, 1, (1, 1), (0, 1))]
    placed = placements(core.on_message(0.0, "fe", submit(7, stages)))
    assert sorted(i for _, _, i in placed) == [0, 1, 2]
    assert placements(core.on_message(1.0, "n", TaskFinished(7, 0))) == []
    assert placements(core.on_message(1.0, "n", TaskFinished(7, 2))) == []  # stage 1 done, stage 0 not
    released = placements(core.on_message(2.0, "n", TaskFinished(7, 1)))
    assert sorted(i for _, _, i in released) == [3, 4, 5]
    out = []
    for i in (3, 4, 5):
        out += core.on_message(3.0, "n", TaskFinished(7, i))
    assert [e.msg for e in out if isinstance(e.msg, JobDone)] == [JobDone(7, 0.0)]


def test_critical_paths_and_intra_job_orders_on_a_hand_drawn_dag():
    #   s0 (5) --> s2 (1) --> s4 (2)
    #   s1 (1) --> s3 (7) -/
    stages = [
        (1, 5, (1,), ()),
        (1, 1, (1,), ()),
        (1, 1, (1,), (0,)),
        (1, 7, (1,), (1,)),
        (1, 2, (1,), (2, 3)),
    ]
    job = job_state(0.0, "fe", submit(1, stages))
    assert [s.cp for s in job.stages] == [8, 10, 3, 9, 2]
    assert [s.depth for s in job.stages] == [0, 0, 1, 1, 2]
    assert [s.index for s in sorted(job.runnable, key=bfs_key)] == [0, 1]
    assert [s.index for s in sorted(job.runnable, key=cp_key)] == [1, 0]
    assert job.remaining_cp() == 10


def test_sjf_runs_the_job_with_the_shortest_remaining_critical_path_first():
    core = PackingCore("c", [("n", Resources(1, 64), {})], ShortestJobFirst())
    placed = placements(
        pending(core, submit(1, [(1, 9, (1,), ())]), submit(2, [(1, 2, (1,), ()), (1, 2, (1,), (0,))]))
    )
    assert placed == [("n", 2, 0)]


def test_tetris_picks_the_best_aligned_task_that_fits():
    # Free <4 cores, 2 GB> of a <8, 8> machine: a cores-heavy task aligns better than a memory-heavy one
    # (which does not even fit on memory) or a small one.
    core = PackingCore("c", [("n", Resources(8, 8), {})], Tetris(srtf_weight=0))
    core.state.nodes[0].free = Resources(4, 2)
    jobs = [submit(1, [(1, 1, (1, 1), ())]), submit(2, [(1, 1, (4, 1), ())]), submit(3, [(1, 1, (1, 3), ())])]
    for m in jobs:
        core.state.submit(0.0, "fe", m)
    choice = core.policy.pick(core.state.nodes[0], list(core.state.active.values()))
    assert choice is not None and choice[0].job_id == 2
    cap = Resources(8, 8)
    assert alignment(Resources(4, 1), Resources(4, 2), cap) > alignment(Resources(1, 1), Resources(4, 2), cap)


def test_tetris_srtf_term_prefers_the_job_with_less_remaining_work_when_alignment_ties():
    core = PackingCore("c", [("n", Resources(4, 4), {})], Tetris(srtf_weight=1.0))
    for m in (submit(1, [(50, 10, (1, 1), ())]), submit(2, [(2, 10, (1, 1), ())])):
        core.state.submit(0.0, "fe", m)
    choice = core.policy.pick(core.state.nodes[0], list(core.state.active.values()))
    assert choice is not None and choice[0].job_id == 2


def test_tetris_fairness_knob_at_its_extremes():
    # Job 1 already holds most of the cluster; job 2 holds nothing. Job 1's task aligns better.
    def pick(fraction):
        core = PackingCore(
            "c",
            [("a", Resources(8, 8), {}), ("b", Resources(8, 8), {})],
            Tetris(fair_fraction=fraction, srtf_weight=0),
        )
        core.state.submit(0.0, "fe", submit(1, [(6, 1, (4, 4), ())]))
        core.state.submit(0.0, "fe", submit(2, [(6, 1, (1, 1), ())]))
        node_b = core.state.nodes[1]
        for _ in range(2):  # job 1 fills node a
            core.state.place(0.0, core.state.jobs[1], core.state.jobs[1].stages[0], core.state.nodes[0])
        choice = core.policy.pick(node_b, list(core.state.active.values()))
        return choice[0].job_id

    assert pick(1.0) == 1  # most efficient: the best-aligned task, whatever the shares
    assert pick(0.01) == 2  # strict fairness: only the job furthest below its fair share


def test_resource_node_runs_tasks_together_as_capacity_allows():
    node = ResourceNodeCore("n", Resources(4, 8))
    a = node.on_message(0, "c", PlaceTask(1, 0, 5.0, 5.0, [2, 4]))
    b = node.on_message(0, "c", PlaceTask(1, 1, 5.0, 5.0, [2, 4]))
    c = node.on_message(0, "c", PlaceTask(1, 2, 5.0, 5.0, [1, 1]))
    assert [type(e) for e in a + b] == [Launch, Launch] and c == []
    assert node.counters["waited_for_room"] == 1
    out = node.on_task_exit(5.0, (1, 0), True)
    assert out[0] == Send("c", TaskFinished(1, 0, True)) and out[1] == Launch((1, 2), 5.0)
    too_big = node.on_message(6.0, "c", PlaceTask(2, 0, 1.0, 1.0, [5, 1]))
    assert too_big == [Send("c", TaskFinished(2, 0, False))]


def random_dag_jobs(seed, n, gap=0.5, demands=None):
    """``n`` random DAG jobs arriving every ``gap`` s; ``demands``: stage demands drawn from these."""
    from aviary.common.model import JobSpec, Stage

    rng = random.Random(seed)
    jobs = []
    for j in range(n):
        stages, durations = [], []
        for i in range(rng.randint(1, 5)):
            k = rng.randint(1, 6)
            if demands:
                demand = rng.choice(demands)
            else:
                demand = Resources(
                    rng.uniform(0.1, 6), rng.uniform(0.1, 17), rng.uniform(0.01, 1), rng.uniform(0.01, 1)
                )
            parents = tuple(sorted(rng.sample(range(i), k=min(i, rng.randint(0, 2)))))
            ds = [rng.uniform(1, 10) for _ in range(k)]
            stages.append(Stage(k, sum(ds) / k, demand, parents))
            durations += ds
        jobs.append(JobSpec(j, j * gap, durations, sum(durations) / len(durations), False, stages=stages))
    return jobs


def simulate(central, jobs, nodes):
    """Run ``jobs`` through ``central`` on the simulator; its placements (time, node, job, task) in order."""
    from aviary.common.frontend import FrontendCore, round_robin

    placed = []
    inner = central.on_message

    def recorded(now, sender, msg):
        out = inner(now, sender, msg)
        placed.extend((now, *p) for p in placements(out))
        return out

    central.on_message = recorded
    workers = [ResourceNodeCore(n, cap) for n, cap, _ in nodes]
    fe = FrontendCore("fe", jobs, round_robin(["central"]))
    Simulator([central, *workers, fe]).run(frontend=fe)
    assert fe.done, type(central.policy).__name__
    assert sum(w.counters["waited_for_room"] for w in workers) == 0
    return placed


def check_barriers(central, jobs):
    """Every task ran, and started after every task of its stage's parents ended (the task log)."""
    from aviary.common.model import stage_offsets

    times = {(j, i): (start, end) for j, i, start, end, *_ in central.state.log}
    assert len(times) == sum(j.tasks for j in jobs)
    for job in jobs:
        offsets = stage_offsets(job.stages)
        for s, stage in enumerate(job.stages):
            for p in stage.parents:
                parent_end = max(times[job.job_id, offsets[p] + k][1] for k in range(job.stages[p].tasks))
                first = min(times[job.job_id, offsets[s] + k][0] for k in range(stage.tasks))
                assert first >= parent_end


def test_a_dag_workload_runs_to_completion_on_the_simulator():
    jobs = random_dag_jobs(3, 40)
    for policy in (Drf(), SlotFair(), ShortestJobFirst(), Tetris()):
        nodes = [(f"n{i}", Resources(16, 64, 1, 1), {}) for i in range(4)]
        central = PackingCore("central", nodes, policy)
        simulate(central, jobs, nodes)
        check_barriers(central, jobs)


# --- the reference: the plain definitions the fast paths (queues, caches, floors) must agree with ------


class ReferenceCore(PackingCore):
    """Every pick over every candidate, every fresh job offered every node."""

    def _match(self, now, dirty):
        state, effects = self.state, []
        for node in dirty:
            self._plain_fill(now, node, list(state.active.values()), effects)
        if state.fresh:
            fresh = list(state.fresh.values())
            state.fresh.clear()
            for node in state.nodes:
                self._plain_fill(now, node, fresh, effects)
        return effects

    def _plain_fill(self, now, node, jobs, out):
        while candidates := [j for j in jobs if j.runnable]:
            chosen = reference_pick(self.policy, node, candidates)
            if chosen is None:
                return
            out.append(self.state.place(now, *chosen, node))


REFERENCE_KEYS = {
    SlotFair: lambda state, j: (j.running, j.job_id),
    Drf: lambda state, j: (state.dominant_share(j), j.job_id),
    ShortestJobFirst: lambda state, j: (j.remaining_cp(), j.job_id),
}


def reference_remaining(state, job):
    mean_machine = state.capacity_total.times(1.0 / len(state.nodes))
    return math.fsum(s.unplaced * s.estimate * s.demand.over(mean_machine).total() for s in job.stages)


def reference_pick(policy, node, jobs):
    state, free = policy.state, node.free
    if isinstance(policy, OrderedPolicy):
        for job in sorted(jobs, key=lambda j: REFERENCE_KEYS[type(policy)](state, j)):
            for stage in sorted(job.runnable, key=policy.stage_key):
                if stage.demand.fits_in(free):
                    return job, stage
        return None
    options = []
    for job in sorted(policy.considered(jobs), key=lambda j: j.job_id):
        for stage in sorted(job.runnable, key=policy.stage_key):
            if stage.demand.fits_in(free):
                options.append((job, stage, alignment(stage.demand, free, node.capacity, policy.alignment)))
    if not options:
        return None
    if policy.srtf_weight == 0 or len(options) == 1:
        best = max(options, key=lambda o: o[2])
        return best[0], best[1]
    work = {job.job_id: reference_remaining(state, job) for job, _, _ in options}
    mean_a = math.fsum(o[2] for o in options) / len(options)
    mean_p = math.fsum(work.values()) / len(work)
    eps = policy.srtf_weight * mean_a / mean_p if mean_p > 0 else 0.0
    best = max(options, key=lambda o: o[2] - eps * work[o[0].job_id])
    return best[0], best[1]


def checked(core):
    """``core`` with its policy's caches compared to their definitions after every message."""
    inner = core.on_message

    def check(now, sender, msg):
        out = inner(now, sender, msg)
        policy, state = core.policy, core.state
        if isinstance(policy, OrderedPolicy):
            keys = REFERENCE_KEYS[type(policy)]
            assert policy.queue == sorted((keys(state, j), j) for j in state.active.values())
        if isinstance(policy, Tetris):
            for job_id, (_, work) in policy.work.work.items():
                job = state.jobs[job_id]  # forgotten when done
                if policy.work.work[job_id][0] == job.running + job.finished:
                    assert work == reference_remaining(state, job)
        return out

    core.on_message = check
    return core


POLICIES = {
    "drf": lambda: Drf(),
    "drf-cp": lambda: Drf("cp"),
    "cs": lambda: SlotFair(),
    "sjf": lambda: ShortestJobFirst(),
    "sjf-bfs": lambda: ShortestJobFirst("bfs"),
    "tetris": lambda: Tetris(),
    "tetris-packing": lambda: Tetris(srtf_weight=0),
    "tetris-fair-cosine": lambda: Tetris(fair_fraction=0.5, alignment="cosine"),
    "tetris-cp": lambda: Tetris(intra="cp", srtf_weight=3.0),
}


@pytest.mark.parametrize("make", POLICIES.values(), ids=POLICIES.keys())
@pytest.mark.parametrize("demands", [None, "few"])
def test_fast_paths_place_exactly_as_the_plain_definitions(make, demands):
    # Mixed machines; "few": stages share three demand vectors, so keys and scores tie often.
    few = [Resources(2, 8, 0.3, 0.1), Resources(4, 4, 0.1, 0.5), Resources(1, 16, 0.5, 0.5)]
    jobs = random_dag_jobs(5, 80, gap=0.3, demands=few if demands else None)
    nodes = [(f"n{i}", Resources(16, 64, 1, 1) if i % 3 else Resources(8, 48, 1, 2), {}) for i in range(6)]
    fast = simulate(checked(PackingCore("central", nodes, make())), jobs, nodes)
    plain = simulate(ReferenceCore("central", nodes, make()), jobs, nodes)
    assert fast == plain


def test_an_ordered_policy_learns_of_jobs_admitted_past_the_core():
    # Admitted without the core (no notification): the policy rebuilds its queue from the state.
    core = PackingCore("c", [("n", Resources(4, 4), {})], SlotFair())
    core.state.submit(0.0, "fe", submit(1, [(3, 1, (1, 1), ())]))
    core.state.submit(0.0, "fe", submit(2, [(3, 1, (1, 1), ())]))
    node, jobs, policy = core.state.nodes[0], core.state.jobs, core.policy
    assert policy.pick(node, list(core.state.active.values()))[0] is jobs[1]
    core.state.place(0.0, jobs[1], jobs[1].stages[0], node)
    policy.on_placed(jobs[1], jobs[1].stages[0])  # as PackingCore does after every placement
    assert policy.pick(node, list(core.state.active.values()))[0] is jobs[2]


# --- hand-computed examples for mechanisms the fast-path comparison cannot see (docs/mutation.md): the
# reference above shares the vector arithmetic, alignment() and remaining_cp() with the fast paths.


def test_resource_vectors_by_hand():
    a, b = Resources(1, 2, 3, 4), Resources(0.5, 4, 0.25, 2)
    assert a.plus(b) == (1.5, 6, 3.25, 6)
    assert a.minus(b) == (0.5, -2, 2.75, 2)
    assert a.times(0.5) == (0.5, 1, 1.5, 2)
    assert a.total() == 10
    assert a.dot(b) == 0.5 + 8 + 0.75 + 8
    assert a.over(Resources(2, 1, 0, 0.5)) == (0.5, 2, 0, 8)  # a capacity of 0 counts 0
    assert a.dominant_share(Resources(4, 8, 6, 16)) == 0.5  # the disk's share


def test_sjf_re_ranks_a_job_when_its_long_stage_finishes():
    # One core. Job 1: s0 (9 s) -> s1 (1 s), critical path 10 while s0 runs; job 2: one 5 s stage.
    # Once s0 finished, job 1's remaining critical path is 1 < 5: SJF serves its released stage first.
    core = PackingCore("c", [("n", Resources(1, 64), {})], ShortestJobFirst())
    assert placements(core.on_message(0.0, "fe", submit(1, [(1, 9, (1,), ()), (2, 1, (1,), (0,))]))) == [
        ("n", 1, 0)
    ]
    assert placements(core.on_message(0.0, "fe", submit(2, [(2, 5, (1,), ())]))) == []
    assert core.state.jobs[1].remaining_cp() == 10
    assert placements(core.on_message(9.0, "n", TaskFinished(1, 0))) == [("n", 1, 1)]
    assert core.state.jobs[1].remaining_cp() == 1


def test_tetris_alignment_by_hand():
    # Dot (the default): <4, 1> on free <4, 2> of an <8, 8> machine = 0.5 x 0.5 + 0.125 x 0.25.
    assert alignment(Resources(4, 1), Resources(4, 2), Resources(8, 8)) == 0.28125
    # Cosine: the angle only; a zero vector aligns with nothing (no division by zero).
    assert aligned(Resources(1, 0), Resources(1, 1), "cosine") == pytest.approx(1 / math.sqrt(2))
    assert aligned(Resources(0.1, 0.1), Resources(0.5, 0.5), "cosine") == pytest.approx(1.0)
    assert aligned(Resources(1, 0), Resources(), "cosine") == 0.0
    assert aligned(Resources(), Resources(1, 1), "cosine") == 0.0


def test_tetris_cosine_alignment_prefers_the_demand_parallel_to_the_free_room():
    # Free <4, 4> of an <8, 8> machine (shares <.5, .5>). Job 1's task <3.2, .8> (shares <.4, .1>) has
    # the larger dot product (0.25 vs 0.1); job 2's <.8, .8> points the way the free room does (cosine
    # 1 vs 0.86).
    def pick(kind):
        core = PackingCore("c", [("n", Resources(8, 8), {})], Tetris(srtf_weight=0, alignment=kind))
        core.state.nodes[0].free = Resources(4, 4)
        for m in (submit(1, [(1, 1, (3.2, 0.8), ())]), submit(2, [(1, 1, (0.8, 0.8), ())])):
            core.state.submit(0.0, "fe", m)
        return core.policy.pick(core.state.nodes[0], list(core.state.active.values()))[0].job_id

    assert pick("dot") == 1
    assert pick("cosine") == 2


def test_tetris_remaining_work_by_hand():
    # p(j) = unplaced tasks x estimate x summed demand over the mean machine (<8, 8, 1, 1> here):
    # <2, 4, .3, .1> -> .25 + .5 + .3 + .1 = 1.15, so 3 tasks of 10 s give 34.5, and 23 once one is placed.
    nodes = [("a", Resources(8, 8, 1, 1), {}), ("b", Resources(8, 8, 1, 1), {})]
    core = PackingCore("c", nodes, Tetris())
    core.state.submit(0.0, "fe", submit(1, [(3, 10, (2, 4, 0.3, 0.1), ())]))
    job = core.state.jobs[1]
    assert core.policy.remaining(job) == pytest.approx(34.5)
    core.state.place(0.0, job, job.stages[0], core.state.nodes[0])
    core.policy.on_placed(job, job.stages[0])
    assert core.policy.remaining(job) == pytest.approx(23.0)


def test_tetris_srtf_weight_scales_the_mean_alignment_over_the_mean_remaining_work():
    # A whole free <8, 8, 1, 1> machine, so A = the task's summed shares. Job 1: 2 tasks x 11 s of
    # <2, 2, 0, 0> (A = .5, p = 11); job 2: 4 tasks x 7 s of <0, 0, .25, 0> (A = .25, p = 7).
    # eps = m x mean A / mean p = m x .375 / 9; job 1 wins while .25 > eps x 4, i.e. m < 1.5.
    # The weight is scale-free: the same with estimates 100 times shorter (p below 1).
    def pick(seconds=1.0, **knobs):
        core = PackingCore("c", [("n", Resources(8, 8, 1, 1), {})], Tetris(**knobs))
        core.state.submit(0.0, "fe", submit(1, [(2, 11 * seconds, (2, 2, 0, 0), ())]))
        core.state.submit(0.0, "fe", submit(2, [(4, 7 * seconds, (0, 0, 0.25, 0), ())]))
        return core.policy.pick(core.state.nodes[0], list(core.state.active.values()))[0].job_id

    for seconds in (1.0, 0.01):
        assert pick(seconds, srtf_weight=0) == 1  # pure packing: the better-aligned task
        assert pick(seconds) == 1  # the default weight, m = 1
        assert pick(seconds, srtf_weight=1.4) == 1
        assert pick(seconds, srtf_weight=1.6) == 2
        assert pick(seconds, srtf_weight=2) == 2
    assert pick(0.0, srtf_weight=2) == 1  # no estimates (p = 0 for all): alignment alone


def test_tetris_fairness_knob_between_its_extremes():
    # Dominant shares of a 16-core cluster: job 1 runs 4 cores (.25), job 2 runs 3 (.1875), jobs 3 and 4
    # nothing. On the empty node b the tasks align by size: job 1 <4, 4> best, then 2 <3, 3>, 4 <2, 2>,
    # 3 <1, 1>. phi keeps the ceil(phi x 4) jobs furthest below their share and picks the best of those.
    def pick(fraction):
        nodes = [("a", Resources(8, 8), {}), ("b", Resources(8, 8), {})]
        core = PackingCore("c", nodes, Tetris(fair_fraction=fraction, srtf_weight=0))
        for job_id, size in ((1, 4), (2, 3), (3, 1), (4, 2)):
            core.state.submit(0.0, "fe", submit(job_id, [(3, 1, (size, size), ())]))
        for job_id in (1, 2):
            job = core.state.jobs[job_id]
            core.state.place(0.0, job, job.stages[0], core.state.nodes[0])
        return core.policy.pick(core.state.nodes[1], list(core.state.active.values()))[0].job_id

    assert [pick(f) for f in (1.0, 0.75, 0.5, 0.25)] == [1, 2, 4, 3]


def test_tetris_knobs_outside_their_range_are_refused():
    for knobs in ({"fair_fraction": 0}, {"fair_fraction": 1.5}, {"srtf_weight": -1}, {"alignment": "l2"}):
        with pytest.raises(ValueError, match=next(iter(knobs))):
            Tetris(**knobs)
    assert Tetris(fair_fraction=1).fair_fraction == 1


def test_an_ordered_policy_picks_only_among_the_jobs_it_is_offered():
    # PackingCore offers a node to the fresh jobs only: the pick stays among them even when an earlier
    # job with a fitting task would come first.
    core = PackingCore("c", [("n", Resources(4, 4), {})], SlotFair())
    for job_id in (1, 2, 3):
        core.state.submit(0.0, "fe", submit(job_id, [(3, 1, (1, 1), ())]))
    node, jobs = core.state.nodes[0], core.state.jobs
    assert core.policy.pick(node, [jobs[3], jobs[2]])[0] is jobs[2]
    assert core.policy.pick(node, [jobs[3]])[0] is jobs[3]


class FirstJobFirstNode(PlacementPolicy):
    """A periodic planner: every 5 s, one task of the earliest job with runnable tasks on the first node."""

    cycle = 5.0

    def plan(self, now):
        for job in self.state.active.values():
            return [(job, job.runnable[0], self.state.nodes[0])]
        return []


def test_a_periodic_policy_places_only_on_its_cycle():
    core = PackingCore("c", [("n", Resources(4, 4), {})], FirstJobFirstNode())
    assert core.start(0.0) == [SetTimer("cycle", 5.0)]
    assert core.on_message(1.0, "fe", submit(1, [(2, 3, (1, 1), ())])) == []  # no matching on events
    out = core.on_timer(5.0, "cycle")
    assert placements(out[:-1]) == [("n", 1, 0)] and out[-1] == SetTimer("cycle", 5.0)
    assert core.state.fresh == {}
    assert core.on_timer(6.0, "other") == []
    assert core.on_message(8.0, "n", TaskFinished(1, 0)) == []  # a finish frees room but places nothing
    out = core.on_timer(10.0, "cycle")
    assert placements(out[:-1]) == [("n", 1, 1)] and out[-1] == SetTimer("cycle", 5.0)
    done = core.on_message(13.0, "n", TaskFinished(1, 1))
    assert [e.msg for e in done] == [JobDone(1, 4.0)]
    assert core.on_timer(15.0, "cycle") == [SetTimer("cycle", 5.0)]


def test_resource_node_admits_in_fifo_order_without_overtaking():
    # <4, 8>: A takes 3 cores; B (2 cores) must wait; C (1 core) would fit but waits behind B (FIFO).
    node = ResourceNodeCore("n", Resources(4, 8))
    assert node.on_message(0, "c", PlaceTask(1, 0, 5.0, 5.0, [3, 4])) == [Launch((1, 0), 5.0)]
    assert node.on_message(0, "c", PlaceTask(1, 1, 5.0, 5.0, [2, 2])) == []
    assert node.on_message(0, "c", PlaceTask(1, 2, 5.0, 5.0, [1, 1])) == []
    assert node.counters["waited_for_room"] == 2
    # A's exit launches both, in order; then D (2 cores) waits on 1 free core and E (1 core) behind it.
    out = node.on_task_exit(5.0, (1, 0), True)
    assert out == [Send("c", TaskFinished(1, 0, True)), Launch((1, 1), 5.0), Launch((1, 2), 5.0)]
    assert node.free == Resources(1, 5)
    assert node.on_message(6, "c", PlaceTask(2, 0, 1.0, 1.0, [2, 1])) == []
    assert node.on_message(6, "c", PlaceTask(2, 1, 1.0, 1.0, [1, 1])) == []
    out = node.on_task_exit(10.0, (1, 2), False)  # 2 cores free: D starts, E (no room left) waits
    assert out == [Send("c", TaskFinished(1, 2, False)), Launch((2, 0), 1.0)]
    assert node.counters["tasks_failed"] == 1 and node.free == Resources(0, 5)
    out = node.on_task_exit(10.0, (1, 1), True)
    assert out == [Send("c", TaskFinished(1, 1, True)), Launch((2, 1), 1.0)]
    assert node.free == Resources(1, 6)


def test_resource_node_answers_bad_demands_and_runs_an_undeclared_one_as_one_core():
    node = ResourceNodeCore("n", Resources(2, 8))
    assert node.slots == 2 and ResourceNodeCore("m", Resources(0.5, 1)).slots == 1  # what Register says
    assert node.on_message(0, "c", PlaceTask(1, 0, 1.0, 1.0, [-1])) == [Send("c", TaskFinished(1, 0, False))]
    assert node.counters["bad_demand"] == 1
    assert node.on_message(0, "c", PlaceTask(1, 1, 1.0, 1.0, [])) == [Launch((1, 1), 1.0)]
    assert node.free == Resources(1, 8)  # no demand: one slot, one core
    assert node.on_message(0, "c", PlaceTask(1, 1, 1.0, 1.0, [])) == []  # the same task again
    assert node.counters["duplicate_task"] == 1 and node.free == Resources(1, 8)
    assert node.on_task_exit(1.0, (9, 9), True) == []
    assert node.counters["unknown_task_exit"] == 1


def test_only_the_node_running_a_task_can_finish_it_and_a_duplicate_is_ignored():
    core = PackingCore("c", [("a", Resources(4, 4), {}), ("b", Resources(4, 4), {})], Drf())
    placed = placements(core.on_message(0.0, "fe", submit(1, [(2, 1, (3, 3), ())])))
    assert placed == [("a", 1, 0), ("b", 1, 1)]
    a, b = core.state.nodes
    # Reported by the wrong node (a late result, or a forged one): counted and dropped, a keeps the task.
    assert core.on_message(1.0, "b", TaskFinished(1, 0)) == []
    assert core.counters["late_results_ignored"] == 1
    assert (a.free, b.free, a.running) == (Resources(1, 1), Resources(1, 1), 1)
    assert core.on_message(1.0, "a", TaskFinished(1, 0)) == []
    assert (a.free, a.running) == (Resources(4, 4), 0)
    assert core.on_message(1.0, "a", TaskFinished(1, 0)) == []  # again: counted only
    assert core.counters["unknown_task_finished"] == 1 and a.free == Resources(4, 4)
    done = core.on_message(2.0, "b", TaskFinished(1, 1))
    assert [e.msg for e in done] == [JobDone(1, 0.0)] and core.counters["late_results_ignored"] == 1


def test_slot_fair_counts_a_finished_task_off_its_job():
    # Three slots: CS alternates 1, 2, 1. Job 1's finish leaves both jobs one running task: the tie goes
    # to the earlier job, 1.
    core = PackingCore("c", [("n", Resources(3, 64), {})], SlotFair())
    jobs = [submit(1, [(5, 1, (1, 1), ())]), submit(2, [(5, 1, (1, 1), ())])]
    assert [j for _, j, _ in placements(pending(core, *jobs))] == [1, 2, 1]
    assert placements(core.on_message(1.0, "n", TaskFinished(1, 0))) == [("n", 1, 2)]


def test_the_matcher_fills_a_node_exactly_and_compares_each_resource_with_its_own():
    # <8 cores, 2 GB>: fewer GB than cores, so a floor that mixed the resources up would skip the node.
    core = PackingCore("c", [("n", Resources(8, 2), {})], Drf())
    assert len(placements(core.on_message(0.0, "fe", submit(1, [(3, 1, (4, 1), ())])))) == 2
    # Three tasks of 0.1 GB fill 0.3 GB although 0.3 - 0.1 - 0.1 < 0.1 in floats (the EPS of a fit),
    # and a task of exactly the room left fits, whether the node is refilled or offered to a new job.
    core = PackingCore("c", [("n", Resources(3, 0.3), {})], Drf())
    assert len(placements(core.on_message(0.0, "fe", submit(1, [(3, 1, (1, 0.1), ())])))) == 3
    core = PackingCore("c", [("n", Resources(4, 0.3), {})], Drf())
    assert placements(core.on_message(0.0, "fe", submit(1, [(1, 1, (1, 0.2), ())]))) == [("n", 1, 0)]
    assert placements(core.on_message(0.0, "fe", submit(2, [(1, 1, (1, 0.1), ())]))) == [("n", 2, 0)]


def test_a_job_without_tasks_is_done_at_once():
    core = PackingCore("c", [("n", Resources(4, 4), {})], Drf())
    assert core.on_message(0.0, "fe", SubmitJob(1, [], 0.0)) == [Send("fe", JobDone(1, 0.0))]


def test_a_task_runs_slower_where_its_job_s_placement_preference_is_unmet():
    # Job 1 prefers gpu nodes (2x slower elsewhere); one 3-core task fits per node: a has a gpu, b not.
    nodes = [("a", Resources(4, 4), {"gpu": True}), ("b", Resources(4, 4), {})]
    core = PackingCore("c", nodes, Drf())
    msg = submit(1, [(2, 3, (3, 1), ())])
    msg.preference, msg.slowdown = "gpu", 2.0
    out = core.on_message(0.0, "fe", msg)
    sent = [(e.to, e.msg.duration, e.msg.estimate) for e in out if isinstance(e.msg, PlaceTask)]
    assert sent == [("a", 3.0, 3.0), ("b", 6.0, 3.0)]  # the estimate the node sees stays the job's


def test_a_finish_refills_the_node_that_gained_room():
    core = PackingCore("c", [("a", Resources(4, 8), {}), ("b", Resources(4, 8), {})], Drf())
    placed = placements(core.on_message(0.0, "fe", submit(1, [(3, 1, (4, 1), ())])))
    assert [n for n, _, _ in placed] == ["a", "b"]
    assert placements(core.on_message(1.0, "b", TaskFinished(1, placed[0][2]))) == []  # a's task, told by b
    assert core.counters["late_results_ignored"] == 1
    again = placements(core.on_message(1.0, "a", TaskFinished(1, placed[0][2])))
    assert again == [("a", 1, 2)]
    assert placements(core.on_message(1.0, "stranger", TaskFinished(1, 99))) == []  # unknown: counted
    assert core.counters["unknown_task_finished"] == 1


class EveryNodeOnce(PlacementPolicy):
    """A periodic planner: each task of the first job on its own node, all in one plan (a gang)."""

    cycle = 1.0

    def plan(self, now):
        for job in self.state.active.values():
            stage = job.runnable[0]
            return [(job, stage, node) for node in self.state.nodes[: stage.unplaced]]
        return []


@pytest.mark.parametrize(
    ("racks", "gang", "expected"),
    [(("r1", "r1"), True, 2.0), (("r1", "r2"), True, 3.0), (("r1", "r2"), False, 2.0)],
)
def test_an_mpi_gang_spread_over_racks_runs_slower_on_every_node(racks, gang, expected):
    nodes = [(f"n{i}", Resources(1, 1), {"rack": r}) for i, r in enumerate(racks)]
    core = PackingCore("c", nodes, EveryNodeOnce())
    msg = submit(1, [(2, 2, (1, 1), ())])
    msg.preference, msg.slowdown, msg.gang = "rack", 1.5, gang
    core.on_message(0.0, "fe", msg)
    out = core.on_timer(1.0, "cycle")
    assert [e.msg.duration for e in out if isinstance(getattr(e, "msg", None), PlaceTask)] == [expected] * 2
