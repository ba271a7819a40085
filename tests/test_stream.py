"""A replay of a stream of jobs (issue 49): the jobs made as the replay pulls them from the trace file
(common/workload.py stream_workload), the frontend holding only those submitted and not yet written
(common/frontend.py), the finished ones journaled, their rows appended and sorted into jobs.csv at the end
(common/results.py StreamedResults). The jobs, the replay and the results files are those of the same
jobs built and replayed as a list, byte for byte."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from aviary.common.frontend import FrontendCore
from aviary.common.journal import Journal
from aviary.common.messages import JobDone
from aviary.common.model import JobSpec
from aviary.common.results import SUMMARY_JSON, StreamedResults, write_results
from aviary.common.trace import read_trace
from aviary.common.workload import WorkloadError, build_workload, stream_workload
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import policy_cluster
from aviary.launch.replay.run import job_records

TRACE = Path(__file__).resolve().parents[1] / "experiments" / "traces" / "google_10k.tr"


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample's first 600 jobs (a comment line kept: line numbers count it)."""
    path = tmp_path_factory.mktemp("trace") / "small.tr"
    lines = TRACE.read_text().splitlines(keepends=True)
    data = [line for line in lines if line.strip() and not line.startswith("#")]
    path.write_text("# a comment\n" + "".join(data[:600]))
    return path


SETTINGS = [
    {"jobs": 300, "start": 0, "load": 0.8, "nodes": 200},
    {"jobs": 250, "load": 0.5, "nodes": 50, "seed": 3},  # a seeded random start
    {"jobs": 200, "sample": "random", "load": 0.9, "nodes": 100, "seed": 7},
    {"jobs": 100, "start": 17, "keep_arrivals": True, "time_scale": 1000.0, "nodes": 10},
    {"load": 0.7, "nodes": 40, "task_scale": 0.05, "misestimate": (0.5, 2.0), "seed": 1},
    {"jobs": 80, "start": 5, "load": 0.8, "nodes": 30, "slots": 2, "reference_nodes": 500},
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_the_stream_yields_the_jobs_build_workload_builds(small_trace: Path, settings: dict) -> None:
    listed = build_workload(read_trace(small_trace), **settings)
    stream = stream_workload(small_trace, **settings)
    assert list(stream) == listed
    assert list(stream) == listed  # every iteration reads the file again, the same
    assert (stream.count, stream.tasks) == (len(listed), sum(j.tasks for j in listed))
    assert stream.work == math.fsum(math.fsum(j.durations) for j in listed)
    assert stream.last_submit == listed[-1].submit


def test_a_stream_needs_the_trace_in_submit_order(tmp_path: Path) -> None:
    path = tmp_path / "unsorted.tr"
    path.write_text("0 1 5 5\n10 1 5 5\n3 2 4 4 4\n")
    with pytest.raises(
        WorkloadError, match=r"unsorted.tr:3: a streamed replay needs the trace in submit order"
    ):
        stream_workload(path, load=0.5)


def test_the_stream_says_what_build_workload_says(small_trace: Path) -> None:
    with pytest.raises(WorkloadError, match="asked for 601 jobs but the trace has only 600"):
        stream_workload(small_trace, jobs=601, load=0.5)
    with pytest.raises(WorkloadError, match=r"above the limit of 1e\+09 s"):
        stream_workload(small_trace, jobs=10, keep_arrivals=True, time_scale=1e-9)


def replayed(
    policy: str, jobs: object, out: Path, nodes: int, streamed: bool
) -> tuple[bytes, dict, FrontendCore]:
    cluster = policy_cluster(policy, nodes=nodes, schedulers=2, seed=4, bind_ports=False)
    sink = StreamedResults(out, policy, chunk=37) if streamed else None
    with Journal(out, {"policy": policy}, sink=sink, sync=False) as journal:
        outcome = simulate(cluster, jobs, journal=journal, progress=lambda fe, now: None, progress_every=500)
        journal.take()
        fe = outcome.frontend
        common = {
            "runtime": "sim",
            "nodes": nodes,
            "slots": 1,
            "wall_seconds": 0.0,
            "messages": outcome.messages,
        }
        if sink is not None:
            held = len(fe.times)
            sink.add_unfinished(fe)
            work = math.fsum(math.fsum(j.durations) for j in jobs)  # type: ignore[attr-defined]
            sink.write(task_seconds=work, counters=outcome.counters, **common)
            assert held == 0  # every job finished and was written: the frontend forgot them all
        else:
            work = math.fsum(math.fsum(j.durations) for j in jobs)  # type: ignore[attr-defined]
            write_results(
                out,
                job_records(fe, policy),
                policy=policy,
                task_seconds=work,
                counters=outcome.counters,
                **common,
            )
    return (out / "jobs.csv").read_bytes(), json.loads((out / SUMMARY_JSON).read_text()), fe


@pytest.mark.parametrize("policy", ["sparrow", "hawk", "eagle"])
def test_a_replay_of_the_stream_is_the_replay_of_the_list(
    small_trace: Path, tmp_path: Path, policy: str
) -> None:
    settings = {"jobs": 150, "start": 0, "load": 0.9, "nodes": 60}
    csv_a, summary_a, _ = replayed(
        policy, build_workload(read_trace(small_trace), **settings), tmp_path / "a", 60, False
    )
    stream = stream_workload(small_trace, **settings)
    csv_b, summary_b, fe = replayed(policy, stream, tmp_path / "b", 60, True)
    assert csv_a == csv_b
    assert summary_a == summary_b
    assert fe.finished == fe.total == 150 and not fe.finish_order and fe.released == 150
    assert not (tmp_path / "b" / ".jobs.csv.rows").exists()
    assert not list((tmp_path / "b").glob(".jobs.csv.run*"))


def jobs_of(n: int, seed: int) -> list[JobSpec]:
    rng = random.Random(seed)
    t = 0.0
    out = []
    for i in range(n):
        t += rng.choice([0.0, 0.5, 1.0])
        out.append(
            JobSpec(i, t, [rng.uniform(0.1, 3.0) for _ in range(rng.randint(1, 3))], 1.0, rng.random() < 0.3)
        )
    return out


def drive(fe: FrontendCore, steps: int, seed: int) -> None:
    """Submissions and finishes of ``steps`` rounds, some jobs left unfinished, some never submitted."""
    rng = random.Random(seed)
    fe.begin(0.0)
    now = 0.0
    for _ in range(steps):
        now += 0.5
        for e in fe.on_timer(now, "submit"):
            msg = getattr(e, "msg", None)
            if msg is not None and rng.random() < 0.7:
                fe.on_message(now + rng.random(), e.to, JobDone(msg.job_id, rng.random() / 10))  # type: ignore[attr-defined]


def test_unfinished_and_never_submitted_jobs_are_rows_as_in_write_results(tmp_path: Path) -> None:
    jobs = jobs_of(60, 1)
    route = lambda job, n: f"s{n % 2}"  # noqa: E731
    listed = FrontendCore("fe", jobs, route)
    drive(listed, 20, 2)
    write_results(
        tmp_path / "a",
        job_records(listed, "p"),
        policy="p",
        runtime="sim",
        nodes=3,
        slots=1,
        wall_seconds=1.0,
    )
    streamed = FrontendCore("fe", iter(jobs), route, total=len(jobs))
    drive(streamed, 20, 2)
    sink = StreamedResults(tmp_path / "b", "p", chunk=5)
    with Journal(tmp_path / "b", {}, sink=sink, sync=False) as journal:
        journal.note(streamed)
        journal.take()
    assert streamed.unfinished() == listed.unfinished()
    sink.add_unfinished(streamed)
    sink.write(runtime="sim", nodes=3, slots=1, wall_seconds=1.0)
    for name in ("jobs.csv", SUMMARY_JSON):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    summary = json.loads((tmp_path / "b" / SUMMARY_JSON).read_text())
    assert 0 < summary["finished"] < summary["jobs"] == 60


def test_a_stream_out_of_order_or_without_its_total_is_refused() -> None:
    jobs = jobs_of(5, 3)
    with pytest.raises(ValueError, match="needs its total"):
        FrontendCore("fe", iter(jobs), lambda j, n: "s")
    fe = FrontendCore("fe", iter([jobs[0], jobs[3], jobs[1]]), lambda j, n: "s", total=3)
    fe.begin(0.0)
    with pytest.raises(ValueError, match="not in submit order"):
        fe.on_timer(100.0, "submit")


@pytest.mark.parametrize("policy", ["sparrow", "", "a,b", 'q"uote', "line\nend", " spaced "])
def test_jobs_csv_rows_are_what_the_csv_module_writes(policy: str) -> None:
    """jobs.csv's rows are formatted directly (results._row): the csv module's rows, byte for byte."""
    import csv
    import io

    from aviary.common.results import JOBS_HEADER, JobRecord, _jobs_csv_text

    rng = random.Random(5)
    records = []
    for i in range(300):
        submit = rng.choice([0, 0.0, rng.uniform(0, 1e6), 1e9])
        first = rng.choice([None, submit + rng.random()])
        finish = rng.choice([None, submit + rng.uniform(0, 1e4)])
        records.append(
            JobRecord(i, rng.choice(["short", "long"]), rng.randint(1, 10**6), submit, first, finish, policy)
        )
    records.append(JobRecord(300, "short", 1, 2.5, policy=""))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(JOBS_HEADER)
    fmt = lambda x: "" if x is None else f"{x:.6f}"  # noqa: E731
    for r in records:
        w.writerow(
            (
                r.job_id,
                r.cls,
                r.tasks,
                fmt(r.submit),
                fmt(r.first_start),
                fmt(r.finish),
                fmt(r.jct),
                r.policy or "p",
            )
        )
    assert _jobs_csv_text(records, "p") == buf.getvalue()


@pytest.mark.parametrize("policy", ["eagle", "hawk"])
def test_dropping_quiet_channels_changes_nothing(
    small_trace: Path, tmp_path: Path, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulator drops the channels of held updates whose members have all been handed everything
    (launch/drivers/sim.py Simulator._prune_channels): a replay that sweeps at every new channel is the
    one that never sweeps (pure Python; the compiled build reads its own constant, compared with the
    pure one by tests/test_speedups.py)."""
    from aviary.launch.drivers import sim

    settings = {"jobs": 150, "start": 0, "load": 0.9, "nodes": 60}
    jobs = build_workload(read_trace(small_trace), **settings)
    monkeypatch.setattr(sim, "CHANNELS_PRUNED_AT", 10**9)
    kept = replayed(policy, jobs, tmp_path / "kept", 60, False)
    monkeypatch.setattr(sim, "CHANNELS_PRUNED_AT", 1)
    pruned = replayed(policy, jobs, tmp_path / "pruned", 60, False)
    assert kept[:2] == pruned[:2]


def test_aviary_replay_streams_a_big_trace_to_the_results_of_the_list(tmp_path: Path, monkeypatch) -> None:
    """``aviary replay --stream`` (and, without the flag, a trace file above STREAM_BYTES) reads the jobs
    as the replay advances and writes the same jobs.csv and summary as the replay of the list (but its
    wall time, the provenance of jobs it never held and the flag itself), without a task table; where it
    cannot stream it says so in one line."""
    from aviary.launch.cli.main import main
    from aviary.launch.replay import jobs as replay_jobs

    flags = ["replay", "--runtime", "sim", "--policy", "eagle", "--nodes", "200", "--jobs", "400", "--quiet"]
    assert main([*flags, "--stream", "--out", str(tmp_path / "s")]) == 0
    assert main([*flags, "--out", str(tmp_path / "l")]) == 0
    assert (tmp_path / "s" / "jobs.csv").read_bytes() == (tmp_path / "l" / "jobs.csv").read_bytes()
    assert not (tmp_path / "s" / "tasks.csv").exists() and (tmp_path / "l" / "tasks.csv").exists()
    a, b = (json.loads((tmp_path / d / SUMMARY_JSON).read_text()) for d in "sl")
    assert a["extra"].pop("streamed") is True and a["workload"]["jobs"].pop("streamed") is True
    for s in (a, b):
        for key in ("wall_seconds", "workload"):
            s.pop(key)
        for key in ("command", "events_per_s"):
            s["extra"].pop(key)
    assert a == b
    monkeypatch.setattr(replay_jobs, "STREAM_BYTES", 1000)  # the bundled sample is "big" now
    assert main([*flags, "--out", str(tmp_path / "auto")]) == 0
    assert json.loads((tmp_path / "auto" / SUMMARY_JSON).read_text())["extra"]["streamed"] is True
    assert main([*flags, "--no-stream", "--out", str(tmp_path / "off")]) == 0
    assert "streamed" not in json.loads((tmp_path / "off" / SUMMARY_JSON).read_text())["extra"]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--runtime", "real"], "--stream: only for --runtime sim"),
        (["--runtime", "sim", "--policy", "tetris"], "--stream: only for a Google-format trace"),
    ],
)
def test_where_a_replay_cannot_stream_it_says_so_in_one_line(flags, says, capsys) -> None:
    from aviary.launch.cli.main import main

    assert main(["replay", "--stream", *flags, "--jobs", "10"]) == 2
    assert says in capsys.readouterr().err
