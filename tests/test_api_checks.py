"""``aviary.replay`` at its boundary: a wrong type is one ``TypeError`` naming the parameter, a bad value
one ``ValueError`` (``UsageError``) naming it, the command line's warnings are Python warnings from one
source, and every run records the call (or, for ``aviary demo``, the command) that made it."""

from __future__ import annotations

import json
import shlex
import traceback
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

import aviary
from aviary import AviaryWarning, ReplaySpec, UsageError, replay
from aviary.common.resources import Resources
from aviary.launch.cli import demo
from aviary.launch.cli.main import main
from aviary.launch.flags.parser import build_parser
from aviary.launch.flags.spec import check_field
from aviary.launch.results.report import command_of

ROOT = Path(aviary.__file__).resolve().parent
SMALL = {"runtime": "sim", "jobs": 20, "nodes": 4}


def _raised(call, kind):
    with pytest.raises(kind) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"jobs": "40"}, "replay() argument 'jobs' must be int or None, not str '40'"),
        ({"nodes": True}, "replay() argument 'nodes' must be int, not bool True"),
        ({"load": "0.8"}, "replay() argument 'load' must be a number or None, not str '0.8'"),
        ({"workload": 3}, "replay() argument 'workload' must be one of 'google', 'alibaba'"),
        ({"misestimate": (1,)}, "replay() argument 'misestimate' must be a tuple or list of 2 numbers"),
        ({"params": [("probe_ratio", 3)]}, "replay() argument 'params' must be a dict of str keys"),
        ({"trace": 3}, "replay() argument 'trace' must be a path (str or Path), not int 3"),
        ({"quiet": "yes"}, "replay() argument 'quiet' must be bool, not str 'yes'"),
    ],
)
def test_a_wrong_type_is_one_type_error_naming_the_parameter(values, message):
    exc = _raised(lambda: replay(**values), TypeError)
    assert str(exc).startswith(message), str(exc)
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)  # no chain
    # refused at the boundary: before any of the replay's own code (common/workload.py's 20 lines)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    assert {Path(f.filename).relative_to(ROOT).as_posix() for f in frames} <= {
        "api.py",
        "launch/flags/spec.py",
    }


def test_a_spec_of_the_wrong_type_is_refused_at_the_boundary_too():
    assert "'spec' must be a ReplaySpec, not dict" in str(_raised(lambda: replay({"jobs": 3}), TypeError))
    bad = ReplaySpec(jobs="40", runtime="sim")  # type: ignore[arg-type]
    assert "argument 'jobs' must be int or None" in str(_raised(lambda: replay(bad), TypeError))


def test_values_are_converted_as_the_command_line_converts_its_text():
    assert check_field("trace", "t.tr") == Path("t.tr")
    assert check_field("load", 1) == 1.0 and type(check_field("load", 1)) is float
    assert check_field("misestimate", [0.5, 2]) == (0.5, 2.0)
    assert check_field("capacity", [4, 8]) == Resources(4.0, 8.0, 0.0, 0.0)
    assert check_field("jobs", None) is None and check_field("params", {"probe_ratio": 3}) == {
        "probe_ratio": 3
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"runtime": "fast"}, "runtime must be one of real, sim, got 'fast'"),
        ({"misestimate": (2, 1), "runtime": "sim"}, "misestimate: LO must be <= HI, got 2 1"),
        ({"duration": 5.0, "runtime": "sim"}, "duration: only for --runtime real"),
        ({"net_delay": 0.001}, "net_delay: only for --runtime sim"),
        ({"max_wall": -1.0}, "max_wall must be greater than 0 seconds, got -1.0"),
        ({"params": {"nope": 1}}, "params: field 'nope': policy 'sparrow' has no such parameter"),
    ],
)
def test_a_bad_value_is_one_value_error_naming_the_parameter(values, message):
    assert issubclass(UsageError, ValueError) and aviary.UsageError is UsageError
    exc = _raised(lambda: replay(**values), ValueError)
    assert isinstance(exc, UsageError) and str(exc).startswith(message), str(exc)
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)  # no chain


def test_the_command_lines_warnings_are_python_warnings_from_one_source(tmp_path, capsys):
    with pytest.warns(AviaryWarning) as caught:
        replay(**SMALL, load=1.5, out=tmp_path / "py", force=True)
    (warning,) = caught.list
    python = str(warning.message)
    assert python.startswith("load=1.5: jobs bring 1.5 times the work all the slots can run")
    assert issubclass(AviaryWarning, UserWarning) and warning.filename == __file__  # at the caller
    argv = ["replay", "--runtime", "sim", "--jobs", "20", "--nodes", "4", "--load", "1.5", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "cli")]) == 0
    cli = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert cli == ["aviary replay: warning: --load 1.5:" + python.removeprefix("load=1.5:")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AviaryWarning)
        replay(**SMALL, load=0.8, out=tmp_path / "fine", force=True)  # nothing to warn of: no warning


def test_a_run_records_the_call_that_makes_it_again(tmp_path):
    run = replay(policy="eagle", **SMALL, seed=3, out=str(tmp_path / "r"), force=True)
    call = f"aviary.replay(policy='eagle', runtime='sim', nodes=4, seed=3, jobs=20, out='{tmp_path / 'r'}', force=True)"  # noqa: E501
    assert run.summary["extra"]["command"] == call == command_of(run.summary)  # what the report shows
    jobs = (tmp_path / "r" / "jobs.csv").read_bytes()
    again = eval(call, {"aviary": aviary})  # the recorded call, run again: the same run
    assert (again.folder / "jobs.csv").read_bytes() == jobs
    spec = ReplaySpec(policy="eagle", **SMALL, seed=3, out=tmp_path / "r", force=True)
    assert replay(spec).summary["extra"]["command"] == call  # a spec is recorded as the same call


def test_the_demo_records_the_command_that_makes_its_runs_again(tmp_path, monkeypatch):
    for policy in ("sparrow", "eagle"):
        argv = shlex.split(demo.demo_command(policy, tmp_path))
        assert argv[:2] == ["aviary", "replay"]
        parsed = ReplaySpec.from_args(build_parser().parse_args(argv[1:]))
        assert parsed == demo.demo_spec(policy, tmp_path)
    made = demo.demo_spec  # the demo itself, on the simulator: what run_demo writes in each summary
    monkeypatch.setattr(demo, "demo_spec", lambda policy, out: replace(made(policy, out), runtime="sim"))
    assert demo.run_demo(tmp_path) == 0
    for policy in ("sparrow", "eagle"):
        summary = json.loads((tmp_path / policy / "summary.json").read_text())
        assert summary["extra"]["command"] == demo.demo_command(policy, tmp_path)
        assert "not recorded" not in command_of(summary)
