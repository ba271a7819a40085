"""Hawk and Eagle on their cores (thesis ch. 2 and 3): the thesis' own examples, SSS, stealing, LWL,
routing, counters. No sockets, no sleeps: cores are called directly or run on the simulator."""

from __future__ import annotations

import random
from typing import Any

import pytest
from helpers import sent

from aviary.central.lwl import CentralLwlCore, LwlIndex
from aviary.common.core import Core
from aviary.common.effects import Effect, Launch, Send, SetTimer
from aviary.common.frontend import FrontendCore
from aviary.common.messages import (
    AssignTask,
    CancelProbes,
    GetTask,
    JobDone,
    LongTask,
    NoTask,
    Probe,
    ProbeRejected,
    QueueReport,
    QueueTask,
    RemainingUpdate,
    StealReply,
    StealRequest,
    SubmitJob,
    TaskFinished,
    TaskStarted,
)
from aviary.common.model import JobSpec
from aviary.distributed.eagle import EagleSchedulerCore
from aviary.distributed.hawk import HawkSchedulerCore
from aviary.launch.drivers.sim import Simulator, simulate
from aviary.launch.policies.hybrid import hybrid_router
from aviary.launch.policies.registry import build_core, policy_cluster
from aviary.worker.hybrid import LAST_ATTEMPT, HybridNodeCore
from aviary.worker.stealing import Stealer


class Preload(Core):
    """Stands in for a central scheduler: queues given long tasks on nodes at time 0, absorbs replies."""

    role = "central"

    def __init__(self, name: str, work: dict[str, float]) -> None:
        super().__init__(name)
        self.work = work

    def start(self, now: float) -> list[Effect]:
        return [Send(n, LongTask(900 + i, 0, d, d)) for i, (n, d) in enumerate(self.work.items())]

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        return []


# --- sticky batch probing: the example of thesis §3.4.1 ----------------------------------------------


def sbp_example(sbp: bool) -> float:
    """4 nodes with queues of 100, 100, 10 and 10 time units; a job of four 10-unit tasks, one probe
    on each node. Returns the job's completion time."""
    nodes = ["n1", "n2", "n3", "n4"]
    queues = Preload("central", {"n1": 100.0, "n2": 100.0, "n3": 10.0, "n4": 10.0})
    scheduler = EagleSchedulerCore(
        "sched", nodes, probe_ratio=1.0, min_probes=0, sss=False, sticky=sbp, updates=sbp, seed=0
    )
    workers = [HybridNodeCore(n, srpt=sbp, sticky=sbp) for n in nodes]
    job = JobSpec(0, 0.0, [10.0] * 4, 10.0, long=False)
    frontend = FrontendCore("frontend", [job], lambda j, n: "sched")
    sim = Simulator([queues, scheduler, *workers, frontend], net_delay=0.0)
    sim.run(frontend=frontend)
    t = frontend.times[0]
    return t.finish - t.submit


def test_sbp_example_of_the_thesis_completes_at_30_with_sbp_and_110_without():
    assert sbp_example(sbp=True) == pytest.approx(30.0)
    assert sbp_example(sbp=False) == pytest.approx(110.0)


# --- SRPT with bypass counters on the node core -------------------------------------------------------


def test_node_srpt_refuses_a_bypass_once_the_counter_would_pass_five_task_estimates():
    node = HybridNodeCore("n", srpt=True, sticky=True, threshold=5.0)
    # A long-running short job occupies the slot; behind it a big job and a small one queue up.
    node.on_message(0, "s", Probe(1, 1.0, 1))
    node.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0, 0))
    node.on_message(0, "s", Probe(2, 2.0, 100))  # remaining work 200
    node.on_message(0, "s", Probe(3, 3.0, 50))  # remaining work 150: SRPT prefers it
    node.on_message(0, "s", CancelProbes(1))
    out = node.on_task_exit(1, (1, 0), True)
    served = []
    for i in range(5):
        ask = sent(out, GetTask)
        assert len(ask) == 1
        served.append(ask[0][1].job_id)
        job = ask[0][1].job_id
        out = node.on_message(2 + i, "s", AssignTask(job, i + 1, 3.0, 3.0 if job == 3 else 2.0, 40))
        out = node.on_task_exit(3 + i, (job, i + 1), True)
    # Job 3 bypasses job 2's probe three times (3 + 3 + 3 = 9 <= 10); a fourth would make 12 > 10.
    assert served[:4] == [3, 3, 3, 2]
    assert node.queue.bypass_of(node.queue.entries_of("s", 2)[0]) == 9.0


# --- SSS: rejection and re-placement -----------------------------------------------------------------


def bits(*positions: int, n: int = 8) -> bytes:
    v = 0
    for p in positions:
        v |= 1 << p
    return v.to_bytes((n + 7) // 8, "little")


def test_node_holding_long_work_rejects_short_probes_with_its_bitvector_except_the_last_round():
    node = HybridNodeCore("n0", sss=True)
    node.on_message(0, "central", LongTask(7, 0, 50.0, 50.0, bits(0, 3), 12.5))
    out = node.on_message(1, "s", Probe(1, 1.0, 2, count=2))
    assert sent(out, ProbeRejected) == [("s", ProbeRejected(1, 2, 0, bits(0, 3), 12.5))]
    out = node.on_message(1, "s", Probe(1, 1.0, 2, attempt=1))
    assert sent(out, ProbeRejected)
    # The last round (short partition, or no short partition at all) is never rejected.
    assert node.on_message(1, "s", Probe(1, 1.0, 2, attempt=LAST_ATTEMPT)) == []
    assert node.counters["probes_rejected"] == 3 and node.counters["probes_behind_long"] == 1
    # A long probe (Hawk without central) is not what SSS keeps out.
    assert sent(node.on_message(1, "s", Probe(2, 99.0, 1, long=True)), ProbeRejected) == []


def test_stale_bitvector_leads_to_a_second_rejection_then_the_short_partition():
    nodes = [f"n{i}" for i in range(8)]  # n6, n7: short partition
    s = EagleSchedulerCore("s", nodes, short=["n6", "n7"], min_probes=1, probe_ratio=1, seed=9)
    ((first, probe),) = sent(s.on_message(0, "fe", SubmitJob(1, [5.0], 5.0)), Probe)
    assert first == "n1" and probe.attempt == 0  # the first round is random (seed 9: n1)
    # n1 holds long work and refuses, with its bitvector of time 10: n0..n4 hold long work.
    n1 = HybridNodeCore("n1", sss=True)
    n1.on_message(0, "central", LongTask(8, 0, 50.0, 50.0, bits(0, 1, 2, 3, 4), 10.0))
    ((_, rejection),) = sent(n1.on_message(1, "s", probe), ProbeRejected)
    ((again, probe),) = sent(s.on_message(1, "n1", rejection), Probe)
    # Re-placed on a node free by that bitvector (n5, n6 or n7; seed 9: n5), as round 1.
    assert again == "n5" and probe.attempt == 1
    # But the bitvector was stale: n5 got a long task at time 20 and refuses too.
    n5 = HybridNodeCore("n5", sss=True)
    n5.on_message(20, "central", LongTask(9, 0, 50.0, 50.0, bits(0, 1, 2, 3, 4, 5), 20.0))
    ((_, rejection),) = sent(n5.on_message(21, "s", probe), ProbeRejected)
    assert rejection == ProbeRejected(1, 1, 1, bits(0, 1, 2, 3, 4, 5), 20.0)
    # Second rejection: the short partition, in the last round, which no node rejects.
    ((last, probe),) = sent(s.on_message(22, "n5", rejection), Probe)
    assert last in {"n6", "n7"} and probe.attempt == LAST_ATTEMPT
    assert s.stamp == 20.0  # it kept the fresher bitvector
    assert s.counters["probes_rescheduled"] == 2 and s.counters["probes_to_short"] == 1
    short_node = HybridNodeCore(last, sss=True)
    assert sent(short_node.on_message(23, "s", probe), GetTask) == [("s", GetTask(1))]


def test_a_rejection_re_sends_no_more_reservations_than_the_node_held():
    """A bad frame once claimed 10^12 rejected probes: the scheduler drew 10^12 targets and ran out of
    memory. A node re-sends at most what it held; one that held none re-sends nothing."""
    nodes = [f"n{i}" for i in range(8)]
    s = EagleSchedulerCore("s", nodes, short=["n6", "n7"], min_probes=1, probe_ratio=1, seed=9)
    ((first, _),) = sent(s.on_message(0, "fe", SubmitJob(1, [5.0], 5.0)), Probe)
    other = next(n for n in nodes if n != first)
    assert s.on_message(1, other, ProbeRejected(1, 1, 0)) == [] and s.counters["rejections_unheld"] == 1
    out = s.on_message(1, first, ProbeRejected(1, 10**12, 0))
    assert sum(p.count for _, p in sent(out, Probe)) == 1 and s.counters["probes_rescheduled"] == 1


def test_a_second_rejection_of_several_reservations_sends_them_all_to_the_short_partition():
    """§3.3.3, the last round: a rejected probe that stood for 3 reservations and was already re-placed
    once goes to short-partition nodes (drawn with replacement: here the only one) as one probe of 3,
    and each such round counts its reservations in ``probes_to_short``."""
    nodes = [f"n{i}" for i in range(6)]
    s = EagleSchedulerCore("s", nodes, short=["n5"], min_probes=1, probe_ratio=1, seed=2)
    for job in (1, 2):
        ((first, _),) = sent(s.on_message(job, "fe", SubmitJob(job, [5.0] * 3, 5.0)), Probe)[:1]
        s.jobs[job].probed[first] = 3  # as after a re-placement that drew it three times
        out = s.on_message(job, first, ProbeRejected(job, 3, 1, bits(0, 1, 2, 3, 4, n=6), float(job)))
        assert [(to, p.count, p.attempt) for to, p in sent(out, Probe)] == [("n5", 3, LAST_ATTEMPT)]
        assert s.counters["probes_to_short"] == 3 * job


def test_re_placement_finds_the_few_free_nodes_when_the_bitvector_marks_almost_all():
    """With 2 free nodes of 500 and one short-partition node, 32 random tries mostly miss: the
    re-placement then draws among the nodes the bitvector leaves free and the short partition (which
    always qualifies, marked or not), never another marked node."""
    nodes = [f"n{i}" for i in range(500)]
    s = EagleSchedulerCore("s", nodes, short=["n499"], min_probes=1, probe_ratio=1, seed=3)
    marked = (1 << 500) - 1 & ~(1 << 7) & ~(1 << 450)
    targets = []
    for job in range(1, 21):
        ((first, _),) = sent(s.on_message(job, "fe", SubmitJob(job, [5.0], 5.0)), Probe)
        out = s.on_message(job, first, ProbeRejected(job, 1, 0, marked.to_bytes(63, "little"), float(job)))
        targets += [to for to, _ in sent(out, Probe)]
    assert len(targets) == 20 and set(targets) == {"n7", "n450", "n499"}
    # Every general node marked: the short-partition node is the only place left, marked or not.
    ((first, _),) = sent(s.on_message(30, "fe", SubmitJob(30, [5.0], 5.0)), Probe)
    everything = ((1 << 500) - 1).to_bytes(63, "little")
    out = s.on_message(30, first, ProbeRejected(30, 1, 0, everything, 30.0))
    assert [(to, p.attempt) for to, p in sent(out, Probe)] == [("n499", 1)]  # by the bitvector, round 1


def test_without_a_bitvector_re_placement_may_pick_any_node():
    """A rejection that carries no bitvector (the node knew of none) leaves every node a candidate."""
    nodes = [f"n{i}" for i in range(8)]
    s = EagleSchedulerCore("s", nodes, min_probes=1, probe_ratio=1, seed=5)
    targets = set()
    for job in range(1, 41):
        ((first, _),) = sent(s.on_message(job, "fe", SubmitJob(job, [5.0], 5.0)), Probe)
        targets |= {to for to, _ in sent(s.on_message(job, first, ProbeRejected(job, 1, 0)), Probe)}
    assert targets == set(nodes)


def test_a_bitvector_shorter_than_the_cluster_leaves_the_nodes_past_its_end_free():
    """The scheduler reads a bitvector as sent; one of 8 bits for 16 nodes (a frame of another
    sender's making) marks n0..n7 and says nothing of n8..n15, which are then free."""
    nodes = [f"n{i}" for i in range(16)]
    s = EagleSchedulerCore("s", nodes, min_probes=1, probe_ratio=1, seed=4)
    targets = set()
    for job in range(1, 41):
        ((first, _),) = sent(s.on_message(job, "fe", SubmitJob(job, [5.0], 5.0)), Probe)
        out = s.on_message(job, first, ProbeRejected(job, 1, 0, bits(*range(8)), float(job)))
        targets |= {to for to, p in sent(out, Probe) if p.attempt == 1}
    assert targets == set(nodes[8:])


def test_first_placement_is_random_even_with_a_bitvector_at_hand():
    nodes = [f"n{i}" for i in range(10)]
    s = EagleSchedulerCore("s", nodes, short=["n9"], min_probes=0, probe_ratio=1, seed=1)
    s.on_message(0, "fe", SubmitJob(1, [1.0], 1.0))
    s.on_message(0, "n0", ProbeRejected(1, 1, 0, bits(*range(9), n=10), 5.0))  # only n9 free
    targets = set()
    for j in range(2, 60):
        targets |= {to for to, _ in sent(s.on_message(1, "fe", SubmitJob(j, [1.0], 1.0)), Probe)}
    assert len(targets) > 5  # not only n9


def test_min_probes_and_probe_ratio():
    nodes = [f"n{i}" for i in range(100)]
    s = EagleSchedulerCore("s", nodes, min_probes=20, seed=1)
    assert sum(p.count for _, p in sent(s.on_message(0, "fe", SubmitJob(1, [1.0] * 3, 1.0)), Probe)) == 20
    assert sum(p.count for _, p in sent(s.on_message(0, "fe", SubmitJob(2, [1.0] * 30, 1.0)), Probe)) == 60


# --- SBP and remaining-task updates at the scheduler ----------------------------------------------------


def test_sticky_scheduler_hands_out_tasks_to_the_same_node_then_no_task_and_updates_remaining():
    nodes = ["a", "b", "c", "d"]
    s = EagleSchedulerCore("s", nodes, probe_ratio=1, min_probes=0, seed=0)
    probes = sent(s.on_message(0, "fe", SubmitJob(1, [1.0, 2.0, 3.0, 4.0], 2.5)), Probe)
    assert sorted(to for to, _ in probes) == nodes
    out = s.on_message(1, "a", GetTask(1))
    assert sent(out, AssignTask) == [("a", AssignTask(1, 0, 1.0, 2.5, 3))]
    assert sorted(to for to, _ in sent(out, RemainingUpdate)) == ["b", "c", "d"]  # not the asker
    s.on_message(2, "a", GetTask(1))  # the same node asks again: sticky
    s.on_message(3, "a", GetTask(1))
    out = s.on_message(4, "a", GetTask(1))
    assert sent(out, AssignTask) == [("a", AssignTask(1, 3, 4.0, 2.5, 0))]
    assert sorted(to for to, _ in sent(out, CancelProbes)) == nodes
    assert sent(s.on_message(5, "b", GetTask(1)), NoTask) == [("b", NoTask(1))]


def test_update_ratio_sends_remaining_updates_only_when_the_count_fell_enough():
    nodes = [f"n{i}" for i in range(16)]
    s = EagleSchedulerCore("s", nodes, probe_ratio=1, min_probes=0, update_ratio=0.5, seed=0)
    s.on_message(0, "fe", SubmitJob(1, [1.0] * 16, 1.0))
    updates = []
    for _ in range(15):
        out = s.on_message(1, "n0", GetTask(1))
        if sent(out, RemainingUpdate):
            updates.append(sent(out, RemainingUpdate)[0][1].remaining)
    assert updates == [8, 4, 2, 1]


def test_node_keeps_a_sticky_probe_and_drops_it_on_no_task():
    node = HybridNodeCore("n", srpt=True, sticky=True)
    node.on_message(0, "s", Probe(1, 1.0, 3))
    out = node.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0, 2))
    assert [e for e in out if isinstance(e, Launch)] == [Launch((1, 0), 1.0)]
    out = node.on_task_exit(1, (1, 0), True)
    assert sent(out, TaskFinished) == [("s", TaskFinished(1, 0, True))]
    assert sent(out, GetTask) == [("s", GetTask(1))]  # the same probe asks again
    node.on_message(1, "s", NoTask(1))
    assert len(node.queue) == 0 and node.free == 1


# --- Hawk stealing on node cores (thesis §2.3.6, Figure 2.3) ---------------------------------------------


def test_idle_node_steals_the_group_behind_a_long_task_and_asks_their_scheduler():
    victim = HybridNodeCore("v", victim=True)
    victim.on_message(0, "central", LongTask(9, 0, 100.0, 100.0))  # runs: case b1
    victim.on_message(0, "s", Probe(1, 1.0, 1))
    victim.on_message(0, "s", Probe(2, 1.0, 1, count=2))
    out = victim.on_message(1, "thief", StealRequest())
    (reply,) = sent(out, StealReply)
    assert reply[1].probes == [["s", 1, 1.0, 1, 1], ["s", 2, 1.0, 1, 2]]
    assert len(victim.queue) == 0 and victim.counters["probes_given"] == 3

    thief = HybridNodeCore("thief", stealer=Stealer("thief", ["v", "w"], 10, random.Random(0)))
    out = thief.on_message(2, "v", reply[1])
    assert sent(out, GetTask) == [("s", GetTask(1))]
    assert thief.counters["steals"] == 3 and thief.counters["probes_behind_long"] == 0


def test_a_node_that_runs_out_of_work_asks_up_to_n_victims_one_at_a_time():
    victims = [f"g{i}" for i in range(30)]
    node = HybridNodeCore("g0", stealer=Stealer("g0", victims, 3, random.Random(1)))
    node.on_message(0, "s", Probe(1, 1.0, 1))
    node.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0))
    out = node.on_task_exit(1, (1, 0), True)
    asked = []
    while requests := sent(out, StealRequest):
        ((victim, _),) = requests
        asked.append(victim)
        out = node.on_message(2, victim, StealReply([]))
        assert len(asked) <= 3
    assert len(asked) == 3 and len(set(asked)) == 3 and "g0" not in asked
    assert node.counters["steal_requests"] == 3


def test_a_busy_node_does_not_steal_and_a_short_probe_behind_long_work_is_counted():
    node = HybridNodeCore("n", stealer=Stealer("n", ["a", "b"], 10, random.Random(0)))
    node.on_message(0, "central", LongTask(9, 0, 10.0, 10.0))
    assert sent(node.on_message(0, "s", Probe(1, 1.0, 1)), StealRequest) == []
    out = node.on_task_exit(10, (9, 0), True)
    assert sent(out, TaskStarted) == [] and sent(out, GetTask) == [("s", GetTask(1))]
    node.on_message(10, "s", AssignTask(1, 0, 1.0, 1.0))
    assert node.counters["probes_behind_long"] == 1 and node.counters["short_ran_behind_long"] == 1


def test_hawk_scheduler_probes_long_jobs_only_in_the_general_partition():
    nodes = [f"n{i}" for i in range(10)]
    s = HawkSchedulerCore("s", nodes, nodes[:6], cutoff=100.0, seed=0)
    long_probes = sent(s.on_message(0, "fe", SubmitJob(1, [500.0] * 2, 500.0)), Probe)
    assert {to for to, _ in long_probes} <= set(nodes[:6]) and all(p.long for _, p in long_probes)
    short_probes = sent(s.on_message(0, "fe", SubmitJob(2, [5.0] * 4, 5.0)), Probe)
    assert sum(p.count for _, p in short_probes) == 8 and not any(p.long for _, p in short_probes)


# --- central LWL ------------------------------------------------------------------------------------


def test_lwl_counts_the_remaining_part_of_the_running_long_task():
    lwl = LwlIndex(2)
    lwl.add(0, 100.0, 0.0)
    lwl.start(0, 100.0, 0.0)  # node 0 runs a task expected to end at 100
    lwl.add(1, 60.0, 0.0)  # node 1 has 60 queued
    assert lwl.least(30.0) == 1  # 70 left on node 0 > 60
    assert lwl.least(50.0) == 0  # 50 < 60
    assert lwl.least(500.0) == 0  # overdue: node 0 counts nothing left
    lwl.finish(0, 100.0, 100.0, 500.0)
    lwl.add(0, 61.0, 500.0)
    assert lwl.least(500.0) == 1


def test_lwl_spreads_a_job_over_the_least_loaded_nodes():
    rng = random.Random(4)
    lwl = LwlIndex(50)
    waits = [0.0] * 50
    for i in range(50):
        w = rng.uniform(0, 100)
        lwl.add(i, w, 0.0)
        waits[i] = w
    for _ in range(200):
        k = lwl.least(0.0)
        assert waits[k] == min(waits)
        lwl.add(k, 7.0, 0.0)
        waits[k] += 7.0


def test_central_sets_and_clears_sss_bits_and_piggybacks_them_with_a_timestamp():
    nodes = ["g0", "g1", "g2", "s0"]
    c = CentralLwlCore("central", nodes, ["g0", "g1", "g2"], sss=True)
    out = c.on_message(3.0, "fe", SubmitJob(1, [10.0, 10.0], 10.0))
    placed = sent(out, LongTask)
    assert len(placed) == 2 and len({to for to, _ in placed}) == 2
    vector = int.from_bytes(placed[0][1].bitvector, "little")
    assert bin(vector).count("1") == 2 and not vector & (1 << 3)  # never the short partition
    assert all(m.stamp == 3.0 and m.bitvector == placed[0][1].bitvector for _, m in placed)
    (n0, m0), (n1, m1) = placed
    c.on_message(4.0, n0, TaskStarted(1, m0.task_index))
    c.on_message(14.0, n0, TaskFinished(1, m0.task_index))
    assert c.bitvector() != placed[0][1].bitvector  # n0 holds no long work any more
    out = c.on_message(15.0, n1, TaskFinished(1, m1.task_index))
    assert c.bits == 0 and sent(out, JobDone) == [("fe", JobDone(1, 1.0))]


def test_router_sends_long_jobs_to_the_central_scheduler_and_short_ones_round_robin():
    cluster = policy_cluster("hawk", nodes=10, schedulers=3, params={"cutoff": 50.0}, bind_ports=False)
    route = hybrid_router(cluster)
    jobs = [JobSpec(i, 0.0, [1.0], est, False) for i, est in enumerate([1, 60, 2, 50, 3, 4])]
    assert [route(j, n) for n, j in enumerate(jobs)] == [
        "sched-0", "central", "sched-1", "central", "sched-2", "sched-0",
    ]  # fmt: skip
    assert sum(p.partition == "short" for p in cluster.nodes) == 2  # 17 % of 10, rounded


# --- whole runs on the simulator ----------------------------------------------------------------------


def mixed_jobs(n: int = 250, seed: int = 5) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += rng.expovariate(2.0)
        long = rng.random() < 0.1
        mean = rng.uniform(30, 60) if long else rng.uniform(0.5, 2.0)
        ds = [rng.expovariate(1 / mean) for _ in range(rng.randint(1, 15 if long else 8))]
        jobs.append(JobSpec(i, t, ds, sum(ds) / len(ds), long))
    return jobs


def run(policy: str, nodes: int = 40, **params: Any) -> Any:
    cluster = policy_cluster(
        policy, nodes=nodes, schedulers=3, seed=2, params={"cutoff": 10.0, **params}, bind_ports=False
    )
    out = simulate(cluster, mixed_jobs())
    assert out.frontend.unfinished() == []
    return out


@pytest.mark.parametrize(
    "policy",
    ["hawk", "hawk-nosteal", "hawk-nopartition", "hawk-nocentral", "eagle", "eagle-nosss", "eagle-nosbp",
     "eagle-nominprobes", "lwl", "dlwl"],
)  # fmt: skip
def test_every_hybrid_policy_finishes_every_job_deterministically(policy):
    a, b = run(policy), run(policy)
    times = {i: t.finish for i, t in a.frontend.times.items()}
    assert times == {i: t.finish for i, t in b.frontend.times.items()}
    assert a.counters == b.counters and a.messages == b.messages
    assert not [k for k in a.counters if k.startswith(("unexpected", "unknown", "error", "duplicate"))]


def test_counters_of_table_3_2():
    hawk, eagle, nosss = run("hawk"), run("eagle"), run("eagle-nosss")
    c = hawk.counters
    assert c["probes"] > 0 and c["probes_behind_long"] > 0 and c["steals"] > 0
    assert 0 < c["short_ran_behind_long"] <= c["probes_behind_long"]
    # Eagle with SSS: no probe is ever queued behind a long task, so no short task ran behind one.
    e = eagle.counters
    assert e["probes_behind_long"] == 0 and e["short_ran_behind_long"] == 0
    assert e["probes_rescheduled"] > 0 and e["probes_rejected"] > 0
    assert nosss.counters["probes_behind_long"] > 0 and nosss.counters["probes_rescheduled"] == 0


def test_long_tasks_never_run_in_the_short_partition():
    for policy in ("hawk", "eagle", "hawk-nocentral", "dlwl"):
        out = run(policy)
        partition = {p.name: p.partition for p in policy_cluster(policy, nodes=40, bind_ports=False).nodes}
        for name, core in out.cores.items():
            if isinstance(core, HybridNodeCore) and partition[name] == "short":
                assert core.counters["long_launched"] == 0, (policy, name)


# --- the registry's wiring of each mechanism (mutants found by mutation testing, issue 12) -------------


def cores_of(policy: str, nodes: int = 24, **params: Any) -> tuple[Any, dict[str, Any], set[str]]:
    """The cluster, its cores by name (built as a replay builds them) and its short-partition nodes."""
    cluster = policy_cluster(policy, nodes=nodes, schedulers=2, params=params, bind_ports=False)
    cores = {p.name: build_core(p, cluster) for p in cluster.processes if p.role != "frontend"}
    short = {p.name for p in cluster.nodes if p.partition == "short"}
    return cluster, cores, short


def steal_round(node: HybridNodeCore) -> list[str]:
    """Make ``node`` run out of work, answer every StealRequest with nothing; the victims asked."""
    node.on_message(0, "sched-0", Probe(1, 1.0, 1))
    out = node.on_message(0, "sched-0", AssignTask(1, 0, 1.0, 1.0))
    out = node.on_task_exit(1, (1, 0), True)
    asked = []
    while requests := sent(out, StealRequest):
        ((victim, _),) = requests
        asked.append(victim)
        out = node.on_message(2, victim, StealReply([]))
    return asked


def test_hawk_every_idle_node_steals_from_general_nodes_only_by_default_as_thesis_2_3_6():
    _, cores, short = cores_of("hawk")
    nodes = {n: c for n, c in cores.items() if isinstance(c, HybridNodeCore)}
    assert short and len(nodes) == 24
    for name, node in nodes.items():
        asked = steal_round(node)
        # Both partitions steal ("both the servers from the general partition and the servers from the
        # short partition can steal"), 10 attempts, and only from general-partition nodes.
        assert len(asked) == 10 and len(set(asked)) == 10, name
        assert not set(asked) & short and name not in asked, name
        assert node.victim == (name not in short)


def test_hawk_with_stealers_general_lets_only_general_nodes_steal_as_thesis_3_6_1():
    _, cores, short = cores_of("hawk", stealers="general")
    for name, node in cores.items():
        if isinstance(node, HybridNodeCore):
            asked = steal_round(node)
            assert (asked == []) if name in short else (len(asked) == 10 and not set(asked) & short), name


def test_without_stealing_no_node_steals_or_gives():
    for policy in ("hawk-nosteal", "eagle"):
        _, cores, _ = cores_of(policy)
        for node in cores.values():
            if isinstance(node, HybridNodeCore):
                assert steal_round(node) == [] and not node.victim, policy


def test_hawk_without_cancel_leaves_leftover_probes_for_thieves():
    on, off = run("hawk"), run("hawk", cancel_probes="off")
    assert on.messages["CancelProbes"] > 0 and off.messages.get("CancelProbes", 0) == 0
    assert on.counters["probes_leftover_kept"] == 0 < off.counters["probes_leftover_kept"]
    assert off.counters["probes_leftover_cancelled"] == 0 < on.counters["probes_leftover_cancelled"]
    assert off.counters["steals"] > 1.5 * on.counters["steals"]  # Table 3.2: stealing counts grow


def test_eagle_without_cancel_answers_kept_sticky_probes_with_no_task():
    nodes = ["a", "b", "c"]
    s = EagleSchedulerCore("s", nodes, probe_ratio=1, min_probes=0, cancel=False, seed=0)
    s.on_message(0, "fe", SubmitJob(1, [1.0, 2.0, 3.0], 2.0))
    s.on_message(1, "a", GetTask(1))
    s.on_message(1, "b", GetTask(1))
    out = s.on_message(2, "a", GetTask(1))  # the last task
    assert sent(out, CancelProbes) == []
    # The remaining count (0) still reaches the other nodes holding probes, by the update rule.
    assert sorted(to for to, _ in sent(out, RemainingUpdate)) == ["b", "c"]
    assert sent(s.on_message(3, "c", GetTask(1)), NoTask) == [("c", NoTask(1))]
    assert s.counters["probes_leftover_kept"] == 3 and s.counters["probes_leftover_cancelled"] == 0


def test_eagle_nominprobes_sends_two_probes_per_task_and_eagle_at_least_twenty():
    for policy, expected in (("eagle", 20), ("eagle-nominprobes", 2), ("eagle-nosss", 20)):
        _, cores, _ = cores_of(policy, nodes=60)
        scheduler = cores["sched-0"]
        out = scheduler.on_message(0, "fe", SubmitJob(1, [1.0], 1.0))
        assert sum(p.count for _, p in sent(out, Probe)) == expected, policy
        out = scheduler.on_message(0, "fe", SubmitJob(2, [1.0] * 15, 1.0))
        assert sum(p.count for _, p in sent(out, Probe)) == 30, policy


def test_eagle_nosbp_nodes_serve_fifo_and_use_a_probe_up():
    for policy, sbp in (("eagle", True), ("eagle-nosbp", False)):
        _, cores, short = cores_of(policy)
        node = cores[sorted(short)[0]]  # a short-partition node: no long work, no rejection
        node.on_message(0, "sched-0", Probe(1, 1.0, 50))
        node.on_message(0, "sched-0", AssignTask(1, 0, 1.0, 1.0, 49))
        node.on_message(0, "sched-0", Probe(2, 1.0, 40))  # FIFO next
        node.on_message(0, "sched-0", Probe(3, 1.0, 1))  # SRPT next (least remaining work)
        out = node.on_task_exit(1, (1, 0), True)
        # SBP + SRPT: job 1's sticky probe asks again only if its job is the shortest: job 3 is.
        assert sent(out, GetTask) == [("sched-0", GetTask(3 if sbp else 2))], policy
        # Sticky probes stay queued after their task; without SBP a probe is used up by the task it
        # brings (job 1's) or is being served (job 2's).
        assert sorted(e.job_id for e in node.queue) == ([1, 2, 3] if sbp else [3]), policy


def test_eagle_nosbp_scheduler_sends_no_remaining_updates_and_forgets_used_probes():
    for policy, sbp in (("eagle", True), ("eagle-nosbp", False)):
        _, cores, _ = cores_of(policy, nodes=60)
        s = cores["sched-0"]
        probed = sent(s.on_message(0, "fe", SubmitJob(1, [1.0, 1.0], 1.0)), Probe)
        (first, _), (second, _), *_ = sorted(probed)
        out = s.on_message(1, first, GetTask(1))
        assert bool(sent(out, RemainingUpdate)) == sbp, policy
        out = s.on_message(1, second, GetTask(1))
        cancelled = {to for to, _ in sent(out, CancelProbes)}
        # A sticky probe is still held after its task; a used-up one is not, so it gets no cancel.
        assert (first in cancelled) == sbp and (second in cancelled) == sbp, policy
        assert len(cancelled) == 20 - (0 if sbp else 2), policy


def test_dlwl_nodes_reorder_the_whole_queue_by_srpt():
    _, cores, short = cores_of("dlwl")
    node = next(c for n, c in cores.items() if isinstance(c, HybridNodeCore) and n not in short)
    node.on_message(0, "sched-0", QueueTask(1, 0, 5.0, 5.0, 10))  # runs at once
    node.on_message(0, "sched-0", QueueTask(2, 0, 50.0, 50.0, 1, long=True))  # work 50
    node.on_message(0, "sched-0", QueueTask(3, 0, 1.0, 1.0, 1))  # work 1: bypasses the long task
    out = node.on_task_exit(5, (1, 0), True)
    assert [e.task_id for e in out if isinstance(e, Launch)] == [(3, 0)]
    out = node.on_task_exit(6, (3, 0), True)
    assert [e.task_id for e in out if isinstance(e, Launch)] == [(2, 0)]


def test_dlwl_nodes_send_heartbeats_to_every_scheduler_when_their_queue_changed():
    cluster, cores, _ = cores_of("dlwl")
    node = next(c for c in cores.values() if isinstance(c, HybridNodeCore))
    period = 3.0 / cluster.params.get("time_scale", 1.0)  # the declared default, trace seconds
    out = node.start(0)
    assert sorted(to for to, _ in sent(out, QueueReport)) == ["sched-0", "sched-1"]
    assert SetTimer("heartbeat", period) in out
    assert sent(node.on_timer(period, "heartbeat"), QueueReport) == []  # nothing changed
    node.on_message(period + 0.1, "sched-0", QueueTask(1, 0, 5.0, 5.0, 1))
    out = node.on_timer(2 * period, "heartbeat")
    reports = sent(out, QueueReport)
    assert len(reports) == 2 and reports[0][1].wait == pytest.approx(5.0 - (2 * period - period - 0.1))
    assert SetTimer("heartbeat", period) in out


# --- Table 3.2's counters: always written, and short_ran_behind_long under every policy -------------


TABLE_3_2 = ("probes", "probes_behind_long", "short_ran_behind_long", "steals", "probes_rescheduled")


def test_the_counters_of_table_3_2_are_written_even_when_zero(tmp_path):
    import json

    from aviary.launch.cli.main import main

    for policy in ("hawk", "eagle", "hawk-nosteal"):
        out = tmp_path / policy
        args = ["replay", "--runtime", "sim", "--policy", policy, "--jobs", "20", "--start", "6000",
                "--nodes", "40", "--load", "0.5", "--quiet", "--out", str(out)]  # fmt: skip
        assert main(args) == 0
        counters = json.loads((out / "summary.json").read_text())["counters"]
        for key in (*TABLE_3_2, "probes_rejected", "probes_leftover_kept", "probes_leftover_cancelled"):
            assert key in counters, (policy, key)
        assert policy != "eagle" or counters["steals"] == 0
        assert policy != "hawk-nosteal" or counters["steals"] == counters["probes_rescheduled"] == 0


def test_a_probe_served_at_once_on_a_free_slot_beside_a_long_task_did_not_wait_behind_it():
    node = HybridNodeCore("n", slots=2)
    node.on_message(0, "central", LongTask(9, 0, 100.0, 100.0))  # one slot runs long work
    node.on_message(1, "s", Probe(1, 1.0, 1))  # the other slot takes it at once
    node.on_message(1, "s", AssignTask(1, 0, 1.0, 1.0))
    assert node.counters["probes_behind_long"] == 1  # queued while long work ran (thesis' column 1)
    assert node.counters["short_ran_behind_long"] == 0  # but it never waited (column 2)


def test_a_sticky_probe_counts_only_the_tasks_that_waited_behind_long_work():
    node = HybridNodeCore("n", srpt=True, sticky=True)  # Eagle without SSS
    node.on_message(0, "central", LongTask(9, 0, 10.0, 10.0))
    node.on_message(0, "s", Probe(1, 1.0, 2))
    node.on_task_exit(10, (9, 0), True)
    node.on_message(10, "s", AssignTask(1, 0, 1.0, 1.0, 1))  # waited 10 s behind the long task
    out = node.on_task_exit(11, (1, 0), True)
    assert sent(out, GetTask) == [("s", GetTask(1))]
    node.on_message(11, "s", AssignTask(1, 1, 1.0, 1.0, 0))  # asked again at once: no wait
    assert node.counters["short_ran_behind_long"] == 1 and node.counters["sticky_tasks"] == 1


def test_dlwl_short_tasks_count_when_a_long_task_ran_ahead_of_them_not_when_they_bypassed_it():
    node = HybridNodeCore("n", srpt=True, stop_at_long=False)
    node.on_message(0, "s", QueueTask(1, 0, 5.0, 5.0, 10))  # runs
    node.on_message(0, "s", QueueTask(2, 0, 50.0, 50.0, 1, long=True))  # queued long, work 50
    node.on_message(0, "s", QueueTask(3, 0, 1.0, 1.0, 1))  # work 1: bypasses it
    node.on_message(0, "s", QueueTask(4, 0, 20.0, 20.0, 5))  # work 100: the long task goes first
    node.on_task_exit(5, (1, 0), True)  # job 3 starts, having waited behind short work only
    assert node.counters["short_ran_behind_long"] == 0
    node.on_task_exit(6, (3, 0), True)  # the long task starts
    node.on_task_exit(56, (2, 0), True)  # job 4 starts, after 50 s behind it
    assert node.counters["short_ran_behind_long"] == 1


def test_lwl_counts_its_short_jobs_waiting_behind_long_ones():
    _, cores, _ = cores_of("lwl", cutoff=10.0)
    node = next(c for c in cores.values() if isinstance(c, HybridNodeCore))
    node.on_message(0, "central", LongTask(1, 0, 50.0, 50.0))  # long: estimate >= cutoff
    node.on_message(0, "central", LongTask(2, 0, 1.0, 1.0))  # a short job, placed centrally
    node.on_task_exit(50, (1, 0), True)
    assert node.counters["long_launched"] == 1 and node.counters["short_ran_behind_long"] == 1
