"""The node's fluid contention model (``worker/resource_node.py``): the arithmetic, walked by hand."""

from __future__ import annotations

import pytest
from helpers import sent

from aviary.common.effects import CancelTimer, Launch, Send, SetTimer
from aviary.common.messages import KillTask, PlaceTask, SubmitJob, TaskFinished
from aviary.common.resources import Resources
from aviary.worker.resource_node import FLUID, ResourceNodeCore

MACHINE = Resources(16.0, 64.0, 1.0, 1.0)


def place(core, now, task, duration, demand):
    return core.on_message(now, "central", PlaceTask(1, task, duration, duration, list(demand)))


def finished(effects):
    return [m.task_index for _, m in sent(effects, TaskFinished)]


def timer(effects):
    delays = [e.delay for e in effects if isinstance(e, SetTimer) and e.key == FLUID]
    return delays[-1] if delays else None


def test_over_allocating_disk_by_one_and_a_half_stretches_exactly_the_tasks_that_use_disk():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    for task, demand in ((0, (1, 1, 0.75, 0)), (1, (1, 1, 0.75, 0)), (2, (4, 8, 0, 0.5))):
        assert [type(e) for e in place(node, 0.0, task, 10.0, demand)] == [Launch]
    assert node.rates() == {(1, 0): pytest.approx(1 / 1.5), (1, 1): pytest.approx(1 / 1.5), (1, 2): 1.0}
    assert finished(node.on_task_exit(10.0, (1, 2), True)) == [2]  # no disk: on time
    effects = node.on_task_exit(10.0, (1, 0), True)
    assert finished(effects) == [] and timer(effects) == pytest.approx(5.0)
    effects = node.on_task_exit(10.0, (1, 1), True)
    assert finished(effects) == [] and timer(effects) == pytest.approx(5.0)
    assert finished(node.on_timer(15.0, FLUID)) == [0, 1]  # 1.5x their 10 s
    assert node.counters["tasks_stretched"] == 2 and node.free == MACHINE


def test_a_finishing_task_speeds_the_others_up_at_that_instant():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    place(node, 0.0, 0, 10.0, (1, 1, 1.0, 0))
    place(node, 0.0, 1, 4.0, (1, 1, 1.0, 0))  # both at rate 0.5
    assert timer(node.on_task_exit(4.0, (1, 1), True)) == pytest.approx(4.0)  # 2 s of work left
    assert finished(node.on_timer(8.0, FLUID)) == [1]
    assert node.rates() == {(1, 0): 1.0}  # alone from t = 8: 6 s of its work done, 4 left at rate 1
    assert timer(node.on_task_exit(10.0, (1, 0), True)) == pytest.approx(4.0)
    assert finished(node.on_timer(14.0, FLUID)) == [0]  # 14 s of disk work on one disk


def test_a_node_reports_its_running_demand_beyond_capacity_and_what_waits_as_gauges():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    place(node, 0.0, 0, 10.0, (1, 40, 0.6, 0))
    place(node, 0.0, 1, 10.0, (1, 4, 0.6, 0))  # disk over-allocated: 1.2 of 1.0
    place(node, 0.0, 2, 10.0, (1, 40, 0, 0))  # memory is not: it waits
    gauges = node.gauges()
    assert gauges["used_disk"] == pytest.approx(1.2) and gauges["used_mem"] == 44
    assert gauges["used_cores"] == 2 and gauges["used_net"] == 0 and gauges["queued"] == 1
    node.on_task_exit(12.0, (1, 0), True)
    node.on_timer(12.0, FLUID)
    assert node.gauges()["queued"] == 0 and node.gauges()["used_mem"] == 44  # task 2 started in its room


def test_memory_is_never_over_committed():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    place(node, 0.0, 0, 5.0, (1, 40, 0, 0))
    assert place(node, 0.0, 1, 5.0, (1, 40, 0, 0)) == []  # cores are free, memory is not: it waits
    assert node.counters["waited_for_room"] == 1 and node.free.mem == 24
    effects = node.on_task_exit(5.0, (1, 0), True)
    assert finished(effects) == [0] and [e.task_id for e in effects if isinstance(e, Launch)] == [(1, 1)]
    too_big = place(node, 5.0, 2, 1.0, (1, 65, 0, 0))
    assert finished(too_big) == [2] and not sent(too_big, TaskFinished)[0][1].ok
    lacking = ResourceNodeCore("m", Resources(16.0, 64.0, 0.0, 1.0), "fluid")
    assert not sent(place(lacking, 0.0, 0, 1.0, (1, 1, 0.1, 0)), TaskFinished)[0][1].ok  # no disk at all


def test_cores_over_allocated_slow_down_too_and_a_node_that_fits_never_stretches():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    for task in range(4):
        place(node, 0.0, task, 2.0, (8, 1, 0, 0))  # 32 cores asked of 16
    assert set(node.rates().values()) == {0.5}
    fits = ResourceNodeCore("n", MACHINE, "fluid")
    for task in range(4):
        place(fits, 0.0, task, 2.0, (4, 1, 0.25, 0.25))
    assert set(fits.rates().values()) == {1.0}
    for task in range(4):  # each completes at its executor's exit, no timer, as with "off"
        assert finished(fits.on_task_exit(2.0, (1, task), True)) == [task]
    assert fits.counters["tasks_stretched"] == 0


def test_disk_goodput_loss_is_a_knob_that_is_off_by_default():
    for loss, rate in ((0.0, 0.5), (0.5, 0.5 * (1 - 0.5 * 0.5))):
        node = ResourceNodeCore("n", MACHINE, "fluid", disk_loss=loss)
        place(node, 0.0, 0, 1.0, (1, 1, 1.0, 0))
        place(node, 0.0, 1, 1.0, (1, 1, 1.0, 0.2))
        assert list(node.rates().values()) == [pytest.approx(rate)] * 2
    with pytest.raises(ValueError, match="disk_loss"):
        ResourceNodeCore("n", MACHINE, "fluid", disk_loss=1.0)


def test_off_admits_by_the_whole_vector_and_runs_at_full_speed():
    node = ResourceNodeCore("n", MACHINE, "off")
    place(node, 0.0, 0, 10.0, (1, 1, 0.75, 0))
    assert place(node, 0.0, 1, 10.0, (1, 1, 0.75, 0)) == []  # disk does not fit: it waits
    effects = node.on_task_exit(10.0, (1, 0), True)
    assert finished(effects) == [0] and timer(effects) is None


# --- what the central bookkeeping counts (account, overbook) -----------------------------------------


def central(account="all", overbook=1.0):
    from aviary.central.drf import Drf
    from aviary.central.packing import PackingCore

    nodes = [(f"n{i}", MACHINE, {}) for i in range(2)]
    return PackingCore("c", nodes, Drf(), account=account, overbook=overbook)


def disk_job(job_id, tasks, disk):
    from aviary.common.messages import SubmitJob

    return SubmitJob(job_id, [10.0] * tasks, 10.0, [(tasks, 10.0, [1.0, 2.0, disk, 0.1], [])])


def test_yarn_accounting_reserves_cores_and_memory_and_sends_the_whole_demand():
    core = central(account="cores,mem")
    effects = core.on_message(0.0, "fe", disk_job(1, 4, 0.6))
    places = [m for _, m in sent(effects, PlaceTask)]
    assert len(places) == 4  # 2.4 disks' worth on two disks: disk is not counted
    assert all(m.demand == [1.0, 2.0, 0.6, 0.1] for m in places)  # the node runs the real demand
    assert core.state.nodes[0].free == Resources(12.0, 56.0, 1.0, 1.0)  # first fit: all four on n0
    assert core.state.dominant_share(core.state.jobs[1]) == pytest.approx(4 / 32)  # cores, not disk
    assert len(sent(central().on_message(0.0, "fe", disk_job(1, 4, 0.6)), PlaceTask)) == 2  # all four


def test_overbooking_fills_disk_and_network_to_the_factor_and_keeps_shares_on_the_real_capacity():
    core = central(overbook=1.25)
    effects = core.on_message(0.0, "fe", disk_job(1, 6, 0.6))
    assert len(sent(effects, PlaceTask)) == 4  # two a node: 1.2 <= 1.25 disks, a third would be 1.8
    node = core.state.nodes[0]
    assert node.capacity == MACHINE and node.free.disk == pytest.approx(0.05)
    assert core.state.dominant_share(core.state.jobs[1]) == pytest.approx(4 * 0.6 / 2)  # of the real disks


def test_the_fluid_timer_is_cancelled_when_no_held_task_is_left_to_wait_for():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    place(node, 0.0, 0, 10.0, (1, 1, 1.0, 0))
    place(node, 0.0, 1, 4.0, (1, 1, 1.0, 0))
    assert timer(node.on_task_exit(4.0, (1, 1), True)) == pytest.approx(4.0)  # task 1 held
    effects = node.on_task_exit(5.0, (1, 0), False)  # task 0 fails: task 1 alone, still 1.5 s to go
    assert finished(effects) == [0] and timer(effects) == pytest.approx(1.5)
    assert finished(node.on_timer(6.5, FLUID)) == [1]
    place(node, 7.0, 2, 1.0, (1, 1, 0.5, 0))
    place(node, 7.0, 3, 1.0, (1, 1, 1.0, 0))  # both at 1/1.5
    assert timer(node.on_task_exit(8.0, (1, 2), True)) is not None
    effects = node.on_task_exit(8.0, (1, 3), False)  # the held task speeds up to 1: 1/3 s left
    assert finished(effects) == [3] and timer(effects) == pytest.approx(1 / 3)
    assert finished(node.on_timer(8.0 + 1 / 3, FLUID)) == [2]
    assert node.on_task_exit(9.0, (1, 9), True) == []  # unknown: nothing, no timer
    place(node, 9.0, 5, 1.0, (1, 1, 1.0, 0))
    place(node, 9.0, 6, 1.0, (1, 1, 1.0, 0))
    assert timer(node.on_task_exit(10.0, (1, 5), True)) is not None  # held: half its work left
    effects = node.on_message(10.0, "central", KillTask(1, 5))  # preempted while held: nothing to wait for
    assert CancelTimer(FLUID) in effects and finished(effects) == [5]
    place(node, 10.0, 4, 1.0, (1, 1, 0.0, 0))
    assert [type(e) for e in node.on_task_exit(11.0, (1, 4), True)] == [Send]  # no timer to cancel


def test_the_timer_answers_only_its_own_key_and_completes_held_tasks_as_successes():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    place(node, 0.0, 0, 2.0, (1, 1, 1.0, 0))
    place(node, 0.0, 1, 2.0, (1, 1, 1.0, 0))  # both at rate 0.5
    node.on_task_exit(2.0, (1, 0), True)
    assert node.on_timer(4.0, "other") == []  # not the fluid timer: nothing completes
    effects = node.on_timer(4.0, FLUID)  # the fired timer is spent: nothing to cancel, nothing held left
    assert [(m.task_index, m.ok) for _, m in sent(effects, TaskFinished)] == [(0, True)]
    assert not any(isinstance(e, (CancelTimer, SetTimer)) for e in effects)
    assert (node.counters["tasks_finished"], node.counters["tasks_failed"]) == (1, 0)
    off = ResourceNodeCore("n", MACHINE, "off")
    place(off, 0.0, 0, 2.0, (1, 1, 1.0, 0))
    assert off.on_timer(4.0, FLUID) == []  # no fluid model, no fluid timer
    assert finished(off.on_task_exit(2.0, (1, 0), True)) == [0] and off.counters["tasks_finished"] == 1


def test_the_timer_is_set_for_the_earliest_end_of_the_held_tasks():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    for task, duration in ((0, 2.0), (1, 6.0), (2, 9.0)):
        place(node, 0.0, task, duration, (1, 1, 1.0, 0))  # rate 1/3 each
    node.on_task_exit(2.0, (1, 1), True)  # exited early (executor noise): 6 - 2/3 s of work left
    effects = node.on_task_exit(2.0, (1, 0), True)  # 2 - 2/3 left: the earlier end, at rate 1/3
    assert timer(effects) == pytest.approx((2 - 2 / 3) * 3)


def test_a_task_using_no_contended_resource_runs_at_rate_one_and_loss_needs_an_over_subscribed_disk():
    node = ResourceNodeCore("n", MACHINE, "fluid", disk_loss=0.5)
    place(node, 0.0, 0, 1.0, (0, 8, 0, 0))  # memory only
    place(node, 0.0, 1, 1.0, (1, 1, 0.5, 0))  # the disk half used: no loss
    assert node.rates() == {(1, 0): 1.0, (1, 1): 1.0}
    two_disks = ResourceNodeCore("n", Resources(16.0, 64.0, 2.0, 1.0), "fluid", disk_loss=0.5)
    for task in range(4):
        place(two_disks, 0.0, task, 1.0, (1, 1, 1.0, 0))  # 4 disks' worth of 2: share 0.5, then the loss
    assert list(two_disks.rates().values()) == [pytest.approx(0.5 * (1 - 0.5 * (1 - 2 / 4)))] * 4


def test_a_killed_tasks_exit_is_swallowed_and_counted_once():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    place(node, 0.0, 0, 5.0, (1, 1, 0.5, 0))
    node.on_message(1.0, "central", KillTask(1, 0))
    assert node.on_task_exit(1.1, (1, 0), False) == []  # answered at the kill already
    assert node.counters["killed_exits_ignored"] == 1 and node.killing == set()
    assert node.on_task_exit(1.2, (1, 0), False) == [] and node.counters["unknown_task_exit"] == 1


@pytest.mark.parametrize("contention", ["fluid", "off"])
def test_every_refusal_answers_the_placer_with_a_failure_of_that_task_counted_once(contention):
    node = ResourceNodeCore("n", MACHINE, contention)
    for task, demand in [
        (0, [1.0, -2.0]),
        (1, [1.0, 65.0, 0, 0]),
    ] * 2:  # a bad demand; more memory than it has
        effects = node.on_message(0.0, "central", PlaceTask(1, task, 1.0, 1.0, demand))
        assert [(to, m.job_id, m.task_index, m.ok) for to, m in sent(effects, TaskFinished)] == [
            ("central", 1, task, False)
        ]
    assert place(node, 0.0, 2, 1.0, (1, 64, 0, 0)) == [Launch((1, 2), 1.0)]  # exactly the memory: runs
    assert (
        node.on_message(0.0, "central", KillTask(9, 9))
        == node.on_message(0.0, "central", KillTask(9, 8))
        == []
    )
    assert node.on_message(0.0, "central", SubmitJob(1, [1.0], 1.0)) == []  # not a node's message
    keys = ("bad_demand", "task_too_big", "kill_unknown_task", "unexpected.SubmitJob")
    assert {k: node.counters[k] for k in keys} == dict(zip(keys, (2, 2, 2, 1), strict=True))
    assert node.slots == 16 and ResourceNodeCore("m", Resources(0.5, 1.0), contention).slots == 1
    with pytest.raises(ValueError, match="contention must be one of fluid, off, got 'x'"):
        ResourceNodeCore("n", MACHINE, "x")


def test_a_task_placed_twice_runs_once_and_a_killed_waiting_task_is_counted():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    assert place(node, 0.0, 0, 1.0, (1, 60, 0, 0)) == [Launch((1, 0), 1.0)]
    for _ in range(2):
        assert place(node, 0.0, 0, 1.0, (1, 1, 0, 0)) == []  # the same task again while it runs
    for task in (1, 2):
        assert place(node, 0.0, task, 1.0, (1, 10, 0, 0)) == []  # waits for memory
        effects = node.on_message(0.5, "central", KillTask(1, task))
        assert [(m.task_index, m.ok) for _, m in sent(effects, TaskFinished)] == [(task, False)]
    assert not node.waiting
    assert finished(node.on_task_exit(1.0, (1, 0), True)) == [0]  # nothing left to start
    counted = {
        k: node.counters[k] for k in ("tasks_launched", "duplicate_task", "tasks_killed", "tasks_finished")
    }
    assert counted == {"tasks_launched": 1, "duplicate_task": 2, "tasks_killed": 2, "tasks_finished": 1}


@pytest.mark.parametrize("contention", ["fluid", "off"])
def test_tasks_waiting_for_memory_start_together_and_answer_their_own_placer(contention):
    node = ResourceNodeCore("n", MACHINE, contention)
    assert place(node, 0.0, 0, 1.0, (1, 60, 0, 0)) == [Launch((1, 0), 1.0)]
    for task in (1, 2):
        assert node.on_message(0.0, f"sched{task}", PlaceTask(1, task, 1.0, 1.0, [1, 30, 0, 0])) == []
    assert node.counters["waited_for_room"] == 2
    effects = node.on_task_exit(1.0, (1, 0), False)  # fails: its placer hears so, and both waiting start
    assert [(to, m.task_index, m.ok) for to, m in sent(effects, TaskFinished)] == [("central", 0, False)]
    assert [e.task_id for e in effects if isinstance(e, Launch)] == [(1, 1), (1, 2)]
    for task in (1, 2):
        assert sent(node.on_task_exit(2.0, (1, task), True), TaskFinished)[0][0] == f"sched{task}"
    keys = ("tasks_launched", "tasks_finished", "tasks_failed")
    assert {k: node.counters[k] for k in keys} == dict(zip(keys, (3, 2, 1), strict=True))
    assert node.on_task_exit(3.0, (1, 1), True) == node.on_task_exit(3.0, (1, 2), True) == []
    assert node.counters["unknown_task_exit"] == 2
    bare = node.on_message(4.0, "central", PlaceTask(2, 0, 1.0, 1.0, []))  # no demand: one core
    assert bare == [Launch((2, 0), 1.0)] and node.free.cores == 15


def test_a_fluid_node_runs_what_an_off_node_refuses_as_too_big():
    big_disk = (1, 1, 1.5, 0)  # one and a half disks of one
    fluid, off = ResourceNodeCore("n", MACHINE, "fluid"), ResourceNodeCore("n", MACHINE, "off")
    assert place(fluid, 0.0, 0, 3.0, big_disk) == [Launch((1, 0), 3.0)]
    assert fluid.rates() == {(1, 0): pytest.approx(1 / 1.5)}
    assert finished(place(off, 0.0, 0, 3.0, big_disk)) == [0] and off.counters["task_too_big"] == 1


def test_a_task_placed_again_waits_for_its_killed_run_to_exit_while_others_complete():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    for task, duration in ((0, 5.0), (1, 1.0), (2, 1.0)):
        place(node, 0.0, task, duration, (1, 1, 0, 0))
    for task in (0, 2):
        node.on_message(0.5, "central", KillTask(1, task))  # killed: their exits not in yet
    assert (
        node.on_message(0.5, "other", KillTask(1, 1)) == node.on_message(0.6, "other", KillTask(1, 1)) == []
    )
    assert place(node, 0.6, 0, 5.0, (1, 1, 0, 0)) == place(node, 0.6, 2, 5.0, (1, 1, 0, 0)) == []
    effects = node.on_task_exit(1.0, (1, 1), True)  # another task completes: the head still waits
    assert finished(effects) == [1] and not any(isinstance(e, Launch) for e in effects)
    assert [e for e in node.on_task_exit(1.1, (1, 0), False) if isinstance(e, Launch)] == [
        Launch((1, 0), 5.0)
    ]
    assert [e for e in node.on_task_exit(1.2, (1, 2), False) if isinstance(e, Launch)] == [
        Launch((1, 2), 5.0)
    ]
    keys = ("waited_for_kill", "kill_refused", "killed_exits_ignored", "tasks_killed")
    assert {k: node.counters[k] for k in keys} == dict(zip(keys, (2, 2, 2, 2), strict=True))


def test_stretched_tasks_done_at_one_timer_finish_in_launch_order_whatever_order_they_exited_in():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    for task in range(3):
        place(node, 0.0, task, 10.0, (1, 1, 0.5, 0))  # disk 1.5x over-allocated: each at rate 2/3
    for task in (2, 0, 1):
        assert finished(node.on_task_exit(10.0, (1, task), True)) == []
    assert sorted(node.stretched) == [(1, 0), (1, 1), (1, 2)]
    assert finished(node.on_timer(15.0, FLUID)) == [0, 1, 2] and not node.stretched


def test_rates_are_given_per_mask_of_fungible_resources_used():
    node = ResourceNodeCore("n", MACHINE, "fluid")
    demands = ((12, 1, 0, 0), (12, 1, 0.8, 0), (0, 1, 0.8, 0.6), (0, 1, 0, 0.6), (0, 1, 0, 0))
    for task, demand in enumerate(demands):  # cores at 24/16, disk at 1.6, network at 1.2
        place(node, 0.0, task, 10.0, demand)
    cores, disk, net = 16 / 24, 1 / 1.6, 1 / 1.2
    expected = [cores, min(cores, disk), min(disk, net), net, 1.0]
    assert list(node.rates().values()) == pytest.approx(expected)
    assert [node.running[1, t].rate for t in range(5)] == list(node.rates().values())
