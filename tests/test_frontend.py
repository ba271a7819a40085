"""Frontend core: registration, submission at arrival times, completion times on its own clock."""

from aviary.common.effects import Send, SetTimer
from aviary.common.frontend import FrontendCore, round_robin
from aviary.common.messages import Hello, JobDone, Register, SubmitJob
from aviary.common.model import JobSpec

JOBS = [
    JobSpec(0, 0.0, [1.0], 1.0, False),
    JobSpec(1, 0.5, [2.0, 2.0], 2.0, True),
    JobSpec(2, 0.5, [1.0], 1.0, False),
]


def test_waits_for_every_process_then_submits_at_arrival_times():
    fe = FrontendCore("fe", JOBS, round_robin(["s0", "s1"]), wait_for=["s0", "s1", "n0"])
    out = fe.start(100.0)
    assert {e.to for e in out if isinstance(e, Send) and isinstance(e.msg, Hello)} == {"s0", "s1", "n0"}
    assert fe.on_message(100.1, "s0", Register("scheduler")) == []
    fe.on_message(100.1, "s1", Register("scheduler"))
    out = fe.on_message(100.2, "n0", Register("node", 4))
    assert out == [SetTimer("submit", 0.0)] and fe.ready
    out = fe.on_timer(100.2, "submit")
    assert out == [Send("s0", SubmitJob(0, [1.0], 1.0)), SetTimer("submit", 0.5)]
    out = fe.on_timer(100.7, "submit")
    assert [e.to for e in out] == ["s1", "s0"] and fe.submitted == 3


def test_completion_time_and_first_start_on_the_frontend_clock():
    fe = FrontendCore("fe", JOBS[:1], round_robin(["s0"]))
    fe.start(50.0)
    fe.on_timer(50.0, "submit")
    fe.on_message(53.0, "s0", JobDone(0, 0.25))
    t = fe.times[0]
    assert (t.submit, t.first_start, t.finish) == (0.0, 0.25, 3.0)
    assert fe.done and fe.unfinished() == []


def test_unknown_and_duplicate_job_done_are_counted_not_trusted():
    fe = FrontendCore("fe", JOBS[:1], round_robin(["s0"]))
    fe.start(0.0)
    fe.on_timer(0.0, "submit")
    fe.on_message(1.0, "s0", JobDone(42, 0.0))
    fe.on_message(1.0, "s0", JobDone(0, 0.0))
    fe.on_message(2.0, "s0", JobDone(0, 0.0))
    assert fe.counters["unknown_job_done"] == 1 and fe.counters["duplicate_job_done"] == 1
    assert fe.times[0].finish == 1.0


def test_a_job_that_waits_for_others_is_submitted_when_the_last_of_them_finished():
    """B waits for A; C for A and B (a trace's after=): due at 1 s, they go when their parents are done,
    each with that moment as its submit time; a job whose parent finished already goes when due."""
    jobs = [
        JobSpec(0, 0.0, [4.0], 4.0, False),
        JobSpec(1, 1.0, [1.0], 1.0, False, after=(0,)),
        JobSpec(2, 1.0, [1.0], 1.0, False, after=(0, 1)),
        JobSpec(3, 9.0, [1.0], 1.0, False, after=(0,)),
    ]
    fe = FrontendCore("fe", jobs, round_robin(["s0"]))
    fe.start(0.0)
    assert [e.msg.job_id for e in fe.on_timer(0.0, "submit") if isinstance(e, Send)] == [0]
    assert [e for e in fe.on_timer(1.0, "submit") if isinstance(e, Send)] == []  # due, held
    assert fe.held.keys() == {1, 2} and fe.submitted == 3
    out = fe.on_message(5.0, "s0", JobDone(0, 0.0))
    assert [e.msg.job_id for e in out] == [1] and fe.times[1].submit == 5.0  # C still waits for B
    out = fe.on_message(6.5, "s0", JobDone(1, 0.0))
    assert [e.msg.job_id for e in out] == [2] and fe.times[2].submit == 6.5 and fe.held == {}
    assert [e.msg.job_id for e in fe.on_timer(9.0, "submit") if isinstance(e, Send)] == [3]  # A is done
    fe.on_message(10.0, "s0", JobDone(2, 0.0))
    fe.on_message(10.5, "s0", JobDone(3, 0.0))
    assert fe.done and fe.times[2].finish - fe.times[2].submit == 3.5
