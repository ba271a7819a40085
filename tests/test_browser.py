"""System: a real browser opens what Aviary serves or writes for people (issue 29). Selenium drives
Debian's headless Chromium through chromium-driver (both installed by ``scripts/setup-browser.sh``); the
page must draw its figures with no error in the browser's console, and a screenshot is written to
``build/screenshots/`` for a person to look at."""

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


def test_a_report_page_draws_every_figure_in_a_real_browser_with_no_console_error(tmp_path, browser):
    common = ["replay", "--runtime", "sim", "--workload", "tpch", "--jobs", "8", "--nodes", "6", "--quiet"]
    for policy in ("drf", "tetris"):
        assert main([*common, "--policy", policy, "--out", str(tmp_path / policy)]) == 0
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "drf"), str(tmp_path / "tetris"), "--html", str(page)]) == 0
    browser.get(page.as_uri())
    from selenium.webdriver.support.ui import WebDriverWait

    # Bokeh's documents go idle once every view is rendered; each figure draws into canvases of its own
    # (in shadow roots, which a CSS selector does not enter).
    idle = "return window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents.every(d => d.is_idle)"
    WebDriverWait(browser, 30).until(lambda b: b.execute_script(idle))
    figures = browser.execute_script(
        "const out = [];"
        "for (const d of Bokeh.documents) for (const m of d.all_models)"
        "  if (m.type === 'Figure') out.push(m.title ? m.title.text : '');"
        "return out;"
    )
    assert sorted(figures) == ["job completion time, CDF", "jobs over time", "utilization over time"]
    canvases = browser.execute_script(
        "function count(root) {"
        "  let n = root.querySelectorAll('canvas').length;"
        "  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) n += count(el.shadowRoot);"
        "  return n;"
        "}"
        "return count(document);"
    )
    assert canvases >= len(figures)
    assert "tetris / drf" in browser.find_element("tag name", "body").text  # the comparison's table
    assert errors(browser) == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SHOTS / "report.png"))


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
