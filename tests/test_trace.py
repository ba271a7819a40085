"""Trace reading: the bundled Google sample's published figures, and one-line errors for bad lines."""

import itertools
import math
import statistics
import time
from pathlib import Path

import pytest

from aviary.common.model import GOOGLE_CUTOFF
from aviary.common.trace import TraceError, TraceJob, read_trace

BUNDLED = Path(__file__).resolve().parent.parent / "experiments" / "traces" / "google_10k.tr"


@pytest.fixture(scope="module")
def google() -> list[TraceJob]:
    return read_trace(BUNDLED)


def test_bundled_trace_matches_readme_figures(google):
    assert len(google) == 10_000
    assert sum(j.tasks for j in google) == 312_558
    assert max(j.tasks for j in google) == 4_950
    assert sum(j.mean >= GOOGLE_CUTOFF for j in google) == 905
    total = math.fsum(j.task_seconds for j in google)
    assert total == pytest.approx(4.3993e8, rel=1e-3)
    long_share = math.fsum(j.task_seconds for j in google if j.mean >= GOOGLE_CUTOFF) / total
    assert long_share == pytest.approx(0.786, abs=0.0005)
    assert google[-1].submit - google[0].submit == pytest.approx(93_526)
    assert statistics.median(d for j in google for d in j.durations) == pytest.approx(314.5, abs=0.05)


def test_bundled_trace_is_sorted_and_numbered(google):
    assert [j.line for j in google] == list(range(1, 10_001))
    assert all(a.submit <= b.submit for a, b in itertools.pairwise(google))
    assert all(j.mean == pytest.approx(math.fsum(j.durations) / j.tasks, rel=1e-9) for j in google)


def test_bundled_trace_parses_fast():
    # A regression guard against accidental quadratic parsing (about 0.2 s here), not a benchmark.
    t0 = time.perf_counter()
    read_trace(BUNDLED)
    assert time.perf_counter() - t0 < 5.0


def test_blank_and_comment_lines_are_skipped_and_jobs_sorted_stably(tmp_path):
    path = tmp_path / "t.tr"
    path.write_text("# a comment\n\n5 1 2 2\n  # indented comment\n1 2 1.5 1 2\n5 1 7 7\n\t\n0 1 3 3")
    jobs = read_trace(path)
    assert [(j.line, j.submit) for j in jobs] == [(8, 0.0), (5, 1.0), (3, 5.0), (6, 5.0)]
    assert jobs[1].durations == [1.0, 2.0] and jobs[1].mean == 1.5 and jobs[1].tasks == 2


def test_empty_trace_gives_no_jobs(tmp_path):
    path = tmp_path / "empty.tr"
    path.write_text("# nothing\n\n")
    assert read_trace(path) == []


GOOD = "0 2 1.5 1 2\n"


@pytest.mark.parametrize(
    ("line", "field", "detail"),
    [
        ("3 2 1.5 1", "num_tasks", "expected 2 durations, found 1"),
        ("3 2 1.5 1 2 3", "num_tasks", "expected 2 durations, found 3"),
        ("3", "num_tasks", "missing"),
        ("3 2", "mean_task_duration", "missing"),
        ("x 1 1 1", "submit_time", "not a number: 'x'"),
        ("-1 1 1 1", "submit_time", "must not be negative"),
        ("3 two 1 1", "num_tasks", "not a number"),
        ("3 1.5 1 1", "num_tasks", "not an integer"),
        ("3 0 1", "num_tasks", "must be at least 1"),
        ("3 1 -2 1", "mean_task_duration", "must not be negative"),
        ("3 1 nan 1", "mean_task_duration", "not a finite number"),
        ("3 3 1 1 2.x 3", "d_2", "not a number: '2.x'"),
        ("3 3 1 1 2 -3", "d_3", "must not be negative"),
        ("3 2 1 inf 1", "d_1", "not a finite number"),
        ("3 2 1 1 nan", "d_2", "not a finite number"),
    ],
)
def test_bad_line_names_file_line_and_field(tmp_path, line, field, detail):
    path = tmp_path / "bad.tr"
    path.write_text(GOOD + "# comment\n" + line + "\n" + GOOD)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:3: field '{field}': ")
    assert detail in message


def test_count_mismatch_message_is_exact(tmp_path):
    path = tmp_path / "bad.tr"
    path.write_text("0 3 1 1 1\n")
    with pytest.raises(TraceError, match=r"^.*bad\.tr:1: field 'num_tasks': expected 3 durations, found 2$"):
        read_trace(path)


def test_missing_file_is_one_line(tmp_path):
    path = tmp_path / "nope.tr"
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value).startswith(f"{path}: cannot read trace")
    assert "\n" not in str(info.value)
