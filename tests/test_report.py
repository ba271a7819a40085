"""``aviary report``: finished runs, or a sweep, as one self-contained HTML page (issue 29)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from aviary.launch.cli.main import main

COMMON = ["replay", "--runtime", "sim", "--workload", "tpch", "--jobs", "8", "--nodes", "6", "--quiet"]


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


def test_two_runs_make_one_page_that_needs_no_network_with_their_figures_and_the_comparison(tmp_path):
    for policy in ("drf", "tetris"):
        assert main([*COMMON, "--policy", policy, "--out", str(tmp_path / policy)]) == 0
    out = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "drf"), str(tmp_path / "tetris"), "--html", str(out)]) == 0
    page = read_page(out)
    assert page.fetched == []  # Bokeh's JavaScript and the data are in the page
    text = " ".join(" ".join(page.text).split())
    assert "Each run over drf" in text and "tetris / drf" in text  # compare's table
    assert f"aviary replay {' '.join(COMMON[1:])} --policy drf --out {tmp_path / 'drf'}" in text
    assert "TPC-H" in text or "tpch" in text  # the workload's provenance
    html = out.read_text()
    for title in ("jobs over time", "job completion time, CDF", "utilization over time"):
        assert title in html  # the figures' titles, in Bokeh's JSON
    tetris = json.loads((tmp_path / "tetris" / "summary.json").read_text())
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
