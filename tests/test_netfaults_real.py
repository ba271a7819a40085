"""Integration (issue 50): faults of the network on real processes over loopback, injected by each
process's link layer (common/linklayer.py, above either transport): every job finishes and every task is
counted once.

The simulator runs every family under every fault (tests/test_netfaults.py, the conformance kit's
``network-fault`` check in tests/test_fuzz_cores.py); here a representative few, seconds each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aviary.launch.cli.main import main

pytestmark = pytest.mark.integration

FLAGS = ["--jobs", "100", "--start", "6000", "--nodes", "10", "--duration", "6s", "--load", "0.8",
         "--seed", "3", "--quiet", "--yes"]  # fmt: skip


def replay(out: Path, *flags: str) -> dict[str, Any]:
    assert main(["replay", *FLAGS, *flags, "--out", str(out)]) == 0
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize(
    ("policy", "fault", "counted"),
    [
        ("sparrow", "*>*:drop=5%", "retransmitted"),  # over the tcp transport (the others: ZeroMQ)
        # Duplicates, reordering and delays: walked over an in-memory wire in tests/test_linklayer.py.
        pytest.param("eagle", "*>*:dup=5%,*>*:reorder=5%", "duplicates", marks=pytest.mark.slow),
        pytest.param("hawk", "*>*:delay=100ms..2s/10%", "held", marks=pytest.mark.slow),
        pytest.param("kairos", "{node}<>{central}:drop=5%", "retransmitted", marks=pytest.mark.slow),
        pytest.param("fifo", "node-[0-2]<>{central}:cut@2s+3s", "retransmitted", marks=pytest.mark.slow),
    ],
)
def test_every_job_finishes_and_every_task_counts_once_under_faults_of_the_network(
    tmp_path, no_leftover_children, policy, fault, counted
):
    transport = ["--transport", "tcp"] if policy == "sparrow" else []
    s = replay(tmp_path / "run", "--policy", policy, "--fail", fault, *transport)
    c = s["counters"]
    assert s["finished"] == s["jobs"] == 100 and s["unfinished"] == []
    assert c["tasks_launched"] == c["tasks_finished"] == s["tasks"]  # none lost, none run twice
    assert s["messages"]["JobDone"] == 100  # each job completed once
    assert s["extra"]["links"][counted] > 0 and s["extra"]["links"]["segments"] > 0
    assert c["processes_declared_dead"] == 0


def test_a_restarted_central_scheduler_starts_new_sessions_and_its_dead_incarnation_is_fenced(
    tmp_path, no_leftover_children
):
    """Kill -9 of FIFO's central scheduler under 2 % loss: the testbed restarts it (a new incarnation),
    the frontend tells it the replay's faults again, the nodes and the frontend renumber what it had not
    acknowledged, and it rebuilds its state: every job finishes, every task run once."""
    s = replay(tmp_path / "run", "--policy", "fifo", "--load", "0.9", "--fail", "central@3s,*>*:drop=2%")
    c = s["counters"]
    assert s["finished"] == s["jobs"] == 100
    assert c["tasks_launched"] == c["tasks_finished"] == s["tasks"]
    assert c["central_restarts"] == c["recovered"] == 1
    assert s["extra"]["links"]["peer_restarts"] >= 1


def test_a_cut_between_the_central_scheduler_and_the_frontend_is_silence_waited_out(
    tmp_path, no_leftover_children
):
    """A 5 s cut of FIFO's central scheduler from the frontend, longer than the liveness limit (3 s): the
    frontend declares it dead while it goes on with the nodes behind the cut, waits for it (it is not
    restarted: it did not exit), and it rejoins when the cut heals; its JobDones, held by the link, come
    then. Every job finishes once."""
    cut = "central<>frontend:cut@2s+5s"
    s = replay(tmp_path / "run", "--policy", "fifo", "--duration", "8s", "--fail", cut)
    c = s["counters"]
    assert s["finished"] == s["jobs"] == 100
    assert c["processes_declared_dead"] == c["processes_rejoined"] == 1
    assert s["messages"]["JobDone"] == 100
