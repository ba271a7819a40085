"""Bad input everywhere gets one line (DESIGN §8): a bad cluster file, a port already in use, a flag out of
range, a flag a replay --connect would ignore. Each run is the ``aviary`` command itself: exit status 2,
one line on stderr naming the file, line and field (or host and port), no traceback, no process left."""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aviary.common.cluster import EXECUTORS, write_cluster
from aviary.launch.cli.main import main
from aviary.launch.flags.parser import _commands, build_parser, given_flags
from aviary.launch.flags.spec import CHOICES
from aviary.launch.policies.registry import policy_cluster
from aviary.launch.replay.connect import connect_problem


def aviary(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aviary.launch.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def one_line(run: subprocess.CompletedProcess[str], *needles: str, code: int = 2) -> str:
    """The run's one line on stderr, checked to hold every needle."""
    err = run.stderr.strip()
    assert run.returncode == code, (run.returncode, run.stderr, run.stdout[-500:])
    assert "Traceback" not in run.stderr + run.stdout
    assert len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def line_of(path: Path, text: str, start: int = 0) -> int:
    """The number of the first line of ``path`` (from line ``start + 1``) that is ``text``."""
    lines = path.read_text().splitlines()
    return 1 + lines.index(text, start)


@pytest.fixture
def held() -> Iterator[socket.socket]:
    """A socket listening on a free port of 127.0.0.1: another process's port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock


PARAMS = {"time_scale": 1000.0, "probe_ratio": 2.0}


@pytest.fixture
def cluster_file(tmp_path: Path) -> Path:
    """A sparrow testbed of one scheduler and two nodes on free ports of 127.0.0.1."""
    path = tmp_path / "cluster.toml"
    write_cluster(policy_cluster("sparrow", nodes=2, schedulers=1, params=PARAMS), path)
    return path


# --- a bad cluster file, under `aviary host` and `aviary replay --connect` ----------------------------
def _replace(old: str, new: str):
    return lambda text: text.replace(old, new, 1)


BAD_FILES = [
    # (edit, the line it names, what the line says)
    (_replace("[[process]]", "[[procss]]"), "[[procss]]",
     "unknown table [[procss]] (did you mean '[[process]]'?)"),
    (_replace("[cluster]", "[clustr]"), "[clustr]", "unknown table [clustr] (did you mean '[cluster]'?)"),
    (_replace("probe_ratio = 2.0", "probe_ratoi = 2.0"), "probe_ratoi = 2.0",
     "[cluster.params]: field 'probe_ratoi': policy 'sparrow' has no such parameter"),
    (_replace("seed = 0", "seed = 0\nprobe_ratoi = 2"), "probe_ratoi = 2",
     "[cluster]: unknown field 'probe_ratoi'"),
    (_replace('policy = "sparrow"', 'policy = "sparow"'), 'policy = "sparow"',
     "[cluster]: field 'policy': unknown policy 'sparow' (did you mean 'sparrow'?)"),
    (_replace('executor = "timer"', 'executor = "dockr"'), 'executor = "dockr"',
     "[cluster]: field 'executor': 'dockr' is not one of timer, process, docker"),
    (_replace("probe_ratio = 2.0", 'probe_ratio = "x"'), 'probe_ratio = "x"',
     "[cluster.params]: field 'probe_ratio': probe_ratio must be a number, got 'x'"),
    (_replace("probe_ratio = 2.0", "probe_ratio = 0.5"), "probe_ratio = 0.5",
     "[cluster.params]: field 'probe_ratio': probe_ratio must be >= 1, got 0.5"),
    (_replace("time_scale = 1000.0", "time_scale = -3"), "time_scale = -3",
     "[cluster.params]: field 'time_scale': time_scale must be > 0"),
    (_replace("slots = 1", "slots = -1"), "slots = -1",
     "[[process]] #3: field 'slots': a node needs at least 1 slot, got -1"),
    (_replace("slots = 1", 'slots = "one"'), 'slots = "one"',
     "[[process]] #3: field 'slots': expected a whole number, got 'one'"),
    (_replace("slots = 1", "slots = 1\nslot = 2"), "slot = 2",
     "[[process]] #3: unknown field 'slot' (did you mean 'slots'?)"),
    (_replace('role = "node"', 'role = "central"'), 'role = "central"',
     "[[process]] #3: field 'role': policy 'sparrow' has no central"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "line", "message"), BAD_FILES, ids=[m for _, _, m in BAD_FILES])
@pytest.mark.parametrize("command", ["host", "replay"])
def test_a_bad_cluster_file_is_one_line_naming_file_line_and_field(
    tmp_path, cluster_file, command, edit, line, message
):
    cluster_file.write_text(edit(cluster_file.read_text()))
    number = line_of(cluster_file, line)
    if command == "host":
        run = aviary("host", cluster_file, "--host", "127.0.0.1", "--dir", tmp_path / "logs")
    else:
        run = aviary("replay", "--connect", cluster_file, "--jobs", "5", "--out", tmp_path / "o")
    one_line(run, f"aviary {command}: error: {cluster_file}:{number}: {message}")
    assert not (tmp_path / "logs").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy", "sparow"], "argument --policy: unknown policy 'sparow' (did you mean 'sparrow'?)"),
        (["--executor", "dockr"], "argument --executor: invalid choice: 'dockr'"),
        (["--probe-ratio", "x"], "argument --probe-ratio: invalid float value: 'x'"),
        (["--slots", "-1"], "argument --slots: must be at least 1, got -1"),
        (["--base-port", "70000"], "argument --base-port: must be a TCP port (1-65535), got 70000"),
    ],
)
def test_up_refuses_a_bad_policy_executor_or_parameter_in_one_line(tmp_path, flags, message):
    one_line(aviary("up", *flags, "--dir", tmp_path / "bed"), f"aviary up: error: {message}")
    assert not (tmp_path / "bed").exists()


def test_the_executors_of_the_cluster_file_are_the_workers_and_the_flags():
    from aviary.worker.executors import EXECUTORS as WORKER

    assert set(EXECUTORS) == set(WORKER) == set(CHOICES["executor"])


# --- a port already in use ----------------------------------------------------------------------------
def test_up_names_host_and_port_held_by_another_process(tmp_path, held):
    port = held.getsockname()[1]
    # The ports count up from --base-port, the frontend's first: the held port is sched-0's.
    run = aviary("up", "--nodes", "2", "--schedulers", "1", "--base-port", port - 1, "--dir", tmp_path / "b")
    one_line(run, f"aviary up: error: sched-0: cannot listen on 127.0.0.1:{port}: another process holds it")
    assert not (tmp_path / "b" / "logs").exists()  # no process started


def test_host_names_file_line_host_and_port_held_by_another_process(tmp_path, held):
    port = held.getsockname()[1]
    cluster = policy_cluster("sparrow", nodes=2, schedulers=1)
    cluster.nodes[1].port = port
    path = tmp_path / "cluster.toml"
    write_cluster(cluster, path)
    run = aviary("host", path, "--host", "127.0.0.1", "--dir", tmp_path / "b")
    number = line_of(path, f"port = {port}")
    one_line(
        run,
        f"aviary host: error: {path}:{number}: [[process]] #4: field 'port': node-1: cannot listen on "
        f"127.0.0.1:{port}: another process holds it",
    )
    assert not (tmp_path / "b" / "logs").exists()


def test_replay_connect_names_the_frontends_address_held_by_another_process(tmp_path, cluster_file):
    port = int(re.findall(r"port = (\d+)", cluster_file.read_text())[0])  # the frontend's
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        run = aviary("replay", "--connect", cluster_file, "--jobs", "5", "--out", tmp_path / "o")
    one_line(
        run, f"{cluster_file}: frontend: cannot listen on tcp://127.0.0.1:{port}: another process holds it"
    )
    assert not (tmp_path / "o").exists()


def test_replay_connect_on_another_host_than_the_frontends_is_one_line(tmp_path, cluster_file):
    text = cluster_file.read_text().replace('host = "127.0.0.1"', 'host = "192.0.2.1"', 1)  # TEST-NET-1
    cluster_file.write_text(text)
    run = aviary("replay", "--connect", cluster_file, "--jobs", "5", "--out", tmp_path / "o")
    port = int(re.findall(r"port = (\d+)", text)[0])
    one_line(run, f"cannot listen on tcp://192.0.2.1:{port}: not an address of this machine")


def test_a_process_that_dies_at_its_start_is_one_line_with_its_own(
    tmp_path, cluster_file, held, monkeypatch, capsys, no_leftover_children
):
    """Should another process take a port between the check and the start: the dead process's own line."""
    from aviary.launch.drivers import up

    monkeypatch.setattr(up, "check_ports", lambda *args: None)
    port = held.getsockname()[1]
    text = re.sub(r"port = \d+\nslots", f"port = {port}\nslots", cluster_file.read_text(), count=1)
    cluster_file.write_text(text)  # node-0's
    assert main(["host", str(cluster_file), "--host", "127.0.0.1", "--dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("aviary host: error: process node-0 exited with code 2 at its start: ")
    assert f"cannot listen on tcp://127.0.0.1:{port}: another process holds it" in err


# --- flags out of range -------------------------------------------------------------------------------
SIM = ["replay", "--runtime", "sim", "--jobs", "5", "--quiet"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*SIM, "--probe-ratio", "0"], "argument --probe-ratio: must be >= 1, got 0.0"),
        ([*SIM, "--net-delay", "-1"], "argument --net-delay: must be a number >= 0, got -1"),
        ([*SIM, "--policy", "eagle", "--update-ratio", "-5"], "argument --update-ratio: must be >= 0 and <"),
        ([*SIM, "--load", "0"], "argument --load: must be a number greater than 0, got 0"),
        ([*SIM, "--load", "-2"], "argument --load: must be a number greater than 0, got -2"),
        ([*SIM, "--time-scale", "inf"], "argument --time-scale: must be a number greater than 0, got inf"),
        ([*SIM, "--task-scale", "nan"], "argument --task-scale: must be a number greater than 0, got nan"),
        ([*SIM, "--stall-timeout", "0"], "argument --stall-timeout: must be a number greater than 0"),
        ([*SIM, "--seed", "-1"], "argument --seed: must be at least 0, got -1"),
        ([*SIM, "--start", "-1"], "argument --start: must be at least 0, got -1"),
        ([*SIM, "--nodes", "0"], "argument --nodes: must be at least 1, got 0"),
        ([*SIM, "--reference-nodes", "0"], "argument --reference-nodes: must be at least 1, got 0"),
        ([*SIM, "--misestimate", "2", "1"], "argument --misestimate: LO must be <= HI, got 2 1"),
        ([*SIM, "--misestimate", "0", "1"], "argument --misestimate: must be a number greater than 0, got 0"),
        ([*SIM, "--capacity", "-1"], "argument --capacity: expected up to 4 numbers"),
        (["replay", "--net-delay", "0.01", "--jobs", "5"], "argument --net-delay: only for --runtime sim"),
        (["cluster", "--hosts", "a", "--out", "."], "argument --out: . is a folder, not a file"),
        (["cluster", "--hosts", "a", "--out", "no/such/c.toml"], "argument --out: no/such is no folder"),
    ],
)
def test_a_flag_out_of_range_is_one_line(tmp_path, args, message):
    one_line(aviary(*args, cwd=tmp_path), f"aviary {args[0]}: error: {message}")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("fail", "message"),
    [
        ("node-99@1s", "--fail: no process 'node-99' in this testbed (such as node-9, node-8, node-7)"),
        ("node-1", "--fail: 'node-1': expected PROCESS@TIME or PROCESS@TIME+PAUSE, such as node-3@30s"),
        ("node-1@soon", "--fail: 'node-1@soon': 'soon' is not a time such as 30s, 2m, 1h"),
        ("frontend@1s", "--fail: no process 'frontend' in this testbed"),
    ],
)
def test_a_bad_failure_to_inject_is_one_line(tmp_path, fail, message):
    one_line(aviary(*SIM, "--fail", fail, cwd=tmp_path), f"aviary replay: error: {message}")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "args",
    [
        [*SIM, "--out", "taken"],
        ["demo", "--out", "taken"],
        ["bench", "--out", "taken"],
        ["up", "--dir", "taken"],
        ["host", "cluster.toml", "--dir", "taken"],
    ],
)
def test_an_output_folder_that_is_a_file_is_one_line(tmp_path, args):
    (tmp_path / "taken").write_text("mine\n")
    flag = "--dir" if "--dir" in args else "--out"
    message = f"aviary {args[0]}: error: argument {flag}: taken is a file, not a folder"
    one_line(aviary(*args, cwd=tmp_path), message)
    assert (tmp_path / "taken").read_text() == "mine\n"


def test_a_load_above_one_runs_with_a_one_line_warning(tmp_path):
    run = aviary(*SIM, "--start", "6000", "--nodes", "20", "--load", "5", "--out", tmp_path / "o")
    line = one_line(run, "aviary replay: warning: --load 5: ", "overloaded", code=0)
    assert line.startswith("aviary replay: warning:")
    assert (tmp_path / "o" / "summary.json").exists()


# --- replay --connect with flags that contradict the testbed ------------------------------------------
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy", "eagle"], "--policy eagle: the testbed of {path} runs policy sparrow; "),
        (["--nodes", "3"], "--nodes 3: the testbed of {path} has 2 nodes; "),
        (["--slots", "4"], "--slots 4: the testbed of {path} has 1 slots per node; "),
        (["--schedulers", "2"], "--schedulers 2: the testbed of {path} has 1 distributed schedulers; "),
        (["--executor", "process"], "--executor process: the testbed of {path} runs executor timer; "),
        (["--capacity", "4"], "--capacity 4,0,0,0: the testbed of {path} has nodes of capacity 1,4,1,1; "),
        (["--probe-ratio", "3"], "--probe-ratio 3: the testbed of {path} holds probe_ratio 2; "),
        (["--quantum", "3"], "--quantum: the testbed of {path} runs 'sparrow', without this parameter"),
        (["--policy", "sparrow", "--nodes", "5"], "--nodes 5: the testbed of {path} has 2 nodes"),
    ],
)
def test_replay_connect_refuses_flags_that_contradict_the_testbed(tmp_path, cluster_file, flags, message):
    run = aviary("replay", "--connect", cluster_file, *flags, "--jobs", "5", "--out", tmp_path / "o")
    err = one_line(run, "aviary replay: error: " + message.format(path=cluster_file))
    assert "drop the flag, or restart the testbed with it" in err or "without this parameter" in err
    assert not (tmp_path / "o").exists()


def test_replay_connect_takes_flags_that_say_what_the_testbed_is(cluster_file):
    """Only flags given count (not argparse's defaults), and those that agree with the testbed pass."""
    argv = ["replay", "--connect", str(cluster_file), "--policy", "sparrow", "--nodes", "2", "--slots",
            "1", "--schedulers", "1", "--probe-ratio", "2", "--cutoff", "500", "--seed", "3"]  # fmt: skip
    given = given_flags(argv)
    assert {"policy", "nodes", "slots", "probe_ratio", "cutoff", "seed", "connect"} <= given
    assert "executor" not in given and "net_delay" not in given and "load" not in given
    assert connect_problem(build_parser().parse_args(argv), given) is None
    bare = ["replay", "--connect", str(cluster_file)]  # every default differs from this testbed's 2 nodes ...
    assert connect_problem(build_parser().parse_args(bare), given_flags(bare)) is None


# --- what bare `aviary` and --help say ----------------------------------------------------------------
def test_bare_aviary_lists_the_commands_one_line_each():
    run = aviary()
    assert run.returncode == 0 and not run.stderr and "Traceback" not in run.stdout
    commands = _commands(build_parser())
    for action in commands._choices_actions:
        assert re.search(rf"^  {action.dest} +{re.escape(str(action.help))}$", run.stdout, re.M), action.dest
    assert set(commands.choices) == {a.dest for a in commands._choices_actions}


UNITS = {
    "--nodes": "count",
    "--time-scale": "trace seconds per second of the replay clock",
    "--net-delay": "virtual seconds",
    "--stall-timeout": "seconds of the replay clock",
    "--load": "fraction of all slots",
    "--reference-nodes": "in nodes",
    "--base-port": "port",
    "--quantum": "seconds of the replay clock",
    "--cutoff": "trace seconds",
    "--short-partition": "%",
    "--plan-cycle": "trace seconds",
}


@pytest.mark.parametrize("command", sorted(_commands(build_parser()).choices))
def test_every_flags_help_shows_its_default_and_unit(command, capsys):
    parser = _commands(build_parser()).choices[command]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert "default" in (action.help or "") or action.required, (command, action.option_strings)
        for flag in action.option_strings:
            if flag in UNITS:
                assert UNITS[flag] in " ".join(str(action.help).split()), (flag, action.help)
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    assert "usage: aviary" in capsys.readouterr().out  # the help renders (a '%' in a help would not)


ERR = "aviary replay: error: argument"
MISSPELT = [
    (["replay", "--policy", "tetriss"], f"{ERR} --policy: unknown policy 'tetriss' (did you mean 'tetris'?)"),
    (
        ["replay", "--workload", "tpc"],
        f"{ERR} --workload: invalid choice: 'tpc'; did you mean 'tpch'? "
        "(choose from 'google', 'alibaba', 'tpch', 'tpcds', 'gshet')",
    ),
    (
        ["replay", "--nodez", "3"],
        "aviary: error: unrecognized arguments: --nodez (--nodez: did you mean --nodes?",
    ),
    (
        ["replay", "--runtime", "sim", "--executor", "docker"],
        f"{ERR} --executor: only for --runtime real (the simulator runs tasks virtually)",
    ),
]


@pytest.mark.parametrize(("args", "message"), MISSPELT)
def test_a_misspelt_choice_or_flag_gets_a_did_you_mean_and_a_flag_the_run_ignores_is_refused(args, message):
    run = aviary(*args, "--jobs", "2", "--out", "/nonexistent/never")
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and run.stderr.startswith(message), run.stderr
