"""Jobs that wait for others (a trace's ``after=``, Google 2019's start_after_collection_ids, SWF's
preceding job): the workload builders keep them as ``JobSpec.after`` and the replay submits a job only once
they finished, on the flat (slot-based) and the DAG (multi-resource) paths alike."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from aviary.common.dags import build_dag_workload, google_dag_jobs
from aviary.common.trace import read_trace
from aviary.common.workload import build_workload
from aviary.launch.cli.main import main

TRACE = """# aviary-trace 1
0 2 50 50 50 job=a
1 1 5 5 job=b after=a
2 1 5 5 job=c after=a,b
3 1 5 5 job=d after=zz
4 2 8 8 8 job=e
"""


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "deps.tr"
    path.write_text(TRACE)
    return path


def test_the_builders_keep_dependencies_on_earlier_jobs_of_the_sample(trace):
    jobs = read_trace(trace)
    flat = build_workload(jobs, keep_arrivals=True, nodes=4, scale_tasks=False)
    assert [j.after for j in flat] == [(), (0,), (0, 1), (), ()]  # zz is not in the sample
    assert [j.after for j in build_workload(jobs[1:], keep_arrivals=True, nodes=4, scale_tasks=False)] == [
        (),  # b's parent a is not in this sample
        (0,),
        (),
        (),
    ]
    dag = build_dag_workload("google", google_dag_jobs(jobs), keep_arrivals=True, seed=1)
    assert [j.after for j in dag] == [(), (0,), (0, 1), (), ()]


@pytest.mark.parametrize("policy", ["sparrow", "tetris"])
def test_a_replay_submits_a_job_once_the_jobs_it_waits_for_finished(trace, tmp_path, policy):
    out = tmp_path / policy
    flags = [str(trace), "--runtime", "sim", "--policy", policy, "--keep-arrivals", "--nodes", "4"]
    assert main(["replay", *flags, "--quiet", "--out", str(out)]) == 0
    rows = {int(r["job_id"]): r for r in csv.DictReader((out / "jobs.csv").open())}
    assert len(rows) == 5 and all(r["finish_replay_s"] for r in rows.values())
    finish = {j: float(r["finish_replay_s"]) for j, r in rows.items()}
    submit = {j: float(r["submit_replay_s"]) for j, r in rows.items()}
    assert submit[1] == pytest.approx(finish[0], abs=1e-5)  # b went when a finished (a runs ~50 s)
    assert submit[2] == pytest.approx(max(finish[0], finish[1]), abs=1e-5)
    assert submit[3] == pytest.approx(3.0, abs=1e-5) and submit[4] == pytest.approx(4.0, abs=1e-5)
