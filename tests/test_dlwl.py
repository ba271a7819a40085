"""DLWL+SRPT's distributed scheduler (thesis §3.6.2) on its core: placement on heartbeat-stale queue
estimates with a random offset fixed per heartbeat, the partition, remaining-task updates by Eagle's
rule, JobDone. No sockets, no sleeps."""

from __future__ import annotations

import pytest
from helpers import sent

from aviary.common.effects import Effect, Send
from aviary.common.messages import (
    GetTask,
    JobDone,
    QueueReport,
    QueueTask,
    RemainingUpdate,
    SubmitJob,
    TaskFinished,
    TaskStarted,
)
from aviary.distributed.dlwl import DlwlSchedulerCore
from aviary.distributed.eagle import update_due
from aviary.launch.policies.registry import build_core, policy_cluster

NODES = ["a", "b", "c", "d"]


def placed(effects: list[Effect]) -> list[str]:
    return [to for to, _ in sent(effects, QueueTask)]


def test_each_task_goes_to_the_node_with_the_least_estimated_wait_counting_its_own_placements():
    s = DlwlSchedulerCore("s", NODES, NODES, heartbeat=0.5, seed=1)
    for node, wait in zip(NODES, (9.0, 1.0, 3.0, 20.0), strict=True):
        s.on_message(0, node, QueueReport(wait))
    # Offsets are below the heartbeat (0.5), so the order is the reports' order: b, then c ...
    out = s.on_message(0, "fe", SubmitJob(1, [4.0, 4.0, 4.0], 4.0))
    # b (1) -> 5 after the first task; c (3) takes the second; then b (5) < c (7) < a (9).
    assert placed(out) == ["b", "c", "b"]
    assert [m.task_index for _, m in sent(out, QueueTask)] == [0, 1, 2]
    assert all(m.remaining == 3 and not m.long for _, m in sent(out, QueueTask))
    s.on_message(1, "fe", SubmitJob(2, [1.0, 1.0], 1.0))
    assert (s.counters["jobs"], s.counters["tasks_placed"], s.counters["reports"]) == (2, 5, 4)


def test_its_counters_are_written_even_when_zero():
    s = DlwlSchedulerCore("s", NODES, NODES)
    assert dict(s.counters) == {"tasks_placed": 0, "remaining_updates": 0, "reports": 0}


def test_a_report_decays_at_one_second_per_second_and_its_random_offset_stays_fixed():
    s = DlwlSchedulerCore("s", NODES, NODES, heartbeat=2.0, seed=3)
    s.on_message(10.0, "a", QueueReport(5.0))
    offset = s.estimate("a", 100.0)  # the report has decayed away: only the offset is left
    assert 0.0 < offset < 2.0
    # Fixed for the whole heartbeat (Apollo's term is added to the estimate, it does not decay).
    assert s.estimate("a", 10.0) == pytest.approx(5.0 + offset)
    assert s.estimate("a", 13.0) == pytest.approx(2.0 + offset)
    assert s.estimate("a", 15.0 + 1.999) == pytest.approx(offset)
    # The next heartbeat draws a new one, and forgets the old report and its offset.
    s.on_message(20.0, "a", QueueReport(0.0))
    again = s.estimate("a", 20.0)
    assert 0.0 < again < 2.0 and again != offset and s.estimate("a", 500.0) == again


def test_an_idle_node_keeps_its_offset_so_concurrent_schedulers_spread_out():
    s = DlwlSchedulerCore("s", NODES, NODES, heartbeat=1.0, seed=5)
    for node in NODES:
        s.on_message(0.0, node, QueueReport(0.0))
    offsets = {n: s.estimate(n, 0.0) for n in NODES}
    assert len(set(offsets.values())) == 4
    # Long after the reports, the node with the least offset is still the one chosen.
    out = s.on_message(50.0, "fe", SubmitJob(1, [0.1], 0.1))
    assert placed(out) == [min(offsets, key=offsets.__getitem__)]


def test_long_jobs_use_only_the_general_partition_short_jobs_every_node():
    s = DlwlSchedulerCore("s", NODES, ["a", "b"], ["c", "d"], heartbeat=0.1, cutoff=10.0, seed=0)
    s.on_message(0, "a", QueueReport(50.0))
    s.on_message(0, "b", QueueReport(60.0))
    out = s.on_message(0, "fe", SubmitJob(1, [20.0] * 4, 20.0))
    assert set(placed(out)) <= {"a", "b"} and all(m.long for _, m in sent(out, QueueTask))
    out = s.on_message(0, "fe", SubmitJob(2, [1.0] * 2, 1.0))
    assert set(placed(out)) == {"c", "d"} and not any(m.long for _, m in sent(out, QueueTask))
    # Both views see a placement: the long work on a and b counts for short jobs too.
    assert s.estimate("a", 0.0) == pytest.approx(s.estimate("a", 0.0, long=True))
    assert s.counters["jobs_long"] == 1 and s.counters["jobs"] == 1


def test_remaining_updates_go_to_the_nodes_still_holding_tasks_by_the_update_ratio():
    s = DlwlSchedulerCore("s", [f"n{i}" for i in range(8)], [], heartbeat=0.1, update_ratio=0.5, seed=0)
    nodes = placed(s.on_message(0, "fe", SubmitJob(1, [1.0] * 8, 1.0)))
    assert len(set(nodes)) == 8
    updates = []
    for i, node in enumerate(nodes):
        out = s.on_message(1 + i, node, TaskStarted(1, i))
        for to, _ in sent(out, RemainingUpdate):
            assert to in nodes[i + 1 :]  # only where tasks wait, never the node that started one
        if out:
            assert len(sent(out, RemainingUpdate)) == len(nodes) - i - 1
            updates.append(sent(out, RemainingUpdate)[0][1].remaining)
    assert updates == [4, 2, 1]
    assert s.counters["remaining_updates"] == 4 + 2 + 1


def test_dlwl_and_eagle_follow_the_same_update_rule_with_the_same_default_ratio():
    """§3.6.2 compares them on equal terms: DLWL's remaining counts must not be more exact than Eagle's."""
    t = 20
    dlwl_cluster = policy_cluster("dlwl", nodes=60, schedulers=1, bind_ports=False)
    eagle_cluster = policy_cluster("eagle", nodes=60, schedulers=1, bind_ports=False)
    dlwl = build_core(dlwl_cluster.schedulers[0], dlwl_cluster)
    eagle = build_core(eagle_cluster.schedulers[0], eagle_cluster)
    assert dlwl.update_ratio == eagle.update_ratio > 0

    nodes = placed(dlwl.on_message(0, "fe", SubmitJob(1, [1.0] * t, 1.0)))
    dlwl_updates = []
    for i, node in enumerate(nodes):
        dlwl_updates += [
            m.remaining for _, m in sent(dlwl.on_message(1, node, TaskStarted(1, i)), RemainingUpdate)
        ][:1]
    eagle.on_message(0, "fe", SubmitJob(1, [1.0] * t, 1.0))
    eagle_updates = []
    asker = "node-0"
    for _ in range(t):
        eagle_updates += [
            m.remaining for _, m in sent(eagle.on_message(1, asker, GetTask(1)), RemainingUpdate)
        ][:1]
    assert dlwl_updates == eagle_updates
    assert 1 < len(dlwl_updates) < t - 1  # neither exact nor silent


def test_update_rule_every_change_at_ratio_zero():
    assert all(update_due(left, left + 1, 0.0) for left in range(10))
    assert update_due(9, 10, 0.1) and not update_due(10, 11, 0.1) and update_due(0, 1, 0.5)


def test_job_done_after_its_last_task_with_the_delay_of_its_first_start():
    s = DlwlSchedulerCore("s", NODES, NODES, heartbeat=0.1, seed=0)
    nodes = placed(s.on_message(10.0, "fe", SubmitJob(7, [1.0, 2.0], 1.5)))
    s.on_message(12.0, nodes[0], TaskStarted(7, 0))
    s.on_message(12.5, nodes[1], TaskStarted(7, 1))
    assert s.on_message(13.0, nodes[0], TaskFinished(7, 0)) == []
    assert s.on_message(14.5, nodes[1], TaskFinished(7, 1)) == [Send("fe", JobDone(7, 2.0))]
    assert 7 not in s.jobs
    assert s.on_message(15.0, "a", TaskStarted(99, 0)) == [] and s.counters["unknown_task_started"] == 1
    s.on_message(15.0, "a", TaskStarted(99, 1))
    assert s.counters["unknown_task_started"] == 2


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="scheduler s: no nodes"):
        DlwlSchedulerCore("s", [], [])
    with pytest.raises(ValueError, match=r"scheduler s: update ratio must be in \[0, 1\), got 1.0"):
        DlwlSchedulerCore("s", NODES, NODES, update_ratio=1.0)


def test_a_job_at_the_cutoff_is_long_and_an_empty_or_repeated_job_is_answered():
    s = DlwlSchedulerCore("s", NODES, ["a"], ["b", "c", "d"], heartbeat=0.1, cutoff=10.0, seed=0)
    out = s.on_message(0, "fe", SubmitJob(1, [10.0], 10.0))
    assert placed(out) == ["a"] and sent(out, QueueTask)[0][1].long
    assert s.on_message(0, "fe", SubmitJob(2, [], 1.0)) == [Send("fe", JobDone(2, 0.0))]
    assert s.on_message(0, "fe", SubmitJob(1, [1.0], 1.0)) == [] and s.counters["duplicate_job"] == 1
    assert s.on_message(0, "a", GetTask(1)) == [] and s.counters["unexpected.GetTask"] == 1
    assert s.on_message(0, "a", TaskFinished(99, 0)) == [] and s.counters["unknown_task_finished"] == 1
    s.on_message(0, "a", TaskFinished(99, 1))
    assert s.counters["unknown_task_finished"] == 2
    s.on_message(0, "fe", SubmitJob(3, [20.0], 20.0))
    assert s.counters["jobs_long"] == 2


def test_a_node_holding_two_tasks_of_a_job_is_updated_until_both_started():
    s = DlwlSchedulerCore("s", ["a", "b"], ["a", "b"], heartbeat=0.1, seed=0)
    s.on_message(0, "a", QueueReport(0.0))
    s.on_message(0, "b", QueueReport(100.0))
    nodes = placed(s.on_message(0, "fe", SubmitJob(4, [1.0] * 3, 1.0)))
    assert nodes == ["a", "a", "a"]
    assert sent(s.on_message(1, "a", TaskStarted(4, 0)), RemainingUpdate) == [("a", RemainingUpdate(4, 2))]
    assert sent(s.on_message(2, "a", TaskStarted(4, 1)), RemainingUpdate) == [("a", RemainingUpdate(4, 1))]
    assert s.on_message(3, "a", TaskStarted(4, 2)) == [] and s.jobs[4].waiting == {}
    assert s.counters["remaining_updates"] == 2


def test_without_a_heartbeat_period_there_is_no_offset():
    s = DlwlSchedulerCore("s", NODES, NODES, heartbeat=0.0, seed=0)
    s.on_message(0.0, "a", QueueReport(5.0))
    assert s.estimate("a", 2.0) == 3.0 and s.estimate("a", 9.0) == 0.0
    assert s.counters["reports"] == 1


def test_equally_loaded_nodes_are_taken_in_a_seeded_order_not_the_list_order():
    def order(seed: int) -> list[str]:
        s = DlwlSchedulerCore("s", NODES, NODES, heartbeat=1.0, seed=seed)
        return [placed(s.on_message(0, "fe", SubmitJob(j, [1.0], 1.0)))[0] for j in range(len(NODES))]

    orders = [order(seed) for seed in range(8)]
    assert len({o[0] for o in orders}) > 1  # other seeds, other first nodes
    assert all(order(seed) == orders[seed] for seed in range(8))  # one seed, one order, every time
