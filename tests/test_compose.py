"""A testbed in containers (launch/drivers/compose.py, ``aviary compose``): the compose file, the commands,
and replays against containers started by the real docker-compose and by the docker SDK.

The system tests need a docker engine and docker-compose (scripts/setup-docker.sh installs both and
starts the engine; CI runs it). Without them they skip, saying why, unless AVIARY_REQUIRE_DOCKER=1
(set by .ci/run), which makes them fail instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aviary.launch.cli.main import main
from aviary.launch.drivers.compose import (
    COMPOSE_FILE,
    PROJECT_LABEL,
    compose_env,
    compose_spec,
    compose_tool,
    down,
    node_image_context,
    project_name,
    up,
    write,
)
from aviary.launch.policies.registry import policy_cluster


def _unavailable(reason: str) -> None:
    if os.environ.get("AVIARY_REQUIRE_DOCKER") == "1":
        pytest.fail(f"AVIARY_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


def test_compose_file_has_a_host_network_service_per_process(tmp_path):
    cluster = policy_cluster("sparrow", nodes=5, slots=2, schedulers=2, executor="docker")
    path = write(tmp_path / "bed", cluster, cpus=0.5, memory=256 * 2**20)
    spec = json.loads(path.read_text())  # JSON: a YAML document too
    bed = (tmp_path / "bed").resolve()
    assert (bed / "cluster.toml").exists()
    assert set(spec) == {"services"}  # no version, no name: the Compose Specification as 1.29 reads it
    settings = dict(line.split("=", 1) for line in (bed / ".env").read_text().splitlines())
    assert settings["COMPOSE_PROJECT_NAME"] == project_name(bed)
    assert settings["COMPOSE_PARALLEL_LIMIT"] == "64"  # >= 2 x services: docker-compose 1.x's deadlock
    assert compose_env(bed, 102)["COMPOSE_PARALLEL_LIMIT"] == "204"
    assert (bed / "node-image" / "Dockerfile").exists() and (bed / "node-image/rootfs/bin").is_symlink()
    members = [p for p in cluster.processes if p.role != "frontend"]
    assert sorted(spec["services"]) == sorted(p.name for p in members)
    for p in members:
        service = spec["services"][p.name]
        assert service["network_mode"] == "host" and service["pid"] == "host"
        assert service["image"] == node_image_context()[0] and service["pull_policy"] == "never"
        assert service["build"] == {"context": "node-image"}
        assert service["command"][-2:] == [str(bed / "cluster.toml"), p.name]
        assert service["command"][0] == sys.executable
        assert service["cpus"] == 0.5 and service["mem_limit"] == 256 * 2**20
        mounts = {v.split(":")[0]: [*v.split(":"), "rw"][2] for v in service["volumes"]}
        assert mounts["/usr"] == "ro" and mounts[str(bed)] == "rw"
        assert ("/var/run/docker.sock" in mounts) == (p.role == "node")  # the docker executor's engine
    timer = compose_spec(policy_cluster("sparrow", nodes=2, schedulers=1), tmp_path, "img")
    assert all(not any("docker.sock" in v for v in s["volumes"]) for s in timer["services"].values())
    # A content tag: the same context gives the same tag (the tar is reproducible), named by its hash.
    (tag, data), (again, same) = node_image_context(), node_image_context()
    assert (tag, data) == (again, same)
    assert tag.endswith(":" + hashlib.sha256(data).hexdigest()[:16])


def test_docker_compose_accepts_the_file_unchanged(tmp_path):
    tool = compose_tool()
    if tool is None:
        _unavailable("docker-compose is not installed; run scripts/setup-docker.sh as root")
    assert tool is not None
    path = write(tmp_path / "bed", policy_cluster("eagle", nodes=3, schedulers=2), memory=2**30)
    done = subprocess.run([*tool, "config"], cwd=path.parent, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr  # validated against its schema
    assert "node-2:" in done.stdout and "network_mode: host" in done.stdout


def test_compose_command_line(tmp_path, capsys):
    bed = tmp_path / "bed"
    flags = ["--nodes", "3", "--schedulers", "1", "--policy", "hawk", "--memory", "512m"]
    assert main(["compose", "write", str(bed), *flags]) == 0
    spec = json.loads((bed / COMPOSE_FILE).read_text())
    assert {s["mem_limit"] for s in spec["services"].values()} == {512 * 2**20}
    assert 'policy = "hawk"' in (bed / "cluster.toml").read_text()
    capsys.readouterr()
    for argv, said in (
        (["compose"], "required: ACTION"),
        (["compose", "write"], "required: dir"),
        (["compose", "write", str(bed), "--memory", "lots"], "not a memory size"),
        (["compose", "write", str(bed), "--nodes", "0"], "--nodes"),
        (["compose", "up", str(tmp_path / "none")], "no such file"),
    ):
        assert _status(argv) == 2, argv
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, (argv, err)


def _status(argv: list[str]) -> int | str | None:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's errors
        return exc.code


@pytest.fixture
def engine() -> Any:
    try:
        from aviary.worker.dockertask import connect

        client = connect()
    except Exception as exc:
        _unavailable(f"no docker engine ({type(exc).__name__}: {exc}); run scripts/setup-docker.sh as root")
    yield client
    client.close()


@pytest.fixture
def compose(engine: Any) -> list[str]:
    """The docker-compose command (the engine must answer too)."""
    tool = compose_tool()
    if tool is None:
        _unavailable("docker-compose is not installed; run scripts/setup-docker.sh as root")
    assert tool is not None
    return tool


def _left(engine: Any, bed: Path) -> list[Any]:
    return list(engine.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}={bed.resolve()}"}))


REPLAY = ["--jobs", "20", "--start", "6000", "--time-scale", "10000", "--load", "0.5", "--quiet"]


README = Path(__file__).resolve().parent.parent / "README.md"


def readme_recipe(bed: Path, out: Path, nodes: int) -> list[list[str]]:
    """README's compose recipe, its commands in order, for ``nodes`` nodes in ``bed`` (as written: 100)."""
    lines = [
        line.split("#")[0] for line in README.read_text().splitlines() if line.startswith("aviary compose")
    ]
    lines.insert(
        1,
        next(line.split("#")[0] for line in README.read_text().splitlines() if "--connect /tmp/c100" in line),
    )
    commands = [part.split() for line in lines for part in line.split("&&")]
    assert [c[:3] for c in commands] == [
        ["aviary", "compose", "write"], ["aviary", "compose", "up"], ["aviary", "replay", "--connect"],
        ["aviary", "compose", "down"],
    ], commands  # fmt: skip
    text = {
        "/tmp/c100/cluster.toml": str(bed / "cluster.toml"),
        "/tmp/c100": str(bed),
        "results/c100": str(out),
    }
    return [[text.get(w, str(nodes) if w == "100" else w) for w in c[1:]] for c in commands]


@pytest.mark.system
def test_the_readme_compose_recipe_works_as_written_at_10_nodes(
    compose, engine, tmp_path: Path, capsys, monkeypatch
):
    """write (its time scale fitted to a 30 s replay), up, replay --connect with the replay's defaults
    (300 jobs: not refused, about 30 s), down: nothing left."""
    # docker-compose 1.x deadlocks when it creates as many services at once as its parallel limit;
    # 'aviary compose up' raises a limit too low (here it would hang for sure)
    monkeypatch.setenv("COMPOSE_PARALLEL_LIMIT", "4")
    bed, out = tmp_path / "bed", tmp_path / "run"
    write_, up_, replay_, down_ = readme_recipe(bed, out, nodes=10)
    assert main(write_) == 0
    try:
        assert main(up_) == 0
        said = capsys.readouterr().out
        assert "started 12 containers with docker-compose" in said or "docker compose" in said, said
        names = {c.name for c in _left(engine, bed)}  # docker-compose's names: PROJECT_SERVICE_1 (v2: -)
        assert len(names) == 12 and all(n.startswith(project_name(bed)) for n in names), names
        assert main([*replay_, "--quiet"]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["jobs"] == summary["finished"] == 300
        assert summary["counters"]["tasks_finished"] == summary["tasks"]
        assert 15 < summary["wall_seconds"] < 60  # the 30 s compose write fitted
    finally:
        assert main(down_) == 0
    assert "removed 12 containers" in capsys.readouterr().out
    assert _left(engine, bed) == []
    ps = subprocess.run([*compose, "ps", "-q"], cwd=bed, capture_output=True, text=True, check=False)
    assert ps.returncode == 0 and ps.stdout.strip() == ""  # docker-compose sees none of its own either


@pytest.mark.system
def test_replay_against_containers_of_the_sdk(engine, tmp_path: Path):
    """The fallback where docker-compose is not installed: the docker SDK reads the same file. Here with
    the nodes packed two to a container (``--nodes-per-process 2``): 3 nodes in 2 containers."""
    bed = tmp_path / "bed"
    cluster = policy_cluster("sparrow", nodes=3, slots=2, schedulers=1)
    cluster.nodes_per_process = 2
    write(bed, cluster)
    assert sorted(json.loads((bed / "docker-compose.yml").read_text())["services"]) == [
        "pack-0",
        "pack-1",
        "sched-0",
    ]
    try:
        started = up(bed, engine, sdk=True)
        assert started.failed == [] and len(started.running) == 3 and started.via == "the docker SDK"
        out = tmp_path / "run"
        assert main(["replay", "--connect", str(bed / "cluster.toml"), *REPLAY, "--out", str(out)]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["jobs"] == summary["finished"] == 20
    finally:
        removed = down(bed, engine, tool=None)
    assert removed == 3
    assert _left(engine, bed) == []


@pytest.mark.system
@pytest.mark.parametrize("sdk", [False, True], ids=["docker-compose", "sdk"])
def test_containers_that_exit_at_start_are_reported(engine, tmp_path: Path, capsys, request, sdk: bool):
    if not sdk:
        request.getfixturevalue("compose")
    bed = tmp_path / "bed"
    path = write(bed, policy_cluster("sparrow", nodes=3, schedulers=1))
    spec = json.loads(path.read_text())
    spec["services"]["node-0"]["mem_limit"] = 8 * 2**20  # too little for Python: killed at its start
    spec["services"]["node-1"]["command"][-1] = "nosuch"  # a bad parameter: the process exits, status 2
    path.write_text(json.dumps(spec))
    try:
        assert main(["compose", "up", str(bed), *(["--sdk"] if sdk else [])]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 3, err  # one line each, then the count
        oom, bad, total = err
        assert oom.startswith("aviary compose up: node-0: container ") and "exited at its start" in oom
        assert "lack of memory" in oom or "MemoryError" in oom, oom
        assert "node-1: container " in bad and "exited at its start with code 2: " in bad
        assert bad.endswith(
            "aviary: nosuch: no process named 'nosuch' in the cluster (nor a pack of nodes)"
        ), bad
        assert "2 of 4 containers did not start" in total
        states = {c.labels["aviary.process"]: c.status for c in _left(engine, bed)}
        assert states == {"node-0": "exited", "node-1": "exited", "node-2": "running", "sched-0": "running"}
    finally:
        assert down(bed, engine) == 4
    assert _left(engine, bed) == []


def _plugin_outside(tmp_path: Path, name: str) -> tuple[Path, str]:
    """A plug-in package installed (not editable) into a folder outside every path a container mounts
    by default, importable here from there; its source ``module:POLICY``."""
    from aviary.launch.cli.plugins import new_policy, package_name

    new_policy(name, "distributed", tmp_path)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target"]
    subprocess.run([*pip, str(site), str(tmp_path / name)], check=True, capture_output=True)
    return site, f"{package_name(name)}:POLICY"


def test_a_plugin_installed_outside_the_mounted_paths_is_mounted_and_on_the_path(tmp_path, monkeypatch):
    site, source = _plugin_outside(tmp_path, "outside-spec")
    monkeypatch.syspath_prepend(str(site))
    spec = compose_spec(policy_cluster(source, nodes=2, schedulers=1), tmp_path / "bed", "img")
    for service in spec["services"].values():
        assert f"{site}:{site}:ro" in service["volumes"]
        assert service["environment"]["PYTHONPATH"] == str(site)
    builtin = compose_spec(policy_cluster("sparrow", nodes=2, schedulers=1), tmp_path / "bed", "img")
    assert all("PYTHONPATH" not in s["environment"] for s in builtin["services"].values())


@pytest.mark.system
@pytest.mark.parametrize("where", ["outside", "example"])
def test_replay_of_a_plugin_in_containers(engine, tmp_path: Path, monkeypatch, where: str):
    """A plug-in installed (not editable) outside every path a container mounts by default, and the
    example p2c (installed editable by scripts/setup.sh, its folder inside the mounted source)."""
    name, source = "p2c", "p2c"
    if where == "outside":
        site, source = _plugin_outside(tmp_path, "outside-run")
        monkeypatch.syspath_prepend(str(site))
        name = "outside-run"
    bed = tmp_path / "bed"
    write(bed, policy_cluster(source, nodes=3, slots=2, schedulers=1))
    try:
        started = up(bed, engine, sdk=True)
        assert started.failed == [] and len(started.running) == 4
        out = tmp_path / "run"
        assert main(["replay", "--connect", str(bed / "cluster.toml"), *REPLAY, "--out", str(out)]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["policy"] == name and summary["jobs"] == summary["finished"] == 20
    finally:
        down(bed, engine, tool=None)
