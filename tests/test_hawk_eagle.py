"""Hawk and Eagle on their cores (thesis ch. 2 and 3): the thesis' own examples, SSS, stealing, LWL,
routing, counters. No sockets, no sleeps: cores are called directly or run on the simulator."""

from __future__ import annotations

import random
from typing import Any

import pytest

from aviary.central.lwl import CentralLwlCore, LwlIndex
from aviary.common.core import Core
from aviary.common.effects import Effect, Launch, Send
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
from aviary.launch.hybrid import hybrid_router
from aviary.launch.registry import policy_cluster
from aviary.launch.sim import Simulator, simulate
from aviary.worker.hybrid import LAST_ATTEMPT, HybridNodeCore
from aviary.worker.stealing import Stealer


def sent(effects: list[Effect], kind: type) -> list[tuple[str, Any]]:
    return [(e.to, e.msg) for e in effects if isinstance(e, Send) and isinstance(e.msg, kind)]


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
