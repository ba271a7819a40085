"""The Aviary trace format (its KEY=VALUE extras read back exactly), ``aviary trace generate`` (seeded,
synthetic, the source's laws) and ``aviary trace info``; the replay's ``--demands trace``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aviary.common.dags import build_dag_workload
from aviary.common.resources import DEFAULT_MACHINE
from aviary.common.trace import TraceError, TraceJob, format_job, iter_trace, read_trace
from aviary.common.traces.generate import generate_like
from aviary.common.traces.stats import trace_stats
from aviary.launch.cli.main import main

GOOGLE = Path(__file__).resolve().parents[1] / "experiments" / "traces" / "google_10k.tr"

names = st.text("abcXYZ019_-.:/", min_size=1, max_size=8)
durations = st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=5)


@st.composite
def jobs(draw: st.DrawFn) -> TraceJob:
    ds = draw(durations)
    return TraceJob(
        line=1,
        submit=draw(st.floats(0, 1e8, allow_nan=False)),
        durations=ds,
        mean=math.fsum(ds) / len(ds),
        cpu=draw(st.none() | st.floats(0, 1)),
        mem=draw(st.none() | st.floats(0, 1)),
        priority=draw(st.none() | st.integers(0, 11)),
        sched_class=draw(st.none() | st.integers(0, 3)),
        name=draw(st.none() | names),
        after=tuple(draw(st.lists(names, max_size=3))),
        gang=draw(st.booleans()),
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(jobs(), min_size=1, max_size=5), st.booleans())
def test_format_reads_back_exactly(
    tmp_path_factory: pytest.TempPathFactory, js: list[TraceJob], plain: bool
) -> None:
    path = tmp_path_factory.mktemp("f") / "t.tr"
    path.write_text("# aviary-trace 1\n" + "".join(format_job(j, plain=plain) + "\n" for j in js))
    back = list(iter_trace(path))
    for a, b in zip(js, back, strict=True):
        if plain:  # the Hawk/Eagle fields only
            a = TraceJob(a.line, a.submit, a.durations, a.mean)
        assert (
            b.submit,
            b.durations,
            b.mean,
            b.cpu,
            b.mem,
            b.priority,
            b.sched_class,
            b.name,
            b.after,
            b.gang,
        ) == (a.submit, a.durations, a.mean, a.cpu, a.mem, a.priority, a.sched_class, a.name, a.after, a.gang)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("0 1 5 5 cpu=x", "t.tr:1: field 'cpu': not a number"),
        ("0 1 5 5 cpu=2000", "t.tr:1: field 'cpu': 2000 is above the limit"),
        ("0 1 5 5 color=red", "t.tr:1: field 'color': unknown"),
        ("0 1 5 5 prio=1.5", "t.tr:1: field 'prio': not an integer"),
        ("0 1 5 5 gang=2", "t.tr:1: field 'gang': must be in 0..1"),
        ("0 1 5 5 job=a<b", "t.tr:1: field 'job': not a job id"),
        ("0 2 5 5 cpu=1", "t.tr:1: field 'd_2': not a number: 'cpu=1'"),
    ],
)
def test_bad_extras_are_one_line(tmp_path: Path, line: str, needle: str) -> None:
    path = tmp_path / "t.tr"
    path.write_text(line + "\n")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_generate_is_seeded_synthetic_and_like_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "syn.tr"
    assert (
        main(
            [
                "trace",
                "generate",
                "--like",
                str(GOOGLE),
                "--jobs",
                "20000",
                "--seed",
                "3",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    again = list(generate_like(GOOGLE, 50, seed=3))
    assert [format_job(j) for j in list(iter_trace(out))[:50]] == [format_job(j) for j in again]
    assert "# SYNTHETIC" in out.read_text()[:500]
    src, syn = trace_stats(GOOGLE), trace_stats(out)
    assert syn.synthetic and not src.synthetic and syn.jobs == 20000
    assert syn.tasks / syn.jobs == pytest.approx(src.tasks / src.jobs, rel=0.1)
    assert syn.long_jobs / syn.jobs == pytest.approx(src.long_jobs / src.jobs, rel=0.1)
    assert syn.duration_quantile(0.5) == pytest.approx(src.duration_quantile(0.5), rel=0.1)
    assert syn.span / syn.jobs == pytest.approx(src.span / src.jobs, rel=0.1)
    assert syn.offered_load(10000, 1) == pytest.approx(src.offered_load(10000, 1), rel=0.15)


def test_info_gives_the_bundled_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figure = tmp_path / "g.png"
    assert main(["trace", "info", str(GOOGLE), "--json", "--plot", str(figure)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["jobs"], data["tasks"], data["long_jobs"], data["largest_job"]) == (10000, 312558, 905, 4950)
    assert data["submit_span_s"] == 93526
    assert data["long_task_seconds_share"] == pytest.approx(0.786, abs=5e-4)
    assert data["task_duration_s"]["p50"] == pytest.approx(
        314.5, rel=data["duration_quantile_relative_error"]
    )
    assert data["offered_load"]["load"] == pytest.approx(0.47, abs=0.005)  # ~4,700 nodes of 10,000
    assert figure.stat().st_size > 10_000


def test_bad_trace_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "b.tr"
    bad.write_text("0 1 5 5\n1 1 5 5 mem=-1\n")
    assert main(["trace", "info", str(bad), "--no-plot"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"aviary trace: error: {bad}:2: field 'mem': must not be negative, got -1"


def test_demands_trace_gives_the_requests(tmp_path: Path) -> None:
    path = tmp_path / "d.tr"
    path.write_text("0 2 10 8 12 cpu=0.25 mem=0.5\n5 1 20 20 cpu=0 mem=0.125 prio=9\n")
    specs = build_dag_workload("google", read_trace(path), keep_arrivals=True, demands="trace")
    m = DEFAULT_MACHINE
    assert specs[0].stages[0].demand.cores == 0.25 * m.cores and specs[0].stages[0].demand.mem == 0.5 * m.mem
    assert specs[1].stages[0].demand.cores == pytest.approx(1e-3 * m.cores)  # a 0 request: MIN_SHARE
