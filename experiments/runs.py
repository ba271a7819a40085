"""What the simulation sweeps share: one replay run in this process, timed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


def timed_replay(flags: list[str], out: Path) -> dict[str, Any]:
    """``aviary replay FLAGS --out OUT --quiet`` in this process; its summary, whose ``extra`` gains the
    wall time the run took (``sim_wall_seconds``), written back to ``OUT/summary.json``."""
    from aviary.launch.flags.parser import build_parser
    from aviary.launch.replay.resolve import setup_replay
    from aviary.launch.replay.run import run_replay

    args = build_parser().parse_args(["replay", *flags, "--quiet", "--force", "--out", str(out)])
    started = time.perf_counter()
    summary = run_replay(setup_replay(args), quiet=True)
    summary["extra"]["sim_wall_seconds"] = round(time.perf_counter() - started, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def seeded(name: str, seed: int, first: int = 0) -> str:
    """A run's folder (or file) name for ``seed``: the ``first`` seed (0 unless a script's workloads
    start at another) keeps the name runs had before seeds, so its committed results stay where they
    were; any other seed S adds ``-sS``."""
    return name if seed == first else f"{name}-s{seed}"


def read_summary(folder: Path | None) -> dict[str, Any] | None:
    """The ``summary.json`` of a run's folder (None: no folder, or none there)."""
    path = None if folder is None else folder / "summary.json"
    return json.loads(path.read_text()) if path is not None and path.exists() else None


def sim_wall(summary: dict[str, Any]) -> float | None:
    """The wall time of a run's replay: the script's own timing (``sim_wall_seconds``), else, for an
    ``aviary sweep`` cell, the replay's ``wall_seconds``."""
    wall = summary.get("extra", {}).get("sim_wall_seconds", summary.get("wall_seconds"))
    return None if wall is None else round(float(wall), 1)
