"""The hop log (issue 27): a job's path is walked back from its JobDone through the messages that
caused each other, not read off the clock's order (two probes of a job interleave)."""

from __future__ import annotations

from aviary.benchmarks.runtime_overhead.hops import path, steps
from aviary.common.hoplog import ENV, HopLogRuntime, make_runtime, read_hops
from aviary.common.runtime import Runtime


def _sparrow_logs() -> dict:
    """One job, two probes: node-1 answers first and gets the task; node-0's GetTask comes later
    (NoTask), and node-0 also sends the earlier job's TaskFinished in between."""
    us = 1e-6
    return {
        "frontend": [("out", "SubmitJob", 7, "sched-0", 0 * us), ("in", "JobDone", 7, "sched-0", 900 * us)],
        "sched-0": [
            ("in", "SubmitJob", 7, "frontend", 100 * us),
            ("out", "Probe", 7, "node-0", 140 * us),
            ("out", "Probe", 7, "node-1", 150 * us),
            ("in", "GetTask", 7, "node-1", 300 * us),
            ("out", "AssignTask", 7, "node-1", 320 * us),
            ("in", "GetTask", 7, "node-0", 400 * us),
            ("out", "NoTask", 7, "node-0", 410 * us),
            ("in", "TaskFinished", 7, "node-1", 700 * us),
            ("out", "JobDone", 7, "frontend", 720 * us),
        ],
        "node-0": [("in", "Probe", 7, "sched-0", 250 * us), ("out", "GetTask", 7, "sched-0", 280 * us)],
        "node-1": [
            ("in", "Probe", 7, "sched-0", 240 * us),
            ("out", "GetTask", 7, "sched-0", 260 * us),
            ("in", "AssignTask", 7, "sched-0", 400 * us),
            ("out", "TaskFinished", 7, "sched-0", 600 * us),
        ],
    }


def test_a_job_s_path_follows_cause_to_effect_through_the_node_that_ran_it():
    got = [(label, round(t)) for label, t in path(_sparrow_logs(), 7)]
    assert got == [
        ("frontend > sched  SubmitJob", 100),
        ("sched  SubmitJob > Probe", 50),  # the probe to node-1, the one that led to the task
        ("sched > node  Probe", 90),
        ("node  Probe > GetTask", 20),
        ("node > sched  GetTask", 40),
        ("sched  GetTask > AssignTask", 20),
        ("sched > node  AssignTask", 80),
        ("node  AssignTask > TaskFinished", 200),
        ("node > sched  TaskFinished", 100),
        ("sched  TaskFinished > JobDone", 20),
        ("sched > frontend  JobDone", 180),
    ]
    assert path(_sparrow_logs(), 8) is None  # a job the frontend never heard finish
    labelled, share = steps(_sparrow_logs())
    assert share == 1.0 and [round(sum(g)) for _, g in labelled][:2] == [100, 50]


def test_the_hop_log_runs_only_when_asked_and_its_file_reads_back(tmp_path, monkeypatch):
    from aviary.common.transport import Transport

    class Core:
        name, role = "node-0", "node"

    monkeypatch.delenv(ENV, raising=False)
    assert type(make_runtime(Core(), Transport)) is Runtime
    monkeypatch.setenv(ENV, str(tmp_path))
    runtime = make_runtime(Core(), Transport)
    assert isinstance(runtime, HopLogRuntime)
    runtime.hops = [("in", "Probe", 3, "sched-0", 1.25), ("out", "GetTask", 3, "sched-0", 1.5)]
    runtime.write()
    assert read_hops(tmp_path) == {"node-0": runtime.hops}
