"""`aviary replay --connect`: the testbed's time scale, and one clear line when it cannot run."""

from __future__ import annotations

import socket
import time

import pytest

from aviary.common.cluster import write_cluster
from aviary.common.model import GOOGLE_CUTOFF
from aviary.launch.cli.main import main
from aviary.launch.flags.parser import build_parser
from aviary.launch.flags.spec import ReplaySpec
from aviary.launch.replay.connect import not_listening
from aviary.launch.replay.resolve import setup_replay
from aviary.launch.replay.resolve import testbed_cluster as cluster_from


def cluster_of(args):
    return cluster_from(ReplaySpec.from_args(args))


def spec_of(flags):
    return ReplaySpec.from_args(build_parser().parse_args(flags))


def up_cluster(tmp_path, policy: str, *flags: str):
    args = build_parser().parse_args(["up", "--policy", policy, "--nodes", "3", *flags])
    cluster = cluster_of(args)
    path = tmp_path / "cluster.toml"
    write_cluster(cluster, path)
    return cluster, path


def test_up_derives_the_cutoff_from_its_time_scale_and_replay_takes_it(tmp_path):
    cluster, path = up_cluster(tmp_path, "eagle", "--time-scale", "50000")
    assert cluster.params["time_scale"] == 50000
    assert cluster.params["cutoff"] == pytest.approx(GOOGLE_CUTOFF / 50000)
    setup = setup_replay(spec_of(["replay", "--connect", str(path), "--jobs", "5"]))
    assert setup.extra["time_scale"] == 50000


def test_a_replay_at_another_time_scale_than_the_testbeds_cutoff_is_refused_in_one_line(tmp_path, capsys):
    _, path = up_cluster(tmp_path, "eagle")
    flags = ["replay", "--connect", str(path), "--time-scale", "50000", "--out", str(tmp_path / "o")]
    assert main(flags) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{path}: field 'time_scale'" in err and "--time-scale 1000, not 50000" in err
    assert not (tmp_path / "o").exists()


def test_a_policy_without_time_parameters_replays_at_any_time_scale(tmp_path):
    _, path = up_cluster(tmp_path, "sparrow")
    flags = ["replay", "--connect", str(path), "--time-scale", "50000", "--jobs", "5"]
    assert setup_replay(spec_of(flags)).extra["time_scale"] == 50000


def test_a_frontend_address_held_by_another_process_gives_one_line(tmp_path, capsys):
    cluster, path = up_cluster(tmp_path, "sparrow")
    with socket.socket() as held:
        held.bind(("127.0.0.1", cluster.frontend.port))
        held.listen()
        assert main(["replay", "--connect", str(path), "--jobs", "5", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{path}: frontend: cannot listen on {cluster.frontend.address}" in err
    assert not (tmp_path / "o").exists()


def test_a_testbed_that_is_down_is_said_so_at_once(tmp_path, capsys):
    cluster, path = up_cluster(tmp_path, "sparrow")  # written, never started
    started = time.monotonic()
    assert main(["replay", "--connect", str(path), "--jobs", "5", "--out", str(tmp_path / "o")]) == 2
    assert time.monotonic() - started < 5  # not the registration wait (60 s)
    err = capsys.readouterr().err.strip()
    others = len(cluster.processes) - 2  # the frontend is the replay's own; one process is named
    first = next(p for p in cluster.processes if p.name != cluster.frontend.name)
    assert err == (
        f"aviary replay: error: {path}: no process of the testbed answers ({first.name} at "
        f"{first.host}:{first.port}: connection refused, and the {others} others): start it first "
        "(aviary up, aviary host)"
    )


def test_not_listening_names_the_addresses_that_refuse_and_passes_one_that_listens():
    with socket.socket() as live:
        live.bind(("127.0.0.1", 0))
        live.listen()
        with socket.socket() as dead:
            dead.bind(("127.0.0.1", 0))  # bound, not listening: refuses
            assert not_listening([live.getsockname(), dead.getsockname()]) == ["connection refused"]


def test_compose_write_fits_a_default_replay_to_its_duration_and_a_down_one_names_compose_up(
    tmp_path, capsys
):
    """A compose testbed's time scale is the one a default replay --connect needs to last --duration;
    one not started is said so with the command that starts it."""
    from aviary.launch.flags.spec import ReplaySpec
    from aviary.launch.replay.resolve import setup_replay

    bed = tmp_path / "bed"
    assert main(["compose", "write", str(bed), "--nodes", "10", "--duration", "30s"]) == 0
    setup = setup_replay(
        ReplaySpec(runtime="real", connect=bed / "cluster.toml", out=tmp_path / "o", force=True), quiet=True
    )
    assert setup.prediction is not None and 25 <= setup.prediction.wall <= 35
    assert f"(--time-scale {setup.extra['time_scale']:g})" in capsys.readouterr().out
    assert main(["replay", "--connect", str(bed / "cluster.toml"), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"start it first (aviary compose up {bed})")
