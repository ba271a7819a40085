"""The central layer's bookkeeping (``aviary.central.state``) without a policy: what a submitted job's
stages look like, which tasks are runnable, each node's free vector as placements reserve it and
finishes release it, the log of finished tasks, node failures and preemption. Each expected value is
worked out by hand in the comments."""

from __future__ import annotations

import dataclasses
import math

import pytest

from aviary.central.state import (
    BadJob,
    CentralState,
    JobState,
    StageState,
    _dag_stages,
    _flat_stage,
    job_state,
    slot_nodes,
)
from aviary.common.core import Core
from aviary.common.effects import Send
from aviary.common.messages import JobDone, KillTask, PlaceTask, SubmitJob, TaskFinished
from aviary.common.resources import ONE_CORE, ZERO, Resources

# A diamond: s0 (2 tasks) -> s1 (1 task) and s2 (3 tasks) -> s3 (1 task), 7 tasks in all. Offsets
# 0, 2, 3, 6; depths 0, 1, 1, 2; critical paths (estimate + the longest child's): s3 = 5, s1 = 1 + 5
# = 6, s2 = 2 + 5 = 7, s0 = 4 + max(6, 7) = 11.
DIAMOND = [
    [2, 4.0, [2, 4], []],
    [1, 1.0, [1, 1, 0.5], [0]],
    [3, 2.0, [1, 2, 0, 0.25], [0]],
    [1, 5.0, [4], [1, 2]],
]


def diamond(job_id: int = 1, **kw) -> SubmitJob:
    durations = [4.0, 4.5, 1.0, 2.0, 2.5, 3.0, 5.0]
    return SubmitJob(job_id, durations, sum(durations) / 7, DIAMOND, **kw)


def flat(job_id: int, tasks: int, demand=(1,), estimate: float = 1.0, **kw) -> SubmitJob:
    """One stage of ``tasks`` tasks of ``demand`` (durations 1, 2, 3, ...)."""
    durations = [float(i + 1) for i in range(tasks)]
    return SubmitJob(job_id, durations, estimate, [[tasks, estimate, list(demand), []]], **kw)


def submitted(state: CentralState, msg: SubmitJob):
    """The state of job ``msg`` once the frontend ``fe`` submitted it at time 0."""
    state.submit(0.0, "fe", msg)
    return state.jobs[msg.job_id]


def central(nodes=None, **kw) -> CentralState:
    if nodes is None:
        nodes = [("a", Resources(4, 16, 1, 1), {}), ("b", Resources(8, 32, 1, 1), {"gpu": True})]
    return CentralState(nodes, Core("c"), **kw)


# --- a job's stages ------------------------------------------------------------------------------------


def test_a_flat_job_is_one_stage_of_one_core_tasks():
    job = job_state(2.5, "fe", SubmitJob(3, [2.0, 4.0], 3.0))
    assert (job.job_id, job.frontend, job.arrival) == (3, "fe", 2.5)
    assert (job.durations, job.estimate) == ([2.0, 4.0], 3.0)
    assert job.tasks == 2
    assert (job.deadline, job.slo, job.gang, job.preference, job.slowdown) == (None, None, False, None, 1.0)
    assert (job.first_start, job.finished, job.running, job.usage) == (None, 0, 0, ZERO)
    [s] = job.stages
    assert (s.job_id, s.index, s.tasks, s.estimate, s.parents, s.offset) == (3, 0, 2, 3.0, (), 0)
    assert s.demand == ONE_CORE and s.full == ONE_CORE
    assert (s.children, s.depth, s.cp, s.waiting, s.placed, s.finished, s.retry) == ([], 0, 3.0, 0, 0, 0, [])
    assert s.unplaced == 2
    assert job.runnable == [s]
    assert job.remaining_cp() == 3.0


@pytest.mark.parametrize(
    "msg",
    [
        SubmitJob(3, [2.0, 4.0], 3.0),
        SubmitJob(1, [0.0], 0.0, deadline=2.0, slo="be", preference="gpu", slowdown=2.0),
    ],
)
def test_a_flat_job_s_quick_stage_is_the_one_the_general_path_makes(msg):
    # job_state admits a flat job without building a JobSpec (half its time at a central scheduler):
    # the stage must be the general path's, field by field.
    [quick], [general] = _flat_stage(msg), _dag_stages(msg)
    assert dataclasses.asdict(quick) == dataclasses.asdict(general)


@pytest.mark.parametrize(
    ("durations", "estimate", "message"),
    [
        ([], 1.0, "^job 1 stage 0: no tasks$"),
        ([1.0], -1.0, "estimate -1.0$"),
        ([1.0], math.nan, "estimate nan$"),
    ],
)
def test_a_flat_job_without_tasks_or_with_a_bad_estimate_is_refused(durations, estimate, message):
    with pytest.raises(BadJob, match=message):
        job_state(0.0, "fe", SubmitJob(1, durations, estimate))


def test_a_dag_job_s_stages_offsets_depths_and_critical_paths():
    job = job_state(0.0, "fe", diamond())
    s0, s1, s2, s3 = job.stages
    assert [s.index for s in job.stages] == [0, 1, 2, 3]
    assert [s.tasks for s in job.stages] == [2, 1, 3, 1]
    assert [s.estimate for s in job.stages] == [4.0, 1.0, 2.0, 5.0]
    assert [s.offset for s in job.stages] == [0, 2, 3, 6]
    assert [s.parents for s in job.stages] == [(), (0,), (0,), (1, 2)]
    assert [s.children for s in job.stages] == [[1, 2], [3], [3], []]
    assert [s.waiting for s in job.stages] == [0, 1, 1, 2]
    assert [s.depth for s in job.stages] == [0, 1, 1, 2]
    assert [s.cp for s in job.stages] == [11.0, 6.0, 7.0, 5.0]
    # The wire's short demand lists are padded; the bookkeeping reserves the whole demand by default.
    assert s1.demand == Resources(1, 1, 0.5, 0) and s1.full == s1.demand
    assert s2.demand == Resources(1, 2, 0, 0.25)
    assert s3.demand == Resources(4, 0, 0, 0)
    assert job.runnable == [s0]  # only the root is ready
    assert job.remaining_cp() == 11.0
    assert all(s.job_id == 1 for s in job.stages)


def test_a_stage_listing_a_parent_twice_waits_for_it_once():
    msg = SubmitJob(1, [1.0, 1.0], 1.0, [[1, 1.0, [1], []], [1, 1.0, [1], [0, 0]]])
    job = job_state(0.0, "fe", msg)
    assert job.stages[1].waiting == 1
    assert job.stages[0].children == [1]
    assert job.stages[1].depth == 1


def test_depth_is_one_more_than_the_deepest_parent():
    # s0 -> s1 -> s2, and s3 with parents s0 and s2: depth 1 + max(0, 2) = 3.
    stages = [[1, 1.0, [1], []], [1, 1.0, [1], [0]], [1, 1.0, [1], [1]], [1, 1.0, [1], [0, 2]]]
    job = job_state(0.0, "fe", SubmitJob(1, [1.0] * 4, 1.0, stages))
    assert [s.depth for s in job.stages] == [0, 1, 2, 3]
    # Critical paths from the end: s3 = 1, s2 = 2, s1 = 3, s0 = 1 + max(s1, s3) = 4.
    assert [s.cp for s in job.stages] == [4.0, 3.0, 2.0, 1.0]


def test_a_job_s_options_are_kept_and_empty_strings_mean_none():
    msg = SubmitJob(5, [1.0], 1.0, deadline=30.0, slo="accepted", gang=True, preference="gpu", slowdown=2.0)
    job = job_state(1.0, "fe", msg)
    assert (job.deadline, job.slo, job.gang) == (30.0, "accepted", True)
    assert (job.preference, job.slowdown) == ("gpu", 2.0)


@pytest.mark.parametrize(
    ("stages", "durations", "message"),
    [
        ([[2, 1.0, [1], []]], [1.0], "^job 1: stages hold 2 tasks, durations 1$"),
        ([[1, 1.0, [1], [1]], [1, 1.0, [1], []]], [1.0, 1.0], "must be earlier stages"),
        ([[1, 1.0, [-1], []]], [1.0], "must be a finite number >= 0"),
        ([[1, 1.0, [1]]], [1.0], "not enough values to unpack"),
        ([[1, 1.0, 7, []]], [1.0], "not iterable"),
    ],
)
def test_a_job_whose_stages_are_no_dag_is_refused(stages, durations, message):
    with pytest.raises(BadJob, match=message):
        job_state(0.0, "fe", SubmitJob(1, durations, 1.0, stages))


def test_a_job_with_an_unknown_slo_class_or_a_speed_up_is_refused():
    # The workloads' own check: TetriSched's three classes, and a slowdown below 1 would run faster.
    with pytest.raises(BadJob, match=r"^job 4: slo 'gold' is not one of accepted, noreserve, be$"):
        job_state(0.0, "fe", SubmitJob(4, [1.0], 1.0, slo="gold"))
    with pytest.raises(BadJob, match=r"^job 4: slowdown must be within 1-1000, got 0.5$"):
        job_state(0.0, "fe", SubmitJob(4, [1.0], 1.0, preference="gpu", slowdown=0.5))
    assert job_state(0.0, "fe", SubmitJob(4, [1.0], 1.0, slo="be")).slo == "be"


def test_slot_nodes_have_one_core_per_slot_and_no_attributes():
    expected = [("n1", Resources(cores=2.0), {}), ("n2", Resources(cores=3.0), {})]
    assert slot_nodes({"n1": 2, "n2": 3}) == expected


# --- the state's set-up ----------------------------------------------------------------------------


def test_nodes_start_free_and_the_totals_are_summed():
    attrs = {"rack": "r1"}
    state = central([("a", Resources(4, 16, 1, 1), attrs), ("b", Resources(8, 32, 1, 0.5), {})])
    a, b = state.nodes
    assert (a.name, a.index, a.running, a.dead) == ("a", 0, 0, False)
    assert a.capacity == a.free == Resources(4, 16, 1, 1)
    assert (b.name, b.index, b.free) == ("b", 1, Resources(8, 32, 1, 0.5))
    assert a.attributes == {"rack": "r1"}
    attrs["rack"] = "r2"  # the state keeps its own copy
    assert a.attributes == {"rack": "r1"}
    assert state.by_name == {"a": a, "b": b}
    assert state.capacity_total == Resources(12, 48, 2, 1.5)
    assert state.capacities == [Resources(4, 16, 1, 1), Resources(8, 32, 1, 0.5)]
    assert state.mask == (True, True, True, True)
    assert state.record is True
    assert (state.jobs, state.active, state.fresh, state.placed, state.log) == ({}, {}, {}, {}, [])


def test_nodes_of_the_same_size_are_one_capacity_to_fit():
    state = central([(n, Resources(4, 16, 1, 1), {}) for n in "abc"] + [("d", Resources(2, 4, 1, 1), {})])
    assert state.capacities == [Resources(4, 16, 1, 1), Resources(2, 4, 1, 1)]


def test_overbooking_scales_only_disk_and_network_of_the_room():
    state = central([("a", Resources(4, 16, 1, 0.5), {})], overbook=2.0)
    [a] = state.nodes
    assert state.overbook == 2.0
    assert state.limits == [Resources(4, 16, 2, 1)]
    assert a.free == Resources(4, 16, 2, 1)  # the room a fit check sees
    assert a.capacity == Resources(4, 16, 1, 0.5)  # shares keep the real capacity
    assert state.capacity_total == Resources(4, 16, 1, 0.5)
    assert state.capacities == [Resources(4, 16, 2, 1)]
    assert central(overbook=1.0).limits[0] == Resources(4, 16, 1, 1)
    assert central(overbook=1.5).limits[1] == Resources(8, 32, 1.5, 1.5)


def test_bad_set_ups_are_refused():
    with pytest.raises(ValueError, match=r"^central scheduler c: no nodes$"):
        central([])
    with pytest.raises(ValueError, match=r"^account must be one of all, cores,mem, got 'cores'$"):
        central(account="cores")
    with pytest.raises(ValueError, match=r"^overbook must be >= 1, got 0.5$"):
        central(overbook=0.5)
    with pytest.raises(ValueError, match=r"^overbook must be >= 1, got nan$"):
        central(overbook=float("nan"))
    assert central(account="cores,mem").mask == (True, True, False, False)


# --- admission -----------------------------------------------------------------------------------------


def test_a_submitted_job_is_known_active_and_fresh():
    state = central()
    assert state.submit(1.0, "fe", diamond(7)) is None
    job = state.jobs[7]
    assert state.active == {7: job} and state.fresh == {7: job}
    assert (job.frontend, job.arrival) == ("fe", 1.0)
    assert state.core.counters["jobs"] == 1
    assert state.submit(1.0, "fe", flat(8, 1), counter="jobs_central") is None
    assert state.core.counters["jobs_central"] == 1 and state.core.counters["jobs"] == 1
    assert state.submit(2.0, "fe", flat(9, 1)) is None
    assert state.core.counters["jobs"] == 2
    assert list(state.active) == [7, 8, 9]  # in arrival order


def test_duplicate_and_empty_submissions_are_answered_by_the_core():
    state = central()
    assert state.submit(0.0, "fe", flat(1, 1)) is None
    assert state.submit(0.0, "fe", flat(1, 2)) == []
    assert state.core.counters["duplicate_job"] == 1
    assert state.jobs[1].tasks == 1  # the first one kept
    assert state.submit(0.0, "fe2", SubmitJob(2, [], 0.0)) == [Send("fe2", JobDone(2, 0.0))]
    assert 2 not in state.jobs


def test_a_bad_job_is_counted_and_dropped():
    state = central()
    assert state.submit(0.0, "fe", SubmitJob(1, [1.0], 1.0, [[2, 1.0, [1], []]])) == []
    assert state.core.counters["bad_job"] == 1
    assert state.submit(0.0, "fe", SubmitJob(2, [1.0], 1.0, [[1, 1.0, [1, "x"], []]])) == []
    assert state.core.counters["bad_job"] == 2
    assert (state.jobs, state.active, state.fresh) == ({}, {}, {})


def test_a_job_too_big_for_every_node_is_counted_and_dropped():
    state = central()  # nodes <4, 16, 1, 1> and <8, 32, 1, 1>
    assert state.submit(0.0, "fe", flat(1, 1, (9, 1))) == []  # 9 cores: no node has them
    assert state.submit(0.0, "fe", flat(2, 1, (1, 1, 1.5))) == []  # 1.5 disks
    assert state.core.counters["job_too_big"] == 2
    assert state.core.counters["jobs"] == 0
    assert (state.jobs, state.active, state.fresh) == ({}, {}, {})
    # One stage too big is enough: a diamond whose last stage wants 40 GB.
    stages = [list(s) for s in DIAMOND]
    stages[3] = [1, 5.0, [4, 40], [1, 2]]
    assert state.submit(0.0, "fe", SubmitJob(3, [1.0] * 7, 1.0, stages)) == []
    assert state.core.counters["job_too_big"] == 3
    # Fits the larger node only: admitted.
    assert state.submit(0.0, "fe", flat(4, 1, (8, 32, 1, 1))) is None


def test_counting_cores_and_memory_only_reserves_no_disk_or_network():
    state = central([("a", Resources(4, 16, 1, 1), {})], account="cores,mem")
    # 2 disks and 3 NICs on a node with one of each: YARN does not count them, so it is admitted.
    assert state.submit(0.0, "fe", flat(1, 2, (2, 4, 2, 3))) is None
    [s] = state.jobs[1].stages
    assert s.demand == Resources(2, 4, 0, 0)
    assert s.full == Resources(2, 4, 2, 3)  # the node still gets the real demand
    a = state.nodes[0]
    effect = state.place(0.0, state.jobs[1], s, a)
    assert effect.msg.demand == [2.0, 4.0, 2.0, 3.0]
    assert a.free == Resources(2, 12, 1, 1)


def test_overbooked_disk_and_network_admit_a_larger_demand():
    state = central([("a", Resources(4, 16, 1, 1), {})], overbook=2.0)
    assert state.submit(0.0, "fe", flat(1, 1, (1, 1, 1.5, 2))) is None
    assert state.submit(0.0, "fe", flat(2, 1, (1, 1, 2.5))) == []


# --- placing ---------------------------------------------------------------------------------------


def test_assign_reserves_the_demand_and_books_the_next_task():
    state = central()
    job = submitted(state, diamond())
    s0 = job.stages[0]
    a, b = state.nodes
    assert state.assign(2.0, job, s0, a) == 0
    assert a.free == Resources(2, 12, 1, 1)  # <4, 16, 1, 1> - <2, 4>
    assert (a.running, job.running, s0.placed, s0.unplaced) == (1, 1, 1, 1)
    assert job.usage == Resources(2, 4)
    assert job.first_start == 2.0
    assert state.placed[1, 0] == (a, s0, 2.0)
    assert job.runnable == [s0] and 1 in state.active
    assert state.assign(3.0, job, s0, b) == 1
    assert b.free == Resources(6, 28, 1, 1)
    assert job.usage == Resources(4, 8)
    assert job.first_start == 2.0  # the first start stays
    assert state.placed[1, 1] == (b, s0, 3.0)
    # Every task of the only ready stage placed: nothing runnable, the job leaves ``active``.
    assert job.runnable == [] and state.active == {}
    assert state.fresh == {1: job}  # the caller clears it


def test_a_stage_s_task_indices_start_at_its_offset():
    state = central()
    job = submitted(state, diamond())
    s2 = job.stages[2]
    job.runnable.append(s2)  # as if s0 had finished
    a = state.nodes[0]
    assert [state.assign(0.0, job, s2, a) for _ in range(3)] == [3, 4, 5]
    assert s2 not in job.runnable and job.runnable == [job.stages[0]]
    assert 1 in state.active  # s0 is still runnable


def test_a_task_placed_before_it_starts_leaves_the_first_start_to_the_policy():
    state = central()
    job = submitted(state, flat(1, 2))
    state.assign(1.0, job, job.stages[0], state.nodes[0], started=False)
    assert job.first_start is None
    state.started(4.0, job)
    assert job.first_start == 4.0
    state.started(6.0, job)
    assert job.first_start == 4.0


def test_place_sends_the_task_with_its_duration_estimate_and_real_demand():
    state = central()
    job = submitted(state, diamond())
    job.runnable.append(job.stages[2])
    a = state.nodes[0]
    # Task 0 of s0 (duration 4, estimate 4, <2, 4>); task 3, the first of s2 (2, 2, <1, 2, 0, .25>).
    assert state.place(1.0, job, job.stages[0], a) == Send("a", PlaceTask(1, 0, 4.0, 4.0, [2, 4, 0, 0]))
    assert state.place(1.0, job, job.stages[2], a) == Send("a", PlaceTask(1, 3, 2.0, 2.0, [1, 2, 0, 0.25]))
    assert state.core.counters["tasks_placed"] == 2
    assert state.work == {(1, 0): 4.0, (1, 3): 2.0}
    assert job.first_start == 1.0


def test_a_task_runs_slower_where_the_preference_is_unmet():
    state = central()  # b has a gpu, a has none
    job = submitted(state, flat(1, 3, preference="gpu", slowdown=2.5))
    s = job.stages[0]
    a, b = state.nodes
    assert state.duration(job, 0, a) == 2.5  # duration 1, x 2.5 without a gpu
    assert state.duration(job, 1, b) == 2.0  # duration 2 on the gpu node
    assert state.duration(job, 2, b, gang=[a, b]) == 7.5  # a gang with a node lacking a gpu: 3 x 2.5
    assert state.duration(job, 2, b, gang=[b, b]) == 3.0
    assert state.duration(job, 2, a, gang=[]) == 7.5  # an empty gang: the node alone
    assert state.place(0.0, job, s, a).msg.duration == 2.5
    assert state.place(0.0, job, s, b).msg.duration == 2.0
    assert state.work == {(1, 0): 2.5, (1, 1): 2.0}


def test_a_job_without_preference_runs_its_tasks_as_they_are():
    state = central()
    job = submitted(state, flat(1, 2, slowdown=3.0))
    assert state.duration(job, 1, state.nodes[0]) == 2.0


def test_without_a_record_no_work_or_log_is_kept():
    state = central(record=False)
    job = submitted(state, flat(1, 1))
    state.place(0.0, job, job.stages[0], state.nodes[0])
    assert state.work == {}
    state.finish(1.0, "a", TaskFinished(1, 0))
    assert state.log == []


# --- finishing -------------------------------------------------------------------------------------


def test_a_finish_releases_the_room_logs_the_task_and_releases_children_at_the_barrier():
    state = central()
    job = submitted(state, diamond())
    s0, s1, s2, s3 = job.stages
    a, b = state.nodes
    state.place(1.0, job, s0, a)
    state.place(1.0, job, s0, b)
    state.fresh.clear()
    assert state.finish(3.0, "a", TaskFinished(1, 0)) == []
    assert a.free == Resources(4, 16, 1, 1) and a.running == 0
    assert job.usage == Resources(2, 4) and job.running == 1
    assert state.log == [(1, 0, 1.0, 3.0, Resources(2, 4), 4.0)]
    assert (1, 0) not in state.work and (1, 0) not in state.placed
    assert (s0.finished, job.finished) == (1, 1)
    assert job.runnable == [] and state.active == {} and state.fresh == {}  # s0 is not done yet
    assert [s1.waiting, s2.waiting] == [1, 1]
    # The last task of s0: s1 and s2 are released (s3 still waits for them), the job is active again.
    assert state.finish(5.0, "b", TaskFinished(1, 1)) == []
    assert [s1.waiting, s2.waiting, s3.waiting] == [0, 0, 2]
    assert job.runnable == [s1, s2]
    assert state.active == {1: job} and state.fresh == {1: job}
    assert job.usage == ZERO and b.free == Resources(8, 32, 1, 1)
    assert (job.running, b.running, s0.finished, job.finished) == (0, 0, 2, 2)
    assert job.remaining_cp() == 7.0  # s0 finished: s2's path is the longest left


def test_the_job_is_done_after_its_last_task():
    state = central()
    job = submitted(state, flat(1, 2))
    a = state.nodes[0]
    state.place(2.0, job, job.stages[0], a)
    state.place(3.0, job, job.stages[0], a)
    assert state.finish(4.0, "a", TaskFinished(1, 1)) == []
    assert state.finish(5.0, "a", TaskFinished(1, 0, ok=False)) == [Send("fe", JobDone(1, 2.0))]
    assert state.core.counters["tasks_failed"] == 1
    assert 1 not in state.jobs
    assert job.remaining_cp() == 0.0  # no unfinished stage left
    assert [e[:4] for e in state.log] == [(1, 1, 3.0, 4.0), (1, 0, 2.0, 5.0)]


def test_a_finish_of_an_unknown_task_or_from_another_node_is_ignored():
    state = central()
    job = submitted(state, flat(1, 2, (2, 2)))
    a, b = state.nodes
    state.place(0.0, job, job.stages[0], a)
    assert state.finish(1.0, "a", TaskFinished(1, 1)) == []  # task 1 was never placed
    assert state.finish(1.0, "a", TaskFinished(9, 0)) == []  # no such job
    assert state.core.counters["unknown_task_finished"] == 2
    assert state.finish(1.0, "b", TaskFinished(1, 0)) == []  # placed on a, not b
    assert state.finish(1.5, "b", TaskFinished(1, 0)) == []
    assert state.core.counters["late_results_ignored"] == 2
    assert state.placed[1, 0] == (a, job.stages[0], 0.0)  # still running on a
    assert (a.free, b.free, job.running) == (Resources(2, 14, 1, 1), Resources(8, 32, 1, 1), 1)
    assert state.log == []
    state.finish(2.0, "a", TaskFinished(1, 0))
    assert a.free == Resources(4, 16, 1, 1)
    assert state.finish(2.0, "a", TaskFinished(1, 0)) == []  # a duplicate
    assert state.core.counters["unknown_task_finished"] == 3
    assert a.free == Resources(4, 16, 1, 1) and job.finished == 1


def test_dominant_share_is_over_the_whole_cluster():
    state = central()  # <12, 48, 2, 2> in all
    job = submitted(state, flat(1, 2, (3, 6, 0, 1)))
    state.place(0.0, job, job.stages[0], state.nodes[1])
    assert state.dominant_share(job) == 0.5  # 1 of 2 NICs (cores 1/4, memory 1/8)
    state.place(0.0, job, job.stages[0], state.nodes[1])
    assert state.dominant_share(job) == 1.0


# --- failures --------------------------------------------------------------------------------------


def test_a_dead_node_s_tasks_are_runnable_again_and_placed_first_on_retry():
    state = central()
    job = submitted(state, flat(1, 4, (1, 2)))
    s = job.stages[0]
    a, b = state.nodes
    state.place(1.0, job, s, b)  # task 0
    state.place(1.5, job, s, a)  # task 1
    state.place(2.0, job, s, b)  # task 2
    state.place(2.0, job, s, a)  # task 3: every task placed, nothing runnable
    state.active.clear()
    state.fresh.clear()
    lost = state.node_down(3.0, "b")
    assert lost == [(job, s, 0), (job, s, 2)]  # in placement order
    assert b.dead and b.free == ZERO and b.running == 0
    assert state.core.counters["tasks_rerun"] == 2
    assert state.core.counters["rerun_lost_ms"] == 2000 + 1000  # run 2 s and 1 s
    assert (s.placed, s.retry, job.runnable) == (2, [0, 2], [s])
    assert job.running == 2 and job.usage == Resources(2, 4)
    assert state.active == {1: job} and state.fresh == {1: job}
    assert set(state.placed) == {(1, 1), (1, 3)}
    assert set(state.work) == {(1, 1), (1, 3)}
    assert a.free == Resources(2, 12, 1, 1) and a.running == 2  # the live node is untouched
    # Placed again: the lost tasks first, in the order they were lost, on the live node.
    assert state.place(4.0, job, s, a).msg.task_index == 0
    assert state.place(4.0, job, s, a).msg.task_index == 2
    assert s.retry == [] and job.runnable == [] and state.active == {}
    # The dead node's late result is ignored: the task runs on a now.
    assert state.finish(5.0, "b", TaskFinished(1, 0)) == []
    assert state.core.counters["late_results_ignored"] == 1
    assert job.finished == 0


def test_a_node_dies_once_and_rejoins_empty():
    state = central(overbook=2.0)
    a, b = state.nodes
    assert state.node_down(0.0, "x") == []  # unknown
    assert state.node_up("x") is None
    assert state.node_up("a") is None  # not dead
    assert state.node_down(0.0, "a") == []
    assert a.dead
    assert state.node_down(1.0, "a") == []  # already dead
    assert state.core.counters["tasks_rerun"] == 0
    assert state.node_up("a") is a
    assert not a.dead
    assert a.free == Resources(4, 16, 2, 2)  # its overbooked room, not its capacity
    assert state.node_up("a") is None
    assert not b.dead


def test_a_task_of_a_stage_still_runnable_is_requeued_once():
    state = central()
    job = submitted(state, flat(1, 3))
    s = job.stages[0]
    state.place(0.0, job, s, state.nodes[0])
    state.node_down(0.5, "a")
    assert job.runnable == [s]  # not listed twice
    assert state.core.counters["rerun_lost_ms"] == 500


# --- preemption --------------------------------------------------------------------------------------


def test_a_preempted_task_frees_its_room_at_once_and_its_node_s_answer_is_ignored():
    state = central()
    job = submitted(state, flat(1, 2, (2, 8)))
    s = job.stages[0]
    a, b = state.nodes
    state.place(1.0, job, s, a)  # task 0
    state.place(1.0, job, s, b)  # task 1
    state.active.clear()
    state.fresh.clear()
    assert not state.preempt(2.0, 1, 5)  # not placed
    assert state.preempt(3.25, 1, 0)
    assert a.free == Resources(4, 16, 1, 1) and a.running == 0
    assert (job.running, job.usage, s.placed, s.retry) == (1, Resources(2, 8), 1, [0])
    assert job.runnable == [s] and state.active == {1: job} and state.fresh == {1: job}
    assert (1, 0) not in state.placed and (1, 0) not in state.work
    assert state.killed == {((1, 0), "a"): 1}
    assert state.core.counters["tasks_preempted"] == 1
    assert state.core.counters["preempted_lost_ms"] == 2250
    assert not state.preempt(3.5, 1, 0)  # already requeued
    assert state.take_outbox() == [Send("a", KillTask(1, 0))]
    assert state.take_outbox() == []
    # Placed again on a; the KillTask's answer comes first and is ignored, then the real result counts.
    assert state.place(4.0, job, s, a).msg.task_index == 0
    assert state.finish(4.5, "a", TaskFinished(1, 0, ok=False)) == []
    assert state.core.counters["preempted_results_ignored"] == 1
    assert state.killed == {}
    assert a.free == Resources(2, 8, 1, 1) and job.finished == 0
    assert state.finish(6.0, "a", TaskFinished(1, 0)) == []
    assert job.finished == 1 and a.free == Resources(4, 16, 1, 1)
    assert state.log[-1][:4] == (1, 0, 4.0, 6.0)


def test_a_task_preempted_twice_on_a_node_has_two_answers_to_ignore():
    state = central()
    job = submitted(state, flat(1, 1))
    s = job.stages[0]
    state.place(0.0, job, s, state.nodes[0])
    state.preempt(1.0, 1, 0)
    state.place(1.0, job, s, state.nodes[0])
    state.preempt(2.5, 1, 0)
    assert state.killed == {((1, 0), "a"): 2}
    assert state.core.counters["tasks_preempted"] == 2
    assert state.core.counters["preempted_lost_ms"] == 1000 + 1500
    assert state.take_outbox() == [Send("a", KillTask(1, 0)), Send("a", KillTask(1, 0))]
    state.place(3.0, job, s, state.nodes[0])
    assert state.finish(3.5, "a", TaskFinished(1, 0, ok=False)) == []
    assert state.killed == {((1, 0), "a"): 1}
    assert state.finish(3.6, "a", TaskFinished(1, 0, ok=False)) == []
    assert state.killed == {}
    assert state.core.counters["preempted_results_ignored"] == 2
    assert state.finish(4.0, "a", TaskFinished(1, 0)) == [Send("fe", JobDone(1, 0.0))]


def test_a_dead_node_owes_no_answers_to_its_kills():
    state = central()
    job = submitted(state, flat(1, 2))
    s = job.stages[0]
    a, b = state.nodes
    state.place(0.0, job, s, a)  # task 0
    state.place(0.0, job, s, b)  # task 1
    state.preempt(1.0, 1, 0)
    state.preempt(1.0, 1, 1)
    assert state.killed == {((1, 0), "a"): 1, ((1, 1), "b"): 1}
    assert state.node_down(2.0, "a") == []  # nothing running there any more
    assert state.killed == {((1, 1), "b"): 1}  # b's answer is still due
    assert state.core.counters["tasks_rerun"] == 0


def test_job_and_stage_state_helpers():
    stage = StageState(1, 0, 5, 2.0, ONE_CORE, (), 0)
    stage.placed = 3
    assert stage.unplaced == 2
    other = StageState(1, 1, 1, 9.0, ONE_CORE, (0,), 5, cp=9.0)
    stage.cp = 11.0
    job = JobState(1, "fe", 0.0, [1.0] * 6, 1.0, [stage, other])
    assert job.tasks == 6
    assert job.remaining_cp() == 11.0
    stage.finished = 5
    assert job.remaining_cp() == 9.0
    other.finished = 1
    assert job.remaining_cp() == 0.0


def test_a_task_booked_without_place_is_logged_without_its_work():
    # A policy that books with ``assign`` and sends its own PlaceTask: the log has no duration for it.
    state = central()
    job = submitted(state, flat(1, 1))
    state.assign(1.0, job, job.stages[0], state.nodes[0])
    assert state.work == {}
    assert state.finish(2.0, "a", TaskFinished(1, 0)) == [Send("fe", JobDone(1, 1.0))]
    assert state.log == [(1, 0, 1.0, 2.0, ONE_CORE, None)]


def test_failures_and_preemption_without_a_record():
    state = central(record=False)
    job = submitted(state, flat(1, 2))
    s = job.stages[0]
    a, b = state.nodes
    state.place(0.0, job, s, a)  # task 0
    state.place(0.0, job, s, b)  # task 1
    assert state.work == {}
    assert state.node_down(1.0, "a") == [(job, s, 0)]
    assert state.preempt(1.0, 1, 1)
    assert s.retry == [0, 1] and s.placed == 0
    assert state.log == []
