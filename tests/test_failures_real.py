"""Integration (issues 14, 26): real processes on loopback, killed with SIGKILL or stopped with SIGSTOP
mid-replay; every job still finishes (a central scheduler is restarted and rebuilds its state)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aviary.launch.cli.main import main

pytestmark = pytest.mark.integration

FLAGS = ["--jobs", "100", "--start", "6000", "--nodes", "10", "--duration", "6s", "--load", "0.8",
         "--seed", "3", "--quiet", "--yes"]  # fmt: skip


def summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize(
    ("policy", "victim"),
    [("sparrow", "sched-0"), ("eagle", "node-1"), pytest.param("kairos", "node-2", marks=pytest.mark.slow)],
)  # a Sparrow node killed alone or with its OS process: tests/test_packed_nodes.py; Kairos' requeue of a
# dead node's tasks: -m slow here (suite time), walked on the simulator in tests/test_failures.py
def test_every_job_finishes_when_a_process_is_killed(tmp_path, no_leftover_children, policy, victim):
    out = tmp_path / "run"
    flags = [*FLAGS, "--policy", policy, "--schedulers", "2", "--fail", f"{victim}@2s", "--out", str(out)]
    assert main(["replay", *flags]) == 0
    s = summary(out)
    c = s["counters"]
    assert s["finished"] == s["jobs"] == 100 and s["unfinished"] == []
    assert c["processes_declared_dead"] == 1 and s["extra"]["failures"] == [[victim, 2.0]]
    if not victim.startswith("sched"):  # (a dead scheduler's message counts die with it)
        assert s["messages"]["JobDone"] == 100  # each job completed once
    assert 0 < s["utilization"] <= 1
    assert any(f"process {victim} exited with code -9" in p for p in s["extra"]["problems"])


def test_a_dead_process_s_counters_are_kept_from_its_last_report(tmp_path, no_leftover_children):
    out = tmp_path / "run"
    flags = [*FLAGS, "--duration", "9s", "--fail", "node-4@6.5s", "--out", str(out)]
    assert main(["replay", *flags]) == 0
    s = summary(out)
    c = s["counters"]
    assert s["finished"] == 100 and c["processes_counted_from_last_report"] == 1
    assert 0 < s["utilization"] <= 1


# The FIFO's restart: -m slow (suite time); its rebuild is walked on the simulator (test_central_recovery).
@pytest.mark.parametrize("policy", [pytest.param("fifo", marks=pytest.mark.slow), "eagle"])
def test_a_killed_central_scheduler_is_restarted_and_rebuilds_its_state(
    tmp_path, no_leftover_children, policy
):
    """Issue 26: kill -9 of the central scheduler (FIFO's, and Eagle's LWL for long jobs) 3 s into a 6 s
    replay: the testbed starts it again, it rebuilds its jobs from the frontend and its tasks from the
    nodes, and every job finishes with every task run once (tests/test_central_recovery.py: every
    family, simulated)."""
    out = tmp_path / "run"
    flags = [*FLAGS, "--load", "0.9", "--policy", policy, "--fail", "central@3s"]
    assert main(["replay", *flags, "--out", str(out)]) == 0
    s = summary(out)
    c = s["counters"]
    assert s["finished"] == s["jobs"] == 100 and s["unfinished"] == []
    assert c["tasks_launched"] == c["tasks_finished"] == s["tasks"]  # none lost, none run twice
    assert c["central_restarts"] == c["recovered"] == 1 and c["jobs_recovered"] >= 1
    assert c.get("recovered_tasks_placed", 0) + c.get("recovered_tasks_finished", 0) > 0  # work kept
    assert "process central exited with code -9: restarted, it rebuilds its state" in s["extra"]["problems"]


@pytest.mark.parametrize(
    ("victim", "misses", "declared"),
    [
        # A lone node's SIGSTOP: the central's case below stops a lone process the same way, and
        # test_packed_nodes.py declares a stalled node dead, re-runs its tasks and sees it rejoin.
        pytest.param("node-3", 6, 1, marks=pytest.mark.slow),
        pytest.param("sched-0", 6, 1, marks=pytest.mark.slow),
        pytest.param("node-3", 40, 0, marks=pytest.mark.slow),  # the frontend's unit tests count misses
        ("central", 6, 1),
    ],
)
def test_a_process_stopped_longer_than_the_liveness_limit_is_declared_dead_and_rejoins(
    tmp_path, no_leftover_children, victim, misses, declared
):
    """``--fail VICTIM@1.5s+5s``: SIGSTOP 1.5 s into the replay, SIGCONT 5 s later. Missed heartbeats
    declare it dead (a node's tasks run elsewhere, a scheduler's jobs go to the other one), and it rejoins
    when it answers again; the replay goes on and every job finishes, the stopped process's late results
    ignored. With 40 heartbeats allowed (20 s) the stall is only waited out. A central scheduler (FIFO's)
    declared dead is waited for: its work stays where it is and it carries on when it answers again."""
    out = tmp_path / "run"
    flags = [*FLAGS, "--schedulers", "2", "--duration", "10s", "--liveness-misses", str(misses)]
    flags += ["--fail", f"{victim}@1.5s+5s"]
    if victim == "central":
        flags += ["--policy", "fifo"]
    assert main(["replay", *flags, "--out", str(out)]) == 0
    s = summary(out)
    c = s["counters"]
    assert s["finished"] == 100 and s["extra"]["liveness"] == [0.5, misses]
    assert c["processes_declared_dead"] == c["processes_rejoined"] == declared
    assert s["extra"]["failures"] == [[victim, 1.5, 5.0]]
    assert not any("exited" in p for p in s["extra"].get("problems", []))  # stopped, never killed


def test_each_replay_on_a_testbed_is_an_epoch_of_its_own(tmp_path):
    """A replay that stops early leaves a 3 s task running; the next replay on the same testbed submits
    a job with the same id: it must not be mistaken for the old one (its completion is its own), and
    the old work is killed and counted."""
    import uvloop

    from aviary.common.model import JobSpec
    from aviary.launch.drivers.local import LocalTestbed
    from aviary.launch.drivers.real import FrontendSession
    from aviary.launch.policies.registry import get_policy, policy_cluster

    cluster = policy_cluster("sparrow", nodes=2, slots=1, schedulers=1)
    route = get_policy("sparrow").route(cluster)

    async def replay(jobs: list[JobSpec], stop_once_running: bool):
        async with FrontendSession(cluster, jobs, route, dead=bed.dead) as s:
            await s.registered(10)
            await s.collect(shutdown=False)
            stopping = False
            run = asyncio.ensure_future(
                s.replay(stall_timeout=10, tick=0.02, stop=lambda: "test" if stopping else None)
            )
            while stop_once_running and not stopping and not run.done():  # stop once the 3 s task runs
                stopping = (await s.collect(shutdown=False))[1]["tasks_launched"] >= 1
            wall = await run
            _, counters = await s.collect(shutdown=False)
            return s.core, counters, wall

    import asyncio

    with LocalTestbed(cluster, tmp_path) as bed:
        first, _, _ = uvloop.run(replay([JobSpec(0, 0.0, [3.0], 3.0, False)], stop_once_running=True))
        assert first.unfinished() == [0]
        second, counters, _ = uvloop.run(
            replay([JobSpec(0, 0.0, [0.05], 0.05, False)], stop_once_running=False)
        )
    assert second.unfinished() == []
    t = second.times[0]
    assert t.finish - t.submit < 1.0  # its own 0.05 s task, not the old 3 s one finishing
    assert counters["epochs"] == 3  # the scheduler and both nodes started afresh
    assert counters["stale_tasks_killed"] == 1 and counters["duplicate_job"] == 0


def test_the_simulator_and_real_processes_agree_on_the_jobs_a_dead_scheduler_held(
    tmp_path, no_leftover_children
):
    """The same workload and failure on both drivers: the jobs resubmitted (those sched-0 had not
    finished when it died) are the same, give or take one at the boundary (real timing is not exact)."""
    common = ["--jobs", "100", "--start", "6000", "--nodes", "10", "--schedulers", "2", "--load", "0.8",
              "--seed", "3", "--quiet", "--yes", "--fail", "sched-0@2s"]  # fmt: skip
    assert (
        main(["replay", "--runtime", "sim", "--time-scale", "15900", *common, "--out", str(tmp_path / "s")])
        == 0
    )
    assert main(["replay", "--time-scale", "15900", *common, "--out", str(tmp_path / "r")]) == 0
    sim, real = (summary(tmp_path / d)["extra"] for d in ("s", "r"))
    assert set(sim["declared_dead"]) == set(real["declared_dead"]) == {"sched-0"}
    assert sim["resubmitted"] and len(set(sim["resubmitted"]) ^ set(real["resubmitted"])) <= 1
