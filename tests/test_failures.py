"""Failures (issue 14): dead nodes' tasks re-run, dead schedulers' jobs resubmitted, a dead central
scheduler ends the replay in one line; the cores on their own and whole runs in the simulator."""

from __future__ import annotations

import random

import pytest
from helpers import sent

from aviary.central.fifo import CentralFifoCore
from aviary.central.kairos import KairosCentralCore
from aviary.common.effects import Kill, Send, SetTimer
from aviary.common.failures import Failure, parse_failures
from aviary.common.frontend import PING, RESUBMIT_STRIDE, FrontendCore, round_robin
from aviary.common.messages import (
    AssignTask,
    GetTask,
    Hello,
    JobDone,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    Register,
    SubmitJob,
    TaskFinished,
)
from aviary.common.model import JobSpec
from aviary.distributed.sparrow import SparrowCore
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import policy_cluster
from aviary.worker.node_monitor import NodeMonitorCore


def job(job_id: int, submit: float, *durations: float) -> JobSpec:
    return JobSpec(job_id, submit, list(durations), sum(durations) / len(durations), long=False)


# --- --fail ------------------------------------------------------------------------------------------


def test_failures_parse_names_and_times_in_order() -> None:
    assert parse_failures("sched-0@45s, node-3@30") == [Failure("node-3", 30.0), Failure("sched-0", 45.0)]
    assert parse_failures("central@1.5m") == [Failure("central", 90.0)]
    assert parse_failures("node-3@2s+20s") == [Failure("node-3", 2.0, 20.0)]  # a 20 s stall
    for bad in ("node-3", "@3s", "node-3@", "node-3@soon", "node-3@-1s", "node-3@1s+", "node-3@1s+0s"):
        with pytest.raises(ValueError, match=r"node-3|@3s"):
            parse_failures(bad)


# --- the frontend: the failure detector -------------------------------------------------------------

ROLES = {"s0": "scheduler", "s1": "scheduler", "n0": "node", "n1": "node"}


def frontend(jobs: list[JobSpec], **kw: object) -> FrontendCore:
    fe = FrontendCore("fe", jobs, round_robin(["s0", "s1"]), roles=dict(ROLES), **kw)  # type: ignore[arg-type]
    fe.start(0.0)
    return fe


def test_a_dead_scheduler_s_unfinished_jobs_go_to_a_live_one_and_its_late_results_are_ignored() -> None:
    fe = frontend([job(i, 0.0, 1.0) for i in range(4)])
    first = fe.on_timer(0.0, "submit")
    assert [to for to, _ in sent(first, SubmitJob)] == ["s0", "s1", "s0", "s1"]
    assert fe.on_message(1.0, "s0", JobDone(0, 0.1)) == []  # job 0 done before s0 dies
    out = fe.declare_dead(2.0, "s0", "test")
    # Everyone alive hears of it; s0's unfinished job 2 (not 0) is submitted again, to s1.
    assert sorted(to for to, _ in sent(out, PeerDown)) == ["n0", "n1", "s1"]
    # Under a new id on the wire: its own plus one stride (its first resubmission).
    again = 2 + RESUBMIT_STRIDE
    assert [(to, m.job_id) for to, m in sent(out, SubmitJob)] == [("s1", again)]
    assert fe.counters["processes_declared_dead"] == fe.counters["jobs_resubmitted"] == 1
    assert fe.on_message(2.5, "s0", JobDone(2, 0.0)) == []  # from the dead one: late, ignored
    assert fe.on_message(2.6, "s1", JobDone(2, 0.0)) == []  # the first attempt's id: late, ignored
    assert fe.counters["late_results_ignored"] == 2 and fe.times[2].finish is None
    assert fe.on_message(2.7, "s1", JobDone(2 + 2 * RESUBMIT_STRIDE, 0.0)) == []  # never sent
    assert fe.counters["unknown_job_done"] == 1
    fe.on_message(3.0, "s1", JobDone(again, 0.25))
    # Its first start counts from the resubmission, where s1 measured the delay from.
    assert (fe.times[2].finish, fe.times[2].first_start) == (3.0, 2.25)
    assert fe.declare_dead(4.0, "s0") == [] and fe.counters["processes_declared_dead"] == 1  # once


def test_jobs_routed_to_a_dead_scheduler_later_go_to_a_live_one() -> None:
    fe = frontend([job(0, 0.0, 1.0), job(1, 5.0, 1.0), job(2, 6.0, 1.0)])
    fe.on_timer(0.0, "submit")
    fe.declare_dead(1.0, "s1")
    later = fe.on_timer(5.0, "submit") + fe.on_timer(6.0, "submit")
    assert [to for to, _ in sent(later, SubmitJob)] == ["s0", "s0"]


def test_the_last_of_a_role_dying_fails_the_replay_in_one_line() -> None:
    fe = frontend([job(0, 0.0, 1.0)])
    fe.on_timer(0.0, "submit")
    fe.declare_dead(1.0, "s0")
    assert fe.failed is None and not fe.done
    fe.declare_dead(1.5, "s1")
    assert fe.failed == "scheduler s1 died and no other scheduler is left to take its work"
    assert fe.done and fe.unfinished() == [0]


def test_liveness_declares_a_silent_process_dead_and_it_rejoins_when_it_answers() -> None:
    fe = FrontendCore(
        "fe", [job(0, 100.0, 1.0)], round_robin(["s0", "s1"]), roles=dict(ROLES), liveness=(0.5, 4)
    )
    assert SetTimer(PING, 0.5) in fe.start(0.0)
    t = 0.0
    while t < 2.5:  # everyone but n1 answers every Hello
        t += 0.5
        out = fe.on_timer(t, PING)
        assert sorted(to for to, _ in sent(out, Hello)) == sorted(ROLES)
        for name in ("s0", "s1", "n0"):
            fe.on_message(t, name, Register("x"))
        assert ("n1" in fe.dead) == (t > 2.0)  # silent for more than 4 periods
    assert fe.counters["processes_declared_dead"] == 1
    back = fe.on_message(t + 0.1, "n1", Register("node"))
    assert sorted(to for to, _ in sent(back, PeerUp)) == ["n0", "s0", "s1"]
    assert "n1" not in fe.dead and fe.counters["processes_rejoined"] == 1


def test_a_process_whose_answers_wait_behind_a_lost_segment_is_not_declared_dead() -> None:
    """Under message loss, n1's answers wait at the frontend's end of their link behind a segment lost
    three times (common/links.py), but its other segments (acknowledgements of the Hellos, copies sent
    again) come: it lives. n0 sends nothing at all, and is declared dead as before."""
    fe = FrontendCore(
        "fe", [job(0, 100.0, 1.0)], round_robin(["s0", "s1"]), roles=dict(ROLES), liveness=(0.5, 4)
    )
    heard = fe.link_heard = {}  # the link layer's, shared by the real driver
    fe.start(0.0)
    t = 0.0
    while t < 3.0:
        t += 0.5
        fe.on_timer(t, PING)
        for name in ("s0", "s1"):
            fe.on_message(t, name, Register("x"))
        heard["n1"] = t + 0.01  # an acknowledgement of the Hello, never a Register
    assert sorted(fe.dead) == ["n0"]
    assert fe.counters["processes_declared_dead"] == 1


def test_processes_that_exit_on_shutdown_are_not_declared_dead_while_others_answer_slowly() -> None:
    """CI once counted 33 deaths in a clean 300-node replay: the packed processes that had answered
    ``Shutdown`` (and exited) went silent while the frontend waited 3 s more for the slowest ones."""
    fe = FrontendCore("fe", [job(0, 0.0, 1.0)], round_robin(["s0"]), roles=dict(ROLES), liveness=(0.5, 4))
    fe.start(0.0)
    fe.collect(sorted(ROLES), shutdown=True)
    assert fe.on_timer(10.0, PING) == [] and not fe.dead
    again = FrontendCore("fe", [job(0, 0.0, 1.0)], round_robin(["s0"]), roles=dict(ROLES), liveness=(0.5, 4))
    again.start(0.0)
    again.collect(sorted(ROLES), shutdown=False)  # a GetStats alone: the liveness rounds go on
    assert (
        sorted(again.dead) == []
        and sent(again.on_timer(10.0, PING), Hello)
        and sorted(again.dead) == sorted(ROLES)
    )


def test_a_process_that_exited_never_rejoins_on_an_answer_still_on_its_way() -> None:
    """A ``Register`` sent before the process died (it answered a ``Hello`` just before the SIGKILL) and
    read after its exit was seen must not bring it back: it would rejoin, then be declared dead a second
    time by the liveness rounds (``processes_declared_dead`` 2 for one death, as a real run once
    counted). A silent process that answers again does rejoin (above)."""
    fe = frontend([job(0, 0.0, 1.0)])
    fe.on_timer(0.0, "submit")
    fe.declare_dead(2.0, "n1", "exited with code -9", exited=True)
    assert fe.on_message(2.01, "n1", Register("node", 1)) == []
    assert "n1" in fe.dead and fe.counters["processes_rejoined"] == 0
    assert fe.counters["late_answers_of_the_dead"] == 1 and fe.counters["processes_declared_dead"] == 1


# --- the cores: what a death means to each ----------------------------------------------------------


def test_sparrow_re_runs_a_dead_node_s_tasks_and_re_issues_its_reservations() -> None:
    s = SparrowCore("s", ["a", "b", "c", "d"], probe_ratio=1.0)
    s.rng = random.Random(0)
    out = s.on_message(0.0, "fe", SubmitJob(1, [5.0, 5.0, 5.0], 5.0))
    probed = {to for to, _ in sent(out, Probe)}
    assert len(probed) == 3
    a, b, c = sorted(probed)
    s.on_message(0.1, a, GetTask(1))
    s.on_message(0.1, b, GetTask(1))  # tasks 0 and 1 run on a and b; c still holds a reservation
    out = s.on_message(1.0, "fe", PeerDown(a))
    again = sent(out, Probe)
    # Task 0 goes back (one probe, ratio 1); a held no reservation any more; a is never probed again.
    assert len(again) == 1 and again[0][0] != a and s.counters["tasks_rerun"] == 1
    assert s.counters["rerun_lost_ms"] == 900 and a not in s.nodes
    assert s.on_message(2.0, a, TaskFinished(1, 0)) == []  # the dead node's late result
    assert s.counters["late_results_ignored"] == 1
    # The re-run task is handed out first, then the job's last task.
    assert sent(s.on_message(2.0, again[0][0], GetTask(1)), AssignTask)[0][1].task_index == 0
    assert sent(s.on_message(2.0, c, GetTask(1)), AssignTask)[0][1].task_index == 2
    s.on_message(3.0, "fe", PeerUp(a))
    assert a in s.nodes


def test_a_node_frees_what_a_dead_scheduler_held_and_kills_its_tasks() -> None:
    n = NodeMonitorCore("n", slots=2)
    n.on_message(0.0, "s0", Probe(1, 1.0, 1))
    n.on_message(0.0, "s1", Probe(2, 1.0, 1))  # both slots wait on a GetTask
    n.on_message(0.1, "s0", AssignTask(1, 0, 9.0, 9.0))  # s0's task runs; s1 never answers
    n.on_message(0.2, "s1", Probe(3, 1.0, 1))
    out = n.on_message(1.0, "fe", PeerDown("s1"))
    assert out == [] and n.free == 1 and len(n.queue) == 0
    assert n.counters["get_task_abandoned"] == 1 and n.counters["entries_dropped"] == 1
    out = n.on_message(1.0, "fe", PeerDown("s0"))
    assert out == [Kill((1, 0))] and n.counters["tasks_orphaned"] == 1
    assert n.on_task_exit(1.1, (1, 0), False) == [] and n.free == 2  # nobody to tell


def test_central_fifo_puts_a_dead_node_s_tasks_first_in_its_queue() -> None:
    c = CentralFifoCore("c", {"a": 1, "b": 1})
    out = c.on_message(0.0, "fe", SubmitJob(1, [5.0, 5.0], 5.0)) + c.on_message(
        0.0, "fe", SubmitJob(2, [1.0], 1.0)
    )
    assert [(to, m.job_id, m.task_index) for to, m in sent(out, PlaceTask)] == [("a", 1, 0), ("b", 1, 1)]
    out = c.on_message(1.0, "fe", PeerDown("a"))
    assert sent(out, PlaceTask) == [] and c.counters["tasks_rerun"] == 1
    # b frees: job 1's lost task 0 goes before job 2; a late result from a is ignored.
    assert c.on_message(1.5, "a", TaskFinished(1, 0)) == []
    out = c.on_message(2.0, "b", TaskFinished(1, 1))
    assert [(to, m.job_id, m.task_index) for to, m in sent(out, PlaceTask)] == [("b", 1, 0)]
    out = c.on_message(3.0, "fe", PeerUp("a"))
    assert [(to, m.job_id) for to, m in sent(out, PlaceTask)] == [("a", 2)]


def test_kairos_requeues_a_dead_node_s_tasks_at_the_front_and_stops_using_it() -> None:
    k = KairosCentralCore("k", {"a": 1, "b": 1}, q=0)
    out = k.on_message(0.0, "fe", SubmitJob(1, [5.0, 5.0, 5.0], 0.0))
    assert [to for to, _ in sent(out, PlaceTask)] == ["a", "b"]
    lost = sent(out, PlaceTask)[0][1].task_index
    assert sent(k.on_message(1.0, "fe", PeerDown("a")), PlaceTask) == []
    out = k.on_message(2.0, "b", TaskFinished(1, sent(out, PlaceTask)[1][1].task_index))
    assert [(to, m.task_index) for to, m in sent(out, PlaceTask)] == [("b", lost)]
    assert k.counts()["a"] == 0 and k.counters["tasks_rerun"] == 1


# --- whole runs in the simulator ------------------------------------------------------------------


def jobs_for(n: int = 30, seed: int = 3) -> list[JobSpec]:
    rng = random.Random(seed)
    return [job(i, i * 0.4, *(rng.uniform(0.5, 3.0) for _ in range(rng.randint(1, 6)))) for i in range(n)]


@pytest.mark.parametrize(
    "policy",
    [
        "sparrow",
        "fifo",
        "kairos",
        "drf",
        "tetris",
        "hawk",
        "eagle",
        "eagle-nosbp",
        "lwl",
        "hawk-nocentral",
        "dlwl",
        "tetrisched",
        "rayon-cs",
        "carbyne",
        "graphene",
    ],
)
def test_every_job_finishes_when_a_node_dies_mid_run(policy: str) -> None:
    cluster = policy_cluster(policy, nodes=6, slots=2, schedulers=2, bind_ports=False)
    jobs = jobs_for()
    clean = simulate(cluster, jobs)
    out = simulate(cluster, jobs, failures=[Failure("node-1", 4.0)])
    assert out.frontend.unfinished() == [] and out.frontend.failed is None
    c = out.counters
    assert c["processes_declared_dead"] == 1 and c["tasks_rerun"] >= 1
    assert out.messages["JobDone"] == len(jobs)  # each job completed once
    assert out.messages["PeerDown"] == len(cluster.processes) - 2  # all but the frontend and the dead
    # The death costs time: detection delay and lost work.
    assert (
        max(t.finish for t in out.frontend.times.values())
        >= max(t.finish for t in clean.frontend.times.values()) - 1e-9
    )
    assert c["rerun_lost_ms"] > 0


def test_a_dead_scheduler_s_jobs_finish_on_the_other_one() -> None:
    cluster = policy_cluster("sparrow", nodes=6, slots=2, schedulers=2, bind_ports=False)
    jobs = jobs_for()
    out = simulate(cluster, jobs, failures=[Failure("sched-0", 3.0)])
    assert out.frontend.unfinished() == [] and out.counters["jobs_resubmitted"] >= 1
    fe = out.frontend
    assert all(fe.routed[j.job_id] == "sched-1" for j in jobs if j.submit >= 3.0)
    assert len(fe.resubmitted) == out.counters["jobs_resubmitted"]
    assert all(fe.routed[j] == "sched-1" and fe.times[j].submit < 3.0 for j in fe.resubmitted)


def test_jobs_go_back_to_a_scheduler_that_stalled_rejoined_and_still_holds_them() -> None:
    """sched-0 stalls past detection: its jobs go to sched-1, and it rejoins still holding them, stuck (the
    nodes dropped its probes at PeerDown). Then sched-1 dies: every unfinished job goes back to sched-0,
    which must take them as new jobs, not refuse them as duplicates of what it holds."""
    cluster = policy_cluster("sparrow", nodes=6, slots=2, schedulers=2, bind_ports=False)
    jobs = [job(i, i * 0.4, 30.0, 30.0) for i in range(4)]  # all still running when sched-1 dies
    out = simulate(cluster, jobs, failures=[Failure("sched-0", 0.5, 5.0), Failure("sched-1", 10.0)])
    fe = out.frontend
    assert out.counters["processes_declared_dead"] == 2 and out.counters["processes_rejoined"] == 1
    assert {fe.routed[j.job_id] for j in jobs} == {"sched-0"}
    assert fe.unfinished() == []
    assert out.cores["sched-0"].counters["duplicate_job"] == 0
    assert fe.attempts[0] == 2  # to sched-1, then back to sched-0


def test_a_dead_central_scheduler_nobody_restarts_ends_the_replay_in_one_line() -> None:
    """A replay connected to a testbed it did not start cannot restart its central scheduler (its own
    testbed and the simulator do: tests/test_central_recovery.py)."""
    roles = {"central": "central", "n0": "node"}
    fe = FrontendCore("fe", [job(0, 0.0, 1.0)], round_robin(["central"]), roles=roles)
    fe.start(0.0)
    fe.on_timer(0.0, "submit")
    assert sent(fe.declare_dead(1.0, "central", "exited", True), PeerDown) == [("n0", PeerDown("central"))]
    assert fe.failed == "central central died and no other central is left to take its work"


def test_failures_in_the_simulator_are_deterministic() -> None:
    cluster = policy_cluster("sparrow", nodes=6, slots=2, schedulers=2, bind_ports=False)
    fail = [Failure("node-2", 2.0), Failure("sched-1", 6.0)]
    a, b = (simulate(cluster, jobs_for(), failures=fail) for _ in range(2))
    assert {i: t.finish for i, t in a.frontend.times.items()} == {
        i: t.finish for i, t in b.frontend.times.items()
    }
    assert a.counters == b.counters


@pytest.mark.parametrize("policy", ["hawk", "eagle"])
def test_long_jobs_placed_centrally_are_placed_again_when_their_node_dies(policy: str) -> None:
    # Every job long (estimate above the Google cutoff): LWL places them all; node-0 dies at 500 s.
    jobs = [job(i, i * 100.0, 1500.0, 2000.0) for i in range(8)]
    cluster = policy_cluster(policy, nodes=6, slots=1, schedulers=1, bind_ports=False)
    out = simulate(cluster, jobs, failures=[Failure("node-0", 500.0)])
    assert out.frontend.unfinished() == []
    assert out.cores["central"].counters["tasks_rerun"] >= 1
    assert out.counters["long_tasks_placed"] == 16 + out.cores["central"].counters["tasks_rerun"]


def test_a_hybrid_node_drops_an_assignment_it_did_not_ask_for_and_forgets_a_dead_scheduler() -> None:
    from aviary.worker.hybrid import HybridNodeCore

    n = HybridNodeCore("n", slots=2, srpt=True, sticky=True, sss=True)
    assert n.on_message(0.0, "s0", AssignTask(4, 0, 1.0, 1.0, 3)) == []  # forged: nobody asked
    assert n.counters["unsolicited_assign"] == 1 and not n.running and n.free == 2
    n.on_message(0.0, "s0", Probe(1, 1.0, 2))  # a GetTask goes out, a slot waits on s0
    n.on_message(0.0, "s1", Probe(2, 1.0, 1))
    n.on_message(0.1, "s1", AssignTask(2, 0, 5.0, 1.0, 0))  # s1's task runs
    out = n.on_message(1.0, "fe", PeerDown("s0"))
    assert n.counters["get_task_abandoned"] == 1 and n.counters["entries_dropped"] == 1
    assert not [e for e in out if isinstance(e, Kill)]  # s0 ran nothing here
    out = n.on_message(1.0, "fe", PeerDown("s1"))
    assert out[0] == Kill((2, 0)) and n.counters["tasks_orphaned"] == 1
    assert n.on_task_exit(1.1, (2, 0), False) == [] and n.free == 2  # nobody to tell


def test_tetrisched_plans_again_the_part_of_a_gang_a_dead_node_ran() -> None:
    from aviary.launch.flags.spec import ReplaySpec
    from aviary.launch.replay.resolve import resolve

    spec = ReplaySpec(
        runtime="sim", policy="tetrisched", workload="gshet", nodes=16, jobs=15, fail="node-3@100s"
    )
    setup = resolve(spec)
    out = simulate(setup.cluster, setup.jobs, failures=setup.failures)
    central = out.cores["central"]
    assert out.frontend.unfinished() == [] and central.counters["tasks_rerun"] >= 1
    # The lost tasks launched again (as a gang of their own), each once.
    assert (
        central.counters["tasks_placed"] == sum(j.tasks for j in setup.jobs) + central.counters["tasks_rerun"]
    )


def test_the_frontend_asks_for_counters_now_and_then_and_keeps_the_last() -> None:
    from aviary.common.frontend import COUNTERS_EVERY
    from aviary.common.messages import Counters, GetCounters

    fe = FrontendCore("fe", [job(0, 100.0, 1.0)], round_robin(["s0"]), roles=dict(ROLES), liveness=(0.5, 100))
    fe.start(0.0)
    asked = []
    for i in range(1, 2 * COUNTERS_EVERY + 1):
        asked.append(len(sent(fe.on_timer(0.5 * i, PING), GetCounters)))
    assert asked.count(len(ROLES)) == 2 and asked.count(0) == 2 * COUNTERS_EVERY - 2
    fe.on_message(11.0, "n1", Counters({"tasks_launched": 3}, {}))
    fe.declare_dead(12.0, "n1")
    assert fe.reported["n1"].counters == {"tasks_launched": 3}
    later = [fe.on_timer(0.5 * i, PING) for i in range(2 * COUNTERS_EVERY + 1, 3 * COUNTERS_EVERY + 1)]
    assert len(sent(later[-1], GetCounters)) == len(ROLES) - 1  # not the dead one


def test_a_dead_node_s_reservations_are_re_issued_and_nothing_more_for_a_job_handed_out_whole() -> None:
    s = SparrowCore("s", ["a", "b", "c", "d", "e"], probe_ratio=2.0)
    s.rng = random.Random(1)
    probes = sent(s.on_message(0.0, "fe", SubmitJob(1, [5.0, 5.0], 5.0)), Probe)  # 4 reservations
    holders = sorted(to for to, _ in probes)
    s.on_message(0.0, "fe", SubmitJob(2, [1.0], 1.0))
    two = s.jobs[2]
    for node in list(two.probed):  # job 2: its only task handed out, its other reservation cancelled
        s.on_message(0.1, node, GetTask(2))
        break
    assert two.unassigned == 0 and not two.probed
    dead = holders[0]
    out = s.on_message(1.0, "fe", PeerDown(dead))
    again = sent(out, Probe)
    # Job 1's one reservation on the dead node is sent again, to a live node; job 2 gets nothing.
    assert [(m.job_id, m.count) for _, m in again] == [(1, 1)] and again[0][0] != dead
    assert s.counters["probes_lost"] == 1 and s.counters["tasks_rerun"] == 0
    assert s.on_message(1.0, "fe", PeerUp("stranger")) == [] and "stranger" not in s.nodes
    # A second death adds to the counters.
    s.on_message(2.0, "fe", PeerDown(holders[1]))
    assert s.counters["probes_lost"] == 2


def test_a_late_result_does_not_finish_the_task_it_no_longer_runs() -> None:
    s = SparrowCore("s", ["a", "b"], probe_ratio=1.0)
    s.on_message(0.0, "fe", SubmitJob(1, [5.0], 5.0))
    (node,) = s.jobs[1].probed
    s.on_message(0.1, node, GetTask(1))
    s.on_message(1.0, "fe", PeerDown(node))
    assert s.on_message(1.5, node, TaskFinished(1, 0)) == []
    assert s.jobs[1].finished == 0 and s.jobs[1].retry == [0]  # still to run, not done
    other = "a" if node == "b" else "b"
    s.on_message(2.0, other, GetTask(1))
    assert s.on_message(3.0, other, TaskFinished(1, 0)) == [Send("fe", JobDone(1, 0.1))]  # first start: 0.1


def test_a_node_frees_exactly_what_a_dead_scheduler_held_and_keeps_the_rest() -> None:
    n = NodeMonitorCore("n", slots=3)
    n.on_message(0.0, "s0", Probe(1, 1.0, 1))  # a slot waits on s0
    n.on_message(0.0, "s1", Probe(2, 1.0, 1))
    n.on_message(0.0, "s1", AssignTask(2, 0, 9.0, 9.0))  # s1's task runs: one slot free
    n.on_message(0.0, "s0", Probe(3, 1.0, 1))  # takes the free slot: GetTask to s0
    n.on_message(0.0, "s0", Probe(4, 1.0, 2))  # queued: two reservations of s0
    n.on_message(0.0, "s1", Probe(5, 1.0, 1))  # queued behind them
    assert n.free == 0 and len(n.queue) == 2
    out = n.on_message(1.0, "fe", PeerDown("s0"))
    # Two slots back; s1's queued probe takes one of them (a GetTask to s1), the other stays free.
    assert n.counters["get_task_abandoned"] == 2 and n.counters["entries_dropped"] == 1
    assert sent(out, GetTask) == [("s1", GetTask(5))] and n.free == 1 and len(n.queue) == 0
    n.on_message(2.0, "fe", PeerDown("s2"))
    assert n.counters["get_task_abandoned"] == 2 and n.counters["tasks_orphaned"] == 0


def test_a_failed_replay_submits_nothing_more() -> None:
    fe = frontend([job(0, 0.0, 1.0), job(1, 5.0, 1.0)])
    fe.on_timer(0.0, "submit")
    fe.declare_dead(1.0, "s0")
    fe.declare_dead(1.5, "s1")
    assert fe.failed and fe.on_timer(5.0, "submit") == [] and fe.submitted == 1


@pytest.mark.parametrize("policy", ["sparrow", "eagle"])
def test_a_get_task_a_dead_node_sent_before_it_died_gets_no_task(policy: str) -> None:
    """The node's GetTask was on its way when it died; it arrives after PeerDown: a task handed out then
    would run nowhere and its job never finish (a packed testbed, 1 replay in 3). It gets a NoTask, so
    that a node alive behind a partition frees the slot it reserved (its tasks run elsewhere)."""
    from aviary.launch.policies.registry import build_core

    cluster = policy_cluster(policy, nodes=4, slots=1, schedulers=1, bind_ports=False)
    core = build_core(cluster.get("sched-0"), cluster)
    core.on_message(0.0, "frontend", SubmitJob(1, [1.0, 1.0], 1.0))
    core.on_message(0.1, "frontend", PeerDown("node-1"))
    answer = core.on_message(0.2, "node-1", GetTask(1))
    assert answer == [Send("node-1", NoTask(1))] and core.counters["get_task_from_dead"] == 1
    out = core.on_message(0.3, "node-2", GetTask(1))
    assert [type(e.msg) for e in out if isinstance(e, Send)][:1] == [AssignTask]


def test_a_simulated_replay_in_which_no_job_can_finish_gives_up_instead_of_running_for_ever(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """A lost task (here: node exits of job 1 swallowed) once kept a Kairos replay running on its
    heartbeats for ever. With every job submitted and none finished for ten times all the jobs' work,
    the simulator gives up, and the replay says so."""
    import json

    from aviary.launch.cli.main import main
    from aviary.launch.drivers.sim import STALLED, quiet_limit
    from aviary.worker.las import KairosNodeCore

    exit_ = KairosNodeCore.on_task_exit
    monkeypatch.setattr(
        KairosNodeCore,
        "on_task_exit",
        lambda self, now, tid, ok: [] if tid[0] == 1 else exit_(self, now, tid, ok),
    )
    jobs = [JobSpec(i, float(i), [2.0, 3.0], 2.5, False) for i in range(3)]
    out = simulate(policy_cluster("kairos", nodes=2, slots=1, bind_ports=False), jobs)
    assert out.stopped == STALLED and out.frontend.unfinished() == [1]
    assert quiet_limit(jobs) == 10 * 15.0 + 3600 < out.virtual_seconds and out.events <= 20_000  # 1st check
    flags = ["--runtime", "sim", "--policy", "kairos", "--nodes", "2", "--jobs", "5", "--quiet"]
    assert main(["replay", *flags, "--out", str(tmp_path)]) == 1
    problems = json.loads((tmp_path / "summary.json").read_text())["extra"]["problems"]
    assert any(
        p.startswith("gave up at virtual time") and "1 of 5 jobs did not finish" in p for p in problems
    )
