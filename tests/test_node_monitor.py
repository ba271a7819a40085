"""Node monitor core: FIFO order, late binding, slot accounting, cancellation. No sockets, no sleeps."""

from aviary.common.effects import Launch, Send
from aviary.common.messages import AssignTask, CancelProbes, GetTask, NoTask, PlaceTask, Probe, TaskFinished
from aviary.worker.node_monitor import FifoQueue, NodeMonitorCore, ProbeEntry, TaskEntry


def sends(effects, kind):
    return [(e.to, e.msg) for e in effects if isinstance(e, Send) and isinstance(e.msg, kind)]


def launches(effects):
    return [e for e in effects if isinstance(e, Launch)]


def test_probe_at_head_with_free_slot_asks_its_scheduler():
    node = NodeMonitorCore("n", slots=1)
    out = node.on_message(0, "s1", Probe(7, 1.0, 3))
    assert sends(out, GetTask) == [("s1", GetTask(7))]
    assert node.free == 0


def test_late_binding_runs_assigned_task_in_reserved_slot_and_reports_finish():
    node = NodeMonitorCore("n", slots=1)
    node.on_message(0, "s1", Probe(7, 1.0, 3))
    out = node.on_message(1, "s1", AssignTask(7, 2, 5.0, 1.0))
    assert launches(out) == [Launch((7, 2), 5.0)]
    out = node.on_task_exit(6, (7, 2), True)
    assert sends(out, TaskFinished) == [("s1", TaskFinished(7, 2, True))]
    assert node.free == 1


def test_fifo_order_and_one_request_per_free_slot():
    node = NodeMonitorCore("n", slots=1)
    assert sends(node.on_message(0, "a", Probe(1, 1.0, 1)), GetTask) == [("a", GetTask(1))]
    # Queued behind the first: no request while the only slot is reserved.
    assert node.on_message(0, "b", Probe(2, 1.0, 1)) == []
    assert node.on_message(0, "c", Probe(3, 1.0, 1)) == []
    node.on_message(1, "a", AssignTask(1, 0, 1.0, 1.0))
    out = node.on_task_exit(2, (1, 0), True)
    assert sends(out, GetTask) == [("b", GetTask(2))]
    out = node.on_message(3, "b", NoTask(2))
    assert sends(out, GetTask) == [("c", GetTask(3))]


def test_no_task_frees_the_reserved_slot():
    node = NodeMonitorCore("n", slots=2)
    node.on_message(0, "a", Probe(1, 1.0, 1, count=2))
    assert node.free == 0
    node.on_message(1, "a", NoTask(1))
    node.on_message(1, "a", NoTask(1))
    assert node.free == 2
    assert node.counters["no_task"] == 2


def test_batched_probe_yields_one_reservation_per_slot():
    node = NodeMonitorCore("n", slots=3)
    out = node.on_message(0, "a", Probe(1, 1.0, 5, count=5))
    assert sends(out, GetTask) == [("a", GetTask(1))] * 3
    assert len(node.queue) == 1  # the remaining two reservations wait


def test_cancel_drops_only_that_jobs_queued_probes():
    node = NodeMonitorCore("n", slots=1)
    node.on_message(0, "a", Probe(1, 1.0, 1))
    node.on_message(0, "a", Probe(2, 1.0, 1, count=3))
    node.on_message(0, "b", Probe(3, 1.0, 1))
    node.on_message(0, "a", CancelProbes(2))
    assert node.counters["probes_cancelled"] == 3
    node.on_message(1, "a", AssignTask(1, 0, 1.0, 1.0))
    out = node.on_task_exit(2, (1, 0), True)
    assert sends(out, GetTask) == [("b", GetTask(3))]


def test_cancel_from_another_scheduler_does_not_touch_probes():
    node = NodeMonitorCore("n", slots=1)
    node.on_message(0, "a", Probe(1, 1.0, 1))
    node.on_message(0, "a", Probe(2, 1.0, 1))
    node.on_message(0, "b", CancelProbes(2))
    node.on_message(1, "a", NoTask(1))
    assert node.requests[("a", 2)] == 1


def test_placed_task_starts_without_a_round_trip_and_keeps_fifo_order():
    node = NodeMonitorCore("n", slots=1)
    node.on_message(0, "a", Probe(1, 1.0, 1))
    assert node.on_message(0, "c", PlaceTask(9, 0, 3.0, 3.0)) == []
    out = node.on_message(1, "a", NoTask(1))
    assert launches(out) == [Launch((9, 0), 3.0)]
    assert sends(node.on_task_exit(4, (9, 0), True), TaskFinished) == [("c", TaskFinished(9, 0, True))]


def test_slots_never_overcommitted():
    node = NodeMonitorCore("n", slots=2)
    running = 0
    for j in range(10):
        for e in node.on_message(0, "a", Probe(j, 1.0, 1)):
            if isinstance(e.msg, GetTask):
                running += len(launches(node.on_message(0, "a", AssignTask(j, 0, 1.0, 1.0))))
    assert running == 2 and node.free == 0
    assert len(node.running) == 2


def test_an_assignment_for_a_probe_the_node_does_not_hold_is_counted_and_dropped():
    node = NodeMonitorCore("n", slots=1)
    assert node.on_message(0, "a", AssignTask(4, 0, 1.0, 1.0)) == []  # no probe of job 4 asked for it
    assert node.counters["unsolicited_assign"] == 1 and node.free == 1 and not node.running
    node.on_message(0, "a", Probe(5, 1.0, 1))  # a GetTask for job 5 is out: only its answer runs
    assert node.on_message(0, "a", AssignTask(4, 0, 1.0, 1.0)) == []
    assert launches(node.on_message(0, "a", AssignTask(5, 0, 1.0, 1.0))) == [Launch((5, 0), 1.0)]


def test_failed_task_is_reported_not_ok():
    node = NodeMonitorCore("n", slots=1)
    node.on_message(0, "a", PlaceTask(1, 0, 1.0, 1.0))
    out = node.on_task_exit(1, (1, 0), False)
    assert sends(out, TaskFinished) == [("a", TaskFinished(1, 0, False))]
    assert node.counters["tasks_failed"] == 1


def test_a_new_probe_after_a_cancel_does_not_revive_the_cancelled_ones():
    node = NodeMonitorCore("n", slots=1)
    node.on_message(0, "a", Probe(1, 1.0, 1))
    node.on_message(0, "a", Probe(2, 1.0, 1, count=2))
    node.on_message(0, "a", CancelProbes(2))
    node.on_message(0, "a", Probe(2, 1.0, 1))  # a re-probe (as Eagle does) after the cancel
    assert node.queue.reservations() == 1
    node.on_message(1, "a", NoTask(1))
    node.on_message(2, "a", NoTask(2))
    assert node.free == 1 and len(node.queue) == 0


def _order(q: FifoQueue) -> list[tuple[str, int]]:
    out = []
    while (e := q.pop()) is not None:
        out.append((e.scheduler, e.job_id))
    return out


def test_a_cancel_in_a_long_queue_drops_that_job_s_probes_and_keeps_the_order_of_the_rest():
    q = FifoQueue()
    for j in range(6):
        q.push(ProbeEntry("a", j, 1.0, 1, 1))
    q.push(TaskEntry("c", 9, 0, 1.0, 1.0))
    q.push(ProbeEntry("a", 2, 1.0, 1, 2))  # a second probe of job 2
    q.push(ProbeEntry("b", 2, 1.0, 1, 1))  # another scheduler's job 2
    assert q.cancel("a", 2) == 3 and q.cancel("a", 2) == 0 and q.cancel("z", 1) == 0
    assert len(q) == 7 and q.reservations() == 6 + 1
    assert [e.job_id for e in q.entries("a")] == [0, 1, 3, 4, 5]
    q.push(ProbeEntry("a", 2, 1.0, 1, 1))  # probed again after the cancel: it waits at the tail
    assert _order(q) == [("a", 0), ("a", 1), ("a", 3), ("a", 4), ("a", 5), ("c", 9), ("b", 2), ("a", 2)]
    assert len(q) == 0 and q.reservations() == 0


def test_a_batched_probe_yields_one_reservation_at_a_time_and_a_cancel_drops_the_rest():
    q = FifoQueue()
    q.push(ProbeEntry("a", 1, 1.0, 3, 3))
    q.push(ProbeEntry("a", 2, 1.0, 1, 1))
    assert (q.pop().job_id, q.reservations()) == (1, 3)  # type: ignore[union-attr]
    assert q.cancel("a", 1) == 2 and len(q) == 1
    assert _order(q) == [("a", 2)]


def test_a_queue_mostly_of_dropped_probes_is_swept_and_a_dead_scheduler_s_entries_go():
    q = FifoQueue()
    for j in range(200):
        q.push(ProbeEntry("a", j, 1.0, 1, 1))
    q.push(TaskEntry("b", 7, 0, 1.0, 1.0))
    for j in range(150):
        q.cancel("a", j)
    # swept at the 101st cancel (most of it dropped): 100 left, 49 of them dropped since
    assert len(q._q) == 100 and len(q) == 51
    assert q.drop_scheduler("b") == 1 and len(q) == 50 and len(q._q) == 50
    assert [e.job_id for e in q.entries("a")] == list(range(150, 200))
