"""aviary compare: percentiles normalized to the first run, n/a for empty classes, a PNG chart."""

import pytest
from rich.console import Console

from aviary.common.results import JobRecord, write_results
from aviary.launch.compare import CompareError, compare


def run(out, policy, jcts_short, jcts_long=()):
    recs = [JobRecord(i, "short", 1, 0.0, 0.0, j) for i, j in enumerate(jcts_short)]
    recs += [JobRecord(len(recs) + i, "long", 1, 0.0, 0.0, j) for i, j in enumerate(jcts_long)]
    write_results(out, recs, policy=policy, runtime="sim", nodes=2, slots=1, wall_seconds=0.1)
    return out


def render(table) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def test_ratios_against_the_first_run(tmp_path):
    base = run(tmp_path / "sparrow", "sparrow", [1.0] * 10, [10.0] * 10)
    hawk = run(tmp_path / "hawk", "hawk", [0.5] * 10, [20.0] * 10)
    eagle = run(tmp_path / "eagle", "eagle", [0.25] * 10)  # no long jobs
    table, comp = compare([base, hawk, eagle])
    assert comp.labels == ["sparrow", "hawk", "eagle"]
    assert comp.policies == ["sparrow", "hawk", "eagle"]
    assert comp.base == {
        "short": {"p50": 1.0, "p90": 1.0, "p99": 1.0},
        "long": {"p50": 10.0, "p90": 10.0, "p99": 10.0},
    }
    assert comp.ratios["hawk"] == {
        "short": {"p50": 0.5, "p90": 0.5, "p99": 0.5},
        "long": {"p50": 2.0, "p90": 2.0, "p99": 2.0},
    }
    assert comp.ratios["eagle"]["short"]["p99"] == 0.25
    assert comp.ratios["eagle"]["long"] == {"p50": None, "p90": None, "p99": None}
    text = render(table)
    assert "0.50" in text and "2.00" in text and "0.25" in text and "n/a" in text
    assert "10.000" in text  # the baseline's raw values


def test_missing_base_class_is_na(tmp_path):
    base = run(tmp_path / "a", "sparrow", [1.0, 2.0])
    other = run(tmp_path / "b", "hawk", [1.0, 2.0], [3.0])
    table, comp = compare([base, other])
    assert comp.base["long"]["p50"] is None and comp.ratios["b"]["long"]["p50"] is None
    assert comp.ratios["b"]["short"]["p50"] == 1.0
    assert "n/a" in render(table)


def test_png_is_written(tmp_path):
    base = run(tmp_path / "a", "sparrow", [1.0, 2.0, 3.0], [10.0])
    other = run(tmp_path / "b", "hawk", [0.5, 1.0, 2.0])
    png = tmp_path / "plots" / "cmp.png"
    compare([base, other], png=png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 1000


def test_duplicate_folder_names_get_full_paths(tmp_path):
    a = run(tmp_path / "x" / "run", "sparrow", [1.0])
    b = run(tmp_path / "y" / "run", "hawk", [2.0])
    _, comp = compare([a, b])
    assert comp.labels == [str(a), str(b)]


def test_errors_are_one_line(tmp_path):
    good = run(tmp_path / "good", "sparrow", [1.0])
    (tmp_path / "empty").mkdir()
    with pytest.raises(CompareError) as info:
        compare([good, tmp_path / "empty"])
    assert "summary.json: not found" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(CompareError, match="at least one"):
        compare([])
    with pytest.raises(CompareError, match="at least two"):
        compare([good], png=tmp_path / "one.png")
    table, comp = compare([good])  # a single run is still a table of raw values
    assert comp.ratios == {} and "1.000" in render(table)


def folder(out, policy, jcts):
    """A results folder whose job ``i`` (all short, submitted at 0) takes ``jcts[i]``; None: unfinished."""
    recs = [JobRecord(i, "short", 1, 0.0, 0.0, j) for i, j in jcts.items()]
    write_results(out, recs, policy=policy, runtime="sim", nodes=2, slots=1, wall_seconds=0.1)
    return out


def test_factor_of_improvement_percentiles(tmp_path):
    base = folder(tmp_path / "drf", "drf", {0: 2.0, 1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0, 5: 2.0, 6: 9.0})
    # Job 5 did not finish in the other run and job 6 is not in it; job 7 is not in the baseline.
    other = folder(tmp_path / "carbyne", "carbyne",
                   {0: 1.0, 1: 2.0, 2: 4.0, 3: 0.5, 4: 2.0, 5: None, 7: 1.0})  # fmt: skip
    table, comp = compare([base, other])
    assert comp.factors["carbyne"] == [0.5, 1.0, 1.0, 2.0, 4.0]  # baseline JCT / run JCT
    st = comp.foi["carbyne"]
    assert st.count == 5 and st.note == ""
    assert st.p10 == pytest.approx(0.7)  # h = 0.4: 0.5 + 0.4 * 0.5
    assert st.p50 == 1.0
    assert st.p90 == pytest.approx(3.2)  # h = 3.6: 2 + 0.6 * 2
    assert st.mean == pytest.approx(1.7)
    # Makespan 9 -> 4 and mean JCT 21/7 -> 10.5/6 (over each run's own finished jobs).
    assert comp.totals[0] == {"makespan": 9.0, "mean_jct": 3.0}
    assert comp.total_ratios["carbyne"]["makespan"] == pytest.approx(4 / 9)
    assert comp.total_ratios["carbyne"]["mean_jct"] == pytest.approx(1.75 / 3.0)
    text = render(table)
    assert "FoI" in text and "0.70" in text and "3.20" in text and "1.70" in text
    assert "makespan" in text and "0.44" in text


def test_factor_of_improvement_without_common_jobs_or_jobs_csv(tmp_path):
    base = folder(tmp_path / "a", "drf", {0: 1.0, 1: 2.0})
    disjoint = folder(tmp_path / "b", "tetris", {10: 1.0, 11: 2.0})
    unfinished = folder(tmp_path / "c", "sjf", {0: None, 1: None})
    bare = folder(tmp_path / "d", "graphene", {0: 1.0})
    (bare / "jobs.csv").unlink()  # a summary committed alone
    table, comp = compare([base, disjoint, unfinished, bare])
    assert comp.factors["b"] == [] and comp.foi["b"].count == 0 and comp.foi["b"].note == "no common jobs"
    assert comp.foi["c"].note == "no common jobs" and comp.foi["c"].p50 is None
    assert comp.foi["d"].note == "no jobs.csv in d"
    assert comp.total_ratios["c"]["mean_jct"] is None  # nothing finished
    text = render(table)
    assert "no common jobs" in text and "no jobs.csv in d" in text
    compare([base, disjoint], png=tmp_path / "bars-only.png")  # no factors: the bar chart alone
    assert (tmp_path / "bars-only.png").read_bytes()[:4] == b"\x89PNG"


def test_png_has_the_factor_cdf(tmp_path):
    base = folder(tmp_path / "a", "drf", {i: 1.0 + i for i in range(20)})
    other = folder(tmp_path / "b", "carbyne", {i: 1.0 + (i * 7) % 13 for i in range(20)})
    png = tmp_path / "cmp.png"
    compare([base, other], png=png)
    from matplotlib.image import imread

    height, width = imread(png).shape[:2]
    assert width > 1000 and height == 400  # two panels side by side, 100 dpi
