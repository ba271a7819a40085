"""Central FIFO core: tasks placed only on free slots, in arrival order."""

from aviary.central.fifo import CentralFifoCore
from aviary.common.effects import Send
from aviary.common.messages import JobDone, PlaceTask, SubmitJob, TaskFinished


def placed(effects):
    return [(e.to, e.msg.job_id, e.msg.task_index) for e in effects if isinstance(e.msg, PlaceTask)]


def test_places_only_on_free_slots_and_in_fifo_order():
    c = CentralFifoCore("c", {"a": 1, "b": 1})
    assert placed(c.on_message(0, "fe", SubmitJob(1, [1.0, 1.0, 1.0], 1.0))) == [("a", 1, 0), ("b", 1, 1)]
    assert placed(c.on_message(0, "fe", SubmitJob(2, [1.0], 1.0))) == []
    assert placed(c.on_message(1, "b", TaskFinished(1, 1))) == [("b", 1, 2)]
    assert placed(c.on_message(2, "a", TaskFinished(1, 0))) == [("a", 2, 0)]


def test_job_done_when_all_tasks_finished():
    c = CentralFifoCore("c", {"a": 2})
    c.on_message(0, "fe", SubmitJob(1, [1.0, 1.0], 1.0))
    assert c.on_message(1, "a", TaskFinished(1, 0)) == []
    assert c.on_message(1, "a", TaskFinished(1, 1)) == [Send("fe", JobDone(1, 0.0))]


def test_a_node_queue_places_that_many_tasks_beyond_the_slots():
    """``fifo_queue`` = 1: a single-slot node holds a running task and a waiting one; a third task waits
    centrally until one of them finishes (the hand-out Dask's worker-saturation 1.1 makes)."""
    c = CentralFifoCore("c", {"a": 1, "b": 1}, queue=1)
    submitted = placed(c.on_message(0, "fe", SubmitJob(1, [1.0] * 5, 1.0)))
    assert submitted == [("a", 1, 0), ("b", 1, 1), ("a", 1, 2), ("b", 1, 3)]
    assert placed(c.on_message(1, "a", TaskFinished(1, 0))) == [("a", 1, 4)]
    assert placed(c.on_message(2, "b", TaskFinished(1, 1))) == []


def test_the_policy_reads_its_node_queue_from_the_cluster_params():
    from aviary.launch.policies.registry import build_core, policy_cluster

    cluster = policy_cluster("fifo", nodes=2, slots=2, schedulers=1)
    assert build_core(cluster.central, cluster).node_slots == {n.name: 2 for n in cluster.nodes}
    cluster.params["fifo_queue"] = 3
    assert build_core(cluster.central, cluster).node_slots == {n.name: 5 for n in cluster.nodes}
