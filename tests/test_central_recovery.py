"""A central scheduler that comes back (issue 26): killed mid-replay, restarted, it rebuilds its state from
the frontend's record of its unfinished jobs and the nodes' reports of what they hold, and every job
finishes with every task run once. The rebuild on its own, the wrapper's protocol, the frontend's part,
and whole simulated runs of every family with a central scheduler."""

from __future__ import annotations

import pytest
from helpers import sent
from test_packing import random_dag_jobs, submit

from aviary.central.drf import Drf
from aviary.central.packing import PackingCore
from aviary.central.recovery import Recovering
from aviary.common.failures import EXIT_DETECT_SECONDS, RESTART_SECONDS, Failure
from aviary.common.frontend import FrontendCore, round_robin
from aviary.common.messages import (
    GetHolding,
    Holding,
    JobDone,
    PeerDown,
    PlaceTask,
    Recover,
    Register,
    SubmitJob,
    TaskFinished,
)
from aviary.common.model import JobSpec
from aviary.common.resources import Resources
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import policy_cluster
from aviary.worker.resource_node import ResourceNodeCore

NODES = [("a", Resources(4, 8), {}), ("b", Resources(4, 8), {})]
# 0 -> 1: two tasks of 2 cores, then two of 1 core
TWO_STAGES = [(2, 5, (2, 1), ()), (2, 5, (1, 1), (0,))]


def placed(effects):
    return sorted((e.to, e.msg.job_id, e.msg.task_index) for e in effects if isinstance(e.msg, PlaceTask))


def indices(effects):
    return [i for _, _, i in placed(effects)]


# --- the rebuild: CentralState.restore through a core ------------------------------------------------


def test_a_rebuilt_job_keeps_its_finished_and_placed_tasks_and_places_only_the_rest():
    core = PackingCore("c", NODES, Drf())
    held = {0: ("finished", "a", 9.0), 1: ("running", "b", 4.0)}
    assert core.restore_job(10.0, "fe", submit(1, TWO_STAGES), 12.0, held) == []
    job = core.state.jobs[1]
    assert job.arrival == -2.0 and job.first_start == 1.0  # 12 s old; its first task started 9 s ago
    assert job.finished == 1 and job.running == 1
    assert core.state.by_name["b"].free == Resources(2, 7)  # the running task holds its room again
    assert core.state.by_name["a"].free == Resources(4, 8)
    assert core.restored(10.0) == []  # stage 1 waits for task 1, which still runs
    done = core.on_message(11.0, "b", TaskFinished(1, 1))
    assert indices(done) == [2, 3]  # the barrier releases stage 1, each task placed once


def test_a_rebuilt_job_s_pending_tasks_are_those_no_node_holds_in_index_order():
    core = PackingCore("c", NODES, Drf())
    four = [(4, 5, (1, 1), ())]
    core.restore_job(0.0, "fe", submit(2, four), 1.0, {1: ("queued", "a", 0.0), 2: ("running", "b", 0.5)})
    assert indices(core.restored(0.0)) == [0, 3]


def test_a_stage_whose_child_was_placed_finished_even_where_no_node_reports_it():
    """Stage 1 runs on a: stage 0 had finished, on a node that died since (no node reports its two
    tasks). They are not run again: only stage 1's other task is placed."""
    core = PackingCore("c", NODES, Drf())
    core.restore_job(10.0, "fe", submit(4, TWO_STAGES), 12.0, {2: ("running", "a", 1.0)})
    assert core.counters["recovered_tasks_inferred_finished"] == 2
    assert indices(core.restored(10.0)) == [3]
    done = core.on_message(11.0, "a", TaskFinished(4, 2))
    assert indices(done) == [] and core.state.jobs[4].finished == 3


def test_a_job_whose_every_task_finished_meanwhile_is_done_at_once():
    core = PackingCore("c", NODES, Drf())
    held = {i: ("finished", "a", 3.0 - i) for i in range(4)}
    out = core.restore_job(10.0, "fe", submit(3, TWO_STAGES), 5.0, held)
    assert sent(out, JobDone) == [("fe", JobDone(3, 2.0))]  # first start 3 s ago, 5 s after submission
    assert 3 not in core.state.jobs and core.restored(10.0) == []


def test_a_task_reported_by_a_node_the_cluster_does_not_have_runs_again():
    core = PackingCore("c", NODES, Drf())
    core.restore_job(0.0, "fe", submit(4, [(1, 5, (1, 1), ())]), 1.0, {0: ("running", "ghost", 1.0)})
    assert core.counters["recovered_unknown_task"] == 1
    assert placed(core.restored(0.0)) == [("a", 4, 0)]


# --- the wrapper's protocol ------------------------------------------------------------------------------


def test_a_restarted_core_waits_for_its_jobs_and_every_node_then_schedules_and_handles_what_came():
    core = Recovering(PackingCore("c", NODES, Drf()))
    assert core.start(0.0) == [] and core.recovering
    early = core.on_message(0.1, "a", TaskFinished(1, 0))  # queued before the restart: held
    assert early == [] and core.on_message(0.1, "b", Holding([], [(1, 1, 2.0)], [])) == []
    out = core.on_message(0.2, "fe", Recover([1], [3.0], ["a", "b"]))
    assert sent(out, GetHolding) == [("a", GetHolding()), ("b", GetHolding())]
    assert core.on_message(0.3, "fe", submit(1, TWO_STAGES)) == []  # node a has not answered
    out = core.on_message(0.4, "a", Holding([], [], [(1, 0, 2.5)]))
    assert not core.recovering and core.counters["recovered"] == 1
    # task 0 finished (a's report) and its TaskFinished, held, counts as unknown, not twice
    assert core.core.state.jobs[1].finished == 1 and core.counters["unknown_task_finished"] == 1
    assert placed(out) == []  # task 1 still runs on b
    assert indices(core.on_message(1.0, "b", TaskFinished(1, 1))) == [2, 3]


def test_a_node_declared_dead_during_a_rebuild_is_not_waited_for():
    core = Recovering(PackingCore("c", NODES, Drf()))
    core.start(0.0)
    core.on_message(0.0, "fe", Recover([5], [1.0], ["a", "b"]))
    core.on_message(0.0, "fe", submit(5, [(2, 5, (1, 1), ())]))
    core.on_message(0.1, "a", Holding([(5, 0)], [], []))
    out = core.on_message(0.2, "fe", PeerDown("b"))
    assert not core.recovering and placed(out) == [("a", 5, 1)]


def test_a_job_submitted_before_the_death_and_queued_meanwhile_is_not_taken_twice():
    core = Recovering(PackingCore("c", NODES, Drf()))
    core.start(0.0)
    job = submit(6, [(1, 5, (1, 1), ())])
    core.on_message(0.0, "fe", job)  # the copy sent to the dead incarnation, delivered at the restart
    core.on_message(0.0, "fe", Recover([6], [1.0], ["a"]))
    core.on_message(0.0, "fe", job)
    out = core.on_message(0.0, "a", Holding([], [], [(6, 0, 0.5)]))
    assert sent(out, JobDone) == [("fe", JobDone(6, 0.5))]  # done while the scheduler was away
    assert core.counters["recovered_duplicate_submit"] == 1 and core.counters["jobs"] == 0


def test_a_job_submitted_while_the_core_rebuilds_is_held_and_scheduled_after_the_rebuild():
    """A new job's SubmitJob, between Recover and the nodes' last answer, is not one of the jobs to
    rebuild: it waits with the other inputs and is admitted after the rebuild, not lost."""
    core = Recovering(PackingCore("c", NODES, Drf()))
    core.start(0.0)
    core.on_message(0.0, "fe", Recover([6], [1.0], ["a"]))
    core.on_message(0.0, "fe", submit(6, [(1, 5, (1, 1), ())]))
    assert core.on_message(0.1, "fe", submit(7, [(1, 5, (1, 1), ())])) == []  # a has not answered
    out = core.on_message(0.2, "a", Holding([(6, 0)], [], []))
    assert not core.recovering and placed(out) == [("a", 7, 0)]
    assert core.counters["jobs_recovered"] == core.counters["jobs"] == 1


def test_a_node_reports_what_the_central_placed_there_queued_running_and_finished():
    node = ResourceNodeCore("a", Resources(2, 8))
    for i in range(3):
        node.on_message(1.0, "c", PlaceTask(1, i, 5.0, 5.0, [1, 1]))  # two run, one waits for room
    node.on_task_exit(3.0, (1, 0), True)
    (reply,) = node.on_message(4.0, "c", GetHolding())
    assert reply.msg == Holding([], [(1, 1, 3.0), (1, 2, 1.0)], [(1, 0, 3.0)])
    assert node.on_message(4.0, "other", GetHolding())[0].msg == Holding([], [], [])


# --- the frontend ---------------------------------------------------------------------------------------


def test_the_frontend_waits_for_a_restarted_central_and_sends_it_its_unfinished_jobs_once():
    jobs = [JobSpec(i, float(i), [1.0], 1.0, False) for i in range(3)]
    roles = {"central": "central", "n0": "node", "n1": "node"}
    fe = FrontendCore("fe", jobs, round_robin(["central"]), roles=roles, restarts=True)
    fe.start(0.0)
    for t in (0.0, 1.0, 2.0):
        fe.on_timer(t, "submit")
    fe.on_message(2.5, "central", JobDone(0, 0.0))
    assert fe.declare_dead(3.0, "central", "exited", True) == []  # no PeerDown: its work stays
    assert fe.failed is None and "central" not in fe.exited
    fe.declare_dead(3.5, "n1", "exited", True)
    out = fe.on_message(4.0, "central", Register("central", 0, recovering=True))
    assert sent(out, Recover) == [("central", Recover([1, 2], [3.0, 2.0], ["n0"]))]
    assert [m.job_id for _, m in sent(out, SubmitJob)] == [1, 2]
    assert sent(out, PeerDown) == [("central", PeerDown("n1"))]  # its fresh core knew n1 as alive
    assert fe.on_message(4.5, "central", Register("central", 0, recovering=True)) == []  # once
    assert fe.counters["central_restarts"] == 1 and fe.counters["central_away_ms"] == 1000
    fe.declare_dead(5.0, "central", "exited", True)  # it dies again: its next incarnation is told again
    again = fe.on_message(5.5, "central", Register("central", 0, recovering=True))
    assert sent(again, Recover) == [("central", Recover([1, 2], [4.5, 3.5], ["n0"]))]


# --- whole runs in the simulator, every family with a central scheduler -----------------------------------


def long_jobs(n: int) -> list[JobSpec]:
    """Jobs above the Google cutoff (LWL places them all), arriving every 100 s."""
    return [JobSpec(i, 100.0 * i, [1500.0 + 10 * i] * 3, 2000.0, False) for i in range(n)]


def flat_jobs(n: int) -> list[JobSpec]:
    return [JobSpec(i, 0.5 * i, [1.0 + (i % 4)] * 4, 2.0, False) for i in range(n)]


CASES = {
    "drf": (lambda: random_dag_jobs(1, 30, gap=2.0), 20.0),
    "tetris": (lambda: random_dag_jobs(2, 30, gap=2.0), 20.0),
    "carbyne": (lambda: random_dag_jobs(3, 30, gap=2.0), 20.0),
    "graphene": (lambda: random_dag_jobs(4, 30, gap=2.0), 20.0),
    "fifo": (lambda: flat_jobs(40), 8.0),
    "kairos": (lambda: flat_jobs(40), 8.0),
    "eagle": (lambda: long_jobs(10), 700.0),
    "hawk": (lambda: long_jobs(10), 700.0),
}


@pytest.mark.parametrize("policy", sorted(CASES))
def test_a_central_scheduler_killed_mid_replay_comes_back_and_every_task_runs_once(policy: str) -> None:
    make, at = CASES[policy]
    jobs = make()
    tasks = sum(len(j.durations) for j in jobs)
    cluster = policy_cluster(policy, nodes=4, slots=2, schedulers=1, bind_ports=False)
    out = simulate(cluster, jobs, failures=[Failure("central", at)])
    c = out.counters
    assert out.frontend.unfinished() == [] and out.frontend.failed is None
    assert c["central_restarts"] == 1 and c["recovered"] == 1 and c["jobs_recovered"] >= 1
    assert c["recovered_tasks_placed"] + c["recovered_tasks_finished"] >= 1  # work was kept, not re-run
    assert c["tasks_launched"] == tasks  # every task ran once
    assert out.messages["JobDone"] == len(jobs)  # every job completed once
    assert c["central_away_ms"] == round(RESTART_SECONDS * 1000)
    assert out.virtual_seconds > at + EXIT_DETECT_SECONDS + RESTART_SECONDS


@pytest.mark.parametrize("policy", sorted(CASES))
def test_a_central_scheduler_restarted_after_a_node_died_never_places_on_that_node(policy: str) -> None:
    """The restarted process's fresh core starts with every node of the cluster: it must hear of the ones
    that died before (a Kairos replay once waited for ever on tasks placed on a dead node)."""
    make, at = CASES[policy]
    jobs = make()
    cluster = policy_cluster(policy, nodes=4, slots=2, schedulers=1, bind_ports=False)
    out = simulate(cluster, jobs, failures=[Failure("node-3", at / 2), Failure("central", at)])
    assert out.frontend.unfinished() == [] and out.counters["central_restarts"] == 1
    assert out.messages["JobDone"] == len(jobs)


def test_tetrisched_comes_back_with_its_gangs(tmp_path) -> None:
    """TetriSched on its own workload (GS_HET-like gangs with SLOs), killed mid-replay."""
    import json

    from aviary.launch.cli.main import main

    flags = ["--runtime", "sim", "--policy", "tetrisched", "--workload", "gshet", "--nodes", "20"]
    assert main(["replay", *flags, "--jobs", "30", "--fail", "central@300s", "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    c = s["counters"]
    assert s["finished"] == s["jobs"] == 30 and c["central_restarts"] == 1 and c["jobs_recovered"] >= 1
    assert c["recovered_tasks_placed"] + c.get("recovered_tasks_finished", 0) >= 1
    assert c["tasks_launched"] == s["tasks"] and s["messages"]["JobDone"] == 30
