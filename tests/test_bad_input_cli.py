"""Issue 26, "bad input gets one line": each input an outside tester found crashing the ``aviary`` command
or eating the machine, run as the command itself. Each gets exit status 2 and one line on stderr naming
the file, the line and the field (or the flag), and the limit where one is passed; never a traceback.
The runs are started all at once (they mostly wait for Python to start), so the file takes seconds."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from aviary.common.cluster import write_cluster
from aviary.common.dags import ALIBABA_CSV, TPCH_JSON
from aviary.common.trace import MAX_TIME
from aviary.launch.policies.registry import policy_cluster

SPEC = '[replay]\njobs = 5\nnodes = 4\n\n[grid]\npolicy = ["sparrow"]\n'


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aviary.launch.cli", *args], capture_output=True, text=True, timeout=120
    )


def _files(d: Path) -> dict[str, list[str]]:
    """Each case's files and command line (``R`` stands for the results folder of the case)."""
    tpch = json.loads(TPCH_JSON.read_text())
    q1 = {"stages": [], "edges": [], "profiles": {p: [] for p in tpch["Q1"]["profiles"]}}
    (d / "no_stages.json").write_text(json.dumps({"Q1": q1}, indent=1))
    long = json.loads(json.dumps(tpch))
    long["Q2"]["profiles"]["50g_maxCores_50"][0][2] = 1e308  # a task runtime of 1e308 ms
    (d / "long.json").write_text(json.dumps(long, indent=1))
    with ALIBABA_CSV.open() as f:
        rows = list(csv.reader(f))[:3]
    rows[2][rows[0].index("instances")] = str(10**12)
    with (d / "ali.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    (d / "submit.tr").write_text("0 1 4 4\n1e300 2 4 3 5\n")
    (d / "duration.tr").write_text("0 1 4 4\n5 2 4 3 1e308\n")
    (d / "tasks.tr").write_text(f"0 1 4 4\n5 {10**12} 4 3 5\n")
    (d / "at_limit.tr").write_text(f"0 1 4 4\n{MAX_TIME:.0f} 2 4 3 5\n")
    (d / "latin1.toml").write_bytes(b'name = "caf\xe9"\n' + SPEC.encode())
    (d / "a_file").write_text("")
    (d / "out_under_file.toml").write_text('out = "a_file/sweep"\n' + SPEC)
    (d / "no_trace.toml").write_text(SPEC.replace("nodes = 4\n", 'nodes = 4\ntrace = "missing.tr"\n'))
    cluster = d / "arrow.toml"
    write_cluster(policy_cluster("sparrow", nodes=2, schedulers=1), cluster)
    cluster.write_text(cluster.read_text().replace('name = "node-1"', 'name = "node>1"'))
    sim = ["replay", "--runtime", "sim", "--out", "R"]
    tpch = [*sim, "--workload", "tpch", "--policy", "drf"]
    return {
        "tpch_no_stages": [*tpch, "--jobs", "3", str(d / "no_stages.json")],
        "tpch_1e308_ms": [*tpch, "--jobs", "3", str(d / "long.json")],
        "alibaba_1e12_instances": [*sim, "--workload", "alibaba", "--policy", "drf", str(d / "ali.csv")],
        "jobs_1e11": [*tpch, "--jobs", "100000000000"],
        "jobs_tasks": [*tpch, "--jobs", "1000000"],
        "submit_1e300": [*sim, "--keep-arrivals", str(d / "submit.tr")],
        "duration_1e308": [*sim, str(d / "duration.tr")],
        "tasks_1e12": [*sim, str(d / "tasks.tr")],
        "at_limit": [*sim, "--keep-arrivals", "--time-scale", "1", "--nodes", "2", str(d / "at_limit.tr")],
        "sweep_latin1": ["sweep", "--dry-run", str(d / "latin1.toml")],
        "sweep_out": ["sweep", "--quiet", str(d / "out_under_file.toml")],
        "sweep_no_trace": ["sweep", "--dry-run", str(d / "no_trace.toml")],
        "name_arrow": ["replay", "--connect", str(d / "arrow.toml"), "--jobs", "5", "--out", "R"],
    }  # fmt: skip


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    d = tmp_path_factory.mktemp("bad")
    cases = _files(d)
    commands = {k: [str(d / f"out-{k}") if a == "R" else a for a in args] for k, args in cases.items()}
    with ThreadPoolExecutor(len(commands)) as pool:
        done = {k: pool.submit(_run, args) for k, args in commands.items()}
        return {k: (d, f.result()) for k, f in done.items()}


def one_line(run: subprocess.CompletedProcess[str], *needles: str) -> str:
    err = run.stderr.strip()
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr + run.stdout
    assert len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


CASES = {
    # item 1: a TPC-H query without stages (was a ZeroDivisionError)
    "tpch_no_stages": ["no_stages.json: Q1 (line 2): field 'stages': empty"],
    # item 4: unbounded allocation
    "tpch_1e308_ms": ["long.json: Q2 stage 0 (line ", "field 'profiles.50g_maxCores_50.mean_task_runtime_ms'",
                      "above the limit of 1e+11 ms"],
    "alibaba_1e12_instances": ["ali.csv:3: field 'instances': 1000000000000 is above the limit of",
                               "1,000,000 tasks a job"],
    "jobs_1e11": ["argument --jobs: must be at most 1,000,000 (the limit of jobs a workload)"],
    "jobs_tasks": ["jobs: 1,000,000 jobs would have at least",
                   "above the limit of 30,000,000 tasks a workload"],
    "tasks_1e12": ["tasks.tr:2: field 'num_tasks': 1000000000000 is above the limit of",
                   "1,000,000 tasks a job"],
    # item 5: silent precision loss
    "submit_1e300": ["submit.tr:2: field 'submit_time': 1e300 is above the limit of 1e+09 s"],
    "duration_1e308": ["duration.tr:2: field 'd_2': 1e308 is above the limit of 1e+08 s"],
    # items 2, 3, 7: the sweep
    "sweep_latin1": ["latin1.toml: line 1: field 'name': not UTF-8 text (byte 0xe9"],
    "sweep_out": ["out_under_file.toml: line 1: field 'out':", "a_file is not a folder"],
    "sweep_no_trace": ["no_trace.toml: line 4: field 'replay.trace':", "missing.tr: no such file"],
    # item 6: process names (the others: tests/test_bad_input_limits.py)
    "name_arrow": ["arrow.toml:", "field 'name': 'node>1' is not a process name"],
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_naming_file_line_and_field_exit_2(runs, case: str) -> None:
    d, run = runs[case]
    command = "sweep" if case.startswith("sweep") else "replay"
    err = one_line(run, f"aviary {command}: error: ", *CASES[case])
    assert not (d / f"out-{case}").exists(), err  # nothing written, nothing run


def test_a_bad_name_is_named_on_its_own_line_of_the_file(runs) -> None:
    d, run = runs["name_arrow"]
    cluster = d / "arrow.toml"
    number = 1 + cluster.read_text().splitlines().index('name = "node>1"')
    assert f"{cluster}:{number}: [[process]] #" in run.stderr, run.stderr


def test_a_job_submitted_at_the_time_limit_keeps_its_completion_time(runs) -> None:
    """Item 5: a 3-5 s job submitted at 1e300 s had a JCT of 0.000000 (1e300 + 5 == 1e300 in floats);
    1e300 is now refused, and at the limit, MAX_TIME, the JCT keeps its microseconds."""
    d, run = runs["at_limit"]
    assert run.returncode == 0, run.stderr[-2000:]
    rows = list(csv.DictReader((d / "out-at_limit" / "jobs.csv").open()))
    assert float(rows[1]["submit_replay_s"]) == MAX_TIME
    assert float(rows[1]["jct_replay_s"]) == pytest.approx(5.003, abs=1e-6)
