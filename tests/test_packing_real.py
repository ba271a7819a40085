"""Integration: a multi-resource DAG policy on real processes on loopback, against the simulator."""

from __future__ import annotations

import json

import pytest

from aviary.launch.cli import main

pytestmark = pytest.mark.integration

FLAGS = ["--workload", "tpch", "--tpch-mix", "50g", "--nodes", "6", "--jobs", "20", "--time-scale", "100",
         "--task-scale", "0.1", "--load", "0.8", "--seed", "0", "--quiet"]  # fmt: skip
"""One input size (the larger ones make each real run ~4x longer); fluid contention, the default."""


@pytest.mark.parametrize("policy", ["tetris", "carbyne", "graphene"])
def test_a_dag_policy_on_tpch_finishes_every_job_and_agrees_with_the_simulator(
    policy, tmp_path, no_leftover_children
):
    for runtime in ("real", "sim"):
        flags = [*FLAGS, "--policy", policy, "--runtime", runtime, "--out", str(tmp_path / runtime)]
        assert main(["replay", *flags]) == 0
    real, sim = (json.loads((tmp_path / r / "summary.json").read_text()) for r in ("real", "sim"))
    assert real["finished"] == real["jobs"] == 20 and real["unfinished"] == []
    assert real["tasks"] == sim["tasks"]
    counters = real["counters"]
    assert counters["tasks_finished"] == counters["tasks_placed"] == real["tasks"]
    assert counters.get("waited_for_room", 0) == 0  # the central's free vectors match the nodes'
    # Same workload, same cores: mean JCT and makespan within 15 % (real tasks end a little late, and
    # the 100x time scale makes the real runtime's per-task overhead visible).
    assert real["mean_jct"] == pytest.approx(sim["mean_jct"], rel=0.15)
    assert real["makespan"] == pytest.approx(sim["makespan"], rel=0.15)
    for r in ("cores", "mem", "disk", "net"):
        assert real["resource_utilization"][r] == pytest.approx(sim["resource_utilization"][r], rel=0.15)


GSHET = ["--workload", "gshet", "--policy", "tetrisched", "--nodes", "16", "--jobs", "12",
         "--time-scale", "50", "--seed", "0", "--quiet"]  # fmt: skip


def test_tetrisched_on_gshet_finishes_every_gang_and_reports_its_solver(tmp_path, no_leftover_children):
    """16 nodes in racks of 10 and 6 (the first GPU-labelled); the real run's plans come from real solves."""
    for runtime in ("real", "sim"):
        assert main(["replay", *GSHET, "--runtime", runtime, "--out", str(tmp_path / runtime)]) == 0
    real, sim = (json.loads((tmp_path / r / "summary.json").read_text()) for r in ("real", "sim"))
    assert real["finished"] == real["jobs"] == 12 and real["unfinished"] == []
    for s in (real, sim):
        solver = s["solver"]
        assert solver["launched"] == 12 and solver["solves"] >= 1
        assert solver["seconds_per_cycle"]["p50"] > 0 and solver["columns_per_cycle"]["max"] > 0
    assert real["counters"]["tasks_finished"] == real["counters"]["tasks_placed"] == real["tasks"]
    # Same jobs and cores; the real solves take wall time the simulator does not charge, so only within
    # two jobs' worth of the simulator's SLO attainment.
    assert (
        abs(real["slo_attainment"]["all"] - sim["slo_attainment"]["all"]) <= 2 / sim["slo_jobs"]["all"] + 1e-9
    )
