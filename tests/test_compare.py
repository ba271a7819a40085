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
