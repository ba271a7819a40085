"""``aviary trace convert google-2011`` on events generated from the 2011 schema (v2.1) for jobs whose
truth is known (:mod:`aviary.common.traces.fake2011`): converting gives back exactly those jobs, in submit
order; open jobs are dropped or cut; a bad row is one line (exit 2) or skipped and counted."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aviary.common.trace import format_job, iter_trace, read_trace
from aviary.common.traces.fake2011 import TrueJob, TrueTask, event_rows, expected, random_jobs, write_parts
from aviary.common.traces.google2011 import EVICT, FAIL, KILL, LOST, WINDOW_START, Counts, convert_2011
from aviary.launch.cli.main import main


def lines(path: Path) -> list[str]:
    return [format_job(j) for j in iter_trace(path)]


def truth(jobs: list[TrueJob]) -> list[str]:
    return [format_job(expected(j)) for j in sorted(jobs, key=lambda j: j.submit_us)]


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[TrueJob]]:
    folder = tmp_path_factory.mktemp("g2011")
    jobs = list(random_jobs(random.Random(7), 400))
    write_parts(folder, event_rows(jobs), rows_per_part=1000)
    return folder, jobs


def test_convert_gives_back_the_true_jobs_in_submit_order(
    month: tuple[Path, list[TrueJob]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, jobs = month
    assert len(list((folder / "task_events").iterdir())) > 3  # several parts
    out = tmp_path / "g.tr"
    argv = [
        "trace",
        "convert",
        "google-2011",
        str(folder),
        "--out",
        str(out),
        "--quiet",
        "--sort-buffer",
        "37",
    ]
    assert main(argv) == 0
    assert lines(out) == truth(jobs)
    text = capsys.readouterr().out
    assert "400 jobs" in text and "attempts redone" in text
    plain = tmp_path / "p.tr"
    assert main([*argv[:4], "--out", str(plain), "--quiet", "--plain"]) == 0
    assert [format_job(j, plain=True) for j in read_trace(plain)] == [
        format_job(expected(j), plain=True) for j in jobs
    ]


def _without_last_finish(folder: Path, out: Path, jobs: list[TrueJob]) -> TrueJob:
    """A copy of ``folder`` whose last job never ends (its FINISH events dropped): the last one submitted."""
    last = max(jobs, key=lambda j: j.submit_us)
    for kind in ("job_events", "task_events"):
        (out / kind).mkdir(parents=True)
        for part in (folder / kind).iterdir():
            rows = gzip.decompress(part.read_bytes()).decode().splitlines()
            kept = [
                r
                for r in rows
                if not (
                    r.split(",")[2] == str(last.jid) and r.split(",")[3 if kind == "job_events" else 5] == "4"
                )
            ]
            with gzip.open(out / kind / part.name, "wt") as f:
                f.write("".join(r + "\n" for r in kept))
    return last


def test_open_jobs_are_dropped_or_cut(month: tuple[Path, list[TrueJob]], tmp_path: Path) -> None:
    folder, jobs = month
    last = _without_last_finish(folder, tmp_path / "open", jobs)
    counts = Counts()
    got = list(convert_2011([tmp_path / "open"], counts=counts))
    assert counts.jobs_open_dropped == 1 and len(got) == len(jobs) - 1
    assert str(last.jid) not in {j.name for j in got}
    counts = Counts()
    cut = {j.name: j for j in convert_2011([tmp_path / "open"], open_jobs="cut", counts=counts)}
    assert counts.jobs_open_cut == 1 and len(cut) == len(jobs)
    job = cut[str(last.jid)]
    assert job.submit == last.submit_us / 1e6 and job.tasks == len(last.tasks)
    assert all(d > 0 for d in job.durations)  # still running: cut at the trace's last timestamp


def test_a_job_from_before_the_window(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    (folder / "job_events").mkdir(parents=True)
    (folder / "task_events").mkdir()
    job_rows = ["0,,1,0,u,2,n,l", f"{WINDOW_START + 5_000_000},,1,4,u,2,n,l"]
    task_rows = [
        "0,,1,0,,0,u,2,9,0.5,0.25,0,0",
        "0,,1,0,3,1,u,2,9,,,,",
        f"{WINDOW_START + 5_000_000},,1,0,3,4,u,2,9,,,,",
    ]
    with gzip.open(folder / "job_events" / "part-00000-of-00001.csv.gz", "wt") as f:
        f.write("\n".join(job_rows) + "\n")
    with gzip.open(folder / "task_events" / "part-00000-of-00001.csv.gz", "wt") as f:
        f.write("\n".join(task_rows) + "\n")
    counts = Counts()
    assert list(convert_2011([folder], counts=counts)) == [] and counts.jobs_open_dropped == 1
    (job,) = convert_2011([folder], open_jobs="cut")
    assert (job.submit, job.durations, job.cpu, job.mem, job.priority) == (600.0, [5.0], 0.5, 0.25, 9)


def test_bad_row_is_one_line_or_skipped(
    month: tuple[Path, list[TrueJob]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = month
    bad = tmp_path / "bad"
    for kind in ("job_events", "task_events"):
        (bad / kind).mkdir(parents=True)
        for part in (folder / kind).iterdir():
            (bad / kind / part.name).write_bytes(part.read_bytes())
    part = sorted((bad / "task_events").iterdir())[1]
    rows = gzip.decompress(part.read_bytes()).decode().splitlines()
    fields = rows[2].split(",")
    fields[5] = "9"
    rows[2] = ",".join(fields)
    with gzip.open(part, "wt") as f:
        f.write("\n".join(rows) + "\n")
    out = tmp_path / "o.tr"
    assert main(["trace", "convert", "google-2011", str(bad), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"aviary trace: error: {part}:3: field 'event type': must be in 0..8, got 9"
    assert not out.exists() and not list(tmp_path.glob(".o.tr*"))
    assert (
        main(["trace", "convert", "google-2011", str(bad), "--out", str(out), "--quiet", "--skip-bad"]) == 0
    )
    assert "bad rows skipped: 1 (1 in 'event type')" in capsys.readouterr().out


attempt = st.tuples(st.sampled_from((EVICT, FAIL, KILL, LOST)), st.integers(1, 10**7))
task = st.builds(
    TrueTask,
    duration_us=st.integers(0, 10**9),
    cpu=st.floats(0, 1).map(lambda x: round(x, 4)),
    mem=st.floats(0, 1).map(lambda x: round(x, 4)),
    priority=st.integers(0, 11),
    redo=st.lists(attempt, max_size=3).map(tuple),
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 10**7), st.lists(task, min_size=1, max_size=4)), min_size=1, max_size=6)
)
@example(  # job 1 ends in the microsecond job 2 is submitted: its end comes first in job_events
    [(1, [TrueTask(1, 0.0, 0.0, 0, ())]), (1, [TrueTask(0, 0.0, 0.0, 0, ())])]
)
def test_random_event_sequences(
    tmp_path_factory: pytest.TempPathFactory, drawn: list[tuple[int, list[TrueTask]]]
) -> None:
    t = WINDOW_START
    jobs = []
    for k, (gap, tasks) in enumerate(drawn):
        t += gap
        jobs.append(TrueJob(jid=k + 1, submit_us=t, sched_class=k % 4, tasks=tuple(tasks)))
    folder = tmp_path_factory.mktemp("h")
    write_parts(folder, event_rows(jobs), rows_per_part=7, level=1)
    got = sorted(convert_2011([folder]), key=lambda j: (j.submit, int(j.name or 0)))
    assert [format_job(j) for j in got] == truth(jobs)
