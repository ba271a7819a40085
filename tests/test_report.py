"""``aviary report``: finished runs, or a sweep, as one self-contained HTML page (issue 29); its figures
keep their legends off the data, draw one plot per resource with over-allocation named, and split short
from long jobs where the workload has classes (issue 48)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from aviary.launch.cli.main import main
from aviary.launch.results.report import Page as ReportPage
from aviary.launch.results.report import build_report
from aviary.launch.results.report_figures import OVER_ALLOCATED, RESOURCES, legend_places, utilization

COMMON = ["replay", "--runtime", "sim", "--workload", "tpch", "--jobs", "8", "--nodes", "6", "--quiet"]
GOOGLE = ["replay", "--runtime", "sim", "--workload", "google", "--jobs", "40", "--nodes", "10", "--quiet"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """TPC-H DAGs under DRF (which over-allocates disk and network: it counts cores and memory) and
    Tetris, and Google trace jobs (short and long) under Sparrow and Eagle."""
    folder = tmp_path_factory.mktemp("runs")
    for policy in ("drf", "tetris"):
        assert main([*COMMON, "--policy", policy, "--out", str(folder / policy)]) == 0
    for policy in ("sparrow", "eagle"):
        assert main([*GOOGLE, "--policy", policy, "--out", str(folder / policy)]) == 0
    return folder


class Page(HTMLParser):
    """What a browser would fetch from the page (scripts, images, styles) and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith(("data:", "#")):
                self.fetched.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text())
    return page


def test_two_runs_make_one_page_that_needs_no_network_with_their_figures_and_the_comparison(tmp_path, runs):
    out = tmp_path / "report.html"
    assert main(["report", str(runs / "drf"), str(runs / "tetris"), "--html", str(out)]) == 0
    page = read_page(out)
    assert page.fetched == []  # Bokeh's JavaScript and the data are in the page
    text = " ".join(" ".join(page.text).split())
    assert "Each run over drf" in text and "tetris / drf" in text  # compare's table
    assert f"aviary replay {' '.join(COMMON[1:])} --policy drf --out {runs / 'drf'}" in text
    assert "TPC-H" in text or "tpch" in text  # the workload's provenance
    html = out.read_text()
    for title in ("jobs over time", "job completion time, CDF", "cores: utilization over time"):
        assert title in html  # the figures' titles, in Bokeh's JSON
    tetris = json.loads((runs / "tetris" / "summary.json").read_text())
    assert f"{tetris['finished']}/{tetris['jobs']}" in text


def test_a_sweep_folder_is_one_page_with_its_table_and_figures(tmp_path):
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "sweep.csv").write_text("policy,load,mean_jct\ndrf,0.8,12.5\ntetris,0.8,6.25\n")
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    (folder / "mean_jct.png").write_bytes(png)
    out = tmp_path / "sweep.html"
    assert main(["report", str(folder), "--html", str(out)]) == 0
    page = read_page(out)
    text = " ".join(page.text)
    assert page.fetched == [] and "tetris" in text and "6.25" in text
    assert re.search(r"data:image/png;base64,[A-Za-z0-9+/=]{20}", out.read_text())


def test_a_folder_that_holds_no_run_is_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{tmp_path}: not a results folder" in err


def names(page: ReportPage) -> list[str]:
    return [f.name for f in page.figures()]


@pytest.mark.parametrize("pair", [("drf", "tetris"), ("sparrow", "eagle")])
def test_no_legend_sits_on_the_data_and_every_figure_takes_its_cell_s_width(runs, pair):
    """Each figure's legend is in the panel to the right of its plot area, none over it (``center``)."""
    page = build_report([runs / p for p in pair])
    assert page.figures()
    for fig in page.figures():
        places = legend_places(fig)
        assert places["center"] == 0, (fig.name, places)
        if fig.name != "slo-attainment":
            assert places == {"center": 0, "left": 0, "right": 1, "above": 0, "below": 0}, fig.name
            assert fig.legend[0].click_policy == "hide"
        assert fig.sizing_mode == "stretch_width" and fig.width_policy != "fixed"


def test_utilization_is_one_small_plot_per_resource_with_one_line_per_run(runs):
    page = build_report([runs / "drf", runs / "tetris"])
    plots = [f for f in page.figures() if f.name.startswith("utilization-")]
    assert [f.name for f in plots] == [f"utilization-{r}" for r in RESOURCES]
    for fig in plots:
        lines = [r for r in fig.renderers if type(r.glyph).__name__ == "Line"]
        assert sorted(r.name for r in lines) == ["drf", "tetris"]
        assert fig.y_range.start == 0 and fig.y_range.end >= 110  # the 100 % line is always in view
        assert any(type(m).__name__ == "Span" and m.location == 100 for m in fig.center)


def _summary(peak: float, held: float) -> dict:
    series = [0.5, peak, 0.7]
    return {
        "utilization_over_time": {"t": [1.0, 2.0, 3.0], **dict.fromkeys(RESOURCES, series)},
        "resource_allocation": dict.fromkeys(RESOURCES, held),
    }


def over_notes(fig) -> list[str]:
    return [m.text for m in fig.above if getattr(m, "name", None) == OVER_ALLOCATED]


def bands(fig) -> int:
    return sum(type(m).__name__ == "BoxAnnotation" and m.name == OVER_ALLOCATED for m in fig.center)


@pytest.mark.parametrize(("peak", "held", "said"), [(1.2, 0.9, "peak 120 %"), (0.8, 4.5, "held 450 %")])
def test_a_run_above_100_percent_is_labelled_over_allocated(peak, held, said):
    """A window of use above 100 %, or a mean allocation above it (YARN-like baselines count cores and
    memory only), shades the plot above 100 % and names the run over the plot; a run within capacity
    does not."""
    figs = utilization(["yarn", "packer"], [_summary(peak, held), _summary(0.9, 0.95)])
    assert len(figs) == len(RESOURCES)
    for fig in figs:
        assert bands(fig) == 1
        [note] = over_notes(fig)
        assert note.startswith(OVER_ALLOCATED) and "yarn" in note and said in note and "packer" not in note
        assert fig.y_range.end >= 100 * peak  # the peak is in view
    for fig in utilization(["packer"], [_summary(0.9, 0.95)]):
        assert bands(fig) == 0 and over_notes(fig) == []


def test_a_real_over_allocating_run_is_labelled_on_the_page_and_in_its_table(tmp_path, runs):
    drf = json.loads((runs / "drf" / "summary.json").read_text())
    over = [r for r, h in drf["resource_allocation"].items() if h > 1.0]
    assert over  # DRF counts cores and memory: disk and network go above 100 %
    page = build_report([runs / "drf", runs / "tetris"])
    labelled = {f.name.removeprefix("utilization-") for f in page.figures() if over_notes(f)}
    assert labelled == set(over)
    out = tmp_path / "r.html"
    assert main(["report", str(runs / "drf"), "--html", str(out)]) == 0
    text = " ".join(" ".join(read_page(out).text).split())
    for r in over:  # the run's resources table: used, held, over-allocated
        assert re.search(rf"{r} [\d.]+ % [\d,.]+ % {OVER_ALLOCATED}", text), r
    assert "Shaded above 100 %: over-allocated" in text


def test_short_and_long_jobs_are_apart_in_the_figures_and_each_run_s_table_where_the_workload_has_classes(
    tmp_path, runs
):
    page = build_report([runs / "sparrow", runs / "eagle"])
    assert {"jct-cdf-all", "jct-cdf-short", "jct-cdf-long"} <= set(names(page))
    out = tmp_path / "r.html"
    assert main(["report", str(runs / "sparrow"), str(runs / "eagle"), "--html", str(out)]) == 0
    text = " ".join(" ".join(read_page(out).text).split())
    for policy in ("sparrow", "eagle"):
        jct = json.loads((runs / policy / "summary.json").read_text())["jct"]
        assert jct["long"]["count"] > 0
        for cls in ("short", "long", "all"):  # each run's table: a row per class
            st = jct[cls]
            assert f"{cls} {st['count']:,} {st['p50']:,.3f} {st['p90']:,.3f}" in text, (policy, cls)
    # TPC-H DAGs have no short/long classes: one CDF of all jobs, one row
    page = build_report([runs / "drf"])
    assert [n for n in names(page) if n.startswith("jct-cdf-")] == ["jct-cdf-all"]
    out = tmp_path / "dag.html"
    assert main(["report", str(runs / "drf"), "--html", str(out)]) == 0
    text = " ".join(" ".join(read_page(out).text).split())
    assert "class jobs p50 p90 p99 mean all 8 " in text and "short" not in text.split("class jobs")[1][:40]
