"""System: a real browser opens what Aviary serves or writes for people (issue 29). Selenium drives
Debian's headless Chromium through chromium-driver (both installed by ``scripts/setup-browser.sh``); the
page must draw its figures with no error in the browser's console, and screenshots are written to
``build/screenshots/`` (git-ignored; the report's at a laptop's and a wide window's size, issue 48) for a
person to look at."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aviary.launch.cli.main import main

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "build" / "screenshots"


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium under Selenium; skips (fails in CI) where there is none."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        reason = "no chromium or chromedriver (bash scripts/setup-browser.sh installs them)"
        if os.environ.get("AVIARY_REQUIRE_DOCKER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,2400"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver's path is given: Selenium Manager would try the network to find one.
    session = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))
    try:
        yield session
    finally:
        session.quit()


def errors(browser: Any) -> list[str]:
    """What the page logged as errors (SEVERE) in the browser's console."""
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def aviary(*argv: str) -> tuple[Any, str]:
    """``aviary ARGV`` started in the background, and the dashboard URL it printed."""
    import subprocess
    import sys

    run = subprocess.Popen(
        [sys.executable, "-m", "aviary.launch.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "300"},
    )
    assert run.stdout is not None
    url = next((line.split()[1] for line in run.stdout if line.startswith("dashboard: ")), "")
    if not url:
        run.kill()
        pytest.fail(f"aviary {' '.join(argv)} printed no dashboard URL (exit {run.wait()})")
    return run, url


def status(browser: Any) -> str:
    """The text of the dashboard's status line, "" until the page has it."""
    script = "const d = window.Bokeh && Bokeh.documents[0];"
    script += "const m = d && d.get_model_by_name('status'); return m ? m.text : '';"
    return str(browser.execute_script(script))


SIZES = ((1366, 768), (2560, 1440))
"""A laptop's window and a wide one, where the report is looked at."""

FIGURES_JS = """
const out = [];
for (const d of Bokeh.documents) for (const m of d.all_models) if (m.type === 'Figure') out.push(m.name);
return out;"""

LEGENDS_JS = """
const out = [];
for (const v of Object.values(Bokeh.index)) {
  if (v.model.type !== 'Figure') continue;
  const f = v.frame.bbox;
  const places = [v.model.center, v.model.left, v.model.right, v.model.above, v.model.below];
  for (const m of places.flat()) {
    if (m.type !== 'Legend') continue;
    const b = v.views.find_one(m).bbox;
    out.push({figure: v.model.name, frame: [f.left, f.top, f.right, f.bottom],
              legend: [b.left, b.top, b.right, b.bottom], width: v.bbox.width, height: v.bbox.height});
  }
}
return out;"""

CELLS_JS = """
return [...document.querySelectorAll('.grid > div')].map(c => {
  const r = c.getBoundingClientRect();
  const fig = [...Object.values(Bokeh.index)].find(v => c.contains(v.el));
  return {name: fig ? fig.model.name : '', left: r.left, top: r.top, right: r.right};
});"""


def look_at_report(browser: Any, page: Path, size: tuple[int, int], shots: Path) -> dict[str, Any]:
    """Open ``page`` in a viewport of ``size``, wait until Bokeh has drawn it, check what every size must
    hold (no console error, no sideways scrolling, every figure drawn, no legend over a plot area) and
    keep a screenshot of the first screen and one of the whole page in ``shots`` and ``build/screenshots``;
    return the figures' names, their cells' boxes, the viewport's width and the page's text."""
    from selenium.webdriver.support.ui import WebDriverWait

    width, height = size
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    browser.get(page.as_uri())
    # Bokeh's documents go idle once every view is rendered; each figure draws into canvases of its own
    # (in shadow roots, which a CSS selector does not enter).
    idle = "return window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents.every(d => d.is_idle)"
    WebDriverWait(browser, 30).until(lambda b: b.execute_script(idle))
    figures = browser.execute_script(FIGURES_JS)
    canvases = browser.execute_script(
        "function count(root) {"
        "  let n = root.querySelectorAll('canvas').length;"
        "  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) n += count(el.shadowRoot);"
        "  return n;"
        "}"
        "return count(document);"
    )
    assert canvases >= len(figures)
    assert browser.execute_script("return window.innerWidth") == width
    overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{page.name} at {size}: {overflow} px wider than the window"
    legends = browser.execute_script(LEGENDS_JS)
    assert {x["figure"] for x in legends} >= {f for f in figures if f != "slo-attainment"}
    for x in legends:  # as drawn: beside the plot area, not over it, and inside the figure
        (fl, ft, fr, fb), (ll, lt, lr, lb) = x["frame"], x["legend"]
        apart = lr <= fl or ll >= fr or lb <= ft or lt >= fb
        assert apart, f"{page.name} at {size}: the legend of {x['figure']} covers its plot area: {x}"
        inside = ll >= 0 and lt >= 0 and lr <= x["width"] + 1 and lb <= x["height"] + 1
        assert inside, f"{page.name} at {size}: the legend of {x['figure']} is cut by its figure: {x}"
    assert errors(browser) == []
    cells, text = browser.execute_script(CELLS_JS), browser.find_element("tag name", "body").text
    shots.mkdir(parents=True, exist_ok=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    stem = f"{page.stem}-{width}x{height}"
    assert browser.save_screenshot(str(shots / f"{stem}.png"))
    full = browser.execute_script("return document.documentElement.scrollHeight")
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": full})
    assert browser.save_screenshot(str(shots / f"{stem}-full.png"))
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    for name in (f"{stem}.png", f"{stem}-full.png"):
        shutil.copy(shots / name, SHOTS / name)
    return {
        "figures": figures,
        "cells": cells,
        "width": width,
        "text": text,
    }


def rows(cells: list[dict[str, Any]], prefix: str) -> list[int]:
    """How many figures named ``prefix...`` share each row of the page, top to bottom."""
    tops: dict[int, int] = {}
    for c in cells:
        if c["name"].startswith(prefix):
            tops[round(c["top"])] = tops.get(round(c["top"]), 0) + 1
    return [tops[t] for t in sorted(tops)]


def test_a_report_page_draws_every_figure_at_a_laptop_s_and_a_wide_window_s_size(tmp_path, browser):
    """``aviary report`` on two TPC-H runs (DRF over-allocates disk and network) and on two Google runs
    (short and long jobs), looked at in a 1366x768 and a 2560x1440 window: every figure drawn with no
    console error, no legend on a plot area, no sideways scrolling, the figures' grid across the window
    (the four resources' plots side by side when it is wide), over-allocation named, short and long
    jobs apart; the screenshots are kept."""
    tpch = ["replay", "--runtime", "sim", "--workload", "tpch", "--jobs", "8", "--nodes", "6", "--quiet"]
    google = [
        "replay",
        "--runtime",
        "sim",
        "--workload",
        "google",
        "--jobs",
        "40",
        "--nodes",
        "10",
        "--quiet",
    ]
    for flags, policy in ((tpch, "drf"), (tpch, "tetris"), (google, "sparrow"), (google, "eagle")):
        assert main([*flags, "--policy", policy, "--out", str(tmp_path / policy)]) == 0
    pages = {"report-dag": ("drf", "tetris"), "report-classes": ("sparrow", "eagle")}
    for stem, (first, second) in pages.items():
        out = tmp_path / f"{stem}.html"
        assert main(["report", str(tmp_path / first), str(tmp_path / second), "--html", str(out)]) == 0
    shots = tmp_path / "screenshots"
    resources = ["utilization-cores", "utilization-mem", "utilization-disk", "utilization-net"]
    for size in SIZES:
        dag = look_at_report(browser, tmp_path / "report-dag.html", size, shots)
        assert sorted(dag["figures"]) == sorted(["jobs-over-time", "jct-cdf-all", *resources])
        assert "tetris / drf" in dag["text"]  # the comparison's table
        assert "Shaded above 100 %: over-allocated" in dag["text"] and "over-allocated" in dag["text"]
        right = max(c["right"] for c in dag["cells"])
        assert right >= 0.9 * size[0], f"the figures end at {right} px of {size[0]}"
        assert rows(dag["cells"], "utilization-") == ([4] if size[0] >= 2000 else [2, 2])
        assert rows(dag["cells"], "j") == [2]  # jobs over time and the JCT CDF side by side

        classes = look_at_report(browser, tmp_path / "report-classes.html", size, shots)
        cdfs = ["jct-cdf-all", "jct-cdf-short", "jct-cdf-long"]
        assert sorted(classes["figures"]) == sorted(["jobs-over-time", *cdfs])
        for line in classes["text"].splitlines():
            if line.startswith(("short ", "long ")):
                break
        else:
            raise AssertionError("no run's table has a row for short or long jobs")
        assert rows(classes["cells"], "j") == ([4] if size[0] >= 2000 else [2, 2])
    for size in SIZES:
        for stem in pages:
            assert (SHOTS / f"{stem}-{size[0]}x{size[1]}-full.png").stat().st_size > 10_000


def test_the_live_dashboard_follows_a_real_replay_and_refuses_a_page_without_its_key(tmp_path, browser):
    """``aviary replay --dashboard``: the URL it prints opens a page whose finished count rises while the
    replay runs, with no console error; the same address without the URL's signed session id is
    refused (403)."""
    import re
    import urllib.error
    import urllib.request

    from selenium.webdriver.support.ui import WebDriverWait

    flags = ["--jobs", "100", "--nodes", "20", "--duration", "10s", "--dashboard", "0"]
    run, url = aviary("replay", *flags, "--out", str(tmp_path / "run"))
    try:
        assert url.startswith("http://127.0.0.1:") and "bokeh-session-id=" in url
        for bare in (url.split("?")[0], url[:-4] + "xxxx"):  # no key, or a forged one
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(bare, timeout=10)
            assert refused.value.code == 403
        browser.get(url)

        def finished(b: Any) -> int:
            found = re.search(r"finished (\d+)/100", status(b))
            return int(found.group(1)) if found else -1

        WebDriverWait(browser, 30).until(lambda b: finished(b) >= 0)
        first = finished(browser)
        WebDriverWait(browser, 40).until(lambda b: finished(b) >= first + 10)  # it rises as jobs finish
        assert errors(browser) == []
        SHOTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SHOTS / "dashboard.png"))
        rest = run.stdout.read()
        assert run.wait(timeout=120) == 0, rest
    finally:
        run.kill()
        run.wait()


def test_aviary_up_s_dashboard_follows_a_replay_connected_to_the_testbed_with_the_central_signals(
    tmp_path, browser
):
    """``aviary up --dashboard``: the page of a running testbed counts the tasks its nodes run for a
    replay that connects to it, and draws the central scheduler's own signals (Tetris: what it holds)."""
    import re
    import signal

    from selenium.webdriver.support.ui import WebDriverWait

    flags = ["--nodes", "6", "--policy", "tetris", "--dashboard", "0", "--dir", str(tmp_path / "up")]
    up, url = aviary("up", *flags)
    try:
        browser.get(url)

        def finished(b: Any) -> int:
            found = re.search(r"finished ([\d,]+)", status(b))
            return int(found.group(1).replace(",", "")) if found else -1

        WebDriverWait(browser, 30).until(lambda b: finished(b) == 0)  # nothing submitted yet
        replay = ["replay", "--connect", str(tmp_path / "up" / "cluster.toml"), "--workload", "tpch"]
        assert main([*replay, "--jobs", "6", "--quiet", "--out", str(tmp_path / "run")]) == 0
        WebDriverWait(browser, 30).until(lambda b: finished(b) > 1000)  # TPC-H jobs: thousands of tasks
        figures = browser.execute_script(
            "const out = []; for (const m of Bokeh.documents[0].all_models)"
            "  if (m.type === 'Figure') out.push(m.title ? m.title.text : ''); return out;"
        )
        assert "central scheduler: what it holds" in figures and "tasks (all frontends)" in figures
        assert errors(browser) == []
        SHOTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SHOTS / "dashboard-up.png"))
        up.send_signal(signal.SIGINT)
        rest = up.stdout.read()
        assert up.wait(timeout=60) == 0, rest
    finally:
        up.kill()
        up.wait()
