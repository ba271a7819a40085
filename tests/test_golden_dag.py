"""The DAG policies with node contention off and the accounting of their code before it reproduce that
code's runs byte for byte (issue 24: ``--contention off`` is the model before contention)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aviary.launch.cli.main import main

GOLDEN_DAG = Path(__file__).parent / "golden" / "dag"
"""jobs.csv of the DAG policies at 6d7865e, before contention and YARN-like accounting: 40 jobs on 10
nodes at load 0.9, seed 1 (TPC-H at its single 50 GB profile)."""
CONTROL = {"cs": ["--account", "all"], "cp": ["--account", "all"], "drf": ["--account", "all"],
           "sjf": ["--account", "all"], "tetris": [], "graphene": ["--overbook", "1"]}  # fmt: skip


@pytest.mark.parametrize("policy", sorted(CONTROL))
# TPC-H's cases: -m slow (suite time); the Alibaba ones pin every policy.
@pytest.mark.parametrize("workload", ["alibaba", pytest.param("tpch", marks=pytest.mark.slow)])
def test_contention_off_and_todays_accounting_reproduce_the_runs_before_them(tmp_path, policy, workload):
    extra = ["--tpch-mix", "50g"] if workload == "tpch" else []
    args = ["replay", "--runtime", "sim", "--workload", workload, "--policy", policy, "--jobs", "40",
            "--nodes", "10", "--load", "0.9", "--seed", "1", "--quiet", "--contention", "off",
            *CONTROL[policy], *extra, "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    assert (tmp_path / "jobs.csv").read_bytes() == (GOLDEN_DAG / f"{policy}-{workload}.csv").read_bytes()
