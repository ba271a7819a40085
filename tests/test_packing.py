"""The shared central layer and the multi-resource baselines and Tetris, as cores without sockets."""

from __future__ import annotations

import random

import pytest

from aviary.central.cs import SlotFair
from aviary.central.drf import Drf
from aviary.central.packing import PackingCore, bfs_order, cp_order
from aviary.central.sjf import ShortestJobFirst
from aviary.central.state import job_state
from aviary.central.tetris import Tetris, alignment
from aviary.common.effects import Launch, Send
from aviary.common.messages import JobDone, PlaceTask, SubmitJob, TaskFinished
from aviary.common.resources import Resources
from aviary.launch.sim import Simulator
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
    assert [s.index for s in bfs_order(job)] == [0, 1]
    assert [s.index for s in cp_order(job)] == [1, 0]
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


def test_a_dag_workload_runs_to_completion_on_the_simulator():
    from aviary.common.frontend import FrontendCore, round_robin
    from aviary.common.model import JobSpec, Stage, stage_offsets

    rng = random.Random(3)
    jobs = []
    for j in range(40):
        stages, durations = [], []
        for i in range(rng.randint(1, 5)):
            n = rng.randint(1, 6)
            demand = Resources(
                rng.uniform(0.1, 6), rng.uniform(0.1, 17), rng.uniform(0.01, 1), rng.uniform(0.01, 1)
            )
            parents = tuple(sorted(rng.sample(range(i), k=min(i, rng.randint(0, 2)))))
            ds = [rng.uniform(1, 10) for _ in range(n)]
            stages.append(Stage(n, sum(ds) / n, demand, parents))
            durations += ds
        jobs.append(JobSpec(j, j * 0.5, durations, sum(durations) / len(durations), False, stages=stages))
    for policy in (Drf(), SlotFair(), ShortestJobFirst(), Tetris()):
        nodes = [(f"n{i}", Resources(16, 64, 1, 1), {}) for i in range(4)]
        central = PackingCore("central", nodes, policy)
        workers = [ResourceNodeCore(n, cap) for n, cap, _ in nodes]
        fe = FrontendCore("fe", jobs, round_robin(["central"]))
        sim = Simulator([central, *workers, fe])
        sim.run(frontend=fe)
        assert fe.done, type(policy).__name__
        # Every task started after every task of its stage's parents ended (the central's task log).
        times = {(j, i): (start, end) for j, i, start, end, _ in central.state.log}
        assert len(times) == sum(j.tasks for j in jobs)
        for job in jobs:
            offsets = stage_offsets(job.stages)
            for s, stage in enumerate(job.stages):
                for p in stage.parents:
                    parent_end = max(times[job.job_id, offsets[p] + k][1] for k in range(job.stages[p].tasks))
                    first = min(times[job.job_id, offsets[s] + k][0] for k in range(stage.tasks))
                    assert first >= parent_end
        assert sum(w.counters["waited_for_room"] for w in workers) == 0
