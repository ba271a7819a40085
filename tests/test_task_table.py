"""The task table (common/tasktable.py): each run of a task on a node, written beside jobs.csv as tasks end,
on both runtimes; read back as typed frames and exported as Parquet (launch/results/frames.py)."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from aviary.api import replay
from aviary.common.effects import Launch, Resume, Suspend
from aviary.common.frontend import RESUBMIT_STRIDE, JobTimes
from aviary.common.messages import AssignTask, PlaceTask
from aviary.common.model import JobSpec, Stage
from aviary.common.results import ResultsError
from aviary.common.tasktable import BOOT_ID, HEADER, TaskRecorder, TaskTable
from aviary.launch.cli.main import main
from aviary.launch.results.frames import export, read_table, table_frame


class Node:
    def __init__(self, name: str) -> None:
        self.name = name


class Lines:
    """A RecordWriter's stand-in: the lines written."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def extend(self, lines: list[str]) -> None:
        self.lines.extend(lines)

    def write(self, line: str) -> None:
        self.lines.append(line)


def rows_of(folder: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((folder / "tasks.csv").open()))


def test_the_recorder_keeps_placement_start_suspensions_and_end_of_each_run():
    rec, n = TaskRecorder(), Node("node-1")
    rec(1.0, n, ("message", "central", PlaceTask(7, 0, 5.0, 5.0)), [])  # into the node's queue
    rec(2.0, n, ("timer", "serve"), [Launch((7, 0), 5.0)])
    rec(3.0, n, ("timer", "quantum"), [Suspend((7, 0))])
    rec(4.0, n, ("timer", "quantum"), [Resume((7, 0)), Suspend((7, 0))])
    rec(5.5, n, ("message", "sched-0", AssignTask(8, 2, 1.0, 1.0)), [Launch((8, 2), 1.0)])  # late binding
    rec(6.0, n, ("timer", "x"), [Launch((9, 0), 1.0)])  # no message handed it over: placed as started
    rec(6.5, n, ("exit", (8, 2), True), [])
    rec(9.0, n, ("exit", (7, 0), False), [])
    assert rec.take() == [(8, 2, "node-1", 5.5, 5.5, 6.5, 0, True), (7, 0, "node-1", 1.0, 2.0, 9.0, 2, False)]
    assert rec.take() == []
    assert rec.unfinished() == [(9, 0, "node-1", 6.0, 6.0, None, 0, False)]
    assert all(not book.running and not book.placed_at for book in rec.books.values())


def test_the_recorder_lists_the_tasks_still_running_in_the_order_they_started_on_every_node():
    rec = TaskRecorder()
    a, b = Node("node-a"), Node("node-b")
    rec(1.0, a, ("timer", "x"), [Launch((1, 0), 9.0)])
    rec(2.0, b, ("timer", "x"), [Launch((2, 0), 9.0)])
    rec(3.0, a, ("timer", "x"), [Launch((3, 0), 9.0)])
    rec(4.0, b, ("exit", (2, 0), True), [])
    assert [row[:3] for row in rec.unfinished()] == [(1, 0, "node-a"), (3, 0, "node-a")]
    rec(5.0, b, ("timer", "x"), [Launch((4, 0), 9.0)])
    rec(6.0, a, ("timer", "x"), [Launch((5, 0), 9.0)])
    assert [row[:3] for row in rec.unfinished()] == [(4, 0, "node-b"), (5, 0, "node-a")]


def test_the_table_adds_submit_stage_attempt_and_outcome_on_the_replays_clock():
    dag = JobSpec(3, 1.0, [1.0] * 5, 1.0, False, stages=[Stage(2, 1.0), Stage(3, 1.0, parents=(0,))])
    flat = JobSpec(4, 2.0, [1.0], 1.0, False)
    table, out = TaskTable(Lines(), [dag, flat]), None
    out = table.writer
    times = {3: JobTimes(submit=1.0), 4: JobTimes(submit=2.0)}
    rows = [
        (3, 1, "n0", 101.5, 102.0, 103.0, 0, True),  # stage 0
        (3, 2, "n1", 104.0, 104.0, 105.0, 1, True),  # stage 1
        (4, 0, "n0", 102.5, 102.5, 103.0, 0, False),  # killed (its node declared dead)...
        (4 + RESUBMIT_STRIDE, 0, "n1", 104.0, 104.5, 106.0, 0, True),  # ...run again under a new wire id
        (3, 4, "n2", 105.0, 105.0, None, 0, False),  # still running when the run ended
    ]
    table.add(rows, 100.0, times, RESUBMIT_STRIDE)
    assert out.lines[0] == ",".join(HEADER) + "\n"
    assert out.lines[1:] == [
        "3,1,0,n0,1,finished,1.000000,1.500000,2.000000,3.000000,0\n",
        "3,2,1,n1,1,finished,1.000000,4.000000,4.000000,5.000000,1\n",
        "4,0,0,n0,1,killed,2.000000,2.500000,2.500000,3.000000,0\n",
        "4,0,0,n1,2,finished,2.000000,4.000000,4.500000,6.000000,0\n",
        "3,4,1,n2,1,unfinished,1.000000,5.000000,5.000000,,0\n",
    ]


def test_a_nodes_clock_is_mapped_by_its_fastest_batch_unless_it_is_this_machines():
    """Node clock = frontend clock + 100. The first batch took 3 ms, the second 0.5 ms: the offset is
    the larger lower bound (sent - received), so times are late by the fastest batch's delay. A node of
    this kernel (its boot id) reads the frontend's own clock: no mapping."""
    table = TaskTable(Lines(), [JobSpec(1, 0.0, [1.0, 1.0], 1.0, False)])
    times = {1: JobTimes(submit=0.0)}
    t0 = 10.0  # the frontend's clock at the replay's start
    kw = {"submits": times, "stride": 10}
    table.add_batch("n", 150.0, 50.003, "other", [(1, 0, "n", 140.0, 140.0, 150.0, 0, True)], t0, **kw)
    table.add_batch("n", 160.0, 60.0005, "other", [(1, 1, "n", 150.0, 150.0, 160.0, 0, True)], t0, **kw)
    assert table.offsets["n"] == pytest.approx(99.9995)
    table.add_batch("here", 60.0, 60.0005, BOOT_ID, [(1, 0, "here", 50.0, 51.0, 59.0, 0, True)], t0, **kw)
    assert table.offsets["here"] == 0.0
    first, second, here = (line.split(",") for line in table.writer.lines[1:])
    assert float(first[8]) == pytest.approx(140.0 - 99.997 - t0)  # 3 ms late
    assert float(second[8]) == pytest.approx(150.0 - 99.9995 - t0)  # 0.5 ms late
    assert float(here[8]) == 51.0 - t0


def check_every_task_once(folder: Path, jobs: int) -> list[dict[str, str]]:
    """Every task of every job finished exactly once, its times in order and within its job's."""
    rows = rows_of(folder)
    job_rows = {int(r["job_id"]): r for r in csv.DictReader((folder / "jobs.csv").open())}
    assert len(job_rows) == jobs
    finished = Counter((r["job_id"], r["task"]) for r in rows if r["outcome"] == "finished")
    assert set(finished.values()) == {1}
    assert sum(finished.values()) == sum(int(r["tasks"]) for r in job_rows.values())
    for r in rows:
        job = job_rows[int(r["job_id"])]
        assert float(r["submit_replay_s"]) == pytest.approx(float(job["submit_replay_s"]), abs=1e-6)
        assert float(r["submit_replay_s"]) <= float(r["placed_replay_s"]) <= float(r["start_replay_s"]), r
        if r["outcome"] == "finished":
            assert (
                float(r["start_replay_s"])
                <= float(r["finish_replay_s"])
                <= float(job["finish_replay_s"]) + 1e-6
            ), r
    return rows


def test_a_simulated_replay_writes_every_task_and_the_frames_and_parquet_hold_them(tmp_path):
    run = replay(policy="eagle", runtime="sim", jobs=60, nodes=20, out=tmp_path / "eagle")
    rows = check_every_task_once(run.folder, 60)
    assert {r["stage"] for r in rows} == {"0"} and {r["attempt"] for r in rows} == {"1"}
    assert len({r["node"] for r in rows}) > 10

    jobs, tasks = run.jobs_frame(), run.tasks_frame()
    assert len(tasks) == len(rows) and len(jobs) == 60
    assert str(tasks["job_id"].dtype) == "int64" and str(tasks["start_replay_s"].dtype) == "float64"
    assert str(tasks["node"].dtype) == "category" and str(jobs["class"].dtype) == "category"
    waits = (tasks["start_replay_s"] - tasks["placed_replay_s"]).to_numpy()
    assert (waits >= 0).all()

    written = export(run.folder, tmp_path / "export")
    assert [p.name for p in written] == ["jobs.parquet", "tasks.parquet"]
    import pandas as pd

    back = pd.read_parquet(tmp_path / "export" / "tasks.parquet")
    pd.testing.assert_frame_equal(back, tasks)

    again = replay(policy="eagle", runtime="sim", jobs=60, nodes=20, out=tmp_path / "again")
    assert (again.folder / "tasks.csv").read_bytes() == (
        run.folder / "tasks.csv"
    ).read_bytes()  # deterministic


def test_stages_and_preemptions_are_recorded(tmp_path):
    tetris = replay(policy="tetris", workload="tpch", runtime="sim", jobs=6, nodes=10, out=tmp_path / "tpch")
    rows = check_every_task_once(tetris.folder, 6)
    stages: dict[str, set[int]] = {}
    for r in rows:
        stages.setdefault(r["job_id"], set()).add(int(r["stage"]))
    assert all(s == set(range(len(s))) for s in stages.values())  # numbered from 0, none missing
    assert max(map(len, stages.values())) > 1  # TPC-H queries have stages

    kairos = replay(policy="kairos", runtime="sim", jobs=40, nodes=5, out=tmp_path / "kairos")
    rows = check_every_task_once(kairos.folder, 40)
    preempted = sum(int(r["preemptions"]) for r in rows)
    assert preempted > 0 and preempted == kairos.summary["counters"]["preemptions"]


def test_a_task_lost_with_its_killed_node_is_unfinished_and_runs_again(tmp_path):
    out = tmp_path / "fail"
    flags = ["--policy", "sparrow", "--runtime", "sim", "--jobs", "100", "--nodes", "20", "--quiet"]
    assert main(["replay", *flags, "--fail", "node-3@3000", "--out", str(out)]) == 0
    rows = check_every_task_once(out, 100)
    lost = [r for r in rows if r["outcome"] == "unfinished"]
    assert lost and {r["node"] for r in lost} == {"node-3"}
    for r in lost:
        again = [x for x in rows if (x["job_id"], x["task"]) == (r["job_id"], r["task"]) and x is not r]
        assert [x["outcome"] for x in again] == ["finished"] and again[0]["node"] != "node-3"
    assert not any(r["node"] == "node-3" and float(r["start_replay_s"]) > 3000 for r in rows)


def test_the_tables_of_a_cut_run_and_bad_files(tmp_path):
    run = replay(policy="sparrow", runtime="sim", jobs=30, nodes=10, out=tmp_path / "run")
    path = run.folder / "tasks.csv"
    text = path.read_text()
    whole = text.count("\n") - 1
    path.write_text(text + "5,0,0,node-1,1,fini")  # a line cut by a crash: dropped
    assert read_table(run.folder, "tasks").num_rows == whole
    path.write_text(text + "5,x,0,node-1,1,finished,1,1,1,2,0\n")
    with pytest.raises(
        ResultsError, match=rf"tasks\.csv: line {whole + 2}, field task: 'x' is not an integer$"
    ):
        table_frame(run.folder, "tasks")
    (run.folder / "jobs.csv").unlink()
    (run.folder / "summary.json").unlink()  # a run that never reached its end: jobs from its journal
    assert len(table_frame(run.folder, "jobs")) == 30

    bare = replay(policy="sparrow", runtime="sim", jobs=30, nodes=10, out=tmp_path / "bare", task_table=False)
    assert not (bare.folder / "tasks.csv").exists()
    with pytest.raises(ResultsError, match="no-task-table"):
        bare.tasks_frame()
    assert [p.name for p in export(bare.folder, tmp_path / "x")] == ["jobs.parquet"]  # the jobs alone


def test_a_sweep_exports_as_one_table_with_its_axes_as_columns(tmp_path, capsys):
    """An axis that is a column already (``policy``) is that column; the others are added."""
    sweep = tmp_path / "sweep"
    for policy, load in (("sparrow", 0.5), ("eagle", 0.8)):
        cell = sweep / f"{policy},load={load}"
        replay(policy=policy, runtime="sim", jobs=20, nodes=10, out=cell)
        summary = {"extra": {"sweep": {"cell": cell.name, "values": {"policy": policy, "load": load}}}}
        (cell / "summary.json").write_text(json.dumps(summary))  # only the sweep's record kept
    assert main(["export", str(sweep), "--format", "csv", "--out", str(tmp_path / "out")]) == 0
    table = list(csv.DictReader(io.StringIO((tmp_path / "out" / "jobs.csv").read_text())))
    assert len(table) == 40
    assert Counter((r["policy"], r["load"], r["cell"]) for r in table) == Counter(
        {("sparrow", "0.5", "sparrow,load=0.5"): 20, ("eagle", "0.8", "eagle,load=0.8"): 20}
    )
    assert main(["export", str(tmp_path / "nowhere")]) == 2
    assert "neither a run's folder" in capsys.readouterr().err


def test_the_data_page_runs_as_written(tmp_path, monkeypatch, capsys):
    """docs/data.md: its Python example and its shell lines, as written."""
    import re
    import subprocess
    import sys

    import pandas as pd

    page = (Path(__file__).resolve().parent.parent / "docs" / "data.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", page, re.S)
    (shell,) = re.findall(r"```bash\n(.*?)```", page, re.S)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/data.md", "exec"), {})
    out = capsys.readouterr().out
    assert re.search(r"\d+ short jobs, p90 JCT \d+\.\d{3} s", out) and "queued" in out, out
    export_line, python_line = shell.strip().splitlines()
    assert main(export_line.split()[1:]) == 0
    script = python_line.split('"')[1]
    dtypes = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert re.search(r"node\s+category", dtypes) and re.search(r"start_replay_s\s+float64", dtypes)
    tasks = pd.read_parquet(tmp_path / "results/data-eagle/export/tasks.parquet")
    assert len(tasks) == int(json.loads((tmp_path / "results/data-eagle/summary.json").read_text())["tasks"])


def test_a_bad_batch_stops_the_task_table_not_the_journal(tmp_path):
    """A node's batch the table cannot take (a bad frame's rows) ends the task table with one line; the
    journal goes on writing every finished job."""
    from aviary.common.frontend import FrontendCore, round_robin
    from aviary.common.journal import Journal, read_journal

    jobs = [JobSpec(i, 0.0, [1.0], 1.0, False) for i in range(2)]
    fe = FrontendCore("frontend", jobs, round_robin(["sched-0"]), task_records=True)
    fe.t0 = 0.0
    journal = Journal(tmp_path, {"jobs": 2}, tasks=jobs, every=0.0, sync=False)
    for job_id in (0, 1):
        fe.times[job_id] = JobTimes(0.0, 0.1, 1.5)
        fe.finish_order.append(job_id)
        fe.task_batches.append(
            (
                "node-1",
                5.0,
                5.0,
                "",
                [["not", "a", "row"]] if job_id else [[0, 0, "node-1", 0.1, 0.1, 1.4, 0, True]],
            )
        )
        journal.note(fe)
    journal.close()
    assert [j.job_id for j in read_journal(tmp_path).jobs] == [0, 1]
    assert journal.error is not None and "tasks.csv: stopped: " in journal.error
    assert (tmp_path / "tasks.csv").read_text().count("\n") == 2  # the header and the good row
