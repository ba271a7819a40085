"""A testbed in containers (launch/compose.py): the compose file, and a replay against it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from aviary.launch.compose import PROJECT_LABEL, compose_spec, down, node_image_context, up, write
from aviary.launch.registry import policy_cluster


def test_compose_file_has_a_host_network_service_per_process(tmp_path):
    cluster = policy_cluster("sparrow", nodes=5, slots=2, schedulers=2, executor="docker")
    path = write(tmp_path / "bed", cluster, cpus=0.5, memory=256 * 2**20)
    spec = json.loads(path.read_text())  # JSON: a YAML document too
    assert (tmp_path / "bed" / "cluster.toml").exists()
    members = [p for p in cluster.processes if p.role != "frontend"]
    assert sorted(spec["services"]) == sorted(p.name for p in members)
    for p in members:
        service = spec["services"][p.name]
        assert service["network_mode"] == "host" and service["pid"] == "host"
        assert service["command"][-2:] == [str((tmp_path / "bed" / "cluster.toml").resolve()), p.name]
        assert service["command"][0] == sys.executable
        assert service["cpus"] == 0.5 and service["mem_limit"] == 256 * 2**20
        mounts = {v.split(":")[0]: [*v.split(":"), "rw"][2] for v in service["volumes"]}
        assert mounts["/usr"] == "ro" and mounts[str((tmp_path / "bed").resolve())] == "rw"
        assert ("/var/run/docker.sock" in mounts) == (p.role == "node")  # the docker executor's engine
    timer = compose_spec(policy_cluster("sparrow", nodes=2, schedulers=1), tmp_path, "img")
    assert all(not any("docker.sock" in v for v in s["volumes"]) for s in timer["services"].values())
    assert node_image_context()[0] == node_image_context()[0]  # a content tag


@pytest.fixture
def engine() -> Any:
    try:
        from aviary.worker.dockertask import connect

        client = connect()
    except Exception as exc:
        reason = f"no docker engine ({type(exc).__name__}: {exc}); run scripts/setup-docker.sh as root"
        if os.environ.get("AVIARY_REQUIRE_DOCKER") == "1":
            pytest.fail(f"AVIARY_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)
    yield client
    client.close()


@pytest.mark.system
def test_replay_against_a_testbed_in_containers(engine, tmp_path: Path):
    from aviary.launch.cli import main

    bed = tmp_path / "bed"
    write(bed, policy_cluster("sparrow", nodes=3, slots=2, schedulers=1))
    try:
        names = up(bed, engine)
        assert len(names) == 4
        out = tmp_path / "run"
        flags = ["--jobs", "20", "--start", "6000", "--time-scale", "10000", "--load", "0.5", "--quiet"]
        assert main(["replay", "--connect", str(bed / "cluster.toml"), *flags, "--out", str(out)]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["jobs"] == summary["finished"] == 20
        assert summary["counters"]["tasks_finished"] == summary["tasks"]
    finally:
        removed = down(bed, engine)
    assert removed == 4
    assert engine.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}={bed.resolve()}"}) == []
