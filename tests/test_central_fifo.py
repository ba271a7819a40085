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
