"""The conformance kit (``aviary policy check``): the built-ins keep the rules, and the three faulty examples
(examples/faulty) each fail the check that names their fault, shrunk to a small case that replays."""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path

import pytest

from aviary.launch.check import check_policy
from aviary.launch.check.purity import core_modules, static_violations
from aviary.launch.policies.registry import BUILTIN
from tests.test_cli_errors import aviary

ROOT = Path(__file__).resolve().parents[1]
FAULTY = ROOT / "examples" / "faulty"


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.disable(logging.WARNING)  # the deaths the fault checks inject
    yield
    logging.disable(logging.NOTSET)


def results(ref: str, **kwargs) -> dict[str, object]:
    return {r.check: r for r in check_policy(ref, quick=True, **kwargs)}


@pytest.mark.parametrize(
    ("example", "check", "says"),
    [
        ("drops_a_task", "invariants", "jobs lost: [0] never finished"),
        ("double_books", "invariants", "runs 2 tasks at once on 1 slot(s): a double-booked slot"),
        ("reads_the_clock", "purity", "reads_the_clock.py:7: imports time"),
    ],
)
def test_each_faulty_example_fails_the_check_of_its_fault(example, check, says):
    found = results(f"{FAULTY / example}.py:POLICY", only=check)
    assert found[check].passed is False and says in found[check].detail, found[check]
    if check == "purity":  # the run-time guard saw the call too
        assert "calls time.time()" in found[check].detail


def test_a_failure_is_one_small_case_and_a_command_that_replays_it(tmp_path):
    run = aviary("policy", "check", f"{FAULTY / 'double_books'}.py:POLICY", "--quick", "--only", "invariants")
    assert run.returncode == 1 and run.stderr.strip().endswith("failed invariants"), run.stderr
    case = json.loads(run.stdout.split("the smallest failing case: ", 1)[1].splitlines()[0])
    assert case["nodes"] == 1 and case["jobs"] == [
        [0.0, [0.01, 0.01]]
    ]  # shrunk: one node, one job of two tasks
    command = run.stdout.split("replay it: ", 1)[1].splitlines()[0]
    again = aviary(*shlex.split(command)[1:])
    assert again.returncode == 1 and "double-booked slot" in again.stdout


@pytest.mark.parametrize("policy", ["sparrow", "fifo", "eagle", "kairos", "drf", "p2c"])
def test_one_policy_of_each_kind_keeps_the_rules(policy):
    """Distributed, central, hybrid with a node of its own, central with a node of its own, the
    multi-resource layer, and the example plug-in."""
    found = results(policy)
    assert all(r.passed is not False for r in found.values()), [
        r for r in found.values() if r.passed is False
    ]
    assert found["purity"].passed and found["invariants"].passed and found["node-fault"].passed
    if policy in ("fifo", "kairos", "drf"):
        assert found["central-fault"].passed


@pytest.mark.slow  # one of each kind above; the whole kit's budget over every built-in, real runs aside
@pytest.mark.parametrize("policy", BUILTIN)
def test_every_builtin_keeps_the_rules(policy):
    found = {r.check: r for r in check_policy(policy, real=False)}
    assert all(r.passed is not False for r in found.values()), [
        r for r in found.values() if r.passed is False
    ]


@pytest.mark.slow
def test_a_tiny_real_run_of_the_example_lies_in_its_simulated_band():
    (real,) = check_policy("p2c", only="real")
    assert real.passed, real.detail


def test_the_purity_scan_finds_a_plugins_own_modules_and_aviarys():
    from aviary.launch.check import cores_of
    from aviary.launch.policies.registry import get_policy

    modules = core_modules(cores_of(get_policy("p2c")))
    assert (
        modules[0] == "aviary_p2c"
        and "aviary.worker.node_monitor" in modules
        and "aviary.policy" not in modules
    )
    assert static_violations(modules) == []


TRUSTING = """
from aviary.policy import Core, JobDone, PlaceTask, Policy, Send, SubmitJob, TaskFinished


class Trusting(Core):
    role = "scheduler"

    def __init__(self, ctx):
        super().__init__(ctx.name)
        self.nodes, self.jobs = ctx.nodes, {}

    def on_message(self, now, sender, msg):
        if isinstance(msg, SubmitJob):
            self.jobs[msg.job_id] = [sender, len(msg.durations)]
            node = self.nodes[0]
            return [Send(node, PlaceTask(msg.job_id, i, d, 1.0)) for i, d in enumerate(msg.durations)]
        if isinstance(msg, TaskFinished):
            assert msg.ok, "a task cannot fail"  # a bug: tasks do fail (a node dies, a task is killed)
            job = self.jobs[msg.job_id]  # a bug: a TaskFinished of a job it does not know
            job[1] -= 1
            return [Send(job[0], JobDone(msg.job_id, 0.0))] if job[1] == 0 else []
        return []


POLICY = Policy("trusting", "believes every TaskFinished", scheduler=Trusting)
"""


def test_the_messages_check_names_a_core_that_trusts_a_message_it_should_not(tmp_path):
    (tmp_path / "trusting.py").write_text(TRUSTING)
    (found,) = check_policy(f"{tmp_path / 'trusting.py'}:POLICY", only="messages")  # the default budget
    assert found.passed is False and found.detail.startswith("the scheduler core of sched-")
    assert (
        "KeyError" in found.detail or "a task cannot fail" in found.detail
    ) and "TaskFinished(" in found.shown
    assert found.repro.endswith("--only messages")
