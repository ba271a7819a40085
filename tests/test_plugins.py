"""Policies from outside the package: the registry reads the built-ins as it reads a plug-in, and a plug-in
(a file, a module, an installed package's entry point) runs wherever a policy name is taken, its
parameters flags like a built-in's, its mistakes one line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aviary.launch.cli.main import main
from aviary.launch.cli.plugins import KINDS, new_policy
from aviary.launch.policies.registry import (
    BUILTIN,
    BUILTIN_SOURCE,
    POLICIES,
    PolicyError,
    get_policy,
    load_source,
)
from tests.test_cli_errors import aviary, one_line

ROOT = Path(__file__).resolve().parents[1]


def plugin_file(folder: Path, stem: str, body: str) -> Path:
    """A plug-in file ``stem.py`` (a name no other test uses: modules are loaded once per process)."""
    path = folder / f"{stem}.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_the_builtins_are_read_through_the_path_of_a_plugin_source():
    declared = load_source(BUILTIN_SOURCE)
    assert [p.name for p in declared] == list(BUILTIN)
    nine = {"sparrow", "hawk", "eagle", "kairos", "tetrisched", "carbyne", "graphene", "tetris", "fifo"}
    assert nine <= set(BUILTIN)
    for policy in declared:
        assert POLICIES[policy.name] is policy
        assert (policy.source, policy.origin) == ("", "built-in")
        assert policy.family  # every flag has a heading


def test_a_policy_from_a_file_runs_on_the_simulator_under_its_own_name(tmp_path):
    folder = new_policy("filed", "central", tmp_path)
    source = f"{folder / 'filed' / '__init__.py'}:POLICY"
    out = tmp_path / "run"
    assert main(["replay", "--runtime", "sim", "--policy", source, "--jobs", "25", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "filed" and summary["finished"] == 25
    assert summary["workload"]["policy"]["source"] == source
    assert summary["workload"]["policy"]["origin"].startswith("file ")
    assert {row.split(",")[-1] for row in (out / "jobs.csv").read_text().splitlines()[1:]} == {"filed"}


def test_an_installed_plugin_runs_on_real_processes_with_its_parameter(tmp_path):
    """examples/p2c, installed by scripts/setup.sh as a user installs a package, found by its entry point."""
    out = tmp_path / "run"
    run = aviary(
        "replay",
        "--policy",
        "p2c",
        "--choices",
        "1",
        "--jobs",
        "15",
        "--nodes",
        "4",
        "--duration",
        "8",
        "--out",
        out,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "p2c" and summary["runtime"] == "real"
    assert summary["finished"] == summary["jobs"] == 15
    assert summary["workload"]["policy"]["params"]["choices"] == 1
    assert summary["workload"]["policy"]["source"] == "aviary_p2c:POLICY"
    assert summary["counters"]["tasks_placed"] == summary["tasks"]  # the plug-in's own counter


def test_a_plugins_parameters_are_flags_listed_by_its_help():
    shown = aviary("replay", "--policy", "p2c", "--help")
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    assert "Power of d choices (policy p2c): --choices CHOICES p2c: nodes drawn per task" in text
    assert "(default 2)" in text.split("--choices CHOICES", 2)[2]
    assert "--choices" not in aviary("replay", "--help").stdout  # not loaded unless named
    one_line(aviary("replay", "--policy", "p2c", "--choices", "0"), "argument --choices: must be >= 1, got 0")


@pytest.mark.parametrize(
    ("body", "attribute", "message"),
    [
        ("x = 1\n", "x", "is a int, not an aviary.policy.Policy"),
        ("x = 1\n", "y", "has no attribute 'y'"),
        ("import no_such_module_here\n", "P", "no module named 'no_such_module_here' on "),
        ("raise RuntimeError('at import')\n", "P", "failed: RuntimeError: at import"),
        (
            "from aviary.policy import Policy\nP = Policy('x y', 'a summary')\n",
            "P",
            "policy name 'x y' must be letters, digits",
        ),
        (
            "from aviary.policy import Policy\nP = Policy('noroles', 'a summary')\n",
            "P",
            "has neither a scheduler nor a central builder",
        ),
        (
            "from aviary.policy import Policy, builtin\n"
            "P = Policy('sparrow', 's', scheduler=builtin('sparrow').scheduler)\n",
            "P",
            "policy 'sparrow' of file",
        ),
    ],
)
def test_a_bad_plugin_is_one_line_naming_it(tmp_path, body, attribute, message):
    path = plugin_file(tmp_path, f"bad_{abs(hash(body)) % 10**8}", body)
    one_line(
        aviary("replay", "--runtime", "sim", "--policy", f"{path}:{attribute}"),
        "argument --policy: ",
        message,
    )


def test_a_plugin_parameter_that_takes_a_flag_of_aviary_is_one_line(tmp_path):
    path = plugin_file(
        tmp_path,
        "takes_nodes",
        """
        from aviary.policy import Param, Policy, builtin
        P = Policy("takes", "s", central=builtin("fifo").central, params=(Param("nodes", 1, "clashes"),))
        """,
    )
    one_line(
        aviary("replay", "--policy", f"{path}:P", "--help"),
        "policy 'takes' (file ",
        "parameter 'nodes': --nodes is one of aviary's own flags (rename the parameter)",
    )


def test_an_unknown_name_gets_the_closest_one_plugins_included():
    one_line(aviary("replay", "--policy", "p2x"), "unknown policy 'p2x' (did you mean 'p2c'?)")
    with pytest.raises(PolicyError, match="did you mean 'tetris'"):
        get_policy("tetriss")


def test_policy_list_shows_builtins_and_installed_plugins_with_their_origin():
    listed = aviary("policy", "list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines() if line and line[0] != " "}
    for name in BUILTIN:
        assert "built-in" in rows[name]
    assert "distributed" in rows["p2c"] and "package aviary-p2c 0.1.0" in rows["p2c"]
    assert f"{len(BUILTIN)} built-in, " in listed.stdout


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_policy_new_writes_a_package_whose_tests_pass_and_that_lint_accepts(tmp_path, kind):
    made = aviary("policy", "new", f"fresh-{kind}", "--kind", kind, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    folder = tmp_path / f"fresh-{kind}"
    assert (folder / "pyproject.toml").read_text().count(f'fresh-{kind} = "fresh_{kind}:POLICY"') == 1
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "5 passed" in tests.stdout  # the kit's quick check among them
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."], capture_output=True, text=True, cwd=folder
    )
    assert lint.returncode == 0, lint.stdout


def test_policy_new_refuses_a_builtin_name_a_bad_name_and_a_full_folder(tmp_path):
    one_line(aviary("policy", "new", "eagle", cwd=tmp_path), "policy name 'eagle' is a built-in policy's")
    one_line(aviary("policy", "new", "a/b", cwd=tmp_path), "policy name 'a/b': letters, digits")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("")
    one_line(aviary("policy", "new", "taken", cwd=tmp_path), "taken: exists and is not empty")


def test_a_package_installed_elsewhere_is_found_by_its_entry_point(tmp_path):
    """Installed (not editable) into a folder of its own, as on a machine where the user pip-installed it:
    its entry point alone makes the name known to every command."""
    new_policy("elsewhere", "distributed", tmp_path)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip, "--target", str(site), str(tmp_path / "elsewhere")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(site)}
    listed = subprocess.run(
        [sys.executable, "-m", "aviary.launch.cli", "policy", "list"], capture_output=True, text=True, env=env
    )
    assert "package aviary-elsewhere 0.1.0" in listed.stdout
    out = tmp_path / "run"
    command = ["replay", "--runtime", "sim", "--policy", "elsewhere", "--jobs", "20", "--out", str(out)]
    ran = subprocess.run(
        [sys.executable, "-m", "aviary.launch.cli", *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())["finished"] == 20


def test_a_cluster_file_names_the_plugins_source_and_a_host_without_it_fails_at_start(tmp_path):
    path = tmp_path / "c.toml"
    made = aviary(
        "cluster", "--policy", "aviary_p2c:POLICY", "--hosts", "127.0.0.1", "--out", path, "--no-keys"
    )
    assert made.returncode == 0, made.stderr
    text = path.read_text()
    assert 'policy = "p2c"' in text and 'policy_source = "aviary_p2c:POLICY"' in text
    path.write_text(text.replace("aviary_p2c:POLICY", "aviary_p2c_gone:POLICY"))
    one_line(
        aviary("host", path, "--host", "127.0.0.1", "--dir", tmp_path / "logs"),
        "field 'policy_source': policy 'aviary_p2c_gone:POLICY': no module named 'aviary_p2c_gone' on ",
    )
    assert not (tmp_path / "logs").exists()


CRASHY = """
from aviary.policy import Policy, TaskFinished
from aviary_p2c import CHOICES, PowerOfChoices


class Crashy(PowerOfChoices):
    def on_message(self, now, sender, msg):
        if isinstance(msg, TaskFinished) and msg.job_id == 5:
            raise ZeroDivisionError("a bug in job 5")
        return super().on_message(now, sender, msg)


def build(ctx):
    import __main__  # a testbed's process, not the launcher's prediction on the simulator

    real = getattr(__main__.__spec__, "name", "") == "aviary.launch.drivers.process"
    return (Crashy if real or not ONLY_REAL else PowerOfChoices)(ctx)


ONLY_REAL = False
POLICY = Policy("crashy", "raises on job 5's first task end", scheduler=build, params=(CHOICES,))
"""


def test_a_core_that_raises_stops_a_simulated_run_with_its_partial_results(tmp_path):
    path = plugin_file(tmp_path, "crashy_sim", CRASHY)
    out = tmp_path / "run"
    run = aviary(
        "replay", "--runtime", "sim", "--policy", f"{path}:POLICY", "--jobs", "20", "--out", out, "--quiet"
    )
    one_line(
        run,
        "aviary replay: error: policy 'crashy': the scheduler core of sched-",
        "raised ZeroDivisionError: a bug in job 5, at virtual time ",
        "handling TaskFinished(job_id=5, task_index=0, ok=True) from 'node-",
        code=1,
    )
    summary = json.loads((out / "summary.json").read_text())
    assert 0 < summary["finished"] < summary["jobs"] == 20
    assert summary["extra"]["interrupted_by"] == "a core's exception"
    assert 5 in summary["unfinished"]
    # A real replay is refused before any process starts: its prediction on the simulator hits the bug.
    one_line(
        aviary("replay", "--policy", f"{path}:POLICY", "--jobs", "20", "--out", tmp_path / "real"),
        "policy 'crashy': the scheduler core of sched-",
        "(predicting the run on the simulator: no process was started)",
        code=1,
    )
    assert not (tmp_path / "real" / "testbed").exists()


def test_a_core_that_raises_on_real_processes_stops_the_replay_with_its_partial_results(tmp_path):
    path = plugin_file(tmp_path, "crashy_real", CRASHY.replace("ONLY_REAL = False", "ONLY_REAL = True"))
    out = tmp_path / "run"
    run = aviary("replay", "--policy", f"{path}:POLICY", "--jobs", "20", "--out", out, "--quiet")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    last = run.stderr.strip().splitlines()[-1]  # after the prediction's note
    assert last.startswith("aviary replay: error: policy 'crashy': the scheduler core of sched-")
    assert "raised an exception in on_message" in last
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["finished"] < summary["jobs"] and summary["extra"]["interrupted_by"] == "a core's exception"
    )
    logs = "".join(p.read_text() for p in (out / "testbed" / "logs").glob("sched-*.log"))
    assert (
        "its scheduler core raised ZeroDivisionError: a bug in job 5 in on_message(TaskFinished(job_id=5"
        in logs
    )


def test_the_examples_own_tests_pass_as_its_author_runs_them():
    """examples/p2c's tests, run from its folder as the package's author runs them (pytest examples/p2c)."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "examples" / "p2c")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert "9 passed" in run.stdout
