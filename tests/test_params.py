"""Policy parameters declared once (DESIGN §9): every declared parameter has its flag, its default in the
help, reaches the cluster description as declared, and a cluster file holding anything else is refused."""

from __future__ import annotations

import argparse

import pytest

from aviary.common.cluster import ClusterError, write_cluster
from aviary.common.params import Param, resolve
from aviary.launch.cli.main import main
from aviary.launch.flags.parser import build_parser
from aviary.launch.flags.spec import ReplaySpec
from aviary.launch.policies.registry import POLICIES, check_params, policy_cluster
from aviary.launch.replay.resolve import testbed_cluster as cluster_from

DECLARED = [(pol.name, p) for pol in POLICIES.values() for p in pol.params]


def sub_parser(command: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def shown(value: object) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


@pytest.mark.parametrize("command", ["up", "cluster", "replay"])
def test_every_declared_parameter_has_a_flag_with_its_default_in_the_help(command, capsys):
    actions = {flag: a for a in sub_parser(command)._actions for flag in a.option_strings}
    for policy, p in DECLARED:
        action = actions.get(p.flag)
        assert action is not None, f"{policy}: {p.name} has no flag {p.flag} on aviary {command}"
        assert action.dest == p.dest and action.default is None  # None: not given, the policy's default
        assert p.help in action.help
        if p.default is None:
            assert "default" in p.help, f"{p.name}: an optional parameter's help says what it defaults to"
        else:
            assert shown(p.default) in action.help.rsplit("(default", 1)[1], (policy, p.name, action.help)
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for _, p in DECLARED:
        assert p.flag in text


def test_same_named_parameters_agree_on_everything_but_their_default():
    first: dict[str, Param] = {}
    for _, p in DECLARED:
        q = first.setdefault(p.name, p)
        assert (p.flag, p.kind, p.scales, p.scales_given, p.cluster, p.choices) == (
            q.flag,
            q.kind,
            q.scales,
            q.scales_given,
            q.cluster,
            q.choices,
        )


def other_value(p: Param) -> object:
    """A valid value of ``p`` other than its default."""
    if p.choices:
        return next(c for c in p.choices if c != p.default)
    if p.default is None:
        return 0.25
    value = p.default + 1 if p.high is None or p.default + 1 < p.high else (p.default + (p.low or 0)) / 2
    return p.kind(value)


@pytest.mark.parametrize("policy", sorted(pol.name for pol in POLICIES.values() if pol.params))
def test_each_flag_reaches_the_cluster_as_its_declaration_says(policy):
    declared = POLICIES[policy].params
    scale = 40.0
    flags = ["up", "--policy", policy, "--nodes", "20", "--time-scale", str(scale)]
    given = {p.name: other_value(p) for p in declared}
    for p in declared:
        flags += [p.flag, str(given[p.name])]
    cluster = cluster_from(ReplaySpec.from_args(build_parser().parse_args(flags)))
    held = {p.name for p in declared if p.cluster}
    assert set(cluster.params) == {"time_scale", *held}
    assert cluster.params["time_scale"] == scale
    for p in declared:
        value = p.check(given[p.name])
        expected = value / scale if p.scales and p.scales_given else value
        if p.cluster:
            assert cluster.params[p.name] == pytest.approx(expected), p.name
        else:  # the short partition: a percent of the nodes, labelled in the cluster description
            short = sum(n.partition == "short" for n in cluster.nodes)
            assert short == round(20 * value / 100)
    # Not given: each default, durations divided by the time scale (the quantum, 10,000 trace seconds).
    defaults = cluster_from(ReplaySpec(policy=policy, nodes=20, time_scale=scale)).params
    assert defaults == {
        "time_scale": scale,
        **resolve([p for p in declared if p.cluster], {}, time_scale=scale),
    }


def test_a_cluster_parameter_no_policy_declares_is_refused_in_one_line():
    for policy in POLICIES:
        cluster = policy_cluster(policy, nodes=2, bind_ports=False, params={"time_scale": 1.0, "bogus": 3})
        with pytest.raises(ClusterError) as err:
            check_params(cluster, "c.toml")
        assert str(err.value) == (
            f"c.toml: [cluster.params]: field 'bogus': policy {policy!r} has no such parameter"
        )
    # Another policy's parameter, or the short partition (node labels, not a parameter): refused too.
    for policy, key in (("eagle", "quantum"), ("kairos", "cutoff"), ("sparrow", "short_partition")):
        cluster = policy_cluster(policy, nodes=2, bind_ports=False, params={key: 1.0})
        with pytest.raises(ClusterError, match=f"field '{key}': policy '{policy}' has no such parameter"):
            check_params(cluster, "c.toml")
    # A bad value of a declared one: one line naming the field.
    cluster = policy_cluster("kairos", nodes=2, bind_ports=False, params={"quantum": 0})
    with pytest.raises(ClusterError) as err:
        check_params(cluster, "c.toml")
    assert str(err.value) == "c.toml: [cluster.params]: field 'quantum': quantum must be > 0, got 0.0"
    # Every cluster file written before the declarations held probe_ratio: still accepted.
    check_params(policy_cluster("fifo", nodes=2, bind_ports=False, params={"probe_ratio": 2.0}), "c.toml")


def test_replay_connect_to_a_cluster_file_with_an_unknown_parameter_is_one_line(tmp_path, capsys):
    cluster = policy_cluster("hawk", nodes=2, params={"time_scale": 1000.0, "cutof": 1.0})
    write_cluster(cluster, tmp_path / "cluster.toml")
    assert main(["replay", "--connect", str(tmp_path / "cluster.toml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    line = 1 + (tmp_path / "cluster.toml").read_text().splitlines().index("cutof = 1.0")
    assert err == (
        f"aviary replay: error: {tmp_path / 'cluster.toml'}:{line}: [cluster.params]: field 'cutof': "
        "policy 'hawk' has no such parameter"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy", "hawk", "--steal-attempts", "-1"], "argument --steal-attempts: must be >= 0, got -1"),
        (
            ["--policy", "eagle", "--update-ratio", "1"],
            "argument --update-ratio: must be >= 0 and < 1, got 1.0",
        ),
        (["--policy", "sparrow", "--probe-ratio", "0.5"], "argument --probe-ratio: must be >= 1, got 0.5"),
        (
            ["--policy", "eagle", "--short-partition", "100"],
            "argument --short-partition: must be >= 0 and < 100",
        ),
        (["--policy", "kairos", "--quantum", "0"], "argument --quantum: must be > 0, got 0.0"),
        (["--policy", "kairos", "--kairos-q", "2.5"], "argument --kairos-q: invalid int value: '2.5'"),
        (["--policy", "sparrow", "--fair-fraction", "0.5"], "--fair-fraction: policy 'sparrow' has no such"),
        (["--policy", "tetris", "--quantum", "5"], "--quantum: policy 'tetris' has no such parameter"),
    ],
)
def test_a_bad_policy_flag_is_one_line(tmp_path, capsys, flags, message):
    try:
        code = main(["replay", "--runtime", "sim", *flags, "--jobs", "5", "--out", str(tmp_path / "o")])
    except SystemExit as exc:  # argparse's own one line
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "o").exists()


def test_a_slot_policy_ignores_the_flags_of_the_others_so_one_command_line_runs_several():
    # experiments/kairos_real.py gives FIFO and Kairos the same flags.
    flags = ["replay", "--policy", "fifo", "--quantum", "2", "--kairos-q", "4", "--short-partition", "30"]
    spec = ReplaySpec.from_args(build_parser().parse_args(flags))
    assert spec.params == {}
    cluster = cluster_from(spec)
    assert cluster.params == {"time_scale": 1000.0, "fifo_queue": 0}  # its own parameter only
    assert {n.partition for n in cluster.nodes} == {"general"}


def test_param_units():
    quantum = Param("quantum", 10_000.0, "", scales=True, scales_given=False)
    cutoff = Param("cutoff", 1000.0, "", scales=True)
    beat = Param("beat", None, "", low=0.0, open_low=True)
    assert resolve([quantum, cutoff, beat], {}, time_scale=100.0) == {"quantum": 100.0, "cutoff": 10.0}
    given = resolve([quantum, cutoff, beat], {"quantum": 3, "cutoff": 500, "beat": 2}, time_scale=100.0)
    assert given == {"quantum": 3.0, "cutoff": 5.0, "beat": 2.0}
    assert (quantum.held({"time_scale": 50.0}), quantum.held({"quantum": 7})) == (200.0, 7.0)
    assert beat.held({}) is None
    with pytest.raises(ValueError, match=r"beat must be > 0, got 0\.0"):
        beat.check(0)
    assert Param("p", 17.0, "", option="--q").dest == "q"
