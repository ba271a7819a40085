"""Integration: the Hawk/Eagle family on real processes (loopback), against the simulator's run.

80 consecutive jobs of the bundled Google sample from the 6,000th (short and long jobs mixed), on 12
single-slot node monitors (2 in the short partition), 2 distributed schedulers and the central
scheduler. Every job must finish, each class must go where the policy sends it, and the counters the
thesis' Table 3.2 names must be there, with the same meaning as in the simulator.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import dropped

from aviary.common.results import jobs_rows
from aviary.launch.cli.main import main

pytestmark = pytest.mark.integration

FLAGS = ["--nodes", "12", "--schedulers", "2", "--jobs", "80", "--start", "6000", "--time-scale", "50000",
         "--task-scale", "0.0012", "--load", "0.8", "--seed", "1", "--quiet"]  # fmt: skip


def replay(tmp_path: Path, policy: str, runtime: str) -> tuple[dict, list[dict]]:
    out = tmp_path / f"{policy}-{runtime}"
    assert main(["replay", "--runtime", runtime, "--policy", policy, *FLAGS, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    return summary, jobs_rows(out / "jobs.csv")


# LWL's and DLWL's: -m slow (suite time); Hawk's and Eagle's runs place their long jobs with the same LWL.
@pytest.mark.parametrize(
    "policy", ["hawk", "eagle", *(pytest.param(p, marks=pytest.mark.slow) for p in ("lwl", "dlwl"))]
)
def test_hybrid_policy_finishes_every_job_on_real_processes(tmp_path, policy, no_leftover_children):
    real, rows = replay(tmp_path, policy, "real")
    sim, _ = replay(tmp_path, policy, "sim")
    assert real["runtime"] == "real" and real["policy"] == policy
    assert real["finished"] == real["jobs"] == len(rows) == 80 and real["unfinished"] == []
    c, s = real["counters"], sim["counters"]
    assert dropped(c) == {}  # every message from a role that may send it
    assert c["tasks_finished"] == real["tasks"] == sim["tasks"]
    for row in rows:
        assert float(row["jct"]) > 0 and float(row["finish"]) >= float(row["submit"])
    if policy in ("hawk", "eagle"):
        # Long jobs go to the central scheduler, short ones are probed: same split as simulated.
        assert c["jobs_central"] == s["jobs_central"] > 0
        assert c["probes"] > 0 and c["long_tasks_placed"] == s["long_tasks_placed"]
    if policy == "eagle":
        assert c.get("short_ran_behind_long", 0) == 0  # SSS: no short task waits behind long work
        # A ProbeRejected message carries every probe of the job the node refuses at once.
        assert 0 < real["messages"]["ProbeRejected"] <= c["probes_rejected"]
    if policy == "hawk":
        assert c["steal_requests"] > 0
