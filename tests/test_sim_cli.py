"""``aviary replay --runtime sim``: same results files, deterministic, large clusters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aviary.common.trace import read_trace
from aviary.launch.cli.main import main
from aviary.launch.flags.parser import BUNDLED_TRACE
from aviary.launch.policies.registry import POLICIES

FLAGS = [
    "--runtime",
    "sim",
    "--jobs",
    "400",
    "--start",
    "2000",
    "--nodes",
    "300",
    "--keep-arrivals",
    "--quiet",
]


def test_sim_replay_is_byte_identical_for_a_seed_and_differs_across_seeds(tmp_path):
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        assert main(["replay", *FLAGS, "--seed", seed, "--out", str(tmp_path / name)]) == 0
    a, b, c = ((tmp_path / n / "jobs.csv").read_bytes() for n in "abc")
    assert a == b
    assert a != c
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["runtime"] == "sim" and summary["finished"] == summary["jobs"] == 400
    assert summary["extra"]["time_scale"] == 1.0
    trace = read_trace(BUNDLED_TRACE)
    assert summary["tasks"] == sum(j.tasks for j in trace[2000:2400])  # no task-count scaling by default
    assert summary["counters"]["tasks_finished"] == summary["tasks"]
    assert summary["messages"]["Probe"] > 0 and summary["counters"]["probes"] > 0


def test_sim_accepts_twenty_thousand_nodes(tmp_path):
    args = ["replay", "--runtime", "sim", "--jobs", "50", "--nodes", "20000", "--keep-arrivals", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "big")]) == 0
    summary = json.loads((tmp_path / "big" / "summary.json").read_text())
    assert summary["nodes"] == 20000 and summary["finished"] == 50


GOLDEN = Path(__file__).parent / "golden"
"""Each slot-based policy's jobs.csv on the workload below, written before jobs became DAGs of stages
with resource demands: a flat job is a one-stage DAG, so none of these may change by a byte
(regenerate a file only for a deliberate change of that policy, and say so in the commit)."""


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_runs_on_the_simulator(tmp_path, policy):
    args = ["replay", "--runtime", "sim", "--policy", policy, "--jobs", "60", "--start", "6000",
            "--nodes", "40", "--slots", "2", "--load", "0.8", "--quiet", "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["policy"] == policy and summary["runtime"] == "sim"
    assert summary["finished"] == summary["jobs"] == 60 and summary["unfinished"] == []
    assert summary["counters"]["tasks_finished"] == summary["tasks"]
    golden = GOLDEN / f"{policy}.csv"
    if golden.exists():
        assert (tmp_path / "jobs.csv").read_bytes() == golden.read_bytes()


def test_dag_replay_flags_batch_and_capacity(tmp_path, capsys):
    base = ["replay", "--runtime", "sim", "--workload", "tpch", "--jobs", "12", "--nodes", "4", "--quiet"]
    assert main([*base, "--policy", "drf", "--batch", "--out", str(tmp_path / "b")]) == 0
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["extra"]["batch"] is True and summary["extra"]["load"] is None
    rows = (tmp_path / "b" / "jobs.csv").read_text().splitlines()[1:]
    assert {row.split(",")[3] for row in rows} == {"0.000000"}  # every job submitted at 0
    assert 0 < summary["utilization"] <= 1.0  # the busiest resource's
    # A machine too small for a drawn demand, and --batch with a slot-based policy: one line, status 2.
    assert main([*base, "--policy", "drf", "--capacity", "4,8,1,1", "--out", str(tmp_path / "c")]) == 2
    assert main(["replay", "--runtime", "sim", "--batch", "--jobs", "5", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "does not fit the machine" in err[0] and "--batch" in err[1]
