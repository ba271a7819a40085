"""What the live dashboard costs a real replay, and a look at it at scale.

    python -m aviary.benchmarks.runtime_overhead dashboard  # 300 nodes, 3 modes x 2 rounds
    python -m aviary.benchmarks.runtime_overhead dashboard --nodes 1000 --rounds 1 --modes browser

The same real replay (the bundled Google sample, ``--jobs`` jobs over ``--duration``, ``--nodes`` node
monitors, 50 per OS process) runs without a dashboard (``off``), with one nobody looks at (``idle``) and
with a headless Chromium showing it (``browser``: Selenium and Debian's chromium-driver, as the browser
tests use), the modes alternated ``--rounds`` times. Reported per run: the CPU seconds of the replay's own
process (the frontend, where the dashboard runs), its wall time, and the short jobs' p50 and p90 JCT;
then each mode over ``off``. The browser's last screenshot goes to ``--shots`` for a person to look at.
Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from statistics import median
from typing import Any

import psutil

MODES = ("off", "idle", "browser")


def browser() -> Any:
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1300"):
        options.add_argument(flag)
    driver = shutil.which("chromedriver") or "chromedriver"
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))


def run(mode: str, args: argparse.Namespace, out: Path, shots: Path) -> dict[str, Any]:
    flags = ["--jobs", str(args.jobs), "--nodes", str(args.nodes), "--nodes-per-process", "50",
             "--duration", args.duration, "--yes", "--out", str(out)]  # fmt: skip
    if mode != "off":
        flags += ["--dashboard", "0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aviary.launch.cli", "replay", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "300"},
    )
    me = psutil.Process(proc.pid)
    cpu = [0.0]

    def sample() -> None:  # the replay's process exits at the end: keep its last reading
        while proc.poll() is None:
            try:
                times = me.cpu_times()
                cpu[0] = times.user + times.system
            except psutil.Error:
                return
            threading.Event().wait(0.2)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    page = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("dashboard: ") and mode == "browser":
            page = browser()
            page.get(line.split()[1])
            break
    rest = proc.stdout.read()
    if page is not None:
        shots.mkdir(parents=True, exist_ok=True)
        page.save_screenshot(str(shots / f"dashboard-{args.nodes}.png"))
        page.quit()
    if proc.wait() != 0:
        raise SystemExit(f"runtime_overhead dashboard: the {mode} replay failed:\n{rest[-2000:]}")
    watcher.join()
    s = json.loads((out / "summary.json").read_text())
    short = s["jct"]["short"]
    return {
        "mode": mode,
        "cpu_s": cpu[0],
        "wall_s": s["wall_seconds"],
        "p50": short["p50"],
        "p90": short["p90"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m aviary.benchmarks.runtime_overhead dashboard", description=__doc__
    )
    p.add_argument("--nodes", type=int, default=300)
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--duration", default="20s")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--modes", default=",".join(MODES), help="of off, idle, browser (default all)")
    p.add_argument("--shots", type=Path, default=Path("build/screenshots"))
    args = p.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        p.error(f"--modes: unknown {', '.join(sorted(unknown))}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for mode in modes:
                rows.append(run(mode, args, Path(tmp) / f"{mode}-{r}", args.shots))
                row = rows[-1]
                print(f"{mode:8} cpu {row['cpu_s']:6.2f} s  wall {row['wall_s']:6.2f} s  "
                      f"short p50 {row['p50']:.3f}  p90 {row['p90']:.3f}", flush=True)  # fmt: skip
    if "off" in modes:
        keys = ("cpu_s", "wall_s", "p50", "p90")
        base = {k: median(r[k] for r in rows if r["mode"] == "off") for k in keys}
        for mode in modes:
            if mode != "off":
                ratio = {k: median(r[k] for r in rows if r["mode"] == mode) / base[k] for k in base}
                print(f"{mode} / off: " + ", ".join(f"{k} {v:.3f}" for k, v in ratio.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
