"""Integration: real processes on loopback replay scaled Google jobs; results files agree."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter

import pytest
from helpers import dropped

from aviary.common.results import jct_stats, jobs_rows
from aviary.common.trace import read_trace
from aviary.common.workload import build_workload
from aviary.launch.cli.main import main
from aviary.launch.flags.parser import BUNDLED_TRACE

pytestmark = pytest.mark.integration

FLAGS = ["--jobs", "200", "--start", "6000", "--nodes", "10", "--schedulers", "2", "--time-scale", "40000",
         "--load", "0.9", "--seed", "3", "--quiet"]  # fmt: skip


def test_real_replay_of_200_google_jobs_finishes_every_job(tmp_path, no_leftover_children):
    out = tmp_path / "run"
    assert main(["replay", *FLAGS, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = jobs_rows(out / "jobs.csv")

    assert summary["runtime"] == "real" and summary["policy"] == "sparrow"
    assert summary["jobs"] == summary["finished"] == len(rows) == 200
    assert summary["unfinished"] == []

    # Each job's completion time is at least its longest task (the workload is rebuilt independently).
    trace = read_trace(BUNDLED_TRACE)
    factor = summary["extra"]["task_scale"]  # the default 10/10000, raised: no task outlasts the arrivals
    assert factor == 0.1
    jobs = build_workload(
        trace, jobs=200, start=6000, time_scale=40000, task_scale=factor, nodes=10, load=0.9, seed=3
    )
    longest = {j.job_id: max(j.durations) for j in jobs}
    for row in rows:
        assert float(row["jct"]) >= longest[int(row["job_id"])] - 1e-6, row
        assert float(row["submit"]) <= float(row["first_start"]) <= float(row["finish"])
        assert math.isclose(float(row["jct"]), float(row["finish"]) - float(row["submit"]), abs_tol=2e-6)

    # summary.json agrees with jobs.csv.
    for cls in ("short", "long"):
        jcts = [float(r["jct"]) for r in rows if r["class"] == cls]
        stats = jct_stats(jcts)
        assert summary["jct"][cls]["count"] == len(jcts)
        for key in ("p50", "p90", "p99"):
            assert summary["jct"][cls][key] == pytest.approx(stats[key], abs=3e-6)
    assert summary["tasks"] == sum(int(r["tasks"]) for r in rows)

    # Every task ran once; Sparrow sent d=2 probes per task and each job got one JobDone.
    counters, messages = summary["counters"], summary["messages"]
    assert dropped(counters) == {}  # every message from a role that may send it
    assert counters["tasks_finished"] == counters["tasks_launched"] == summary["tasks"]
    assert counters["probes"] == 2 * 2 * summary["tasks"]  # counted by schedulers and by nodes
    assert messages["AssignTask"] == summary["tasks"]
    assert messages["JobDone"] == messages["SubmitJob"] == 200
    assert 0 < summary["utilization"] <= 1

    # The task table: each task once, from the nodes' batches, their clocks mapped to the frontend's.
    tasks = list(csv.DictReader((out / "tasks.csv").open()))
    assert len(tasks) == summary["tasks"] and "TaskRecords" not in messages  # bookkeeping, not traffic
    assert set(Counter((r["job_id"], r["task"]) for r in tasks).values()) == {1}
    by_job = {row["job_id"]: row for row in rows}
    for r in tasks:
        job = by_job[r["job_id"]]
        assert r["outcome"] == "finished" and r["attempt"] == "1" and r["node"].startswith("node-")
        assert (
            float(job["submit"])
            == float(r["submit_replay_s"])
            <= float(r["placed_replay_s"])
            <= float(r["start_replay_s"])
        ), r
        assert float(r["start_replay_s"]) <= float(r["finish_replay_s"]) <= float(job["finish"]), r


def test_replay_with_the_process_executor_runs_real_children(tmp_path, no_leftover_children):
    out = tmp_path / "proc"
    flags = ["--jobs", "30", "--start", "6000", "--nodes", "4", "--slots", "2", "--schedulers", "1",
             "--time-scale", "200000", "--load", "0.7", "--executor", "process", "--quiet"]  # fmt: skip
    assert main(["replay", *flags, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == 30 and summary["extra"]["executor"] == "process"
    assert summary["counters"]["tasks_finished"] == summary["tasks"]


def test_replay_connects_to_a_testbed_started_by_up(tmp_path, no_leftover_children):
    import signal
    import subprocess
    import sys

    bed = tmp_path / "bed"
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aviary.launch.cli",
            "up",
            "--nodes",
            "4",
            "--schedulers",
            "2",
            "--dir",
            str(bed),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert up.stdout is not None
        for line in up.stdout:
            if "processes registered" in line:
                break
        flags = ["--jobs", "50", "--start", "6000", "--time-scale", "100000", "--load", "0.5", "--quiet"]
        for i in range(2):  # the testbed outlives a replay and serves the next one
            out = tmp_path / f"run{i}"
            assert main(["replay", "--connect", str(bed / "cluster.toml"), *flags, "--out", str(out)]) == 0
            summary = json.loads((out / "summary.json").read_text())
            assert summary["finished"] == 50 and summary["nodes"] == 4
            assert summary["messages"]["SubmitJob"] == 50  # this replay's messages only
        assert up.poll() is None
    finally:
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=30)
    assert up.returncode == 0
